"""REPAIR: the full preset without its real data (fixtures on CPU, bounded GPU check)."""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck, cifar10_data, count_flops

DATA = (
    "CIFAR-10, python release (cifar-10-batches-py: data_batch_1..5, test_batch, "
    "batches.meta), read from data_root (default data/cifar-10-batches-py)"
)
HARDWARE = (
    "one GPU with ≥ 8 GB (estimate: two VGG11 of 9.2 M parameters, batch 500, bf16; the "
    "training set held in GPU memory for the merge)"
)
REPORTED = (
    "VGG11 on CIFAR-10 (official notebook): endpoints 89.4 % and 89.8 %, permuted midpoint "
    "67.3 %, with REPAIR 84.9 %; the paper: REPAIR cuts the barrier by 90 % for ResNet18 on "
    "CIFAR-10, 60–100 % across architectures and tasks (abstract)"
)
STEPS_KEY = "steps"


def flops_per_step(cfg) -> float:
    """FLOPs of one step of the run: forward and backward of a batch of ``cfg.batch_size``
    images (3 × ``size``², 10 classes) through *both* endpoint networks (A and B train one after
    the other for ``cfg.steps`` steps each, so steps × this is all the training). The merge (for
    each of ``num_alphas`` α, a few inference passes over the training set; about a sixth of the
    training FLOPs at the preset's sizes) is left out."""
    from companion.papers.repair.experiment import build_model

    with torch.device("meta"):
        model = build_model(cfg, 3, 10)
        x = torch.empty(cfg.batch_size, 3, cfg.size, cfg.size)
        y = torch.zeros(cfg.batch_size, dtype=torch.long)

    def step():
        torch.nn.functional.cross_entropy(model(x), y).backward()

    return 2 * count_flops(step)


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run: ``cfg.steps`` for each of the two networks."""
    return 2 * cfg.steps


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 40 + 20 CIFAR images, VGG11 at a first-block width of 4 (channels 4 … 32),
    3 steps of batch 20 per network with augmentation and a checkpoint after 2, the merge on
    3 values of α with statistics over batches of 20.

    ``gpu``: 50,000 + 10,000 random CIFAR images, the preset's VGG11, 200 steps per network,
    the merge on 3 values of α (the preset: 21). The merge does not grow with the steps, so
    the projected time errs on the long side."""
    if scale == "tiny":
        root, data = cifar10_data(data_dir, scale)
        overrides = dict(
            data_root=str(root),
            width=4,
            steps=3,
            batch_size=20,
            stats_batch_size=20,
            num_alphas=3,
            checkpoint_every=2,
        )
        return FullCheck(overrides, STEPS_KEY, data)
    root, data = cifar10_data(data_dir, scale)
    overrides = dict(data_root=str(root), steps=200, num_alphas=3)
    return FullCheck(overrides, STEPS_KEY, data)
