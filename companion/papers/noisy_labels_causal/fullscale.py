"""noisy_labels_causal: the full preset without its real data (fixtures on CPU, bounded GPU
check)."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from companion.core.fullscale import FullCheck, count_flops

DATA = (
    "the two Gaussian datasets are generated (nothing to download); MNIST from its four IDX "
    "files (train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte, "
    "t10k-labels-idx1-ubyte, plain or .gz) in data_root (default data/mnist)"
)
HARDWARE = (
    "one GPU, or a CPU (estimate: MLPs of 0.3M parameters at most, batch 128; the k-means of "
    "the test on 48,000 MNIST images takes minutes on a CPU)"
)
REPORTED = (
    "DivideMix (semi-supervised) against Forward, T-Revision and VolMinNet (transition matrix) "
    "on XY/YX-Gaussian, UCI tables (KrKp, BalanceScale, Splice, Waveform), MNIST and CIFAR-10 "
    "at symmetric, pair and instance noise of 0.2 and 0.4: the transition-matrix methods are "
    "better on causal data, DivideMix on anticausal data, and the test's error separates the "
    "two kinds (the paper's tables are not reproduced here)"
)
STEPS_KEY = "steps"

_DIMS = {"yx_gaussian": None, "xy_gaussian": None, "digits": 64, "mnist": 784}


def _step_flops(cfg, in_features: int) -> float:
    """Forward and backward of the preset's MLP on one batch (10 outputs bound 2 from above)."""
    from companion.papers.noisy_labels_causal.experiment import build_model

    with torch.device("meta"):
        model = build_model(cfg, in_features, 10)
        x = torch.empty(cfg.batch_size, in_features)
        y = torch.zeros(cfg.batch_size, dtype=torch.long)

    def step():
        F.cross_entropy(model(x), y).backward()

    return count_flops(step)


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run: on every dataset in ``arms_on``, the warm-up and four
    arms of ``steps − warmup_steps``; on every dataset, the test's ``cdnl_steps``."""
    total = 0
    for name in cfg.datasets:
        if name in cfg.arms_on:
            total += cfg.warmup_steps + 4 * (cfg.steps - cfg.warmup_steps)
        total += cfg.cdnl_steps
    return total


def flops_per_step(cfg) -> float:
    """FLOPs of the whole run divided by ``cfg.steps`` (the STEPS_KEY): every optimizer step of
    :func:`optimizer_steps`, each a forward and backward of the MLP at ``batch_size`` on the
    dataset's input size (``dim`` for the Gaussians, 784 for MNIST). k-means, evaluations and
    the per-example losses of the selection are left out."""
    total = 0.0
    for name in cfg.datasets:
        dim = _DIMS[name] or cfg.dim
        steps = cfg.cdnl_steps
        if name in cfg.arms_on:
            steps += cfg.warmup_steps + 4 * (cfg.steps - cfg.warmup_steps)
        total += steps * _step_flops(cfg, dim)
    return total / cfg.steps


def write_mnist_idx(root: Path, n_train: int, n_test: int, seed: int = 0) -> Path:
    """MNIST in its IDX format (gzipped, as distributed): random 28×28 digits and labels."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for split, n in (("train", n_train), ("t10k", n_test)):
        images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        labels = (np.arange(n) % 10).astype(np.uint8)
        rng.shuffle(labels)
        header = b"\x00\x00\x08\x03" + struct.pack(">3i", n, 28, 28)
        (root / f"{split}-images-idx3-ubyte.gz").write_bytes(
            gzip.compress(header + images.tobytes(), compresslevel=1)
        )
        header = b"\x00\x00\x08\x01" + struct.pack(">i", n)
        (root / f"{split}-labels-idx1-ubyte.gz").write_bytes(
            gzip.compress(header + labels.tobytes())
        )
    return root


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 200 Gaussian examples per dataset and 200 + 50 random MNIST images in the IDX
    format, the preset's MLP, 8 steps per arm (warm-up 2) and 8 for the test, with a
    checkpoint after every 4 steps.
    ``gpu``: the preset's sizes (60,000 + 10,000 random MNIST images) for 600 of its steps."""
    if scale == "tiny":
        n_train, n_test = 200, 50
    else:
        n_train, n_test = 60_000, 10_000
    done = Path(data_dir) / f".mnist-{n_train}-{n_test}"
    root = Path(data_dir) / "mnist"
    if not done.exists():
        write_mnist_idx(root, n_train, n_test)
        done.touch()
    data = (
        f"MNIST IDX files: {n_train:,} train + {n_test:,} test random images; Gaussians generated"
    )
    if scale == "tiny":
        overrides = dict(
            data_root=str(root),
            n_train=200,
            n_test=50,
            batch_size=32,
            warmup_steps=2,
            steps=8,
            cdnl_steps=8,
            measure_every=4,
            checkpoint_every=4,
        )
        return FullCheck(overrides, STEPS_KEY, data)
    overrides = dict(data_root=str(root), warmup_steps=100, steps=600, cdnl_steps=600)
    return FullCheck(overrides, STEPS_KEY, data)
