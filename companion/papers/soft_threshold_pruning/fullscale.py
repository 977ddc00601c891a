"""Soft threshold pruning: the full preset without its real data (fixtures on CPU, bounded GPU
check)."""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck, cifar10_data, count_flops

DATA = (
    "CIFAR-10, python release (cifar-10-batches-py: data_batch_1..5, test_batch, "
    "batches.meta), read from data_root (default data/cifar-10-batches-py)"
)
HARDWARE = "one GPU with ≥ 4 GB, or a multi-core CPU (an MLP of 3.7 M parameters, batch 256)"
REPORTED = (
    "ImageNet top-1 against sparsity for ResNet-50, MobileNet-V1 and SEW ResNet-18 (paper "
    "Tables 1-3): LATS and S-LATS match or beat STR, GMP and other soft-threshold methods at "
    "equal sparsity; no CIFAR-10 MLP numbers"
)
STEPS_KEY = "steps"


def _runs(cfg) -> int:
    """Training runs of ``run``: the dense reference, the bisection runs of every searched soft
    schedule, and one run each for GMP (uniform and global) and the fixed reference."""
    single = sum(s in ("gmp", "gmp_global", "fixed") for s in cfg.schedules)
    return 1 + (len(cfg.schedules) - single) * cfg.search_steps + single


def flops_per_step(cfg) -> float:
    """FLOPs of one step of the whole run: forward and backward of the MLP at ``batch_size``
    times the number of training runs (every run trains ``cfg.steps`` steps)."""
    from companion.papers.soft_threshold_pruning.experiment import PrunableMLP
    from companion.papers.soft_threshold_pruning.method import SoftThresholdLinear

    with torch.device("meta"):
        model = PrunableMLP([3 * 32 * 32, *cfg.hidden, 10], SoftThresholdLinear)
        x = torch.empty(cfg.batch_size, 3, 32, 32)
        y = torch.zeros(cfg.batch_size, dtype=torch.long)

    def step():
        torch.nn.functional.cross_entropy(model(x), y).backward()

    return count_flops(step) * _runs(cfg)


def optimizer_steps(cfg) -> int:
    return _runs(cfg) * cfg.steps


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 40 + 20 CIFAR images, a 32-16 MLP, 4 steps per run with a checkpoint after 2,
    one bisection run per soft schedule. ``gpu``: 50,000 + 10,000 random CIFAR images, the
    preset's model, 300 steps per run."""
    root, data = cifar10_data(data_dir, scale)
    if scale == "tiny":
        overrides = dict(
            data_root=str(root),
            hidden=(32, 16),
            batch_size=16,
            steps=4,
            search_steps=1,
            measure_every=2,
            checkpoint_every=2,
        )
        return FullCheck(overrides, STEPS_KEY, data)
    return FullCheck(dict(data_root=str(root), steps=300), STEPS_KEY, data)
