"""CIDER: the full preset without its real data (fixtures on CPU, bounded GPU check).

The full preset is the official CIFAR-10 recipe (``scripts/train_cider_cifar10.sh``: ResNet-18,
batch 512, lr 0.5, cosine, 500 epochs, τ = 0.1, α = 0.95, w = 2, K = 100) on the six ID classes
of CIFAR-10, with the other four classes as near OOD and noise / shuffled pixels as far OOD:
every OOD set is made from the CIFAR files, so nothing downloads. The paper's own OOD sets
(SVHN, Places365, LSUN, iSUN, Textures) are not part of this run.
"""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck, cifar10_data, count_flops

DATA = (
    "CIFAR-10, python release (cifar-10-batches-py: data_batch_1..5, test_batch, "
    "batches.meta), read from data_root (default data/cifar-10-batches-py); classes 0-5 are "
    "in-distribution, classes 6-9 the near-OOD set"
)
HARDWARE = (
    "one GPU with ≥ 16 GB (estimate: ResNet-18 on 2 × 512 augmented 32×32 views per step, "
    "bf16), three arms trained one after the other"
)
REPORTED = (
    "CIFAR-10 (ResNet-18) vs SVHN, Places365, LSUN, iSUN, Textures: CIDER's average FPR95 "
    "is lower than SupCon's (KNN score) and cross-entropy's, with higher AUROC (Table 1); "
    "CIDER's prototypes are more dispersed and its samples more compact (Sec. 5)"
)
STEPS_KEY = "steps"


def flops_per_step(cfg) -> float:
    """FLOPs of one step of the run: forward and backward of *every arm* in ``cfg.methods``
    (the arms train one after the other for ``cfg.steps`` steps each) on 2 × ``batch_size``
    augmented 3 × 32² views. The prototype update, the losses' small matrix products and the
    evaluation (features of every image, KNN search) are left out."""
    from companion.papers.cider.experiment import build_model

    with torch.device("meta"):
        model = build_model(cfg, (3, 32, 32))
        x = torch.empty(2 * cfg.batch_size, 3, 32, 32)

    def step():
        h, z, logits = model(x)
        (z.sum() + logits.sum()).backward()

    return len(cfg.methods) * count_flops(step)


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run: ``cfg.steps`` for each arm in ``cfg.methods``."""
    return len(cfg.methods) * cfg.steps


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 40 + 20 CIFAR images, a ResNet-18 of width 2 (h of 16 features, z of 8),
    batches of 4, 2 steps per arm with a checkpoint after each, K = 3.
    ``gpu``: 50,000 + 10,000 random CIFAR images, the preset's model, 300 steps per arm."""
    root, data = cifar10_data(data_dir, scale)
    if scale == "tiny":
        overrides = dict(
            data_root=str(root),
            feat_dim=16,
            out_dim=8,
            batch_size=4,
            steps=2,
            warmup_steps=1,
            k=3,
            checkpoint_every=1,
            log_every=1,
        )
        return FullCheck(overrides, STEPS_KEY, data)
    return FullCheck(dict(data_root=str(root), steps=300, warmup_steps=10), STEPS_KEY, data)
