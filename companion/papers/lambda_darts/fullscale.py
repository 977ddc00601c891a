"""Λ-DARTS: the full preset without its real data (fixtures on CPU, bounded GPU check)."""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck, cifar10_data, count_flops

DATA = (
    "CIFAR-10, python release (cifar-10-batches-py: data_batch_1..5, test_batch, "
    "batches.meta), read from data_root (default data/cifar-10-batches-py)"
)
HARDWARE = "one GPU with ≥ 8 GB (8 cells of 16 channels, batch 64, float32)"
REPORTED = (
    "official repository's figure (CIFAR-10, DARTS space): DARTS keeps Λ ≈ 0.08 and its derived "
    "architecture's accuracy collapses from ~80 % to ~55 % over 50 search epochs; Λ-DARTS raises "
    "Λ to ~0.67 and holds ~93 %"
)
STEPS_KEY = "epochs"

CIFAR_TRAIN = 50_000


def flops_per_step(cfg) -> float:
    """FLOPs of one *epoch* (the preset's unit, ``epochs``) of the whole run: per search step
    one forward+backward for the architecture step and one for the weight step, and two more
    for Λ-DARTS's finite difference, on half the training set; plus one epoch of retraining per
    arm on the whole training set (``retrain_epochs`` = ``epochs`` in the full preset).
    Measurements and evaluation are left out."""
    from companion.papers.lambda_darts.method import SearchNetwork

    with torch.device("meta"):
        model = SearchNetwork(3, 10, cfg.channels, cfg.layers, cfg.steps, 2, cfg.primitives)
        x = torch.empty(cfg.batch_size, 3, cfg.image_size, cfg.image_size)
        y = torch.zeros(cfg.batch_size, dtype=torch.long)

    def step():
        torch.nn.functional.cross_entropy(model(x), y).backward()

    one = count_flops(step)
    passes = sum(4 if m == "lambda_darts" else 2 for m in cfg.methods)
    search_steps = CIFAR_TRAIN // 2 // cfg.batch_size
    retrain_steps = CIFAR_TRAIN // cfg.batch_size
    return one * (passes * search_steps + len(cfg.methods) * retrain_steps)


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run: search and retraining, for each arm."""
    per_arm = cfg.epochs * (CIFAR_TRAIN // 2 // cfg.batch_size)
    per_arm += cfg.retrain_epochs * (CIFAR_TRAIN // cfg.batch_size)
    return len(cfg.methods) * per_arm


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 40 + 20 CIFAR images, 2 cells of 4 channels with 2 nodes, 2 search epochs of
    2 steps (batch 8) and 1 retraining epoch, a checkpoint every 2 steps.
    ``gpu``: 50,000 + 10,000 random CIFAR images, the preset's network, 2 search epochs."""
    root, data = cifar10_data(data_dir, scale)
    if scale == "tiny":
        overrides = dict(
            data_root=str(root),
            channels=4,
            layers=2,
            steps=2,
            epochs=2,
            batch_size=8,
            retrain_epochs=1,
            checkpoint_every=2,
        )
        return FullCheck(overrides, STEPS_KEY, data)
    overrides = dict(data_root=str(root), epochs=2, retrain_epochs=1)
    return FullCheck(overrides, STEPS_KEY, data)
