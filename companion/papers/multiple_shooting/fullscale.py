"""Multiple shooting: the full preset (the paper's long trajectories and model sizes on synthetic
pendulum data generated in memory; no files to read), checked small on CPU and bounded on GPU."""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck, count_flops

DATA = (
    "synthetic damped-pendulum trajectories observed through a random linear map plus noise, "
    "generated in memory from the seed (the paper's pendulum data are rendered images; see "
    "'What was simplified')"
)
HARDWARE = "one GPU or a CPU node (estimate: K=32, F of width 256, batch 16 × 257 time points)"
REPORTED = (
    "no table values verified: stable training on long trajectories and state-of-the-art test "
    "MSE on Pendulum, RMNIST and Bouncing Balls (abstract); multiple shooting trains where "
    "single shooting on the whole trajectory does not"
)
STEPS_KEY = "steps"


def flops_per_step(cfg) -> float:
    """FLOPs of one optimiser step of every arm in ``cfg.methods`` (forward and backward of the
    ELBO on one batch; evaluation left out), counted on CPU at the preset's sizes."""
    from companion.papers.multiple_shooting.experiment import build_model, solver_args
    from companion.papers.multiple_shooting.method import elbo

    t = torch.linspace(0, cfg.duration, cfg.num_points)
    y = torch.zeros(cfg.batch_size, cfg.num_points, cfg.obs_dim)
    solver, step = solver_args(cfg, t)
    total = 0.0
    for method in cfg.methods:
        model = build_model(cfg)

        def one_step(model=model, method=method):
            out = elbo(model, y, t, cfg.blocks(method), solver, step)
            (-out["elbo"].mean()).backward()

        total += count_flops(one_step)
    return total


def optimizer_steps(cfg) -> int:
    """Optimiser steps of the whole run: ``cfg.steps`` for each arm in ``cfg.methods``."""
    return len(cfg.methods) * cfg.steps


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: the preset's pipeline with 8 + 4 trajectories of 17 points, K=4, 4 steps per arm
    and a checkpoint after 2. ``gpu``: the preset's sizes, 300 steps per arm."""
    data = "synthetic pendulum trajectories, generated in memory (no files)"
    if scale == "tiny":
        overrides = dict(
            n_train=8,
            n_test=4,
            num_points=17,
            duration=4.0,
            latent_dim=4,
            width=16,
            enc_width=16,
            batch_size=4,
            steps=4,
            measure_every=2,
            checkpoint_every=2,
        )
        return FullCheck(overrides, STEPS_KEY, data)
    return FullCheck(dict(steps=300, measure_every=100, checkpoint_every=100), STEPS_KEY, data)
