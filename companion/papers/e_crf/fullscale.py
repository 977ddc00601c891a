"""E-CRF: the full preset needs no data files (the scenes are generated from the seed)."""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck, count_flops

DATA = (
    "none: synthetic scenes (four equidistant colours, two touching pairs, SLIC superpixels) "
    "generated from the seed; the paper's ADE20K / Cityscapes are not read"
)
HARDWARE = (
    "one GPU with ≥ 8 GB (a 8-layer FCN of width 256 at 96×96, batch 32, four arms one after "
    "the other; SLIC runs on the CPU once per scene)"
)
REPORTED = (
    "E-CRF in DeepLabV3+ raises mIoU on ADE20K, Cityscapes and Pascal Context (table values not "
    "verified); on Cityscapes the per-class drop of class-weight similarity correlates with the "
    "per-class mIoU gain (official README figure)"
)
STEPS_KEY = "steps"


def flops_per_step(cfg) -> float:
    """FLOPs of one step of every arm in ``cfg.methods`` (forward and backward at
    ``cfg.batch_size``, counted on one scene and scaled: the superpixel mean needs real ids, so
    this runs on the CPU, not on the meta device); scene generation, SLIC and evaluation are
    left out."""
    from companion.papers.e_crf.experiment import SegNet

    total = 0.0
    s = cfg.image_size
    for method in cfg.methods:
        model = SegNet(cfg, method)
        x = torch.rand(1, 3, s, s)
        sp = torch.zeros(1, s, s, dtype=torch.long)
        y = torch.zeros(1, s, s, dtype=torch.long)

        def step(model=model, x=x, sp=sp, y=y):
            torch.nn.functional.cross_entropy(model(x, sp), y).backward()

        total += count_flops(step) * cfg.batch_size
    return total


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run: ``cfg.steps`` for each arm."""
    return len(cfg.methods) * cfg.steps


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 16 + 8 scenes of 16×16, a 2-layer FCN of width 8, 4 steps per arm with a
    checkpoint after 2. ``gpu``: the preset's sizes, 300 steps per arm."""
    if scale == "tiny":
        overrides = dict(
            image_size=16,
            n_train=16,
            n_test=8,
            smoothness=2.0,
            superpixels=16,
            width=8,
            depth=2,
            ecrf_channels=4,
            batch_size=4,
            steps=4,
            measure_every=2,
            band=2,
            checkpoint_every=2,
        )
        return FullCheck(overrides, STEPS_KEY, DATA)
    return FullCheck(dict(steps=300), STEPS_KEY, DATA)
