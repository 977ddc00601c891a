"""LISO: the full preset without its real data (fixtures on CPU, bounded GPU check)."""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck, cifar10_data, count_flops

DATA = (
    "CIFAR-10, python release (cifar-10-batches-py: data_batch_1..5, test_batch, "
    "batches.meta), read from data_root (default data/cifar-10-batches-py); the paper trains on "
    "800 Div2k images cropped to 360×360 (also CelebA, MS-COCO)"
)
HARDWARE = (
    "one GPU with ≥ 8 GB (estimate: 15 unrolled steps of a 32-channel ConvGRU on 32×32 images, "
    "batch 16, float32)"
)
REPORTED = (
    "Div2k, 1-4 bits per pixel: LISO's error after 8-bit rounding is orders of magnitude below "
    "SteganoGAN's one-step encoder and below FNNS (gradient-based, fixed decoder), at higher "
    "PSNR; zero error up to 3 bpp; error reaches zero within about 8 steps at 3 bpp (Fig. 1)"
)
STEPS_KEY = "steps"
SINGLE_DEVICE = False


def flops_per_step(cfg) -> float:
    """FLOPs of one training step of *every arm* (LISO with T = ``iters`` unrolled steps and the
    one-step encoder, trained one after the other for ``cfg.steps`` steps each): the unrolled
    encoder, the sequence loss and the backward, plus T inner gradients ∇ₓ BCE(D(x), m) (each a
    decoder forward and backward), at ``cfg.batch_size`` on 3 × ``image_size``² images.
    Evaluation and baselines are left out. (torch's FLOP counter cannot trace
    ``autograd.grad`` inside a step, so the inner gradient is counted on its own.)"""
    from unittest import mock

    import torch.nn.functional as F

    from companion.papers.neural_stego_optimizer import method
    from companion.papers.neural_stego_optimizer.experiment import Stego, _arm_iters

    # counted on one image (every layer is a convolution, so FLOPs grow linearly with the batch)
    size = (1, 3, cfg.image_size, cfg.image_size)
    x = torch.rand(size) * 2 - 1
    m = torch.randint(0, 2, (1, cfg.bits, *size[-2:])).float()
    total = 0.0
    for arm in cfg.arms:
        model = Stego(cfg, 3)
        iters = _arm_iters(cfg, arm)

        def inner(model=model):
            xi = x.clone().requires_grad_(True)
            F.binary_cross_entropy_with_logits(model.decoder(xi), m, reduction="sum").backward()

        def step(model=model, iters=iters):
            loss, _ = model(x, m, iters, cfg.step_size, cfg.gamma, cfg.mse_weight)
            loss.backward()

        with mock.patch.object(method, "message_gradient", lambda d, xx, mm: torch.zeros_like(xx)):
            total += count_flops(step)
        total += iters * count_flops(inner)
    return total * cfg.batch_size


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run: ``cfg.steps`` for each arm in ``cfg.arms``."""
    return len(cfg.arms) * cfg.steps


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 40 + 20 CIFAR images, hidden 8, T = 3 (test: 4 steps), 4 training steps per arm
    with a checkpoint after 2, 4 held-out images, baselines for 8 steps. ``gpu``: 50,000 +
    10,000 random CIFAR images, the preset's model, 300 steps per arm."""
    root, data = cifar10_data(data_dir, scale)
    if scale == "tiny":
        overrides = dict(
            data_root=str(root),
            hidden=8,
            motion_hidden=8,
            motion_out=16,
            iters=3,
            eval_iters=4,
            batch_size=4,
            steps=4,
            eval_images=4,
            baseline_iters=8,
            checkpoint_every=2,
        )
        return FullCheck(overrides, STEPS_KEY, data)
    return FullCheck(dict(data_root=str(root), steps=300), STEPS_KEY, data)
