"""COCOA: the full preset without its real data (fixtures on CPU, bounded GPU check)."""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck, cifar10_data, count_flops

DATA = (
    "CIFAR-10, python release (cifar-10-batches-py: data_batch_1..5, test_batch, "
    "batches.meta), read from data_root (default data/cifar-10-batches-py)"
)
HARDWARE = (
    "one GPU with ≥ 8 GB (estimate: a 4-stage CNN of 1.6 M parameters, SimCLR batch 512 × 2 "
    "views of 32×32 images in bf16; IG and the ablation curves run in float32)"
)
REPORTED = (
    "CIFAR-10 with a SimSiam ResNet-18, IG from a blurred baseline, same-class explicands: "
    "COCOA has the best insertion and deletion AUC of the corpus-majority probability among "
    "the explanation targets in most settings (table numbers not quoted here)"
)
STEPS_KEY = "steps"


def flops_per_step(cfg) -> float:
    """FLOPs of one SimCLR step: forward and backward of the encoder and projection head on
    2 × ``batch_size`` augmented views (augmentation, attribution and evaluation left out)."""
    from companion.papers.cocoa.experiment import SimCLRModel

    with torch.device("meta"):
        model = SimCLRModel(3, cfg.widths, cfg.proj_dim)
        x = torch.empty(2 * cfg.batch_size, 3, cfg.image_size, cfg.image_size)

    def step():
        model(x).sum().backward()

    return count_flops(step)


def optimizer_steps(cfg) -> int:
    return cfg.steps


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 40 + 20 CIFAR images (4 per class), a 2-stage CNN of widths 8-16, 4 SimCLR
    steps with a checkpoint after 2, corpus 2, foil 10, 1 explicand for 2 classes.
    ``gpu``: 50,000 + 10,000 random CIFAR images, the preset's model and evaluation, 300 steps."""
    root, data = cifar10_data(data_dir, scale)
    if scale == "tiny":
        overrides = dict(
            data_root=str(root),
            widths=(8, 16),
            proj_dim=8,
            batch_size=16,
            steps=4,
            checkpoint_every=2,
            head_epochs=5,
            classes=2,
            corpus_size=2,
            foil_size=10,
            explicands_per_class=1,
            ig_steps=4,
            ablation_steps=8,
        )
        return FullCheck(overrides, STEPS_KEY, data)
    return FullCheck(dict(data_root=str(root), steps=300), STEPS_KEY, data)
