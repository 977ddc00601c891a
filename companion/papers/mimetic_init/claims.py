"""The paper's thesis, measured on a result (never typed in).

Every comparison is paired by seed (both arms of a seed share every weight but the attention's,
and every batch) and must hold by a margin, so that a tie or a difference within the noise of
one run never counts as a hold.
"""

from __future__ import annotations

import numpy as np

from companion.core import Claim, ClaimReport, fmt
from companion.errors import CompanionError
from companion.papers.mimetic_init.experiment import MimeticResult

AHEAD = 0.05  # "ahead": at least 5 points of test accuracy more, at every seed
MORE_SELF = 1.5  # self-attention at init: at least 1.5× the default init's, on average
MORE_LOCAL = 1.1  # neighbour attention at init: at least 10% more than the default init's


def mean_std(values) -> str:
    """``mean ± std`` over seeds, in percent, rounded so reruns print the same text."""
    v = 100 * np.asarray(values, dtype=float)
    return f"{fmt(v.mean(), 1)} ± {fmt(v.std(), 1)}%"


def gains(result: MimeticResult, metric) -> np.ndarray:
    """Per seed: ``metric`` of the mimetic run minus that of the default run (same seed)."""
    return np.array([metric(m) - metric(d) for d, m in zip(*_pairs(result))])


def _pairs(result: MimeticResult):
    missing = [init for init in ("default", "mimetic") if init not in result.runs]
    if missing:
        raise CompanionError(
            f"the claims compare default and mimetic init; this result has no {missing[0]!r} arm"
        )
    return result.runs["default"], result.runs["mimetic"]


def init_mass(result: MimeticResult, init: str, field: str = "init_local_mass") -> float:
    """An attention mass at initialization (``init_local_mass``: on the neighbours, query left
    out; ``init_self_mass``: on the query itself), mean over layers and seeds."""
    return float(np.mean([getattr(arm, field) for arm in result.runs[init]]))


def ahead_everywhere(result: MimeticResult, field: str) -> bool:
    """Mimetic's mass above default's in every layer of every seed."""
    default, mimetic = _pairs(result)
    return all(
        m > d
        for arm_d, arm_m in zip(default, mimetic)
        for d, m in zip(getattr(arm_d, field), getattr(arm_m, field))
    )


def check_claims(result: MimeticResult) -> ClaimReport:
    default, mimetic = _pairs(result)
    seeds = f"{len(default)} seed{'s' if len(default) > 1 else ''}"
    final_gain = gains(result, lambda a: a.final_accuracy)
    curve_gain = gains(result, lambda a: float(np.mean(a.test_accuracy)))
    self_d = init_mass(result, "default", "init_self_mass")
    self_m = init_mass(result, "mimetic", "init_self_mass")
    near_d, near_m = init_mass(result, "default"), init_mass(result, "mimetic")
    rows = (
        Claim(
            f"higher test accuracy at equal steps ({seeds})",
            f"mimetic {mean_std(result.final_accuracies('mimetic'))} vs default "
            f"{mean_std(result.final_accuracies('default'))}",
            f"mimetic ahead by ≥ {100 * AHEAD:g} points at every seed",
            bool((final_gain >= AHEAD).all()),
        ),
        Claim(
            f"trains faster ({seeds})",
            f"curve mean: mimetic "
            f"{mean_std(result.mean_curve_accuracies('mimetic'))} vs default "
            f"{mean_std(result.mean_curve_accuracies('default'))}",
            f"mimetic ahead by ≥ {100 * AHEAD:g} points at every seed",
            bool((curve_gain >= AHEAD).all()),
        ),
        Claim(
            "at init, a patch attends more to itself",
            f"self mass: mimetic {fmt(self_m, 3)} vs default {fmt(self_d, 3)} "
            f"(×{fmt(self_m / self_d)})",
            f"≥ {MORE_SELF}×, ahead in every layer and seed",
            self_m >= MORE_SELF * self_d and ahead_everywhere(result, "init_self_mass"),
        ),
        Claim(
            "at init, a patch attends more to its neighbours",
            f"3×3 mass, query left out: mimetic {fmt(near_m, 3)} vs default {fmt(near_d, 3)} "
            f"(×{fmt(near_m / near_d)})",
            f"≥ {MORE_LOCAL}×, ahead in every layer and seed",
            near_m >= MORE_LOCAL * near_d and ahead_everywhere(result, "init_local_mass"),
        ),
    )
    pos_embed = result.config.get("pos_embed", "learned")
    note = ""
    if not rows[3].holds and pos_embed == "learned":
        note = (
            "the position embeddings start as 0.02·randn, so at step 0 nothing tells a patch "
            "where its neighbours are; pos_embed='sincos' gives the P Pᵀ term a shape"
        )
    elif not all(r.holds for r in rows):
        note = "at this small scale a seed can miss a claim: try more seeds or steps"
    return ClaimReport(rows, note=note)
