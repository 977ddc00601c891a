"""Hrrformer: the full preset without its real data (fixtures on CPU, bounded GPU check)."""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck, cifar10_data, count_flops

DATA = (
    "CIFAR-10, python release (cifar-10-batches-py), read from data_root (default "
    "data/cifar-10-batches-py) and turned into LRA Image sequences of 1024 grey levels"
)
HARDWARE = (
    "one GPU with ≥ 16 GB (estimate: 3 layers of width 256 on 1024 tokens, batch 32, bf16; "
    "the softmax baseline's timing at T = 16384 holds 4 GB of score matrices)"
)
REPORTED = (
    "LRA Image: 48.47 % with one layer, 50.45 % with several, against 42.44 % for the "
    "Transformer, after 20 epochs (baselines 200); Fig. 1 (EMBER, T up to 131,072): softmax "
    "baselines run out of memory or time while Hrrformer keeps linear cost"
)
STEPS_KEY = "steps"


def flops_per_step(cfg) -> float:
    """FLOPs of one training step of every arm on ``cfg.task``, forward and backward at
    ``cfg.batch_size`` (both attentions, counted on the meta device). The FFTs and the
    T × T products' softmax are elementwise work the counter leaves out; the short
    critique arms (``critique_steps``) are left out too."""
    from companion.papers.hrrformer.experiment import build_model

    total = 0.0
    for kind in cfg.attentions:
        with torch.device("meta"):
            model = build_model(cfg, kind, 256, cfg.seq_len, 10, True)
            x = torch.zeros(cfg.batch_size, cfg.seq_len, dtype=torch.long)
            y = torch.zeros(cfg.batch_size, dtype=torch.long)

        def step(model=model, x=x, y=y):
            torch.nn.functional.cross_entropy(model(x), y).backward()

        total += count_flops(step)
    return total


def optimizer_steps(cfg) -> int:
    """Every arm trains ``steps`` on the task and ``critique_steps`` on the critique task."""
    return len(cfg.attentions) * (cfg.steps + cfg.critique_steps)


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 16 + 8 CIFAR images as 1024-pixel sequences, a 1-layer model of width 16,
    2 steps per arm with a checkpoint after each, timing at two short lengths.
    ``gpu``: 50,000 + 10,000 random CIFAR images, the preset's model, 300 steps per arm."""
    if scale == "tiny":
        root, data = cifar10_data(data_dir, scale, n_train=16, n_test=8)
        overrides = dict(
            data_root=str(root),
            dim=16,
            depth=1,
            batch_size=4,
            steps=2,
            critique_steps=2,
            n_train=64,
            n_test=32,
            checkpoint_every=1,
            timing_lengths=(64, 128),
            hrr_lengths=(256,),
            timing_dim=16,
            timing_repeats=1,
            timing_seconds=0.0,
            fit_from=64,
        )
        return FullCheck(overrides, STEPS_KEY, data)
    root, data = cifar10_data(data_dir, scale)
    return FullCheck(dict(data_root=str(root), steps=300, critique_steps=300), STEPS_KEY, data)
