"""σReparam: the full preset without its real data (fixtures on CPU, bounded GPU check)."""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck, cifar10_data, count_flops

DATA = (
    "CIFAR-10, python release (cifar-10-batches-py: data_batch_1..5, test_batch, "
    "batches.meta), read from data_root (default data/cifar-10-batches-py)"
)
HARDWARE = (
    "one GPU with ≥ 8 GB (estimate: a ViT-Tiny of 5.4 M parameters on 65 tokens, batch 256, bf16)"
)
REPORTED = (
    "no CIFAR-10 numbers: σReparam trains ViTs to competitive accuracy without warm-up, weight "
    "decay, LayerNorm or adaptive optimizers (abstract, Sec. 5); Fig. 1: at 2× the learning "
    "rate the baseline's attention entropy collapses in every layer and training diverges"
)
STEPS_KEY = "steps"


def flops_per_step(cfg) -> float:
    """FLOPs of one step of the run: forward and backward of *every arm* in ``cfg.methods``
    (baseline and σReparam train one after the other for ``cfg.steps`` steps each, so steps ×
    this is the whole run) at ``cfg.batch_size`` on 3 × ``image_size``² images, 10 classes.
    Attention measurements, evaluation and σReparam's power iteration (matrix-vector products)
    are left out."""
    from companion.papers.sigma_reparam.experiment import build_model

    total = 0.0
    for method in cfg.methods:
        with torch.device("meta"):
            model = build_model(cfg, method, 3, 10)
            x = torch.empty(cfg.batch_size, 3, cfg.image_size, cfg.image_size)
            y = torch.zeros(cfg.batch_size, dtype=torch.long)

        def step(model=model, x=x, y=y):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()

        total += count_flops(step)
    return total


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run: ``cfg.steps`` for each arm in ``cfg.methods``."""
    return len(cfg.methods) * cfg.steps


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 40 + 20 CIFAR images, a 2-block ViT of width 24 (3 heads, 4×4 patches of
    32×32 images as in the preset), 4 steps per arm with a checkpoint after 2.
    ``gpu``: 50,000 + 10,000 random CIFAR images, the preset's model, 300 steps per arm."""
    if scale == "tiny":
        root, data = cifar10_data(data_dir, scale)
        overrides = dict(
            data_root=str(root),
            dim=24,
            depth=2,
            batch_size=16,
            steps=4,
            measure_every=2,
            probe_size=8,
            checkpoint_every=2,
        )
        return FullCheck(overrides, STEPS_KEY, data)
    root, data = cifar10_data(data_dir, scale)
    overrides = dict(data_root=str(root), steps=300)
    return FullCheck(overrides, STEPS_KEY, data)
