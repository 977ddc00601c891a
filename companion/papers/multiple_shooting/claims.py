"""The paper's claim, measured on a result (never typed in).

All arms start from the same weights, see the same batches and take the same number of Adam
steps with the same solver and step size; single and multiple shooting differ in the number of
blocks (and single shooting's learning rate, chosen on validation trajectories), multiple shooting
and the loose-prior control only in Xi, the continuity prior's width. Their numbers are paired.
Thresholds are named constants, sized on seeds 0-4 only (see each comment).
"""

from __future__ import annotations

import numpy as np

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.multiple_shooting.experiment import ArmResult, MultipleShootingResult

# Every threshold below was set on runs with the rk4 solver (seeds 0-4) and kept unchanged when the
# notebook preset moved to the midpoint rule to fit the one-minute budget; seeds 5-9 were run only
# after that move, with single shooting's learning rate re-swept on validation trajectories.
# Premise: single shooting has NOT fitted the long trajectories when its budget is spent: its test
# forecast error is still at least this share of the data variance (the error of predicting the
# mean). Fixed before any run and kept when the notebook preset moved to longer, lightly damped
# trajectories (97 points, about 9 periods, damping 0.05), where a tuned single shooting no longer
# fits at most seeds (at 49 points and damping 0.15 it fitted at 4 of seeds 0-4).
UNFIT = 0.25
# "Lower error": multiple shooting's test MSE at most single shooting's divided by this: a halving.
# The earlier rule ("a round number below the smallest paired ratio at the premise seeds of 0-4")
# cannot be applied on the long trajectories: at seed 3 multiple shooting did not beat single
# shooting at all (ratio 1.0), so the margin was set to 2, just below the smallest ratio among the
# premise seeds of 0-4 where multiple shooting won (2.5 at seed 0); seed 3 fails it.
LOWER = 2.0
# "More stably": multiple shooting's WORST test forecast MSE measured over the second half of
# training (and at the end) at most single shooting's BEST over the same measurements divided by
# this, so one late rise of multiple shooting's error above single shooting's fails the row.
# Fixed (strict dominance, no extra margin) before the long-trajectory runs were seen.
STABLE = 1.0
# The blocks join because of the prior: multiple shooting's relative continuity gap (mean
# ‖γ_b − x_end(b−1)‖ over the mean latent norm) at most the loose-prior control's divided by this.
# The control is the same arm with Xi × loose_factor (100): the continuity prior made wide (which
# also stops its KL from holding τ_b small, so the posterior widths change too).
# Sized on seeds 0-4 by the rule "a round number above the seed spread (max / min) of multiple
# shooting's relative gap over seeds 0-4" (1.9 on the long trajectories, so 2); 5-9 not used.
JOINED = 2.0
# The forecast needs the prior: the loose-prior control's test forecast MSE at least this multiple
# of multiple shooting's. Kept at 5 from the shorter trajectories (where it was "a round number
# below the smallest paired ratio loose / multiple over seeds 0-4"); on the long trajectories that
# rule would give a number below 1 (the loose prior forecast better at seeds 0 and 3), so it was not
# re-applied and those seeds fail.
NEEDS_PRIOR = 5.0


def settle_ratio(arm: ArmResult) -> float:
    """Final test MSE over the best test MSE measured during training (1 = ends at its best)."""
    curve = np.asarray(arm.test_mse + [arm.final_test_mse], dtype=float)
    if not np.isfinite(curve).all():
        return float("inf")
    return float(curve[-1] / max(curve.min(), 1e-12))


def late_curve(arm: ArmResult) -> np.ndarray:
    """The test forecast MSE measured in the second half of training (steps ≥ half the last
    measured step) and at the end: the part of the run where a stable fit should stay fitted."""
    steps = np.asarray(arm.measure_steps, dtype=float)
    values = np.asarray(arm.test_mse, dtype=float)
    half = steps.max() / 2 if len(steps) else 0.0
    return np.append(values[steps >= half], arm.final_test_mse)


def mean_gap(arm: ArmResult) -> float:
    return float(np.mean(arm.gap)) if arm.gap else 0.0


def relative_gap(arm: ArmResult) -> float:
    """Mean continuity gap over the arm's own mean latent norm (scale-free)."""
    return mean_gap(arm) / arm.latent_scale if arm.latent_scale > 0 else float("inf")


