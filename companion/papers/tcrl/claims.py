"""The paper's claim, measured on a result (never typed in).

"Well enough to plan" is measured as a normalised return: MPPI with a model scores
(R_model − R_random) / (R_simulator − R_random), 0 for random actions and 1 for the same MPPI
with Pendulum's true equations, on the same start states. The thresholds were fixed before the
runs by what the words mean (80% of the way to the simulator is "plans well"; a model more than
0.1 below another is "worse"; a 10-step reward error of 30% of the reward variance is "predicts"),
then checked on seeds 0-4; held-out seeds 5-9 were not used to choose them.
"""

from __future__ import annotations

import numpy as np

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.tcrl.experiment import TCRLResult

SOLVED_GAP = 500.0  # premise: MPPI with the true equations beats random actions by this much
UNTRAINED_MAX = 0.5  # premise: an untrained model gets at most half-way from random
PLANS_WELL = 0.8  # "well enough to plan": at least 80% of the way to the simulator's return
PREDICTS = 0.3  # the k-step reward error (MSE / Var r) at k = eval_horizon
NON_INFERIOR = 0.05  # "as well as": reward error at most this much (share of Var r) above
GAIN = 1.2  # "X matters": the control's k-step reward error ≥ 1.2× TCRL's (rule: module doc)
EMA_GAIN = GAIN


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("inf")


def check_claims(result: TCRLResult) -> ClaimReport:
    arms = result.arms
    sim, rnd = result.mean_return("simulator"), result.mean_return("random")
    gap_ok = sim - rnd >= SOLVED_GAP
    untrained = result.normalized_return("untrained")
    untrained_ok = untrained <= UNTRAINED_MAX
    planning_premise = gap_ok and untrained_ok
    tcrl = result.normalized_return("tcrl")
    k = len(arms["tcrl"].reward_error)
    err = arms["tcrl"].reward_error[-1]
    err_untrained = arms["untrained"].reward_error[-1]
    err_online = arms["online_target"].reward_error[-1]
    err_reward_only = arms["reward_only"].reward_error[-1]
    err_recon = arms["reconstruction"].reward_error[-1]
    err_ens = arms["ensemble"].reward_error[-1]
    rows = (
        Claim(
            "premise: MPPI with the true equations solves the task, random actions do not",
            f"return {fmt(sim, 1)} (simulator) vs {fmt(rnd, 1)} (random)",
            f"simulator − random ≥ {SOLVED_GAP:g}",
            gap_ok,
        ),
        Claim(
            "premise: planning with the untrained model fails",
            f"normalised return {fmt(untrained)} (10-step reward error {fmt(err_untrained)})",
            f"≤ {UNTRAINED_MAX:g}",
            untrained_ok,
        ),
        Claim(
            f"TCRL predicts rewards {k} steps ahead, open loop",
            f"reward error at step {k}: {fmt(err, 3)} of Var(r)",
            f"≤ {PREDICTS:g}",
            err <= PREDICTS,
        ),
        Claim(
            "MPPI with the TCRL model plans well enough (vs MPPI with the simulator)",
            f"normalised return {fmt(tcrl)}",
            f"≥ {PLANS_WELL:g}",
            tcrl >= PLANS_WELL,
            premise_ok=planning_premise,
        ),
        Claim(
            f"TCRL predicts rewards {k} steps ahead as well as the reconstruction model"
            " (same data, steps)",
            f"reward error {fmt(err, 3)} vs {fmt(err_recon, 3)}",
            f"TCRL ≤ reconstruction + {NON_INFERIOR:g}",
            err <= err_recon + NON_INFERIOR,
        ),
        Claim(
            f"TCRL predicts rewards {k} steps ahead as well as the ensemble of one-step models",
            f"reward error {fmt(err, 3)} vs {fmt(err_ens, 3)}",
            f"TCRL ≤ ensemble + {NON_INFERIOR:g}",
            err <= err_ens + NON_INFERIOR,
        ),
        Claim(
            "control: the consistency term matters (the same model trained on rewards only"
            " predicts worse)",
            f"reward error at step {k}: reward only {fmt(err_reward_only, 3)} vs TCRL {fmt(err, 3)}"
            f" (×{fmt(_ratio(err_reward_only, err))})",
            f"reward only ≥ {GAIN:g}× TCRL",
            err_reward_only >= GAIN * err,
        ),
        Claim(
            "control: the EMA target matters (online encoder as target predicts worse)",
            f"reward error at step {k}: online target {fmt(err_online, 3)} vs TCRL {fmt(err, 3)}"
            f" (×{fmt(_ratio(err_online, err))})",
            f"online ≥ {GAIN:g}× TCRL",
            err_online >= GAIN * err,
        ),
    )
    t, r, e = arms["tcrl"], arms["reconstruction"], arms["ensemble"]
    invariants = (
        Invariant(
            "an update of TCRL costs fewer FLOPs than one of the reconstruction model",
            f"{t.train_flops:.2e} vs {r.train_flops:.2e} "
            f"(×{fmt(_ratio(r.train_flops, t.train_flops))})",
            t.train_flops < r.train_flops,
        ),
        Invariant(
            "scoring MPPI's samples costs fewer FLOPs with TCRL than with the ensemble",
            f"{t.plan_flops:.2e} vs {e.plan_flops:.2e} "
            f"(×{fmt(_ratio(e.plan_flops, t.plan_flops))})",
            t.plan_flops < e.plan_flops,
        ),
    )
    note = (
        f"latent spread (mean per-dimension std of unit latents): TCRL "
        f"{fmt(t.latent_spread, 3)}, online target {fmt(arms['online_target'].latent_spread, 3)}"
        f"; returns over {len(t.returns)} planned episodes per arm"
    )
    return ClaimReport(rows, note=note, invariants=invariants)


def spread_summary(result: TCRLResult) -> dict[str, float]:
    """Normalised return of every arm (for tables and exercises)."""
    return {arm: float(np.round(result.normalized_return(arm), 4)) for arm in result.arms}
