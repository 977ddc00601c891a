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

# Premise: single shooting has NOT fitted the long trajectories when its budget is spent: its test
# forecast error is still at least this share of the data variance (the error of predicting the
# mean). Fixed before any run. On the current seeds 0-4 (single shooting at its own rate
# lr_single) the premise held at seed 0 only: single shooting fitted at seeds 1-3 and came close
# to the threshold at seed 4.
UNFIT = 0.25
# "Lower error": multiple shooting's test MSE at most single shooting's divided by this. Rule: "a
# round number below the smallest paired ratio SS/MS over the seeds 0-4 where the premise held".
# On the current seeds 0-4 (single shooting at lr_single) that is seed 0 alone, ÷6.1, so 5 still
# satisfies the rule (it was first sized, at 7.6 to 53, when single shooting ran at multiple
# shooting's rate). By this rule the row holds at every premise seed of 0-4; only 5-9 test it.
LOWER = 5.0
# The blocks join because of the prior: multiple shooting's relative continuity gap (mean
# ‖γ_b − x_end(b−1)‖ over the mean latent norm) at most the loose-prior control's divided by this.
# The control is the same arm with Xi × loose_factor (100): the continuity prior made wide (which
# also stops its KL from holding τ_b small, so the posterior widths change too).
# Sized on seeds 0-4 by the rule "a round number above the seed spread (max / min) of multiple
# shooting's relative gap over seeds 0-4" (0.097 to 0.161: 1.7, so 2); seeds 5-9 were not used.
# (The smallest paired ratio loose / multiple at seeds 0-4 was 1.04, at seed 2: that seed fails.)
JOINED = 2.0
# The forecast needs the prior: the loose-prior control's test forecast MSE at least this multiple
# of multiple shooting's. Sized on seeds 0-4 by the rule "a round number below the smallest paired
# ratio loose / multiple over seeds 0-4" (9.2 to 53 on the current runs, so 5). By this rule the
# row holds at all of seeds 0-4; only the held-out seeds 5-9 test it.
NEEDS_PRIOR = 5.0


def settle_ratio(arm: ArmResult) -> float:
    """Final test MSE over the best test MSE measured during training (1 = ends at its best)."""
    curve = np.asarray(arm.test_mse + [arm.final_test_mse], dtype=float)
    if not np.isfinite(curve).all():
        return float("inf")
    return float(curve[-1] / max(curve.min(), 1e-12))


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
