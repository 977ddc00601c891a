"""DFPC: the full preset without its real data (fixtures on CPU, bounded GPU check)."""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck, cifar10_data, count_flops

DATA = (
    "CIFAR-10, python release (cifar-10-batches-py: data_batch_1..5, test_batch, "
    "batches.meta), read from data_root (default data/cifar-10-batches-py)"
)
HARDWARE = (
    "one GPU with ≥ 4 GB to train (a bottleneck ResNet of 9 blocks, batch 256, bf16); pruning and "
    "latency measurement run on one CPU thread"
)
REPORTED = (
    "ResNet-101 on CIFAR-10: up to 1.66× faster inference at about 5% accuracy cost, without "
    "data or fine-tuning (abstract); layers touching coupled channels take over 66% of "
    "ResNet-50's inference time"
)
STEPS_KEY = "steps"


def flops_per_step(cfg) -> float:
    """FLOPs of one training step (forward and backward) at ``cfg.batch_size`` on 3 ×
    ``image_size``² images, 10 classes. Pruning and measuring after training are left out."""
    from companion.papers.dfpc.experiment import build_model

    with torch.device("meta"):
        model = build_model(cfg, 3, 10)
        x = torch.empty(cfg.batch_size, 3, cfg.image_size, cfg.image_size)
        y = torch.zeros(cfg.batch_size, dtype=torch.long)

    def step():
        torch.nn.functional.cross_entropy(model(x), y).backward()

    return count_flops(step)


def optimizer_steps(cfg) -> int:
    return cfg.steps


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 40 + 20 CIFAR images, a one-block-per-stage ResNet of widths 2/4, 4 steps with a
    checkpoint after 2, two pruning fractions. ``gpu``: 50,000 + 10,000 random CIFAR images, the
    preset's model, 300 steps."""
    root, data = cifar10_data(data_dir, scale)
    if scale == "tiny":
        overrides = dict(
            data_root=str(root),
            widths=(2, 4),
            blocks=1,
            stem=4,
            batch_size=16,
            steps=4,
            checkpoint_every=2,
            fractions=(0.05, 0.2),
            latency_batch=4,
            latency_repeats=1,
        )
        return FullCheck(overrides, STEPS_KEY, data)
    return FullCheck(dict(data_root=str(root), steps=300), STEPS_KEY, data)
