"""information_plane: the full preset without its real data (fixtures on CPU, bounded GPU check)."""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F

from companion.core.fullscale import FullCheck, count_flops
from companion.papers.information_plane.data_sources import write_mnist_fixture
from companion.papers.information_plane.experiment import (
    InformationPlaneConfig,
    build_model,
)
from companion.papers.information_plane.method import diagonal_mixture_log_density

DATA = (
    "the full MNIST (60,000 training and 10,000 test images) as the four official IDX files, "
    "gzipped or not, in one local folder: the setting data_root (default data/mnist); "
    "the preset full_cifar10 reads the CIFAR-10 python release (data_root, default "
    "data/cifar-10-batches-py)"
)
HARDWARE = (
    "one GPU (estimate: the 784-512-128-32-10 MLP needs little memory; each information-plane "
    "point scores a mixture of 60,000 Gaussians at 60,000 samples in float64); full_cifar10: "
    "one GPU (estimate: ResNet-18 at batch 64 needs a few GB)"
)
REPORTED = (
    "information planes of the Gaussian-dropout MLP on MNIST and of ResNet-18 on CIFAR-10 "
    "(full_cifar10) over 200 epochs show a compression phase in several settings, while "
    "binning estimates depend on the bin size (paper's information-plane figures); no table "
    "of numbers to compare with"
)
STEPS_KEY = "epochs"

# (training images, test images, image shape) of the datasets the full presets read
_SIZES = {
    "mnist": (60_000, 10_000, (1, 28, 28)),
    "mnist_subset": (3_000, 1_000, (1, 28, 28)),
    "cifar10": (50_000, 10_000, (3, 32, 32)),
}


def _step_flops(cfg: InformationPlaneConfig, arm: str, shape: tuple[int, ...]) -> float:
    """One SGD step of one arm (forward and backward of a batch) on the meta device."""
    in_shape = (int(torch.Size(shape).numel()),) if cfg.architecture == "mlp" else shape
    with torch.device("meta"):
        net = build_model(cfg, arm, in_shape, 10)
        x = torch.empty(cfg.batch_size, *in_shape)
        y = torch.zeros(cfg.batch_size, dtype=torch.long)

    def step():
        F.cross_entropy(net(x), y).backward()

    return count_flops(step)


def _mixture_flops(samples: int, components: int, width: int) -> float:
    """One ``h(Z)`` estimate: a mixture of ``components`` Gaussians at ``samples`` points."""
    with torch.device("meta"):
        z = torch.empty(samples, width, dtype=torch.float64)
        means = torch.empty(components, width, dtype=torch.float64)
    return count_flops(diagonal_mixture_log_density, z, means, means)


def flops_per_step(cfg: InformationPlaneConfig) -> float:
    """FLOPs of one *epoch* (the unit of :data:`STEPS_KEY`): every arm's SGD steps over the
    training set (forward + backward, batch ``cfg.batch_size``), plus the dropout arm's ``h(Z)``
    mixtures of one information-plane point (train and validation; float64, counted like the
    rest) divided by ``measure_every``. Not counted: the per-class mixtures of ``I(Z;Y)``
    (about a tenth of ``h(Z)``'s), binning, the end-of-training sweeps, and half of each
    mixture's products (torch's counter skips the in-place ``addmm_``)."""
    n_train, n_val, shape = _SIZES[cfg.dataset]
    if cfg.max_points:
        n_train, n_val = min(n_train, cfg.max_points), min(n_val, cfg.max_points)
    steps_per_epoch = max(1, n_train // cfg.batch_size)
    train = sum(_step_flops(cfg, arm, shape) for arm in cfg.arms) * steps_per_epoch
    measure = 0.0
    if "dropout" in cfg.arms:
        width = cfg.hidden[-1]
        m_train = cfg.components or n_train
        m_val = cfg.components or n_val
        measure = _mixture_flops(cfg.train_draws * n_train, m_train, width) + _mixture_flops(
            cfg.val_draws * n_val, m_val, width
        )
    return train + measure / cfg.measure_every


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run: every arm's epochs over 60,000 MNIST images (50,000
    CIFAR-10 images for ``full_cifar10``)."""
    images = 50_000 if cfg.dataset == "cifar10" else 60_000
    return len(cfg.arms) * cfg.epochs * -(-images // cfg.batch_size)


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """The ``full`` preset (MNIST MLP) on random images written as the four gzipped IDX files.

    ``tiny``: 40 training and 20 test images, batch 20, 2 epochs (4 steps), a point every epoch
    and a checkpoint every step, so an interrupted run has a checkpoint to resume from.
    ``gpu``: 60,000 and 10,000 random images (the real sizes), 2 of the 200 epochs (one
    information-plane point at the start, one at the end, then the end-of-training sweeps).
    """
    if scale == "tiny":
        write_mnist_fixture(data_dir, n_train=40, n_test=20)
        overrides = {
            "data_root": str(data_dir),
            "batch_size": 20,
            "epochs": 2,
            "measure_every": 1,
            "checkpoint_every": 1,
        }
        data = "40 training and 20 test random 28x28 images as MNIST IDX files (gzipped)"
    else:
        write_mnist_fixture(data_dir, n_train=60_000, n_test=10_000)
        overrides = {"data_root": str(data_dir), "epochs": 2}
        data = (
            "60,000 training and 10,000 test random 28x28 images written as MNIST IDX files "
            "(gzipped), the real sizes and format; no real MNIST is read"
        )
    return FullCheck(overrides=overrides, steps_key=STEPS_KEY, data=data)
