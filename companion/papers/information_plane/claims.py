"""The paper's thesis, measured on a result (never typed in)."""

from __future__ import annotations

import math

from companion.core import Claim, ClaimReport, fmt
from companion.papers.information_plane.experiment import InformationPlaneResult, log_n

# Both on the scale of the information plane's axis, [0, log N] (X uniform over N inputs):
STABLE = 0.05  # "stable": across MC sample counts the estimate moves by <= 5% of log N
SWING = 0.25  # "changes strongly": over the bin counts, a range of >= 25% of log N
RATIO = 10.0  # and >= 10 times the range of the dropout estimate over its sample counts


def spread(values: list[float]) -> float:
    """max − min (0 for fewer than two values)."""
    return max(values) - min(values) if len(values) > 1 else 0.0


def binning_sweep(result: InformationPlaneResult, arm: str = "deterministic") -> dict[int, float]:
    """Binning ``I(X;T)`` on the training inputs at the end of training, per bin count."""
    ixt = result.arms[arm].binning["train"]["ixt"]
    return {int(b): values[-1] for b, values in ixt.items()}


def check_claims(result: InformationPlaneResult) -> ClaimReport:
    drop = result.arms["dropout"]
    all_ixz = drop.ixz["train"] + drop.ixz["val"]
    finite = all(math.isfinite(v) for v in all_ixz)

    draws = drop.sweep_draws_ixz
    mc_spread = spread(draws)

    sweep = binning_sweep(result)
    lo_bins, hi_bins = min(sweep, key=sweep.get), max(sweep, key=sweep.get)
    bin_spread = spread(list(sweep.values()))

    lower, upper = drop.sweep_points_lower, drop.sweep_points_upper
    gaps = [u - lo for lo, u in zip(lower, upper)]
    points = drop.sweep_points

    rows = (
        Claim(
            "dropout: the I(X;Z) estimate is finite",
            f"train {fmt(min(drop.ixz['train']))}..{fmt(max(drop.ixz['train']))}, "
            f"val {fmt(min(drop.ixz['val']))}..{fmt(max(drop.ixz['val']))} nats "
            f"(log N = {fmt(log_n(result))} / {fmt(log_n(result, 'val'))})",
            "finite at every epoch",
            finite,
        ),
        Claim(
            "dropout: the estimate is stable as its sample count grows",
            f"{fmt(min(draws))}..{fmt(max(draws))} nats over {drop.sweep_draws[0]}-"
            f"{drop.sweep_draws[-1]} draws per input (range "
            f"{fmt(100 * mc_spread / log_n(result), 1)}% of log N)",
            f"range <= {STABLE:.0%} of log N",
            mc_spread <= STABLE * log_n(result),
        ),
        Claim(
            "deterministic: the binning estimate swings with the bins",
            f"I(X;T) {fmt(sweep[lo_bins])} ({lo_bins} bins) to {fmt(sweep[hi_bins])} "
            f"({hi_bins} bins)",
            f"range >= {SWING:.0%} of log N",
            bin_spread >= SWING * log_n(result),
        ),
        Claim(
            "binning swings far more than the dropout estimate",
            f"range {fmt(bin_spread)} vs {fmt(mc_spread)} nats",
            f">= {RATIO:g}x",
            bin_spread > 0 and bin_spread >= RATIO * mc_spread,
        ),
        Claim(
            "dropout: the continuous-input MI is bracketed, tighter with more data",
            f"upper − lower {fmt(gaps[0])} (N = {points[0]}) to {fmt(gaps[-1])} "
            f"(N = {points[-1]}) nats",
            "finite and narrowing",
            all(math.isfinite(g) for g in gaps) and gaps[-1] < gaps[0],
        ),
    )
    return ClaimReport(
        rows,
        note=""
        if all(r.holds for r in rows)
        else "at this small scale a seed can miss a claim: try other seeds, more epochs, or "
        "the full preset",
    )
