"""The paper's thesis, measured on a result (never typed in).

The three arms of a run start from the same classifier weights and see the same batches, so their
accuracies are paired. A comparison holds only by a margin (named constants below).
"""

from __future__ import annotations

import math

import torch

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.instaaug.experiment import InstaAugResult
from companion.papers.instaaug.method import pearson

R_MIN = 0.3  # "the learned ranges follow the ideal ones": Pearson r at least this
MATCH = 0.05  # "matches": InstaAug's test accuracy at most 5 points below a baseline


def range_correlations(result: InstaAugResult, method: str = "instance") -> tuple[float, float]:
    """Pearson r over the test inputs between learned and ideal ranges: (r_a, r_b)."""
    learned, ideal = torch.tensor(result.arms[method].ranges), result.ideal()
    return pearson(learned[:, 0], ideal[:, 0]), pearson(learned[:, 1], ideal[:, 1])


def range_swing(arm) -> tuple[float, float]:
    """(min, max) of the mean total range a + b on the test inputs, recorded during the second
    half of training: how far the ranges still oscillate (0, 0 without records)."""
    steps = torch.tensor(arm.range_steps, dtype=torch.float64)
    if len(steps) == 0:
        return 0.0, 0.0
    total = torch.tensor(arm.mean_a, dtype=torch.float64) + torch.tensor(arm.mean_b)
    late = total[steps >= steps.max() / 2]
    return late.min().item(), late.max().item()


def check_claims(result: InstaAugResult) -> ClaimReport:
    arms = result.arms
    inst = arms["instance"]
    r_a, r_b = range_correlations(result)
    acc = {k: a.test_accuracy for k, a in arms.items()}
    rows = (
        Claim(
            "InstaAug's counter-clockwise range a follows the ideal w − α",
            f"Pearson r {fmt(r_a)} over {len(result.test_offsets)} test inputs",
            f"r ≥ {R_MIN}",
            r_a >= R_MIN,
        ),
        Claim(
            "InstaAug's clockwise range b follows the ideal w + α",
            f"Pearson r {fmt(r_b)}",
            f"r ≥ {R_MIN}",
            r_b >= R_MIN,
        ),
        Claim(
            "accuracy matches or beats no augmentation",
            f"test accuracy {fmt(acc['instance'], 3)} vs {fmt(acc['none'], 3)}",
            f"InstaAug ≥ none − {MATCH}",
            acc["instance"] >= acc["none"] - MATCH,
        ),
        Claim(
            "accuracy matches or beats one global learned range",
            f"test accuracy {fmt(acc['instance'], 3)} vs {fmt(acc['global'], 3)}",
            f"InstaAug ≥ global − {MATCH}",
            acc["instance"] >= acc["global"] - MATCH,
        ),
    )
    learned = torch.tensor(inst.ranges)
    inside = bool(((learned > 0) & (learned < math.pi)).all())
    glob = torch.tensor(arms["global"].ranges)
    same = bool((glob == glob[0]).all())
    invariants = (
        Invariant(
            "every learned range lies in (0, π) (a = π·sigmoid(a′ − 2))",
            f"min {learned.min().item():.1e}, max {fmt(learned.max().item(), 3)} rad",
            inside,
        ),
        Invariant(
            "the global arm gives every input the same range",
            f"a = {fmt(glob[0, 0].item(), 3)}, b = {fmt(glob[0, 1].item(), 3)} rad",
            same,
        ),
    )
    lo, hi = range_swing(inst)
    note = (
        "not counted: mean learned range a, b = "
        f"{fmt(learned[:, 0].mean().item(), 3)}, {fmt(learned[:, 1].mean().item(), 3)} rad "
        f"(ideal mean w = {fmt(result.half_width, 3)}); over the second half of training the "
        f"mean a + b swung between {fmt(lo, 3)} and {fmt(hi, 3)} rad"
    )
    # printed whatever row 4's verdict: that verdict sits near its margin and flips between CPU
    # kernels at seed 0, and a note that followed it would differ between machines
    note += (
        f"; the global arm's one range stays near where it started (a + b = "
        f"{fmt(glob[0].sum().item(), 3)} rad): at φ's learning rate one scalar per direction "
        "moves little, so that arm acts as a fixed small rotation"
    )
    return ClaimReport(rows, note=note, invariants=invariants)
