"""The paper's thesis, measured on a result (never typed in).

All arms prune the same trained network, so their numbers are paired. An arm's *operating point*
is its largest pruning step whose test accuracy is at most ``DROP`` below the unpruned network's
(the "equal accuracy drop"). At DFPC's two operating points (coupled channels allowed, uncoupled
only) we compare

* the measured speed-up (base latency / pruned latency in single-thread CPU time, timed back to
  back, the median over ``claim_repeats`` rounds): the paper's claim;
* the FLOP speed-up (base FLOPs / pruned FLOPs, counted from shapes): what the same pruning
  removes in arithmetic, without timing noise. A separate, clearly labelled row, not the speed
  claim.

Margins are named constants below, chosen from the spread over seeds 0-4
(``companion claims dfpc --seeds 0-4``); a tie is never a hold.
"""

from __future__ import annotations

import numpy as np

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.dfpc.experiment import DROP, Arm, DFPCResult, paired_speedup

FASTER = 0.05  # measured: coupled speed-up ≥ uncoupled speed-up + this
FEWER_FLOPS = 0.03  # FLOP speed-up: coupled ≥ uncoupled + this
AS_GOOD = 0.10  # DFPC's mean accuracy over the curve at least this above L1's / random's


def operating_point(arm: Arm) -> int:
    """Index of the arm's largest pruning step within ``DROP`` of the base accuracy (-1: none)."""
    return arm.operating_point


def speedup_at_drop(result: DFPCResult, coupled: bool) -> float:
    """Measured speed-up of DFPC's operating point (1.0 when no step is within the drop)."""
    times = result.claim_latency_seconds
    t = times["coupled" if coupled else "uncoupled"]
    return 1.0 if t is None else paired_speedup(times["base"], t)


def flop_speedup_at_drop(result: DFPCResult, arm: Arm) -> float:
    """FLOP speed-up of the arm's operating point (1.0 when no step is within the drop)."""
    i = operating_point(arm)
    return 1.0 if i < 0 else result.base_flops / arm.flops[i]


def mean_accuracy(arm: Arm) -> float:
    """Mean test accuracy over the pruning steps (the area under the accuracy curve)."""
    return float(np.mean(arm.accuracy))


def check_claims(result: DFPCResult) -> ClaimReport:
    coupled, uncoupled = result.arm("dfpc", True), result.arm("dfpc", False)
    s_c, s_u = speedup_at_drop(result, True), speedup_at_drop(result, False)
    f_c, f_u = flop_speedup_at_drop(result, coupled), flop_speedup_at_drop(result, uncoupled)
    rows = [
        Claim(
            "pruning coupled channels: a larger measured CPU speed-up at an equal accuracy drop",
            f"measured speed-up ×{fmt(s_c)} with coupled channels vs ×{fmt(s_u)} without",
            f"coupled ≥ uncoupled + {FASTER} at an accuracy drop ≤ {DROP}",
            s_c >= s_u + FASTER,
        ),
        Claim(
            "(not the speed claim) pruning coupled channels removes more FLOPs at an equal "
            "accuracy drop",
            f"FLOP speed-up ×{fmt(f_c)} with coupled channels vs ×{fmt(f_u)} without",
            f"coupled ≥ uncoupled + {FEWER_FLOPS} at an accuracy drop ≤ {DROP}",
            f_c >= f_u + FEWER_FLOPS,
        ),
    ]
    dfpc_acc = mean_accuracy(coupled)
    for other in ("l1", "random"):
        if other not in result.config["scorings"]:
            continue
        acc = mean_accuracy(result.arm(other, True))
        rows.append(
            Claim(
                f"the data-free DFPC saliency does at least as well as {other}",
                f"mean accuracy over the pruning curve {fmt(dfpc_acc)} vs {other} {fmt(acc)}",
                f"DFPC ≥ {other} + {AS_GOOD}",
                dfpc_acc >= acc + AS_GOOD,
            )
        )
    n_coupled = sum(d["coupled"] for d in result.dfcs)
    invariants = (
        Invariant(
            "tracing finds one coupled DFC per stage plus the stem's",
            f"{n_coupled} coupled of {len(result.dfcs)} DFCs",
            n_coupled == len(result.config["widths"]) + 1,
        ),
    )
    return ClaimReport(tuple(rows), invariants=invariants)
