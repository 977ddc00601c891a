"""LeadFL: the full preset without its real data (fixtures on CPU, bounded GPU check)."""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck, cifar10_data, count_flops

DATA = (
    "CIFAR-10, python release (cifar-10-batches-py: data_batch_1..5, test_batch, "
    "batches.meta), read from data_root (default data/cifar-10-batches-py)"
)
HARDWARE = (
    "one GPU or a multi-core CPU: a small CNN (about 0.1 M parameters), 10 clients of 100 per "
    "round trained one after the other in one process (no DDP)"
)
REPORTED = (
    "under bursts of attackers (rounds 0, 10, 12), server defences alone (Bulyan, Multi-Krum, "
    "...) often leave a backdoor accuracy above 75%; with LeadFL on the benign clients it "
    "frequently falls below 10%, at a smaller main-task cost than other client-side defences "
    "(abstract; FashionMNIST, CIFAR-10, CIFAR-100, iid and non-iid)"
)
STEPS_KEY = "rounds"
SINGLE_DEVICE = True  # the clients are simulated one after the other in one process


def flops_per_step(cfg) -> float:
    """FLOPs of one federated *round* of the whole run: ``per_round`` clients × ``local_steps``
    forward and backward passes at ``batch_size``, for every arm in ``cfg.defenses``. LeadFL's
    regularizer and second optimizer step (element-wise work) and the per-round evaluation are
    left out."""
    from companion.papers.leadfl.experiment import build_model

    channels = 1 if cfg.dataset in ("mnist_subset", "digits") else 3
    with torch.device("meta"):
        model = build_model(cfg, channels)
        x = torch.empty(cfg.batch_size, channels, cfg.image_size, cfg.image_size)
        y = torch.zeros(cfg.batch_size, dtype=torch.long)

    def step():
        torch.nn.functional.cross_entropy(model(x), y).backward()

    per_step = count_flops(step)
    return len(cfg.defenses) * cfg.per_round * cfg.local_steps * per_step


def optimizer_steps(cfg) -> int:
    """Local optimizer steps of the whole run (LeadFL's second step per batch not counted)."""
    return len(cfg.defenses) * cfg.rounds * cfg.per_round * cfg.local_steps


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 40 + 20 CIFAR images, 8 clients (2 attackers, 4 per round, a burst at rounds 0
    and 2), a CNN of widths 8, 16, 4 rounds of 2 local steps, a checkpoint every 2 rounds.
    ``gpu``: 50,000 + 10,000 random CIFAR images, the preset's clients and model, 2 rounds."""
    root, data = cifar10_data(data_dir, scale)
    if scale == "tiny":
        overrides = dict(
            data_root=str(root),
            widths=(8, 16),
            clients=8,
            malicious=2,
            per_round=4,
            burst_rounds=(0, 2),
            burst_malicious=2,
            krum_f=1,
            rounds=4,
            local_steps=2,
            batch_size=8,
            checkpoint_every=2,
        )
        return FullCheck(overrides, STEPS_KEY, data)
    return FullCheck(dict(data_root=str(root), rounds=2), STEPS_KEY, data)
