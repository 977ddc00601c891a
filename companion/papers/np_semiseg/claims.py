"""The paper's claims, measured on a result (never typed in).

All arms start from the same backbone weights, see the same batches and train for the same
number of steps, so their numbers are paired. The sources read here (the paper's text and the
official code) report comparisons with MC dropout, not a head-vs-head gain over the softmax head;
asking that the NP head be *no worse* than the softmax head is this companion's own choice. The
comparative rows are therefore non-inferiority rows against the control (the same mean teacher
with a softmax head), with margins fixed a priori by what "comparable" means (about the 1-2
points a paper calls comparable), not derived from the runs.

The claim asked for (issue 25) is the gain row: the NP mean teacher's mIoU above labelled-only
training by ``GAIN_MARGIN``, gated by the premises that errors are left to fix and that the kept
pseudo-labels are accurate.

Caveat: the uncertainty and non-inferiority rows were redefined after seeds 5-9 had been seen
once. The margins are fixed a priori, but the held-out column is not blind for those row
definitions. The gain row, CutMix, the teacher's scoring and the medium preset were settled on
seeds 0-4 before seeds 5-9 were run again.
"""

from __future__ import annotations

import math

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.np_semiseg.experiment import NPSemiSegResult

ROOM = 0.9  # premise: labelled-only mIoU below this leaves errors for pseudo-labels to fix
PSEUDO_ACCURATE = 0.9  # premise: the kept pseudo-labels are at least this accurate
AUROC_MIN = 0.75  # "well above 0.5": a misclassified pixel outranks a correct one 3 times in 4
# Non-inferiority margins, fixed by what "comparable" means and NOT derived from the runs: about
# the 1-2 points of mIoU (or AUROC) that a paper calls comparable. The paired differences they are
# tested on play no part in them.
MIOU_MARGIN = 0.02
# A gain must exceed what a paper calls comparable (the same 2 points), fixed before the runs.
GAIN_MARGIN = 0.02
AUROC_MARGIN = 0.02


def _last(values: list[float | None]) -> float:
    finite = [v for v in values if v is not None and not math.isnan(v)]
    return finite[-1] if finite else math.nan


def check_claims(result: NPSemiSegResult) -> ClaimReport:
    sup, mt, np_ = (result.arms[a] for a in ("supervised", "mean_teacher", "np_semiseg"))
    room = sup.miou < ROOM
    pacc = _last(np_.pseudo_accuracy)
    accurate = pacc >= PSEUDO_ACCURATE
    helps = mt.miou >= sup.miou
    auroc_gap = np_.auroc_entropy - mt.auroc_entropy
    rows = (
        Claim(
            "premise: labelled-only training leaves errors to fix",
            f"labelled-only mIoU {fmt(sup.miou, 3)}",
            f"< {ROOM:g}",
            room,
        ),
        Claim(
            "premise: the NP teacher's kept pseudo-labels are accurate",
            f"accuracy {fmt(pacc, 3)} on the hidden masks (last step)",
            f">= {PSEUDO_ACCURATE:g}",
            accurate,
        ),
        Claim(
            "premise: pseudo-labelling does not hurt here (softmax MT >= labelled-only)",
            f"mIoU {fmt(mt.miou, 3)} vs labelled-only {fmt(sup.miou, 3)}",
            "softmax mean teacher >= labelled-only",
            helps,
        ),
        Claim(
            "the NP uncertainty ranks errors (AUROC well above 0.5)",
            f"AUROC {fmt(np_.auroc_entropy, 3)}",
            f"NP AUROC >= {AUROC_MIN:g}",
            np_.auroc_entropy >= AUROC_MIN,
        ),
        Claim(
            "NP pseudo-labelling raises mIoU over labelled-only training",
            f"mIoU {fmt(np_.miou, 3)} vs labelled-only {fmt(sup.miou, 3)} "
            f"(NP - labelled-only {np_.miou - sup.miou:+.3f})",
            f"NP >= labelled-only + {GAIN_MARGIN:g}",
            np_.miou >= sup.miou + GAIN_MARGIN,
            premise_ok=room and accurate,
        ),
        Claim(
            "control: the NP entropy ranks errors no worse than the softmax head's entropy",
            f"entropy AUROC {fmt(np_.auroc_entropy, 3)} vs softmax mean teacher "
            f"{fmt(mt.auroc_entropy, 3)} (NP - softmax {auroc_gap:+.3f}; softmax 1 - max-prob "
            f"{fmt(mt.auroc_max_prob, 3)})",
            f"NP >= softmax mean teacher - {AUROC_MARGIN:g}",
            np_.auroc_entropy >= mt.auroc_entropy - AUROC_MARGIN,
        ),
        Claim(
            "control: the NP head's mIoU is no worse than the same mean teacher's softmax head",
            f"mIoU {fmt(np_.miou, 3)} vs softmax mean teacher {fmt(mt.miou, 3)}",
            f"NP >= softmax mean teacher - {MIOU_MARGIN:g}",
            np_.miou >= mt.miou - MIOU_MARGIN,
            premise_ok=room and accurate and helps,
        ),
    )
    kl_min = min(np_.kl) if np_.kl else 0.0
    invariants = (
        Invariant(
            "the KL term is never negative", f"smallest KL {fmt(kl_min, 4)}", kl_min >= -1e-6
        ),
    )
    note = (
        f"not counted: AUROC of the spread of the T samples "
        f"{fmt(np_.auroc_spread if np_.auroc_spread is not None else math.nan, 3)}; "
        f"softmax mean teacher minus labelled-only mIoU {mt.miou - sup.miou:+.3f}"
    )
    return ClaimReport(rows, note=note, invariants=invariants)
