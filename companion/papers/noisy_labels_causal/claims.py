"""The paper's thesis, measured on a result (never typed in).

Per dataset every arm starts from the same warm-up network and sees the same batches, so
accuracies are paired. A comparison holds only by a margin (a named constant below).
"""

from __future__ import annotations

import numpy as np

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.noisy_labels_causal.experiment import NoisyCausalResult

HELPS = 0.02  # "helps": the semi-supervised arm at least 2 points above cross-entropy
BETTER = 0.02  # "works": Forward at least 2 points above cross-entropy
PREFER = 0.02  # on causal data Forward beats the semi-supervised method by at least 2 points
COMPETITIVE = 0.03  # on anticausal data the semi-supervised method is within 3 points of Forward


def unlabelled_gain(result: NoisyCausalResult, name: str) -> float:
    """What P(X) contributed: accuracy of the semi-supervised arm minus the same labelled set
    without the unlabelled term."""
    acc = result.datasets[name].accuracy
    return acc["ssl"] - acc["labelled_only"]


def check_claims(result: NoisyCausalResult) -> ClaimReport:
    sets = result.datasets
    thr = result.config["threshold"]
    rows = []
    if "yx_gaussian" in sets and "xy_gaussian" in sets:
        yx, xy = sets["yx_gaussian"].accuracy, sets["xy_gaussian"].accuracy
        rows.append(
            Claim(
                "the semi-supervised method helps on anticausal data",
                f"semi-supervised {fmt(yx['ssl'], 3)} vs cross-entropy {fmt(yx['ce'], 3)}",
                f"semi-supervised ≥ cross-entropy + {HELPS}",
                yx["ssl"] >= yx["ce"] + HELPS,
            )
        )
        rows.append(
            Claim(
                "... and not on causal data",
                f"semi-supervised {fmt(xy['ssl'], 3)} vs cross-entropy {fmt(xy['ce'], 3)}",
                f"semi-supervised < cross-entropy + {HELPS}",
                xy["ssl"] < xy["ce"] + HELPS,
            )
        )
        for name, acc in (("causal", xy), ("anticausal", yx)):
            rows.append(
                Claim(
                    f"modelling the noise works on {name} data",
                    f"Forward {fmt(acc['forward'], 3)} vs cross-entropy {fmt(acc['ce'], 3)}",
                    f"Forward ≥ cross-entropy + {BETTER}",
                    acc["forward"] >= acc["ce"] + BETTER,
                )
            )
        rows.append(
            Claim(
                "on causal data, model the noise rather than use SSL",
                f"Forward {fmt(xy['forward'], 3)} vs semi-supervised {fmt(xy['ssl'], 3)}",
                f"Forward ≥ semi-supervised + {PREFER}",
                xy["forward"] >= xy["ssl"] + PREFER,
            )
        )
        rows.append(
            Claim(
                "on anticausal data SSL is competitive with Forward",
                f"semi-supervised {fmt(yx['ssl'], 3)} vs Forward {fmt(yx['forward'], 3)}",
                f"semi-supervised ≥ Forward − {COMPETITIVE}",
                yx["ssl"] >= yx["forward"] - COMPETITIVE,
            )
        )
    for name, d in sets.items():
        anti = d.direction == "anticausal"
        rows.append(
            Claim(
                f"the test finds {name} {d.direction}",
                f"err {fmt(d.cdnl_error, 3)}",
                f"err {'<' if anti else '>'} threshold {thr:g}",
                d.cdnl_error < thr if anti else d.cdnl_error > thr,
            )
        )
    invariants = tuple(
        Invariant(
            f"{name}: T′ and T̂* are row-stochastic",
            f"largest |row sum − 1| {fmt(dev, 3)}",
            dev < 1e-4,
        )
        for name, d in sets.items()
        for dev in [
            max(
                float(np.abs(np.asarray(d.t_prime).sum(1) - 1).max()),
                float(np.abs(np.asarray(d.t_star).sum(1) - 1).max()),
            )
        ]
    )
    note = ""
    if "yx_gaussian" in sets and "xy_gaussian" in sets:
        g_yx, g_xy = unlabelled_gain(result, "yx_gaussian"), unlabelled_gain(result, "xy_gaussian")
        # not counted: on the anticausal data the selected examples alone already come close to
        # the Bayes accuracy at this scale, so the unlabelled term has little to add there, and
        # its gain over seeds overlaps with the causal one at small costs
        note = (
            f"not counted: gain of the unlabelled term (ssl − labelled_only) Y → X {fmt(g_yx, 3)}, "
            f"X → Y {fmt(g_xy, 3)}"
        )
    if not all(r.holds for r in rows):
        note += "; a small run is noisy: a seed can miss a comparison (see the robustness table)"
    return ClaimReport(tuple(rows), note=note, invariants=invariants)
