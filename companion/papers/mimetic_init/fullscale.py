"""Mimetic initialization: the full preset without its real data (fixtures on CPU, bounded GPU
check)."""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck, cifar10_data, count_flops

DATA = (
    "CIFAR-10, python release (cifar-10-batches-py: data_batch_1..5, test_batch, "
    "batches.meta), read from data_root (default data/cifar-10-batches-py)"
)
HARDWARE = (
    "one GPU with ≥ 24 GB (estimate: a ViT-Tiny of 5.4 M parameters on 257 tokens, batch 512, bf16)"
)
REPORTED = (
    "mimetic initialization raises the final accuracy of ViTs trained from scratch by over "
    "5 points on CIFAR-10 and over 4 on ImageNet (abstract)"
)
STEPS_KEY = "steps"


def flops_per_step(cfg) -> float:
    """FLOPs of one step of the run: forward and backward of a training batch
    (``cfg.batch_size`` images of 3 × ``image_size``², 10 classes) for *every arm*, i.e.
    ``len(cfg.inits) × cfg.num_seeds`` ViTs, which train one after the other for ``cfg.steps``
    steps each, so steps × this is the whole run. All inits have the same architecture.
    Evaluation passes and the attention maps at initialization are left out."""
    from companion.papers.mimetic_init.experiment import build_model

    with torch.device("meta"):
        model = build_model(cfg, "default", 3, 10, cfg.seed)
        x = torch.empty(cfg.batch_size, 3, cfg.image_size, cfg.image_size)
        y = torch.zeros(cfg.batch_size, dtype=torch.long)

    def step():
        torch.nn.functional.cross_entropy(model(x), y).backward()

    return count_flops(step) * len(cfg.inits) * cfg.num_seeds


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run: ``cfg.steps`` for each init and seed."""
    return len(cfg.inits) * cfg.num_seeds * cfg.steps


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 40 + 20 CIFAR images, one seed per init, a 2-block ViT of width 24 (3 heads as
    in the preset) on 4×4 patches (65 tokens: with the preset's 2×2 patches, 257 tokens, the
    stored attention maps at initialization alone make writing the result take ~10 s here),
    4 steps with warm-up over 2 and a checkpoint after 2.

    ``gpu``: 50,000 + 10,000 random CIFAR images, the preset's model and three seeds per init,
    60 steps per arm."""
    if scale == "tiny":
        root, data = cifar10_data(data_dir, scale)
        overrides = dict(
            data_root=str(root),
            dim=24,
            depth=2,
            patch_size=4,
            num_seeds=1,
            batch_size=16,
            steps=4,
            warmup_fraction=0.5,
            eval_every=2,
            probe_size=4,
            checkpoint_every=2,
        )
        return FullCheck(overrides, STEPS_KEY, data)
    root, data = cifar10_data(data_dir, scale)
    overrides = dict(data_root=str(root), steps=60)
    return FullCheck(overrides, STEPS_KEY, data)
