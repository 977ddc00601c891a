"""The paper's thesis, measured on a result (never typed in).

All arms share the score network, its initial weights, the batches, the steps and the ELBO
estimator (the same time density and the same number of draws per test point), so their test
bits per dimension are comparable. The test ELBO is a Monte Carlo estimate: a comparison holds
only by a margin of ``NOISE_SE`` standard errors of the paired difference (every arm is
evaluated on the same test points; arms with the same K also share the draws of (s, ε)), so
that two arms whose true ELBOs are equal tie instead of one "winning" by estimator noise.
"""

from __future__ import annotations

import math

import numpy as np

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.multivariate_diffusion.experiment import MDMResult

PREMISE_SE = 4.0  # the estimator matches its closed form within 4 standard errors
NOISE_SE = 2.0  # comparisons: margin of 2 standard errors of the bpd difference
KERNEL_TOL = 1e-6


def _se_diff(a, b) -> float:
    """Standard error of mean(a − b) over the shared test points."""
    d = np.asarray(a.point_bpd) - np.asarray(b.point_bpd)
    return float(d.std(ddof=1) / math.sqrt(len(d))) if len(d) > 1 else math.inf


def premise_gaps(result: MDMResult) -> dict[str, float]:
    """|MC − closed form| / SE of the ELBO estimator on Gaussian data, per arm's diffusion."""
    return {k: abs(mc - closed) / se for k, (mc, se, closed) in result.premise.items()}


def check_claims(result: MDMResult) -> ClaimReport:
    arms = result.arms
    gaps = premise_gaps(result)
    premise_ok = max(gaps.values()) <= PREMISE_SE
    rows = [
        Claim(
            "premise: the DSM ELBO estimator matches its closed form on Gaussian data",
            "largest gap "
            + fmt(max(gaps.values()), 1)
            + " SE ("
            + ", ".join(f"{k} {fmt(v, 1)}" for k, v in gaps.items())
            + ")",
            f"every diffusion within {PREMISE_SE:g} SE",
            premise_ok,
        )
    ]
    learned = arms.get("learned")
    for name, text in (
        ("vpsde", "learned MDM matches or improves the ELBO of the VPSDE"),
        ("cld", "learned MDM matches or improves the ELBO of CLD"),
    ):
        if learned is None or name not in arms:
            continue
        other = arms[name]
        margin = NOISE_SE * _se_diff(learned, other)
        rows.append(
            Claim(
                text,
                f"test bpd {fmt(learned.test_bpd, 3)} vs {fmt(other.test_bpd, 3)} "
                f"(margin {fmt(margin, 3)})",
                f"learned ≤ {name} + {NOISE_SE:g} SE of the difference",
                learned.test_bpd <= other.test_bpd + margin,
                premise_ok=premise_ok,
            )
        )
    if learned is not None and "learned_frozen" in arms:
        frozen = arms["learned_frozen"]
        margin = NOISE_SE * _se_diff(learned, frozen)
        rows.append(
            Claim(
                "control: learning (Q, D) beats the same MDM frozen at its initialization",
                f"test bpd {fmt(learned.test_bpd, 3)} vs frozen {fmt(frozen.test_bpd, 3)} "
                f"(margin {fmt(margin, 3)})",
                f"learned < frozen − {NOISE_SE:g} SE of the difference",
                learned.test_bpd < frozen.test_bpd - margin,
                premise_ok=premise_ok,
            )
        )
    invariants = (
        Invariant(
            "the expm transition kernel equals RK4 on the moment ODEs",
            f"max abs difference {result.kernel_error:.1e}",
            result.kernel_error < KERNEL_TOL,
        ),
    )
    se = ", ".join(f"{k} {fmt(a.test_bpd_se, 3)}" for k, a in arms.items())
    note = f"standard errors of the test bpd: {se}"
    return ClaimReport(tuple(rows), note=note, invariants=invariants)
