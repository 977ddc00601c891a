"""The paper's thesis, measured on a result (never typed in).

Gains are in accuracy points (percentage points) of the student's encoder over its random
teacher's encoder, on held-out images, after distillation.
"""

from __future__ import annotations

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.random_teachers.experiment import RandomTeachersResult

CLEAR_GAIN = 2.0  # "clearly exceeds": at least 2 accuracy points above the teacher
LOCALITY_MARGIN = 2.0  # the close start gains at least 2 points more than the independent start


def gain(result: RandomTeachersResult, alpha: float, probe: str) -> float:
    """Student (start α) minus teacher accuracy, in points, for ``probe`` ∈ {linear, knn}."""
    student = getattr(result.arm(alpha), f"final_{probe}")
    return 100 * (student - result.teacher[probe])


def mean_gain(result: RandomTeachersResult, alpha: float) -> float:
    """The gain averaged over the two probes."""
    return (gain(result, alpha, "linear") + gain(result, alpha, "knn")) / 2


def check_claims(result: RandomTeachersResult) -> ClaimReport:
    close, far = min(result.alphas), max(result.alphas)
    teacher, student = result.teacher, result.arm(close)
    rows = []
    for probe, name in (("linear", "linear-probe"), ("knn", "kNN")):
        g = gain(result, close, probe)
        rows.append(
            Claim(
                f"student (α={close:g}) beats its random teacher, {name}",
                f"{fmt(100 * teacher[probe], 1)}% → "
                f"{fmt(100 * getattr(student, f'final_{probe}'), 1)}% ({g:+.1f} pts)",
                f"gain ≥ {CLEAR_GAIN:g} pts",
                g >= CLEAR_GAIN,
            )
        )
    g_close, g_far = mean_gain(result, close), mean_gain(result, far)
    rows.append(
        Claim(
            "the gain is larger when the student starts close to the teacher",
            f"mean gain α={close:g}: {g_close:+.1f} pts, α={far:g}: {g_far:+.1f} pts",
            f"difference ≥ {LOCALITY_MARGIN:g} pts",
            g_close - g_far >= LOCALITY_MARGIN,
        )
    )
    note = ""
    if not all(r.holds for r in rows):
        step = f" (one of the {result.n_test} held-out images is {100 / result.n_test:.2f} pts)"
        small = result.config["dataset"] != "cifar10"  # cifar10: the full preset's data
        note = (
            ("single small runs are noisy" if small else "single runs are noisy")
            + (step if result.n_test else "")
            + (
                ": try other seeds, more steps, or the full preset"
                if small
                else ": try other seeds"
            )
        )
    return ClaimReport(tuple(rows), note=note, invariants=invariants(result))


def invariants(result: RandomTeachersResult) -> tuple[Invariant, ...]:
    """Properties true by construction, checked on the run (not counted as claims)."""
    out = []
    if 0.0 in result.alphas:
        copy = result.arm(0.0)
        out.append(
            Invariant(
                "the α=0 student starts as an exact copy of its teacher",
                f"distance at step 0: {copy.distance_to_teacher[0]:g}; step-0 probes equal "
                "the teacher's",
                copy.distance_to_teacher[0] == 0
                and copy.linear[0] == result.teacher["linear"]
                and copy.knn[0] == result.teacher["knn"],
            )
        )
    lowest = min(min(arm.kl) for arm in result.students.values())
    out.append(
        Invariant(
            "KL(teacher ‖ student) ≥ 0 at every step (up to float32 rounding)",
            f"smallest KL {lowest:.1e}",
            lowest >= -1e-6,
        )
    )
    return tuple(out)
