"""The paper's thesis, measured on a result (never typed in).

The arms start from the same backbone and classifier weights and see the same batches, so their
numbers are paired. BCWC is measured as the *confusion gap*: the mean cosine similarity of the
class weights of the pairs that share boundaries minus that of the pairs that never touch. The
classes are equidistant in colour, so without boundaries the gap would be zero on average; the
gap (rather than the raw similarity of touching pairs) is compared between arms because the
module changes the features, and with them every weight's similarity, the non-touching ones
included. The arms' gap curves cross all run long, so every gap is the mean over the last
quarter of training (the measurements at steps ≥ 0.75 × steps), not the value at the last step.
A comparison holds only by a margin (a named constant below), never by a tie.

The baseline removes the whole module. The module also rescales every feature through its
centre term k_ii μ_i F_i, so the control that removes only the kernel messages between
neighbouring pixels is the ``centre_only`` arm (kernel restricted to j = i; the superpixel
prior, itself an average over pixels, is kept); the E-CRF claim is counted against it too.
``ecrf_nosp`` is an ablation (it removes the superpixel prior).
"""

from __future__ import annotations

import numpy as np

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.e_crf.experiment import ArmResult, ECRFResult

LATE_FRACTION = 0.75  # gaps are averaged over the measurements at steps ≥ 0.75 × steps

# The premise margin was fixed before the first multi-seed run: a few hundredths of cosine
# similarity, well above zero (the gap's expected value when boundaries do not matter).
PREMISE_GAP = 0.05  # baseline: touching pairs ≥ 0.05 more similar than non-touching pairs
# GAP_DROP re-sized on seeds 0-4 only (notebook preset, late-quarter gaps) by the rule
# "2 × the standard deviation (ddof=1) of the paired differences baseline gap − E-CRF gap,
# rounded up to 0.01": the differences were 0.004, 0.033, 0.088, 0.084, −0.039 (mean 0.034,
# sd 0.054), so 2 × 0.054 = 0.108 → 0.11. The same margin serves every gap comparison.
GAP_DROP = 0.11  # a gap at least GAP_DROP below the compared arm's
BOUNDARY_GAIN = 0.002  # boundary mIoU at least 0.2 points above the baseline's


def late_mean(steps: list[int], values: list[float], total_steps: int) -> float:
    """Mean of ``values`` over the measurements at steps ≥ LATE_FRACTION × ``total_steps`` (the
    last measurement if none is that late)."""
    late = [v for s, v in zip(steps, values) if s >= LATE_FRACTION * total_steps]
    return float(np.mean(late)) if late else float(values[-1])


def confusion_gap(arm: ArmResult, total_steps: int) -> float:
    """Touching minus non-touching mean cosine similarity of the class weights, averaged over
    the last quarter of training."""
    gaps = [t - a for t, a in zip(arm.sim_touching, arm.sim_apart)]
    return late_mean(arm.measure_steps, gaps, total_steps)


def check_claims(result: ECRFResult) -> ClaimReport:
    arms = result.arms
    total = int(result.config["steps"])
    base = arms["baseline"]
    base_gap = confusion_gap(base, total)
    premise = base_gap >= PREMISE_GAP
    touch = late_mean(base.measure_steps, base.sim_touching, total)
    apart = late_mean(base.measure_steps, base.sim_apart, total)
    rows = [
        Claim(
            "premise: without E-CRF, touching classes have more similar weights (BCWC)",
            f"cosine sim. touching {fmt(touch)} vs apart {fmt(apart)} (gap {fmt(base_gap, 3)})",
            f"gap ≥ {PREMISE_GAP}",
            premise,
        )
    ]
    if "ecrf" in arms:
        ecrf = arms["ecrf"]
        gap = confusion_gap(ecrf, total)
        rows += [
            Claim(
                "E-CRF lowers the touching classes' excess weight similarity",
                f"gap {fmt(gap, 3)} vs baseline {fmt(base_gap, 3)}",
                f"E-CRF ≤ baseline − {GAP_DROP}",
                gap <= base_gap - GAP_DROP,
                premise_ok=premise,
            ),
        ]
        if "centre_only" in arms:
            centre_gap = confusion_gap(arms["centre_only"], total)
            rows.append(
                Claim(
                    "control: E-CRF's gap is below the centre-only module's (messages, "
                    "not the rescaling)",
                    f"gap {fmt(gap, 3)} vs centre-only {fmt(centre_gap, 3)}",
                    f"E-CRF ≤ centre-only − {GAP_DROP}",
                    gap <= centre_gap - GAP_DROP,
                    premise_ok=premise,
                )
            )
        rows += [
            Claim(
                "E-CRF raises the boundary mIoU",
                f"boundary mIoU {fmt(ecrf.boundary_miou, 3)} vs baseline "
                f"{fmt(base.boundary_miou, 3)}",
                f"E-CRF ≥ baseline + {BOUNDARY_GAIN}",
                ecrf.boundary_miou >= base.boundary_miou + BOUNDARY_GAIN,
                premise_ok=premise,
            ),
        ]
    if "ecrf_nosp" in arms:
        nosp = arms["ecrf_nosp"]
        gap = confusion_gap(nosp, total)
        rows.append(
            Claim(
                "ablation: the module without superpixels lowers the gap too",
                f"gap {fmt(gap, 3)} vs baseline {fmt(base_gap, 3)}",
                f"no-superpixel E-CRF ≤ baseline − {GAP_DROP}",
                gap <= base_gap - GAP_DROP,
                premise_ok=premise,
            )
        )
    selfsim = max(abs(arm.similarity[k][k] - 1.0) for arm in arms.values() for k in range(4))
    invariants = (
        Invariant(
            "a class weight's cosine similarity with itself is 1",
            f"largest deviation {selfsim:.1e}",
            selfsim < 1e-4,
        ),
    )
    note = (
        f"gaps: mean over the measurements at steps ≥ {LATE_FRACTION:g} × {total}; "
        f"interior mIoU (pixels farther than {result.config['band']} px from a boundary): "
        + ", ".join(f"{m} {fmt(a.interior_miou, 3)}" for m, a in arms.items())
        + f"; {fmt(100 * result.boundary_share, 0)}% of the test pixels lie in the boundary band"
    )
    return ClaimReport(tuple(rows), note=note, invariants=invariants)
