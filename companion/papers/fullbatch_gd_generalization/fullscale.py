"""fullbatch_gd_generalization: the full preset (synthetic problems; nothing to download)."""

from __future__ import annotations

from pathlib import Path

from companion.core.fullscale import FullCheck

DATA = "nothing to download: the training sets are drawn from the two synthetic problems"
HARDWARE = (
    "CPU only (NumPy, one thread), about 4 GB of memory at n = 3,200 (1,000 training sets and "
    "their twins held at once); estimate: minutes to tens of minutes, the SGD arm's per-point "
    "loop and the tanh neuron's exact risk over its pool dominate; (arm, n) parts are saved one "
    "by one and resumed"
)
REPORTED = (
    "no experiments (a theory paper): full-batch GD's generalization error is bounded by its "
    "path's optimisation error and average output stability, O(ηT/n) for smooth convex losses, "
    "with no Lipschitz assumption, tighter than the bounds known for SGD"
)
STEPS_KEY = "steps"
SINGLE_DEVICE = True


def flops_per_step(cfg) -> float:
    """Floating-point operations per GD iteration, counted by hand: two gradients (S and S^(1))
    of 2·n·d each per training set and n, plus as much again for the recorded risks."""
    return float(sum(4 * 2 * n * cfg.d * cfg.resamples for n in cfg.ns))


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """No data files. ``tiny``: two sizes, a few training sets and steps (each finished
    (arm, n) is saved, so an interrupted run resumes after it). ``gpu``: the full preset with
    a quarter of its GD steps, on the CPU."""
    if scale == "tiny":
        overrides = dict(
            ns=(20, 40),
            resamples=8,
            steps=8,
            sgd_epochs=2,
            tanh_steps=4,
            tanh_test=200,
            t_fit=(1, 2, 4),
        )
        return FullCheck(overrides, STEPS_KEY, "no files: 2 sizes × 8 training sets")
    return FullCheck(
        {"steps": 32, "t_fit": (1, 2, 4, 8)}, STEPS_KEY, "no files: the full grid, 32 GD steps"
    )
