"""t-SimCNE: the full preset without its real data (fixtures on CPU, bounded GPU check).

The preset counts training in epochs per stage, ``epochs = (1000, 50, 450)``: the full run is
``sum(epochs)`` epochs, and :func:`flops_per_step` gives the FLOPs of one such epoch (the
three stages' mean, weighted by their epochs), so that epochs × FLOPs is the whole training.
"""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck, cifar10_data, count_flops

DATA = (
    "CIFAR-10, python release (cifar-10-batches-py: data_batch_1..5, test_batch, "
    "batches.meta), read from data_root (default data/cifar-10-batches-py); all 60,000 "
    "images are embedded"
)
HARDWARE = (
    "one GPU with ≥ 24 GB (estimate: ResNet18 on 2 × 1,024 augmented views per step, bf16), "
    "and for the t-SNE baseline of 60,000 images a multi-core CPU (scikit-learn)"
)
REPORTED = (
    "CIFAR-10 and CIFAR-100 mapped to 2-D with kNN accuracy (k = 15) comparable to the 128-d "
    "SimCLR representation (abstract, Sec. 4), where t-SNE of the pixels fails (Fig. A.1)"
)
STEPS_KEY = "epochs"  # a tuple (epochs of stages 1, 2, 3): the run is their sum

N_IMAGES = {"cifar10": 60_000}  # the full preset embeds train and test images together


def flops_per_step(cfg) -> float:
    """FLOPs of one *epoch* of training (``STEPS_KEY`` counts epochs), averaged over the three
    stages with their epochs as weights. An epoch is ``N // batch_size`` steps; a step is the
    forward and backward of two augmented views of ``cfg.batch_size`` images (3 × 32²), through
    the whole network in stages 1 and 3, and in stage 2 a forward through the frozen network
    and a backward through its new last layer only. The end-of-stage embedding of every image
    and the kNN and t-SNE (CPU) are left out."""
    from companion.papers.tsimcne.experiment import build_model
    from companion.papers.tsimcne.method import start_stage

    n = N_IMAGES.get(cfg.dataset, 60_000)
    steps_per_epoch = max(1, n // cfg.batch_size)
    with torch.device("meta"):
        net = build_model(cfg, 3)
        x = torch.empty(2 * cfg.batch_size, 3, cfg.image_size, cfg.image_size)
    total = 0.0
    for stage, epochs in zip((1, 2, 3), cfg.epochs):
        with torch.device("meta"):
            start_stage(net, stage, cfg.out_dim, cfg.last_layer_std)

        def step():
            # the loss's own products (2B × 2B × out_dim) are < 0.1 % of the network's, and
            # infonce's float32 autocast guard does not run on the meta device: a plain sum
            net(x).sum().backward()

        total += epochs * steps_per_epoch * count_flops(step)
    return total / sum(cfg.epochs)


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run: ``N // batch_size`` per epoch of every stage."""
    return sum(cfg.epochs) * max(1, N_IMAGES.get(cfg.dataset, 60_000) // cfg.batch_size)


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 40 + 20 CIFAR images, a CIFAR ResNet of four stages of one block (widths
    4-8-16-32, head 32 → 128 → 2), batches of 20 (3 steps an epoch), epochs (2, 1, 1) with the
    preset's warm-up, a checkpoint every 2 steps, t-SNE of the pixels at scikit-learn's fewest
    iterations.

    ``gpu``: 50,000 + 10,000 random CIFAR images, the preset's ResNet18 and batch 1,024,
    epochs (2, 1, 1); t-SNE of the 60,000 images' pixels is left out (a CPU computation of
    many minutes, not what a GPU check times), so is its claim row."""
    if scale == "tiny":
        root, data = cifar10_data(data_dir, scale)
        overrides = dict(
            data_root=str(root),
            blocks=(1, 1, 1, 1),
            widths=(4, 8, 16, 32),
            hidden_dim=32,
            batch_size=20,
            epochs=(2, 1, 1),
            warmup_epochs=(1, 0, 1),
            tsne_iter=250,  # scikit-learn's minimum
            checkpoint_every=2,
        )
        return FullCheck(overrides, STEPS_KEY, data)
    root, data = cifar10_data(data_dir, scale)
    overrides = dict(data_root=str(root), epochs=(2, 1, 1), warmup_epochs=(1, 0, 1), tsne=False)
    return FullCheck(overrides, STEPS_KEY, data)
