"""Temperature schedules: the full preset without its real data (fixtures on CPU, bounded GPU
check)."""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck, cifar10_data, count_flops

DATA = (
    "CIFAR-10, python release (cifar-10-batches-py: data_batch_1..5, test_batch, "
    "batches.meta), read from data_root (default data/cifar-10-batches-py); the long-tailed "
    "training set (4,500 down to 45 images per class, imbalance 100) is drawn from it"
)
HARDWARE = (
    "one GPU with ≥ 16 GB (estimate: a 4-stage CNN of widths 64–512 on 32×32 images, "
    "batch 512 × 2 views, bf16), five arms and two more paired replicates of τ = 0.2 and the "
    "schedule (nine trainings), one after the other"
)
REPORTED = (
    "the cosine schedule (τ from 1.0 to 0.1, period 400 epochs) beats constant τ on "
    "CIFAR10-LT, CIFAR100-LT and ImageNet100-LT in class-balanced kNN and few-shot accuracy, "
    "with the largest gains on tail classes, at no extra cost (abstract, Sec. 4.2)"
)
STEPS_KEY = "epochs"


def _train_images(cfg) -> int:
    from companion.papers.temperature_schedules.method import long_tail_counts

    return sum(long_tail_counts(cfg.n_max, cfg.imbalance, 10))


def flops_per_step(cfg) -> float:
    """FLOPs of one *epoch* (``STEPS_KEY`` counts epochs) of every trained arm (``cfg.arms``,
    then the paired replicates of the baseline and the schedule): forward
    and backward of the encoder and head on two views of ``batch_size`` 3×32×32 images, times
    the steps of an epoch of the long-tailed set. Probes and augmentation are left out."""
    from companion.papers.temperature_schedules.experiment import SimCLR

    with torch.device("meta"):
        model = SimCLR(cfg, 3, 32 * 32)
        x = torch.empty(2 * cfg.batch_size, 3, 32, 32)

    def step():
        model(x).sum().backward()

    per_epoch = max(1, _train_images(cfg) // cfg.batch_size)
    return count_flops(step) * per_epoch * cfg.trained_arms


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run: every trained arm (replicates included) trains
    ``epochs`` epochs."""
    return cfg.trained_arms * cfg.epochs * max(1, _train_images(cfg) // cfg.batch_size)


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 60 + 20 CIFAR images (6 per class, long-tailed to 6 … 2), a CNN of widths
    4–8, the constants τ = 0.2 (the baseline) and 1.0 and the schedule, one more paired
    replicate of τ = 0.2 and the schedule, 2 epochs per arm with a
    checkpoint every 2 steps. ``gpu``: 50,000 + 10,000 random
    CIFAR images in the python format, the preset's model, 2 epochs per arm."""
    if scale == "tiny":
        root, data = cifar10_data(data_dir, scale, n_train=60, n_test=20)
        overrides = dict(
            data_root=str(root),
            n_max=6,
            imbalance=3.0,
            arms=("0.2", "1.0", "cos"),
            replicates=2,
            widths=(4, 8),
            proj_dim=8,
            batch_size=8,
            epochs=2,
            t_max=1,
            warmup_epochs=1,
            checkpoint_every=2,
        )
        return FullCheck(overrides, STEPS_KEY, data)
    root, data = cifar10_data(data_dir, scale)
    return FullCheck(dict(data_root=str(root), epochs=2), STEPS_KEY, data)
