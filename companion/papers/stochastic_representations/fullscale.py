"""Stochastic representations: the full preset (CIFAR10-LT) without its real data (fixtures on
CPU, bounded check on GPUs)."""

from __future__ import annotations

from pathlib import Path

from companion.core.fullscale import FullCheck, cifar10_data

DATA = (
    "CIFAR-10, python release (cifar-10-batches-py), read from data_root (default "
    "data/cifar-10-batches-py); the long-tailed training set (ρ = 100) is drawn from it"
)
HARDWARE = "one GPU with ≥ 8 GB (a plain 3-block CNN on 32×32 images, batch 128, float32)"
REPORTED = (
    "SWA features and classifier re-training on SWAG stochastic representations with "
    "self-distillation improve accuracy and uncertainty estimates over earlier decoupled methods "
    "on CIFAR10/100-LT, ImageNet-LT and iNaturalist-2018 (abstract)"
)
STEPS_KEY = "epochs"


def _train_images(cfg) -> int:
    from companion.papers.stochastic_representations.method import long_tail_counts

    return sum(long_tail_counts(cfg.n_max, cfg.imbalance, 10))


def forward_flops(cfg, image_size: int = 32, channels: int = 3, classes: int = 10) -> float:
    """Multiply-add FLOPs (2 per MAC) of one image through extractor and head, counted from the
    layer shapes (the same count ``core.fullscale.count_flops`` makes for convolutions and
    linear layers; written out so that no FLOP counter, and with it torch's compiler, is
    imported: the notebook prints this row)."""
    total, c, side = 0.0, channels, image_size
    if cfg.backbone == "cnn":
        for i, w in enumerate(cfg.hidden):
            total += 2.0 * c * w * 9 * side * side
            c = w
            if i < len(cfg.hidden) - 1:
                side //= 2
    else:
        c = channels * image_size * image_size
        for w in cfg.hidden:
            total += 2.0 * c * w
            c = w
    return total + 2.0 * c * cfg.feature_dim + 2.0 * cfg.feature_dim * classes


def flops_per_step(cfg) -> float:
    """FLOPs of one stage-1 epoch of the whole run: forward and backward (3 × forward) of the
    extractor and head over the long-tailed training set, for both stage-1 runs (SGD and SWA)
    of every seed. Stage 2 (a linear classifier on stored features) and the SWAG feature bank
    are left out."""
    return 3.0 * forward_flops(cfg) * _train_images(cfg) * 2 * cfg.num_seeds


def optimizer_steps(cfg) -> int:
    """SGD steps of the run: both stage-1 runs and the four re-trained classifiers, per seed."""
    per_epoch = -(-_train_images(cfg) // cfg.batch_size)
    return (2 * cfg.epochs * per_epoch + 4 * cfg.retrain_steps) * cfg.num_seeds


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 200 + 40 CIFAR fixture images (20 per class in training, so the long tail is
    20 → 4 images), two seeds, a CNN of widths 8 and 16, 4 epochs with SWA over the last 2,
    20 re-training steps. ``gpu``: 50,000 + 10,000 random images in the python format, the
    preset's sizes, 4 epochs."""
    if scale == "tiny":
        root, data = cifar10_data(data_dir, scale, n_train=200, n_test=40)
        overrides = dict(
            data_root=str(root),
            n_max=20,
            imbalance=5.0,
            many_shot=12,
            few_shot=6,
            hidden=(8, 16),
            feature_dim=16,
            epochs=4,
            batch_size=32,
            swag_rank=2,
            retrain_steps=20,
            retrain_batch=16,
            bank_size=4,
            num_samples=2,
            num_seeds=2,
        )
        return FullCheck(overrides, STEPS_KEY, data)
    root, data = cifar10_data(data_dir, scale)
    return FullCheck(dict(data_root=str(root), epochs=4), STEPS_KEY, data)
