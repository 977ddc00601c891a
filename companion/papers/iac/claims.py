"""The paper's thesis, measured on a result (never typed in).

Every arm shares the MDP, the data, the actor and its minibatches; only the critic's TD target
differs, so the arms' numbers are paired. Final numbers are means over the last quarter of the
measurements (not one end point). Margins were fixed on seeds 0-4 only (see each constant).
"""

from __future__ import annotations

import numpy as np

from companion.core import Claim, ClaimReport, fmt
from companion.papers.iac.experiment import IACResult

# The naive critic "over-estimates" when its data-weighted mean error is above +0.1 (the exact
# Q-values here are about −2 to −6, so 0.1 is a few percent of |Q|).
OVER = 0.1
# "Removes the over-estimation": IAC's RMS error at most half the compared critic's. Half, not
# "smaller", because a critic tracking a moving actor is never exactly right: IAC keeps the
# finite-sample optimism every offline actor-critic has (the actor prefers pairs whose few
# samples happened to look good), only the extrapolation part goes away.
FACTOR = 0.5
# Importance weighting must have at least 1.2x the update variance of resampling to count as
# "higher" (seeds 0-4: 1.4x to 4.3x).
VARIANCE = 1.2
# "Beats": IAC's exact return above the naive actor-critic's by at least 1% of the return gap
# between the behaviour policy and the optimal policy of the same MDP (fixed a priori: a
# smaller gain is not worth a claim).
BEATS = 0.01
# The finite-MDP SARSA control can only fail for the right reason when Q^π (IAC's final policy)
# and Q^μ differ at the dataset's pairs by more than the over-estimation that counts (the same
# 0.1; fixed a priori, after a reviewer's finding).
VALUE_GAP = OVER
# Pendulum (``continuous``): the naive critic "over-estimates" when its mean error over the
# evaluation pairs exceeds +2 (|Q^π| is about 60-70 there, so a few percent; the Monte Carlo
# standard error of Q^π is about 0.1-0.2; seeds 0-4: +3.4 to +8.4). "Removes": IAC's mean error
# at most half the naive's; the control: IAC's RMS error at most half SARSA's (the finite MDP's
# factor, fixed before the Pendulum runs).
PEND_OVER = 2.0
PEND_FACTOR = 0.5
# SIR needs overlap between π and μ̂: with an effective sample size below 5% of the data the
# critic is fitted to a handful of transitions and scored at pairs it never trained on, so the
# Pendulum IAC rows are not tested (fixed a priori, after a reviewer's finding; the brief's
# pitfall "ratios explode when μ̂ is narrow").
PEND_ESS = 0.05
# The SARSA control can only fail for the right reason when Q^π and Q^μ differ by more than the
# over-estimation that counts (the same +2; fixed a priori).
PEND_VALUE_GAP = PEND_OVER


