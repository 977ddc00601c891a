"""The paper's thesis, measured on a result (never typed in).

Relative error is |Ŵ − W|/W against POT's exact W; the boosted arm's is the mean over random
shifts (the abstract's bound is an expectation over the shift). "Smallest W" and "largest W" are
the first and last σ of the run.

Thresholds, all fixed from the theory or from what the words mean, before seeds 5–9 were run:

* An additive error e on a distance W gives a relative error e/W, which grows by the factor
  W_max/W_min over the run. "Explodes" asks for at least a tenth of that growth; "stays bounded"
  asks for at most its square root (half of it on a log scale), while W shrinks by at least
  ``W_RANGE`` = 100.
* The abstract's bound is d·log_{√d/ε}n·W: d times the number of levels of the hierarchy, with
  an unstated constant. In the reconstruction the depth is set by how far apart μ's and ν's
  points are (:func:`~companion.papers.w1_boosting.method.leaf_level`), so the row compares the
  relative error with d × (levels, mean over shifts) at each σ and allows the constant
  ``BOUND_CONST`` = 2, chosen on seeds 0–4 (largest measured ratio 1.1, with 10 shifts).
  This is more lenient than the abstract read literally: the depth used (5–9 levels here)
  exceeds log_k n of the distinct points, and against 2·d·log_k n the smallest-W error fails
  at some seeds. The reconstruction's depth follows the spread of the points, not n.
* "Lower" at the smallest W means at least ``FACTOR`` = 10 times lower: over seeds 0–4 the plain
  and control errors there were hundreds of times the boosted one, so 10 is far from the spread.
* The number of shifts per σ (10, raised from 5) and the constants above were set once, looking
  at seeds 0–4 only, before seeds 5–9 were run.
* The worst-case row (the same boosting and shifts with a black box that returns the exact W plus
  the whole budget ε/d at every call) reuses the bound row's criterion and ``BOUND_CONST``
  unchanged; it was added later, with the criterion fixed before the arm was run on any seed. It
  is not implied by the rows above: it is the stronger statement (its estimate is never below
  the boosted one at the same shift), and at the smallest W, where the hierarchy makes no
  black-box call, the two coincide.
"""

from __future__ import annotations

import math

import numpy as np

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.w1_boosting.experiment import W1BoostingResult

W_RANGE = 100.0  # premise: W spans at least this factor, all of it below ε/2
GROWTH_EXPLODES = 0.1  # plain: relative error grows ≥ 0.1 × W_max/W_min
GROWTH_BOUNDED = 0.5  # boosted: relative error grows ≤ (W_max/W_min)^0.5 over the same range
BOUND_CONST = 2.0  # boosted: relative error ≤ 2·d·(levels) at every W
FACTOR = 10.0  # boosted at least 10× lower relative error than plain / control at the smallest W


def theory_bound(result: W1BoostingResult) -> list[float]:
    """``BOUND_CONST · d · L`` at each σ, L the hierarchy's levels (mean over shifts): the
    abstract's d·log_{√d/ε}n, with the depth the reconstruction actually used."""
    return [BOUND_CONST * result.dim * float(np.mean(r.levels)) for r in result.runs]


def log_k_n(result: W1BoostingResult) -> float:
    """log_k n, k = ⌈√d/ε⌉, n the distinct support points: the abstract's number of levels."""
    return math.log(result.distinct) / math.log(result.k)


