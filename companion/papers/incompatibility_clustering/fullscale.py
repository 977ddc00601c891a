"""Incompatibility clustering: the full preset without its real data (fixtures on CPU, bounded
GPU check)."""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck, cifar10_data, count_flops

DATA = (
    "CIFAR-10, python release (cifar-10-batches-py: data_batch_1..5, test_batch, "
    "batches.meta), read from data_root (default data/cifar-10-batches-py); the backdoor "
    "(3×3 white corner patch, 10% of the source class relabelled) is made in memory"
)
HARDWARE = (
    "one GPU with ≥ 8 GB (a 3-stage CNN of 0.4 M parameters, batch 128, bf16; the defense "
    "trains 24 weak learners one after the other, so one GPU is enough)"
)
REPORTED = (
    "PreActResNet-18 / ResNet-32 on CIFAR-10, 8 source→target pairs × 5/10/20% poisons × 3 "
    "triggers: attack success below 1% in 134 of 165 scenarios, clean accuracy about 2 points "
    "lower than training on the poisoned data; negligible cost on GTSRB"
)
STEPS_KEY = "final_epochs"


def _epochs(cfg, n: int = 50_000) -> float:
    """Passes over the training set of the whole run, in units of the full set: the
    incompatibility demonstration (half of the data, two networks), each weak learner (its
    ISPL iterations on shrinking subsets and the retraining on its core set, about
    ``data_perc`` of the data), the refinement and the two final networks."""
    demo = 2 * 0.5 * cfg.demo_epochs
    dp = 0.96 / cfg.boost
    learner = 0.5 * cfg.warm_up + 3 * dp / cfg.beta * 4 * cfg.refit_epochs
    learner += dp * cfg.retrain_epochs
    learners = cfg.bags * cfg.boost * learner
    refine = cfg.refine_rounds * cfg.refine_epochs
    return demo + learners + refine + 2 * cfg.final_epochs


def flops_per_step(cfg) -> float:
    """FLOPs of the whole run per final-training epoch (``STEPS_KEY``): forward and backward of
    the CNN on 50,000 CIFAR images times the run's passes over the data (:func:`_epochs`)
    divided by ``final_epochs``. Per-example loss evaluations (forward only, once per ISPL
    iteration and refinement round) are left out."""
    from companion.papers.incompatibility_clustering.experiment import build_model

    with torch.device("meta"):
        model = build_model(cfg, 3, 10)
        x = torch.empty(cfg.batch_size, 3, 32, 32)
        y = torch.zeros(cfg.batch_size, dtype=torch.long)

    def step():
        torch.nn.functional.cross_entropy(model(x), y).backward()

    per_epoch = count_flops(step) * 50_000 / cfg.batch_size
    return per_epoch * _epochs(cfg) / cfg.final_epochs


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run (batch ``batch_size`` on 50,000 images)."""
    return int(_epochs(cfg) * 50_000 / cfg.batch_size)


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 200 + 50 CIFAR images, a CNN of widths 8/16, α = 2 in one bag, one epoch per
    phase, a checkpoint every 2 steps. ``gpu``: 50,000 + 10,000 random CIFAR images, the
    preset's model and defense, 2 final epochs."""
    root, data = cifar10_data(data_dir, scale, n_train=200, n_test=50)
    if scale == "tiny":
        overrides = dict(
            data_root=str(root), widths=(8, 16), batch_size=32, poison_fraction=0.5,
            warm_up=1, refit_epochs=1, retrain_epochs=1, boost=2, bags=1, refine_rounds=2,
            refine_epochs=1, final_epochs=1, demo_epochs=1, checkpoint_every=2,
        )  # fmt: skip
        return FullCheck(overrides, STEPS_KEY, data)
    overrides = dict(data_root=str(root), final_epochs=2)
    return FullCheck(overrides, STEPS_KEY, data)