def check_claims(result: IACResult) -> ClaimReport:
    arms = result.arms
    naive, iac = arms["naive"], arms["iac"]
    premise = naive.final_bias > OVER
    rows = [
        Claim(
            "premise: the naive critic (a' ~ π at s') over-estimates Q^π on this data",
            f"mean Q̂ − Q^π {fmt(naive.final_bias, 3)}",
            f"> +{OVER:g}",
            premise,
        ),
        Claim(
            "IAC's in-sample evaluation removes the over-estimation",
            f"RMS error IAC {fmt(iac.final_rmse, 3)} vs naive {fmt(naive.final_rmse, 3)} "
            f"(mean error IAC {fmt(iac.final_bias, 3)})",
            f"IAC ≤ {FACTOR:g} × naive",
            iac.final_rmse <= FACTOR * naive.final_rmse,
            premise_ok=premise,
        ),
    ]
    if "sarsa" in arms:
        sarsa = arms["sarsa"]
        gap_ok = bool(result.value_gap > VALUE_GAP)
        rows.append(
            Claim(
                "premise: the target's and the behaviour's values differ (else SARSA, which "
                "estimates Q^μ, is right by accident)",
                f"mean |Q^π − Q^μ| (exact) {fmt(result.value_gap, 3)}",
                f"> {VALUE_GAP:g}",
                gap_ok,
            )
        )
        rows.append(
            Claim(
                "control: the same update without resampling (SARSA on dataset a') does not "
                "evaluate π",
                f"RMS error IAC {fmt(iac.final_rmse, 3)} vs SARSA {fmt(sarsa.final_rmse, 3)} "
                f"(mean error SARSA {fmt(sarsa.final_bias, 3)})",
                f"IAC ≤ {FACTOR:g} × SARSA",
                iac.final_rmse <= FACTOR * sarsa.final_rmse,
                premise_ok=gap_ok,
            )
        )
    rows.append(
        Claim(
            "resampling has a lower update variance than importance weighting (same weights)",
            f"IS / SIR variance of a one-sample update ×{fmt(iac.final_var_ratio, 2)}",
            f"≥ {VARIANCE:g}",
            iac.final_var_ratio >= VARIANCE,
        )
    )
    gap = result.optimal_return - result.behaviour_return
    margin = BEATS * gap
    rows.append(
        Claim(
            "IAC's policy beats the naive offline actor-critic (exact return)",
            f"return IAC {fmt(iac.final_return, 3)} vs naive {fmt(naive.final_return, 3)} "
            f"(behaviour {fmt(result.behaviour_return, 2)}, "
            f"optimal {fmt(result.optimal_return, 2)})",
            f"IAC ≥ naive + {BEATS:.0%} of the behaviour-to-optimal gap ({fmt(margin, 3)})",
            iac.final_return >= naive.final_return + margin,
            premise_ok=premise,
        )
    )
    cont = result.continuous
    if cont is not None:
        fb, fr = cont.final_bias, cont.final_rmse
        pend_premise = fb["naive"] > PEND_OVER
        overlap = cont.ess >= PEND_ESS
        value_gap = float(np.mean(np.abs(np.subtract(cont.mc_q, cont.behaviour_q))))
        rows.append(
            Claim(
                "premise: on Pendulum the naive MLP critic (a' ~ π at s') over-estimates the "
                "Monte Carlo Q^π at dataset pairs",
                f"mean Q̂ − Q^π {fmt(fb['naive'], 3)}",
                f"> +{PEND_OVER:g}",
                pend_premise,
            )
        )
        rows.append(
            Claim(
                "premise: on Pendulum SIR has enough overlap (effective sample size of the "
                "weights, as a share of the data)",
                f"effective sample size {fmt(cont.ess, 3)} (largest resampling probability "
                f"{fmt(cont.max_weight_share, 3)})",
                f"≥ {PEND_ESS:g}",
                overlap,
            )
        )
        rows.append(
            Claim(
                "Pendulum: IAC's in-sample SIR target removes the over-estimation",
                f"mean error IAC {fmt(fb['iac'], 3)} vs naive {fmt(fb['naive'], 3)} "
                f"(RMS IAC {fmt(fr['iac'], 3)}, naive {fmt(fr['naive'], 3)})",
                f"IAC ≤ {PEND_FACTOR:g} × naive",
                fb["iac"] <= PEND_FACTOR * fb["naive"],
                premise_ok=pend_premise and overlap,
            )
        )
        if "sarsa" in fr:
            rows.append(
                Claim(
                    "premise: on Pendulum the target's and the behaviour's values differ "
                    "(else SARSA, which estimates Q^μ, is right by accident)",
                    f"mean |Q^π − Q^μ| (Monte Carlo) {fmt(value_gap, 3)}",
                    f"≥ {PEND_VALUE_GAP:g}",
                    value_gap >= PEND_VALUE_GAP,
                )
            )
            rows.append(
                Claim(
                    "Pendulum control: IAC is closer to Q^π than the same update without "
                    "resampling (SARSA on dataset a')",
                    f"RMS error IAC {fmt(fr['iac'], 3)} vs SARSA {fmt(fr['sarsa'], 3)} "
                    f"(mean error SARSA {fmt(fb['sarsa'], 3)})",
                    f"IAC ≤ {PEND_FACTOR:g} × SARSA",
                    fr["iac"] <= PEND_FACTOR * fr["sarsa"],
                    premise_ok=overlap and value_gap >= PEND_VALUE_GAP,
                )
            )
    note = (
        "not counted: "
        + "; ".join(
            f"{name} RMS error {fmt(arm.final_rmse, 3)}, return {fmt(arm.final_return, 3)}"
            for name, arm in arms.items()
            if name not in ("naive", "iac")
        )
        + f"; mass π leaves on actions the data lacks: {fmt(naive.unseen_mass[-1], 3)} (naive), "
        f"{fmt(iac.unseen_mass[-1], 3)} (IAC)"
    )
    if cont is not None:
        note += (
            f"; Pendulum: SIR effective sample size {fmt(cont.ess, 3)} of the data, largest "
            f"resampling probability {fmt(cont.max_weight_share, 3)}, "
            + "".join(
                f"{name} RMS error at SIR-weighted pairs {fmt(v, 3)} (uniform "
                f"{fmt(cont.final_rmse[name], 3)}), "
                for name, v in cont.sir_rmse.items()
            )
            + "mean Monte Carlo Q^π − Q^μ "
            f"{fmt(float(np.mean(cont.mc_q) - np.mean(cont.behaviour_q)), 3)}"
        )
    return ClaimReport(tuple(rows), note=note)