def check_claims(result: MultipleShootingResult) -> ClaimReport:
    ss, ms = result.arms["single_shooting"], result.arms["multiple_shooting"]
    loose = result.arms["loose_prior"]
    var = result.data_variance
    ss_mse, ms_mse = ss.final_test_mse, ms.final_test_mse
    premise = bool(np.isfinite(ss_mse) and ss_mse >= UNFIT * var) or ss.diverged
    ratio = ss_mse / ms_mse if ms_mse > 0 and np.isfinite(ms_mse) else float("inf")
    ms_late, ss_late = float(late_curve(ms).max()), float(late_curve(ss).min())
    late_ratio = ss_late / ms_late if ms_late > 0 and np.isfinite(ms_late) else 0.0
    if ss.diverged or not np.isfinite(ss_late):
        late_ratio = float("inf") if np.isfinite(ms_late) else 0.0
    factor = result.config.get("loose_factor", 100.0)
    rel_ms, rel_loose = relative_gap(ms), relative_gap(loose)
    join = rel_loose / rel_ms if rel_ms > 0 else float("inf")
    joined = bool(ms.gap and loose.gap) and np.isfinite(rel_loose) and join >= JOINED
    loose_ratio = (
        loose.final_test_mse / ms_mse if ms_mse > 0 and np.isfinite(ms_mse) else float("nan")
    )
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
            f"multiple ≤ single / {LOWER:g}, same steps, solver and step size (single: own lr)",
            ratio >= LOWER and not ms.diverged,
            premise_ok=premise,
        ),
        Claim(
            "multiple shooting stays below single shooting through the second half of training",
            f"worst test MSE over the second half {fmt(ms_late, 4)} vs single shooting's best "
            f"{fmt(ss_late, 3)} (÷{fmt(late_ratio, 1)})",
            f"worst of multiple ≤ best of single / {STABLE:g}, measured every "
            f"{result.config.get('measure_every', 0)} steps",
            late_ratio >= STABLE and not ms.diverged,
            premise_ok=premise,
        ),
        Claim(
            f"the continuity prior joins the blocks (control: the same prior, Xi × {factor:g})",
            f"gap / latent norm {fmt(rel_ms, 3)} vs loose prior {fmt(rel_loose, 3)} "
            f"(×{fmt(join, 1)})",
            f"loose ≥ {JOINED:g} × multiple, same model, init, batches and steps",
            joined and not ms.diverged,
        ),
        Claim(
            f"the forecast needs the continuity prior (control: the same prior, Xi × {factor:g})",
            f"test MSE {fmt(ms_mse, 4)} vs loose prior {fmt(loose.final_test_mse, 3)} "
            f"(×{fmt(loose_ratio, 1)})",
            f"loose ≥ {NEEDS_PRIOR:g} × multiple, same model, init, batches and steps",
            bool(np.isfinite(loose_ratio) and loose_ratio >= NEEDS_PRIOR) and not ms.diverged,
        ),
    )
    same_steps = len(ss.loss) == len(ms.loss) == len(loose.loss)
    nfe_ss = float(np.mean(ss.nfe)) if ss.nfe else 0.0
    nfe_ms = float(np.mean(ms.nfe)) if ms.nfe else 0.0
    invariants = (
        Invariant(
            "equal budget: every arm takes the same optimiser steps",
            f"{len(ss.loss)}, {len(ms.loss)} and {len(loose.loss)} steps; ODE evaluations per step "
            f"{nfe_ss:.0f} (single) vs {nfe_ms:.0f} (multiple, blocks in parallel)",
            same_steps and nfe_ms <= nfe_ss,
        ),
    )
    note = (
        f"not counted: wall time single {fmt(ss.seconds, 1)} s vs multiple {fmt(ms.seconds, 1)} s; "
        f"final / best test MSE single {fmt(settle_ratio(ss), 2)}, multiple "
        f"{fmt(settle_ratio(ms), 2)} (single shooting stalls rather than blowing up, so this "
        f"does not separate the arms)"
    )
    if not all(r.holds for r in rows):
        note += "; one small run per seed: a seed can miss a claim"
    return ClaimReport(rows, note=note, invariants=invariants)
