"""Prequential MDL: the full preset without its real data (fixtures on CPU, bounded GPU
check)."""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck, cifar10_data, count_flops

DATA = (
    "CIFAR-10, python release (cifar-10-batches-py: data_batch_1..5), read from data_root "
    "(default data/cifar-10-batches-py); the 50,000 training images are the data to encode"
)
HARDWARE = "one GPU with ≥ 8 GB (estimate: an MLP 3072-1024-1024-10 of 4.2 M parameters, float32)"
REPORTED = (
    "online learning with rehearsal and forward calibration gives description lengths for MNIST, "
    "CIFAR-10 and ImageNet far shorter than those reported before (block-wise estimates), "
    "at comparable compute (abstract)"
)
STEPS_KEY = "num_orders"
SINGLE_DEVICE = True


def flops_per_step(cfg) -> float:
    """FLOPs of one data order (the unit of ``STEPS_KEY``): three trained arms (online, online +
    replay, block-wise) at every learning rate, each ``(N/B − 1)(1 + replay_steps)`` steps of a
    forward and backward pass on a minibatch of ``cfg.batch_size`` CIFAR images (N = 50,000).
    Encoding passes and calibration fits are left out."""
    from companion.papers.prequential_mdl.method import MLP

    with torch.device("meta"):
        model = MLP.__new__(MLP)
        torch.nn.Module.__init__(model)
        dims = (3 * 32 * 32, *cfg.hidden, 10)
        model.layers = torch.nn.ModuleList(
            torch.nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:])
        )
        x = torch.empty(cfg.batch_size, 3 * 32 * 32)
        y = torch.zeros(cfg.batch_size, dtype=torch.long)

    def step():
        torch.nn.functional.cross_entropy(model(x), y).backward()

    steps = (-(-50_000 // cfg.batch_size) - 1) * (1 + cfg.replay_steps)
    return count_flops(step) * steps * 3 * len(cfg.lrs)


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run: per order, rate and trained arm."""
    steps = (-(-50_000 // cfg.batch_size) - 1) * (1 + cfg.replay_steps)
    return steps * 3 * len(cfg.lrs) * cfg.num_orders


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 40 CIFAR fixture images, the preset's network, two orders at the preset's first
    two rates, minibatches of 8, one replay step (an order is written after it finishes, so an
    interrupted run resumes at the next one).

    ``gpu``: 50,000 random CIFAR images, the preset's settings, one order."""
    root, data = cifar10_data(data_dir, scale)
    if scale == "tiny":
        overrides = dict(
            data_root=str(root),
            num_orders=2,
            batch_size=8,
            replay_steps=1,
            calib_window=2,
            lrs=(1e-4, 3e-4),
        )
        return FullCheck(overrides, STEPS_KEY, data)
    return FullCheck(dict(data_root=str(root), num_orders=1), STEPS_KEY, data)
