"""W₁ boosting: the full preset without real data (fixtures on CPU, bounded GPU check).

The data are generated (blobs in the unit square), so no file is written; the ``tiny`` check
shrinks the sizes, never the algorithm. Everything runs on a CPU in float64 (POT's network
simplex); a GPU does not help.
"""

from __future__ import annotations

from pathlib import Path

from companion.core.fullscale import FullCheck

DATA = "nothing to download: point sets in the unit square (Gaussian blobs) are generated"
HARDWARE = (
    "a CPU is enough: POT's exact solver on 2,000 × 2,000 points (a 32 MB cost matrix) per σ; "
    "no GPU is used"
)
REPORTED = (
    "the abstract: expected error min{ε, d·log_{√d/ε}n·W} in O(T(n, ε/d)·log n) time for any "
    "additive-ε algorithm with time T(n, ε); d·log log n·W for bipartite matching (no "
    "experiments in the available text)"
)
MEASURED = (
    "318 s wall (81 s of CPU time) on one thread of a shared, heavily loaded 2-core CPU, "
    "seed 0, all seven claims holding"
)
STEPS_KEY = "n"
SINGLE_DEVICE = True


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 40 points in 4 blobs, two σ, two shifts. ``gpu``: the preset's sizes."""
    if scale == "tiny":
        overrides = dict(n=40, n_blobs=4, sigmas=(1e-4, 1e-2), n_shifts=2)
        return FullCheck(overrides, STEPS_KEY, "generated blobs, 40 points")
    return FullCheck(dict(n=2000), STEPS_KEY, "generated blobs, 2,000 points")
