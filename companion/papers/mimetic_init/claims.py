"""The paper's thesis, measured on a result (never typed in)."""

from __future__ import annotations

import numpy as np

from companion.core import Claim, ClaimReport, fmt
from companion.errors import CompanionError
from companion.papers.mimetic_init.experiment import MimeticResult

MORE_LOCAL = 1.1  # "measurably more": at least 10% more attention mass near the diagonal


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


def init_local_mass(result: MimeticResult, init: str) -> float:
    """Attention mass near the diagonal at initialization, mean over layers and seeds."""
    return float(np.mean([arm.init_local_mass for arm in result.runs[init]]))


def check_claims(result: MimeticResult) -> ClaimReport:
    default, mimetic = _pairs(result)
    seeds = f"{len(default)} seed{'s' if len(default) > 1 else ''}"
    final_gain = gains(result, lambda a: a.final_accuracy)
    curve_gain = gains(result, lambda a: float(np.mean(a.test_accuracy)))
    mass_d, mass_m = init_local_mass(result, "default"), init_local_mass(result, "mimetic")
    every_layer = all(
        m > d
        for arm_d, arm_m in zip(default, mimetic)
        for d, m in zip(arm_d.init_local_mass, arm_m.init_local_mass)
    )
    rows = (
        Claim(
            f"higher test accuracy at equal steps ({seeds})",
            f"mimetic {mean_std(result.final_accuracies('mimetic'))} vs default "
            f"{mean_std(result.final_accuracies('default'))}",
            "mimetic ahead at every seed",
            bool((final_gain > 0).all()),
        ),
        Claim(
            f"trains faster ({seeds})",
            f"curve mean: mimetic "
            f"{mean_std(result.mean_curve_accuracies('mimetic'))} vs default "
            f"{mean_std(result.mean_curve_accuracies('default'))}",
            "mimetic ahead at every seed",
            bool((curve_gain > 0).all()),
        ),
        Claim(
            "at init, attention is more local",
            f"3×3 mass: mimetic {fmt(mass_m, 3)} vs default {fmt(mass_d, 3)} "
            f"(×{fmt(mass_m / mass_d)})",
            f"≥ {MORE_LOCAL}×, ahead in every layer and seed",
            mass_m >= MORE_LOCAL * mass_d and every_layer,
        ),
    )
    return ClaimReport(
        rows,
        note=""
        if all(r.holds for r in rows)
        else "at this small scale a seed can miss a claim: try more seeds or steps, or the "
        "full preset",
    )