def check_claims(result: W1BoostingResult) -> ClaimReport:
    w = result.w
    w_range = w[0] / w[-1]
    regime = w_range >= W_RANGE and w[0] <= result.eps / 2
    plain, control, boosted = result.rel("plain"), result.rel("control"), result.rel("boosted")
    worst = result.rel("worst")
    plain_growth = plain[-1] / plain[0]
    boosted_growth = boosted[-1] / max(boosted[0], 1e-300)
    bound = theory_bound(result)
    ratio = max(b / (c / BOUND_CONST) for b, c in zip(boosted, bound))
    worst_ratio = max(b / (c / BOUND_CONST) for b, c in zip(worst, bound))
    lo = min(min(r.levels) for r in result.runs)
    hi = max(max(r.levels) for r in result.runs)
    rows = [
        Claim(
            "premise: W shrinks over a wide range, all of it below ε",
            f"W from {fmt(w[0], 4)} to {fmt(w[-1], 7)} ({fmt(w_range, 1)}×), ε = {result.eps:g}",
            f"W_max/W_min ≥ {W_RANGE:g} and W_max ≤ ε/2",
            regime,
        ),
        Claim(
            "the plain additive estimate's relative error explodes as W → 0",
            f"relative error {fmt(plain[0], 2)} → {fmt(plain[-1], 1)} ({fmt(plain_growth, 1)}×)",
            f"grows ≥ {GROWTH_EXPLODES:g} × W_max/W_min",
            plain_growth >= GROWTH_EXPLODES * w_range,
            premise_ok=regime,
        ),
        Claim(
            "the boosted estimate's relative error stays bounded as W → 0",
            f"relative error {fmt(boosted[0], 2)} → {fmt(boosted[-1], 2)} "
            f"({fmt(boosted_growth, 1)}×)",
            f"grows ≤ (W_max/W_min)^{GROWTH_BOUNDED:g}",
            boosted_growth <= w_range**GROWTH_BOUNDED,
            premise_ok=regime,
        ),
        Claim(
            "... and below d × (levels of the hierarchy), the abstract's d·log_{√d/ε} n",
            f"largest ratio {fmt(ratio, 2)} (levels {fmt(lo, 0)}–{fmt(hi, 0)}, "
            f"log_k n = {fmt(log_k_n(result), 1)})",
            f"relative error ≤ {BOUND_CONST:g}·d·levels at every W",
            ratio <= BOUND_CONST,
            premise_ok=regime,
        ),
        Claim(
            "... even with the worst black box allowed (exact W + ε/d at every call)",
            f"largest ratio {fmt(worst_ratio, 2)} (relative error up to {fmt(max(worst), 1)})",
            f"relative error ≤ {BOUND_CONST:g}·d·levels at every W",
            worst_ratio <= BOUND_CONST,
            premise_ok=regime,
        ),
        Claim(
            "at the smallest W, boosting beats the plain estimate",
            f"relative error {fmt(boosted[-1], 2)} vs {fmt(plain[-1], 1)}",
            f"≥ {FACTOR:g}× lower",
            FACTOR * boosted[-1] <= plain[-1],
            premise_ok=regime,
        ),
        Claim(
            "control: the gain is the hierarchy's, not the finer ε/d (black box alone at ε/d)",
            f"relative error {fmt(boosted[-1], 2)} vs {fmt(control[-1], 1)}",
            f"≥ {FACTOR:g}× lower",
            FACTOR * boosted[-1] <= control[-1],
            premise_ok=regime,
        ),
    ]
    note = ""
    if not all(r.holds for r in rows):
        note = (
            "a row fails: with points spread out (large blob_std or small n) the black box's grid "
            "cells hold one point each and its lifting is exact, so no additive error shows"
        )
    return ClaimReport(tuple(rows), note=note, invariants=invariants(result))


def invariants(result: W1BoostingResult) -> tuple[Invariant, ...]:
    """Properties true by construction, checked on the run (not counted)."""
    tol = 1e-9
    plain_ok = all(r.exact - tol <= r.plain <= r.exact + result.eps + tol for r in result.runs)
    control_ok = all(
        r.exact - tol <= r.control <= r.exact + result.eps / result.dim + tol for r in result.runs
    )
    above = all(v >= r.exact * (1 - 1e-9) - tol for r in result.runs for v in r.boosted)
    cap = result.k**result.dim + 1
    largest = max(max(r.largest) for r in result.runs)
    return (
        Invariant(
            "plain black box: W ≤ A(μ, ν, ε) ≤ W + ε at every σ",
            "within" if plain_ok else "outside the bound",
            plain_ok,
        ),
        Invariant(
            "control: W ≤ A(μ, ν, ε/d) ≤ W + ε/d at every σ",
            "within" if control_ok else "outside the bound",
            control_ok,
        ),
        Invariant(
            "boosted estimate ≥ W (a sum of feasible moves)",
            "every shift" if above else "below W",
            above,
        ),
        Invariant(
            "no black-box call has more than k^d + 1 supports",
            f"largest call {largest}, k^d + 1 = {cap}",
            largest <= cap,
        ),
    )
