"""The paper's claim, measured on a result (never typed in).

Both arms start from the same weights, see the same batches and take the same number of Adam
steps with the same solver and step size; only the number of blocks differs. Their numbers are
paired. Thresholds are named constants, sized on seeds 0-4 only (see each comment).
"""

from __future__ import annotations

import numpy as np

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.multiple_shooting.experiment import ArmResult, MultipleShootingResult

# Premise: single shooting has NOT fitted the long trajectories when its budget is spent: its test
# forecast error is still at least this share of the data variance (the error of predicting the
# mean). Fixed before the runs; at one of seeds 0-4 single shooting did fit (premise failed).
UNFIT = 0.25
# "Lower error": multiple shooting's test MSE at most single shooting's divided by this. Sized on
# seeds 0-4 by the rule "a round number below the smallest paired ratio SS/MS over the seeds 0-4
# where the premise held" (7.6 to 53 in a first look at those seeds, so 5).
LOWER = 5.0
# The blocks join: the mean continuity gap ‖γ_b − x_end(b−1)‖ between a block's posterior mean and
# where the previous block (started at its posterior mean) ends, at most this share of the mean
# latent norm ‖x‖. Fixed before seeds 0-4 ran (a quarter of the latent scale: blocks a quarter of
# a state apart do not form one trajectory).
JOINED = 0.25
# Trains stably: the final test error at most this multiple of the best one seen during training
# (no late blow-up). Transient bumps before the best are allowed and shown in the notebook.
SETTLED = 1.5


def settle_ratio(arm: ArmResult) -> float:
    """Final test MSE over the best test MSE measured during training (1 = ends at its best)."""
    curve = np.asarray(arm.test_mse + [arm.final_test_mse], dtype=float)
    if not np.isfinite(curve).all():
        return float("inf")
    return float(curve[-1] / max(curve.min(), 1e-12))


def mean_gap(arm: ArmResult) -> float:
    return float(np.mean(arm.gap)) if arm.gap else 0.0


def check_claims(result: MultipleShootingResult) -> ClaimReport:
    ss, ms = result.arms["single_shooting"], result.arms["multiple_shooting"]
    var = result.data_variance
    ss_mse, ms_mse = ss.final_test_mse, ms.final_test_mse
    premise = bool(np.isfinite(ss_mse) and ss_mse >= UNFIT * var) or ss.diverged
    ratio = ss_mse / ms_mse if ms_mse > 0 and np.isfinite(ms_mse) else float("inf")
    gap, scale = mean_gap(ms), ms.latent_scale
    rows = (
        Claim(
            "premise: single shooting does not fit the long trajectories in the budget",
            f"single-shooting test MSE {fmt(ss_mse, 3)} (data variance {fmt(var, 3)})",
            f">= {UNFIT:g} × data variance",
            premise,
        ),
        Claim(
            "multiple shooting trains to a lower test error than single shooting",
            f"test MSE {fmt(ms_mse, 4)} vs single shooting {fmt(ss_mse, 3)} (÷{fmt(ratio, 1)})",
            f"multiple ≤ single / {LOWER:g}, same steps, solver and step size",
            ratio >= LOWER and not ms.diverged,
            premise_ok=premise,
        ),
        Claim(
            "the continuity prior joins the blocks",
            f"mean gap ‖γ_b − x_end‖ {fmt(gap, 3)} vs mean latent norm {fmt(scale, 2)}",
            f"gap ≤ {JOINED:g} × latent norm",
            bool(ms.gap) and gap <= JOINED * scale,
        ),
        Claim(
            "multiple shooting ends training stably (no late blow-up)",
            f"final / best test MSE {fmt(settle_ratio(ms), 2)}",
            f"≤ {SETTLED:g}",
            settle_ratio(ms) <= SETTLED and not ms.diverged,
        ),
    )
    same_steps = len(ss.loss) == len(ms.loss)
    nfe_ss = float(np.mean(ss.nfe)) if ss.nfe else 0.0
    nfe_ms = float(np.mean(ms.nfe)) if ms.nfe else 0.0
    invariants = (
        Invariant(
            "equal budget: both arms take the same optimiser steps",
            f"{len(ss.loss)} and {len(ms.loss)} steps; ODE evaluations per step "
            f"{nfe_ss:.0f} (single) vs {nfe_ms:.0f} (multiple, blocks in parallel)",
            same_steps and nfe_ms <= nfe_ss,
        ),
    )
    note = (
        f"not counted: wall time single {fmt(ss.seconds, 1)} s vs multiple {fmt(ms.seconds, 1)} s; "
        f"single shooting final / best test MSE {fmt(settle_ratio(ss), 2)}"
    )
    if not all(r.holds for r in rows):
        note += "; one small run per seed: a seed can miss a claim"
    return ClaimReport(rows, note=note, invariants=invariants)
