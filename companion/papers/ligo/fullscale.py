"""LiGO: the full preset without its real data (fixtures on CPU, bounded GPU check)."""

from __future__ import annotations

from pathlib import Path

from companion.core.fullscale import FullCheck, cifar10_data

DATA = (
    "CIFAR-10, python release (cifar-10-batches-py: data_batch_1..5, test_batch, "
    "batches.meta), read from data_root (default data/cifar-10-batches-py)"
)
HARDWARE = (
    "one GPU with ≥ 16 GB (estimate: a 12-layer ViT of width 384, 21 M parameters, on 65 "
    "tokens at batch 256 in bf16, next to its LiGO operator and the frozen 6-layer width-192 "
    "source model)"
)
REPORTED = (
    "BERT-Base grown from BERT-Small (6L-512H → 12L-768H) by LiGO saves about 45% of the "
    "FLOPs and 40% of the wall time of training from scratch (project page; 'up to 50%' in "
    "the abstract), ahead of StackBERT, MSLT, bert2BERT and KI; similar savings for RoBERTa, "
    "GPT-2 and ViT/CaiT on ImageNet; the operator trains for 100 steps"
)
STEPS_KEY = "steps"


def flops_per_step(cfg) -> float:
    """FLOPs of the whole run per unit of ``cfg.steps``: the small model's ``small_steps``,
    LiGO's ``ligo_steps`` and ``steps`` of every large arm (scratch, copy, LiGO), each a
    forward and backward at ``batch_size`` (:func:`~companion.papers.ligo.experiment.step_flops`;
    evaluations left out), divided by ``steps``."""
    from companion.papers.ligo.experiment import step_flops

    f = step_flops(cfg, channels=3, classes=10)
    total = (
        cfg.small_steps * f["small"]
        + cfg.ligo_steps * f["ligo_operator"] * ("ligo" in cfg.arms)
        + cfg.steps * f["large"] * len(cfg.arms)
    )
    return total / cfg.steps


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run: the small model, LiGO's operator, every large arm."""
    return cfg.small_steps + cfg.ligo_steps * ("ligo" in cfg.arms) + cfg.steps * len(cfg.arms)


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 40 + 20 CIFAR images, a 1-layer width-8 ViT grown to 2 layers of width 16
    (head size 8 kept, 4×4 patches of 32×32 images as in the preset), 4 steps per phase and
    2 operator steps, a checkpoint every 2 steps.
    ``gpu``: 50,000 + 10,000 random CIFAR images, the preset's models, 300 steps per phase."""
    root, data = cifar10_data(data_dir, scale)
    if scale == "tiny":
        overrides = dict(
            data_root=str(root),
            small_dim=8,
            small_depth=1,
            small_heads=1,
            dim=16,
            depth=2,
            heads=2,
            batch_size=16,
            small_steps=4,
            steps=4,
            ligo_steps=2,
            eval_every=2,
            probe_size=16,
            eval_size=20,
            checkpoint_every=2,
        )
        return FullCheck(overrides, STEPS_KEY, data)
    overrides = dict(data_root=str(root), small_steps=300, steps=300, eval_every=100)
    return FullCheck(overrides, STEPS_KEY, data)
