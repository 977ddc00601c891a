"""SFAT: the full preset without its real data (fixtures on CPU, bounded GPU check)."""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck, cifar10_data, count_flops

DATA = (
    "CIFAR-10, python release (cifar-10-batches-py: data_batch_1..5, test_batch, "
    "batches.meta), read from data_root (default data/cifar-10-batches-py), pixels in [0, 1]"
)
HARDWARE = (
    "one GPU with ≥ 4 GB (a small CNN; the run is bound by PGD's 11 forward-backward passes per "
    "step, 5 clients simulated one after the other)"
)
REPORTED = (
    "CIFAR-10, non-IID skew split, 5 clients, NIN, FedAvg (official README): FAT vs SFAT natural "
    "58.13 vs 63.36 %, PGD-20 32.56 vs 37.14 %, AutoAttack 29.17 vs 31.66 %; FAT's PGD-20 "
    "accuracy peaks near round 20 and decays, SFAT's keeps rising (README Fig. 1)"
)
STEPS_KEY = "rounds"

# training samples shared among the clients (train + validation parts for the shipped sets)
TRAIN_SIZE = {"digits": 1437, "mnist_subset": 4000, "cifar10": 50_000}


def _steps_per_round(cfg) -> int:
    """Local SGD steps of one round, all clients together (each client: full batches)."""
    per_client = TRAIN_SIZE[cfg.dataset] // cfg.clients
    return cfg.clients * cfg.local_epochs * max(1, per_client // cfg.batch_size)


def flops_per_step(cfg) -> float:
    """FLOPs of one round over every arm in ``cfg.methods``: each local step is one
    forward-backward pass at ``cfg.batch_size`` for FedAvg and ``pgd_steps + 1`` for FAT and
    SFAT (the attack's passes and the training pass). The per-round test evaluation is left
    out."""
    from companion.papers.sfat.experiment import build_model

    channels, size = {"cifar10": (3, 32), "digits": (1, 8)}.get(cfg.dataset, (1, 28))
    with torch.device("meta"):
        model = build_model(cfg, channels, size, 10)
        x = torch.empty(cfg.batch_size, channels, size, size)
        y = torch.zeros(cfg.batch_size, dtype=torch.long)

    def step():
        torch.nn.functional.cross_entropy(model(x), y).backward()

    one = count_flops(step)
    passes = sum(1 if m == "fedavg" else cfg.pgd_steps + 1 for m in cfg.methods)
    return one * passes * _steps_per_round(cfg)


def optimizer_steps(cfg) -> int:
    """Local SGD steps of the whole run, over every arm and client."""
    return len(cfg.methods) * cfg.rounds * _steps_per_round(cfg)


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 40 + 20 CIFAR images, the preset's CNN and attack, 2 rounds of 1 local epoch
    with a checkpoint after each round. ``gpu``: 50,000 + 10,000 random CIFAR images, the
    preset's settings, 2 rounds."""
    root, data = cifar10_data(data_dir, scale)
    if scale == "tiny":
        overrides = dict(
            data_root=str(root),
            rounds=2,
            local_epochs=1,
            batch_size=4,
            pgd_steps=2,
            eval_pgd_steps=2,
            eval_size=20,
            checkpoint_every=1,
        )
        return FullCheck(overrides, STEPS_KEY, data)
    return FullCheck(dict(data_root=str(root), rounds=2), STEPS_KEY, data)
