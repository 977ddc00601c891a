"""Task-head energy: the full preset on its real data (the digits ship with the package, so
the fixture is the real data set at a smaller model and fewer epochs)."""

from __future__ import annotations

from pathlib import Path

from companion.core.fullscale import FullCheck

DATA = "scikit-learn's 8×8 digits (shipped, nothing to download)"
HARDWARE = "one CPU core: an MLP of about 50 k parameters"
REPORTED = (
    "the feature distance after finetuning grows with the energy left by head probing, while "
    "z·z₀ and ‖z‖ rise and then fall (abstract)"
)
STEPS_KEY = "ft_epochs"


def _arms(cfg) -> int:
    permuted = len(cfg.permuted_classes) if cfg.permuted_control else 0
    return len(cfg.hp_epochs) + len(cfg.head_scales) + permuted


def flops_per_step(cfg) -> float:
    """Forward and backward FLOPs (≈ 6 × parameters × samples) of one FT epoch of every arm
    over the ~540 training images of digits 5–9; pretraining and probing are left out."""
    params = 64 * cfg.hidden + cfg.hidden * cfg.feature_dim + cfg.feature_dim * 5
    arms = _arms(cfg)
    return 6.0 * params * 540 * arms * cfg.num_seeds


def optimizer_steps(cfg) -> int:
    """SGD steps of the FT phase of every arm and seed (pretraining and probing left out)."""
    per_epoch = -(-540 // cfg.batch_size)
    arms = _arms(cfg)
    return cfg.ft_epochs * per_epoch * arms * cfg.num_seeds


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: the preset's sizes with 2 seeds, 2 pretraining and 2 FT epochs, τ ∈ {0, 2}.
    ``gpu``: the preset as it is, with 5 FT epochs."""
    if scale == "tiny":
        overrides = dict(num_seeds=2, pretrain_epochs=2, ft_epochs=2, hp_epochs=(0, 2))
        return FullCheck(overrides, STEPS_KEY, DATA)
    return FullCheck(dict(ft_epochs=5), STEPS_KEY, DATA)
