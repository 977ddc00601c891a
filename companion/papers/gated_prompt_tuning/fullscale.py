"""Gated prompt tuning: the full preset without its real data (fixtures on CPU, bounded GPU
check)."""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck, cifar10_data, count_flops

DATA = (
    "CIFAR-10, python release (cifar-10-batches-py: data_batch_1..5, test_batch, "
    "batches.meta), read from data_root (default data/cifar-10-batches-py): MAE on every "
    "training image, prompts tuned on 200 labelled images per class"
)
HARDWARE = (
    "one GPU with ≥ 16 GB (estimate: a ViT-S/4 of 21 M parameters on 65 tokens, batch 256, bf16)"
)
REPORTED = (
    "ViT-B/16 pre-trained by MAE and MoCo-v3 on ImageNet: VPT works better when prompts enter "
    "at a later block than the first, and gated prompt tuning beats VPT on FGVC (CUB, Flowers, "
    "Cars, Dogs, NABirds), VTAB-1k and ADE20K (abstract, Fig. 1, Tables 1-3)"
)
STEPS_KEY = "pretrain_steps"


def flops_per_step(cfg) -> float:
    """FLOPs per MAE pre-training step (forward and backward at ``pretrain_batch``), plus the
    prompt-tuning steps of every arm spread over the pre-training steps (forward and backward
    at ``batch_size`` through the frozen backbone), so ``pretrain_steps`` × this is the run."""
    from companion.papers.gated_prompt_tuning.experiment import build_backbone, build_prompted
    from companion.papers.gated_prompt_tuning.method import MAE

    with torch.device("meta"):
        mae = MAE(build_backbone(cfg, 3), cfg.decoder_dim, mask_ratio=cfg.mask_ratio, channels=3)
        x = torch.empty(cfg.pretrain_batch, 3, cfg.image_size, cfg.image_size)
    # random masking on meta tensors is not possible: count the encoder on the visible tokens
    total = count_flops(lambda: _mae_flops(mae, x))
    arms = cfg.arm_names()
    for arm in arms:
        with torch.device("meta"):
            model = build_prompted(cfg, arm, build_backbone(cfg, 3), 3, 10)
            xb = torch.empty(cfg.batch_size, 3, cfg.image_size, cfg.image_size)
        flops = count_flops(lambda m=model, xb=xb: m(xb).sum().backward())
        total += flops * cfg.steps * len(cfg.candidates(arm)) / cfg.pretrain_steps
    return total


def _mae_flops(mae, x) -> None:
    n = mae.encoder.num_patches
    n_keep = max(1, int(round(n * (1 - mae.mask_ratio))))
    keep = torch.arange(n_keep, device=x.device).expand(len(x), -1)
    z = mae.decoder_embed(mae.encode(x, keep))
    d = torch.cat([z[:, :1], mae.mask_token.expand(len(x), n, -1)], dim=1) + mae.decoder_pos
    mae.predict(mae.decoder_norm(mae.decoder(d))).sum().backward()


def optimizer_steps(cfg) -> int:
    """MAE steps plus ``steps`` for each candidate setting of each prompt-tuning arm."""
    return cfg.pretrain_steps + sum(len(cfg.candidates(a)) for a in cfg.arm_names()) * cfg.steps


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 40 + 20 CIFAR images, a 2-block ViT of width 24, 4 MAE steps and 4 steps per
    arm with a checkpoint after 2. ``gpu``: 50,000 + 10,000 random CIFAR images, the preset's
    model, 300 MAE steps and 30 steps per arm."""
    root, data = cifar10_data(data_dir, scale)
    if scale == "tiny":
        overrides = dict(
            data_root=str(root),
            dim=24,
            depth=2,
            heads=2,
            decoder_dim=16,
            pretrain_steps=4,
            pretrain_batch=16,
            steps=4,
            batch_size=8,
            labels_per_class=2,
            measure_every=2,
            checkpoint_every=2,
        )
        return FullCheck(overrides, STEPS_KEY, data)
    return FullCheck(dict(data_root=str(root), pretrain_steps=300, steps=30), STEPS_KEY, data)
