"""Contextual similarity: the full preset without its real data (fixtures on CPU, bounded GPU
check)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from PIL import Image

from companion.core.fullscale import FullCheck, count_flops

DATA = (
    "CUB-200-2011 as released (CUB_200_2011/images/<NNN.Name>/*.jpg; classes 1-100 train, "
    "101-200 retrieved), read from data_root (default data/CUB_200_2011)"
)
HARDWARE = (
    "one GPU with ≥ 16 GB (estimate: a ViT-S/16 of 22 M parameters at 224 px, batch 128, bf16; "
    "the time counts FLOPs only, not decoding CUB's JPEGs, which run in the main process and "
    "can take longer than the GPU work)"
)
REPORTED = (
    "official sample output on CUB-200 (ImageNet-pretrained ResNet-50, 256 px): Recall@1 68.7, "
    "@2 79.4, @4 86.6, @8 91.5; the abstract: more robust to label noise and less prone to "
    "overfitting than pairwise losses"
)
STEPS_KEY = "steps"


def flops_per_step(cfg) -> float:
    """FLOPs of one step of the run: forward and backward of one class-balanced batch
    (``classes_per_batch × samples_per_class`` images) for *every arm* (each loss at each noise
    rate trains for ``cfg.steps`` steps), so steps × this is the whole run. The losses on the
    B × B similarity matrix and the retrieval evaluation are left out."""
    from companion.papers.contextual_similarity.experiment import build_model

    batch = cfg.classes_per_batch * cfg.samples_per_class
    with torch.device("meta"):
        model = build_model(cfg, 3 if cfg.dataset == "cub" else 1)
        x = torch.empty(batch, 3 if cfg.dataset == "cub" else 1, cfg.image_size, cfg.image_size)

    def step():
        model(x).sum().backward()

    return count_flops(step) * len(cfg.losses) * len(cfg.noise_levels)


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run: ``cfg.steps`` for each loss and noise rate."""
    return len(cfg.losses) * len(cfg.noise_levels) * cfg.steps


def write_cub_fixture(data_dir: Path, classes: int, per_class: int, size: int) -> Path:
    """A CUB-200-2011 folder in the released layout (``images/<NNN.Name>/Name_<n>.jpg`` plus
    ``classes.txt``) with random JPEG images, written once per folder."""
    root = Path(data_dir) / "CUB_200_2011"
    done = Path(data_dir) / f".cub-{classes}-{per_class}-{size}"
    if done.exists():
        return root
    rng = np.random.default_rng(0)
    names = []
    for c in range(1, classes + 1):
        name = f"{c:03d}.Bird_{c}"
        names.append(f"{c} {name}")
        folder = root / "images" / name
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            pixels = rng.integers(0, 256, (size, size, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(folder / f"Bird_{c}_{i:04d}.jpg", quality=85)
    (root / "classes.txt").write_text("\n".join(names) + "\n")
    done.touch()
    return root


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 6 classes × 5 random JPEGs (3 classes train, 3 retrieved), a 2-block ViT of
    width 24 on 32 px images, two noise rates, 4 steps per arm with a checkpoint after 2.
    ``gpu``: 200 classes × 30 random JPEGs at 256 px, the preset's model, 60 steps per arm."""
    if scale == "tiny":
        root = write_cub_fixture(data_dir, 6, 5, 40)
        overrides = dict(
            data_root=str(root),
            image_size=32,
            train_classes=3,
            noise_levels=(0.0, 0.2),
            width=24,
            depth=2,
            heads=2,
            embedding=16,
            classes_per_batch=3,
            steps=4,
            checkpoint_every=2,
            gallery_queries=2,
        )
        return FullCheck(overrides, STEPS_KEY, "CUB-200 fixture: 6 classes × 5 random JPEGs")
    root = write_cub_fixture(data_dir, 200, 30, 256)
    overrides = dict(data_root=str(root), steps=60)
    return FullCheck(overrides, STEPS_KEY, "CUB-200 layout: 200 classes × 30 random JPEGs")
