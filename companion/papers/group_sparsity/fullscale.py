"""Implicit group sparsity: the full preset needs no data files (the data are simulated)."""

from __future__ import annotations

from pathlib import Path

from companion.core.fullscale import FullCheck

DATA = "none: Rademacher designs and Gaussian noise simulated from the seed (official Simulation)"
HARDWARE = (
    "one CPU core or any GPU (estimate: 270 data sets of at most 200 × 500 trained as one batch, "
    "three networks, 5,000 full-batch steps each)"
)
REPORTED = (
    "group_vs_sparse (m=100, p=500, 4 groups of 4 equal to 1, σ=0.5): each support group rises "
    "as a block while off-support entries stay near zero; the diagonal network's entries enter "
    "one by one. The paper also reports better sample complexity than diagonal linear networks "
    "(abstract) and errors comparable to a tuned group lasso (Comparisons notebook)"
)
STEPS_KEY = "epochs"


def flops_per_step(cfg) -> float:
    """FLOPs of one epoch of all three networks on all data sets: forward X·w and backward
    Xᵀ·r for every data set (2 · 2 · m · p each, zero-padded to the largest m), per network.
    The (group) lasso fits (on the CPU) are left out."""
    networks = [m for m in cfg.methods if m not in ("lasso", "group_lasso")]
    n_sets = len(cfg.sample_sizes) * cfg.draws
    return float(len(networks) * n_sets * 4 * max(cfg.sample_sizes) * cfg.p)


def optimizer_steps(cfg) -> int:
    """Full-batch steps of the whole run: ``cfg.epochs`` for each network."""
    return len([m for m in cfg.methods if m not in ("lasso", "group_lasso")]) * cfg.epochs


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: the preset's grid cut to two sample sizes, one draw, p = 100, 20 epochs with a
    checkpoint after 10. ``gpu``: the preset's sizes, 500 epochs."""
    if scale == "tiny":
        overrides = dict(
            p=100,
            sample_sizes=(40, 100),
            draws=1,
            trace_m=100,
            compare_m=100,
            epochs=20,
            record_every=5,
            checkpoint_every=10,
        )
        return FullCheck(overrides, STEPS_KEY, DATA)
    return FullCheck(dict(epochs=500), STEPS_KEY, DATA)
