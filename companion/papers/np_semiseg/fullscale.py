"""NP-SemiSeg: the full preset on CPU fixtures (synthetic data: nothing to download)."""

from __future__ import annotations

from pathlib import Path

from companion.core.fullscale import FullCheck

DATA = "synthetic shape scenes generated in memory (64×64, 4 shape classes + background)"
HARDWARE = "one GPU (the NP head at the paper's size: latent 32, decoder width 256, T = 5)"
REPORTED = (
    "mIoU on PASCAL VOC and Cityscapes splits for U2PL and AugSeg with the NP head, and "
    "uncertainty better and faster than MC dropout; the sources read report comparisons with MC "
    "dropout, not a head-vs-head gain over the softmax head (not verified)"
)
STEPS_KEY = "steps"


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: the full preset's head at small sizes, 4 steps per arm. ``gpu``: the preset's
    sizes, 300 steps per arm."""
    if scale == "tiny":
        overrides = dict(
            n_unlabeled=16,
            n_test=8,
            n_labeled=4,
            steps=4,
            eval_every=2,
            features=8,
            latent_dim=8,
            decoder_width=8,
            memory_size=64,
            batch_labeled=2,
            batch_unlabeled=2,
            image_size=32,
            shape_size=(6, 12),
        )
        return FullCheck(overrides, STEPS_KEY, DATA)
    return FullCheck(dict(steps=300, eval_every=100), STEPS_KEY, DATA)


def flops_per_step(cfg) -> float:
    """FLOPs of one step of every arm (forward and backward): the backbone on the labelled and
    unlabelled batch, the softmax decoder (two arms) and the NP decoder on T samples (its
    embedding, aggregator and memories are small next to it and left out), plus the teachers'
    forward passes."""
    import torch

    from companion.core.fullscale import count_flops
    from companion.papers.np_semiseg.experiment import Backbone
    from companion.papers.np_semiseg.method import decoder

    b = cfg.batch_labeled + cfg.batch_unlabeled
    s, k = cfg.image_size, cfg.num_classes
    with torch.device("meta"):
        backbone = Backbone(cfg.features)
        soft = decoder(cfg.features, cfg.decoder_width, k)
        np_dec = decoder(cfg.features + 2 * cfg.latent_dim, cfg.decoder_width, k)
        x = torch.empty(b, 1, s, s)
        z = torch.empty(cfg.samples * b, cfg.features + 2 * cfg.latent_dim, s, s)

    def soft_step():
        soft(backbone(x)).sum().backward()

    def np_step():
        backbone(x).sum().backward()
        np_dec(z).sum().backward()

    return 2 * count_flops(soft_step) + count_flops(np_step)


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run: ``cfg.steps`` for each arm."""
    return len(cfg.arms) * cfg.steps
