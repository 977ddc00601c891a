"""The paper's claims, measured on a result (never typed in).

All arms start from the same backbone weights, see the same batches and train for the same
number of steps, so their numbers are paired. The thresholds were fixed before any run; the mIoU
margin ``GAIN`` was then sized on seeds 0-4 only (held-out seeds 5-9 were not used).
"""

from __future__ import annotations

import math

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.np_semiseg.experiment import NPSemiSegResult

ROOM = 0.9  # premise: labelled-only mIoU below this leaves errors for pseudo-labels to fix
PSEUDO_ACCURATE = 0.9  # premise: the kept pseudo-labels are at least this accurate
AUROC_MIN = 0.75  # "well above 0.5": a misclassified pixel outranks a correct one 3 times in 4
# mIoU margin for "raises mIoU" (absolute, paired within a seed). Sized on seeds 0-4: the paired
# differences NP − labelled-only and NP − softmax mean teacher have standard deviations 0.026 and
# 0.037 over those seeds, so a gain must exceed about 1.5 of them: 0.05 (first set at 0.02, which
# the control row then passed at 2 of 5 seeds by noise alone).
GAIN = 0.05


def _last(values: list[float | None]) -> float:
    finite = [v for v in values if v is not None and not math.isnan(v)]
    return finite[-1] if finite else math.nan


def check_claims(result: NPSemiSegResult) -> ClaimReport:
    sup, mt, np_ = (result.arms[a] for a in ("supervised", "mean_teacher", "np_semiseg"))
    room = sup.miou < ROOM
    pacc = _last(np_.pseudo_accuracy)
    accurate = pacc >= PSEUDO_ACCURATE
    winner = "NP entropy" if np_.auroc_entropy > mt.auroc_max_prob else "softmax max-prob"
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
            "the NP uncertainty ranks errors (AUROC well above 0.5)",
            f"AUROC {fmt(np_.auroc_entropy, 3)}; reference softmax max-prob "
            f"{fmt(mt.auroc_max_prob, 3)} ({winner} higher)",
            f"NP AUROC >= {AUROC_MIN:g}",
            np_.auroc_entropy >= AUROC_MIN,
        ),
        Claim(
            "NP pseudo-labelling raises mIoU over labelled-only training",
            f"mIoU {fmt(np_.miou, 3)} vs labelled-only {fmt(sup.miou, 3)}",
            f"NP >= labelled-only + {GAIN:g}",
            np_.miou >= sup.miou + GAIN,
            premise_ok=room and accurate,
        ),
        Claim(
            "control: the NP head beats the same mean teacher with a softmax head",
            f"mIoU {fmt(np_.miou, 3)} vs softmax mean teacher {fmt(mt.miou, 3)}",
            f"NP >= softmax mean teacher + {GAIN:g}",
            np_.miou >= mt.miou + GAIN,
            premise_ok=room and accurate,
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
