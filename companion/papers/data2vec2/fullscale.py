"""data2vec 2.0: the full preset without its real data (fixtures on CPU, bounded GPU check)."""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck, cifar10_data

DATA = (
    "CIFAR-10, python release (cifar-10-batches-py: data_batch_1..5, test_batch, "
    "batches.meta), read from data_root (default data/cifar-10-batches-py)"
)
HARDWARE = (
    "one GPU with ≥ 80 GB, or several with DDP (estimate: a ViT-B of 86 M parameters, "
    "256 images × 16 clones per step with 52 of 257 tokens each, plus the teacher on 257 "
    "tokens, bf16)"
)
REPORTED = (
    "ImageNet-1K: MAE's accuracy in 16.4× less pre-training time; ViT-L at 150 epochs reaches "
    "86.8% top-1; Librispeech: wav2vec 2.0's accuracy in 10.6× less time; GLUE: a retrained "
    "RoBERTa's in half the time (abstract). No CIFAR-10 numbers"
)
STEPS_KEY = "steps"


def flops_per_step(cfg) -> float:
    """FLOPs of one step of the run, over every arm: each equal-compute arm is given the
    multi-mask arm's training FLOPs per step (teacher forward, student and decoder forward and
    backward at ``cfg.batch_size`` images of M clones); the controls take M = 1 steps of
    ``batch_size`` images (equal images) and of M × ``batch_size`` images (equal clones).
    Counted on the meta device for one image (FLOPs are linear in the batch); the probe and the
    timing are left out."""
    from companion.papers.data2vec2.experiment import CONTROLS, build_model, step_flops

    channels = 3 if cfg.dataset == "cifar10" else 1
    with torch.device("meta"):  # shapes only: nothing is computed
        image = torch.empty(1, channels, cfg.image_size, cfg.image_size)
        models = {arm: build_model(cfg, arm, channels) for arm in ("multi_mask", "single_mask")}
    multi = step_flops(models["multi_mask"], image)  # masks are drawn on the CPU
    single = step_flops(models["single_mask"], image)
    images = {
        "single_mask_images": cfg.batch_size,
        "single_mask_clones": cfg.clones * cfg.batch_size,
    }
    equal = sum(a not in CONTROLS for a in cfg.arms) * multi * cfg.batch_size
    return equal + sum(single * images[a] for a in cfg.arms if a in CONTROLS)


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run: ``cfg.steps`` for each arm (equalize="batch")."""
    return len(cfg.arms) * cfg.steps


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 40 + 20 CIFAR images, a 1 + 2-block encoder of width 24 on 32 × 32 images in
    4 × 4 patches (64 tokens; B = 3 as in the preset), 2 clones, 4 steps per arm with a
    checkpoint after 2. ``gpu``: 50,000 + 10,000 random CIFAR images, the preset's model, 200
    steps per arm."""
    root, data = cifar10_data(data_dir, scale)
    if scale == "tiny":
        overrides = dict(
            data_root=str(root),
            patch_size=4,
            dim=24,
            heads=2,
            prenet_depth=1,
            depth=2,
            top_k=2,
            decoder_dim=24,
            decoder_layers=2,
            decoder_groups=4,
            clones=2,
            batch_size=8,
            steps=4,
            timing_steps=1,
            timing_batch=4,
            checkpoint_every=2,
        )
        return FullCheck(overrides, STEPS_KEY, data)
    return FullCheck(dict(data_root=str(root), steps=200), STEPS_KEY, data)
