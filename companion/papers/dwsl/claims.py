"""The paper's thesis, measured on a result (never typed in).

The thresholds below were fixed on the notebook preset at seed 0 and tuning seeds outside
0–4, before the claims were run at seeds 1–4 (``companion claims dwsl --seeds 0-4``).
"""

from __future__ import annotations

import numpy as np

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.dwsl.experiment import GCBC, DWSLResult, arm_name

# "DWSL beats GCBC": the mean success gap must be at least this share of the start–goal pairs
# (a tie, or a gap of a few pairs, is not a win)
SUCCESS_MARGIN = 0.02
# "the soft minimum is nearer the shortest path than the mean": its error must be at most this
# fraction of the mean's error (it removes at least a quarter of the mean's overestimate)
ERROR_RATIO = 0.75
# "approximates shortest paths": Spearman ρ of the learned distance with the true distances
RANK_CORRELATION = 0.8


def average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n with ties sharing their average rank (as ``scipy.stats.rankdata``)."""
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    return ((ends - counts + 1 + ends) / 2)[inverse]


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation: Pearson's correlation of the average ranks. (Written out
    here because importing ``scipy.stats`` costs seconds; the tests compare with it.)"""
    return float(np.corrcoef(average_ranks(x), average_ranks(y))[0, 1])


def distance_quality(result: DWSLResult, key: str) -> tuple[float, float]:
    """(Spearman ρ, mean absolute error in steps) of a learned distance map against the true
    shortest paths, over every start–goal pair (start ≠ goal), averaged over seeds."""
    true = np.array(result.true_steps, dtype=float)
    off = ~np.eye(len(true), dtype=bool)
    rho, mae = [], []
    for s in result.seeds:
        learned = np.array(s.learned_steps[key])[off]
        rho.append(spearman(learned, true[off]))
        mae.append(np.abs(learned - true[off]).mean())
    return float(np.mean(rho)), float(np.mean(mae))


def check_claims(result: DWSLResult) -> ClaimReport:
    alpha = result.config["alphas"][0]
    dwsl = arm_name(alpha)
    gap = result.mean_success(dwsl) - result.mean_success(GCBC)
    seeds = (
        f"seed {result.seeds[0].seed}"
        if len(result.seeds) == 1
        else f"mean of {len(result.seeds)} seeds"
    )
    key = f"α={alpha:g}"
    rho, mae = distance_quality(result, key)
    _, mae_mean = distance_quality(result, "mean")
    # Jensen: −α log E[exp(−X/α)] ≤ E[X] for every distribution, so for every pair
    above = max(
        float(np.max(np.array(s.learned_steps[key]) - np.array(s.learned_steps["mean"])))
        for s in result.seeds
    )
    rows = (
        Claim(
            "DWSL's success rate exceeds GCBC's on the same data",
            f"DWSL {fmt(result.mean_success(dwsl))} vs GCBC {fmt(result.mean_success(GCBC))}"
            f" (gap {fmt(gap)}, {seeds})",
            "gap ≥ SUCCESS_MARGIN of the pairs",
            gap >= SUCCESS_MARGIN,
        ),
        Claim(
            "the LogSumExp soft minimum is nearer the shortest path than the mean",
            f"error {fmt(mae, 1)} steps ({key}) vs {fmt(mae_mean, 1)} (mean)",
            "soft-min error ≤ ERROR_RATIO × mean's",
            mae <= ERROR_RATIO * mae_mean,
        ),
        Claim(
            "the learned distance approximates shortest-path distances",
            f"Spearman ρ {fmt(rho)} with BFS over all pairs ({key})",
            "ρ ≥ RANK_CORRELATION",
            rho >= RANK_CORRELATION,
        ),
    )
    invariants = (
        Invariant(
            "the soft minimum never exceeds the mean of the same distribution (Jensen)",
            f"largest soft min − mean {fmt(above, 1)} steps",
            above <= 0.01,  # float32, and maps stored to 3 decimals
        ),
    )
    notes = [
        f"SUCCESS_MARGIN = {SUCCESS_MARGIN}, ERROR_RATIO = {ERROR_RATIO}, "
        f"RANK_CORRELATION = {RANK_CORRELATION} (companion/papers/dwsl/claims.py)"
    ]
    if not rows[0].holds:
        notes.append(
            "at this small scale a seed can miss the success margin: see the robustness table, "
            "or run the full preset"
        )
    if not rows[2].holds:
        notes.append(
            "the classifier ranks far pairs poorly when it has seen few samples of them: more "
            "steps or more data (the full preset) sharpen it"
        )
    return ClaimReport(rows, note="; ".join(notes), invariants=invariants)
