"""SIE: the full preset without its real data (fixtures on CPU, bounded GPU check).

The paper trains a ResNet-18 on 3DIEBench (renders of 3-D objects whose rotation is known);
the companion does not read 3DIEBench. The full preset keeps the paper's recipe (representation
512 = 256 invariant + 256 equivariant, projectors 2048-2048-2048 split in two, batch 1,024,
Adam 1e-3, about 2,000 epochs, λ = 10/10/1, ε = 0.45) on CIFAR-10 rotated in the plane by
known angles, with the companion's convolutional encoder (``SmallCNN``, widths 64-128-256-512).
"""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck, cifar10_data, count_flops

DATA = (
    "CIFAR-10, python release (cifar-10-batches-py: data_batch_1..5, test_batch, "
    "batches.meta), read from data_root (default data/cifar-10-batches-py), each image rotated "
    "in the plane by known random angles (3DIEBench, the paper's data, is not read)"
)
HARDWARE = (
    "one GPU with ≥ 16 GB (estimate: a 4-stage CNN of widths 64-512 on 2 × 1,024 views of "
    "32 × 32 per step, projectors of width 1,024 per part, bf16)"
)
REPORTED = (
    "3DIEBench, ResNet-18, 2,000 epochs (Table 1): SIE's equivariant part predicts the "
    "relative rotation with a much higher R² than VICReg's representation, its predictor "
    "reaches a high MRR where an MLP predictor collapses to invariance, and its invariant part "
    "classifies close to VICReg (numbers not re-checked here)"
)
STEPS_KEY = "steps"


def flops_per_step(cfg) -> float:
    """FLOPs of one step of the run: forward and backward of *every arm* in ``cfg.methods``
    (SIE, its MLP-predictor control and VICReg train one after the other for ``cfg.steps`` steps
    each; the untrained arm is only measured) on two views of ``cfg.batch_size`` images. The
    rotation of the views and the measurements after training are left out."""
    from companion.papers.sie.experiment import build_model
    from companion.papers.sie.method import relative_rotation

    total = 0.0
    channels = 3 if cfg.dataset == "cifar10" else 1
    for method in trained(cfg):
        with torch.device("meta"):
            model = build_model(cfg, method, channels)
            x = torch.empty(cfg.batch_size, channels, cfg.image_size, cfg.image_size)
            theta = torch.zeros(cfg.batch_size)
            z = relative_rotation(theta, theta)

        def step(model=model, x=x, z=z):
            loss, _ = model(x, x, z)
            loss.backward()

        total += count_flops(step)
    return total


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run: ``cfg.steps`` for each trained arm in ``cfg.methods``."""
    return len(trained(cfg)) * cfg.steps


def trained(cfg) -> list[str]:
    """The arms of ``cfg.methods`` that train (all but ``untrained``)."""
    return [m for m in cfg.methods if m != "untrained"]


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 40 + 20 CIFAR images, the CNN at widths 4-8 with a 16-d representation
    (8 + 8), projectors 32-32, batches of 16, 4 steps per arm with a checkpoint after 2, small
    measurements. ``gpu``: 50,000 + 10,000 random CIFAR images, the preset's model and batch,
    300 steps per arm."""
    root, data = cifar10_data(data_dir, scale)
    if scale == "tiny":
        overrides = dict(
            data_root=str(root),
            hidden=(4, 8),
            repr_dim=16,
            equi_dims=8,
            widths=(32, 32),
            batch_size=16,
            steps=4,
            checkpoint_every=2,
            eval_pairs=20,
            rotations=8,
            grid_images=10,
        )
        return FullCheck(overrides, STEPS_KEY, data)
    return FullCheck(dict(data_root=str(root), steps=300), STEPS_KEY, data)
