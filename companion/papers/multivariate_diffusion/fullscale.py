"""multivariate_diffusion: the full preset reads no files (its 2-D toy data is generated)."""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck, count_flops

DATA = "nothing to download: two moons from scikit-learn's generator (100,000 + 10,000 points)"
HARDWARE = "one GPU or a CPU (a 0.8M-parameter MLP on 2-D points)"
REPORTED = (
    "Table 2 (submission), test bpd: MNIST VPSDE 1.089, CLD 0.920, learned 0.960, MALDA 0.507; "
    "CIFAR-10 VPSDE 3.36, learned 3.009, MALDA 2.634 (U-Net score models); not reproduced here"
)
STEPS_KEY = "steps"


def flops_per_step(cfg) -> float:
    """Forward and backward of the score MLP at batch ``cfg.batch_size`` for each arm (the K×K
    matrix exponentials are left out)."""
    from companion.papers.multivariate_diffusion.method import ScoreNet

    total = 0.0
    for arm in cfg.arms:
        K = 1 if arm == "vpsde" else cfg.n_vars
        with torch.device("meta"):
            net = ScoreNet(2, K, cfg.hidden, cfg.depth)
            y = torch.empty(cfg.batch_size, 2, K)
            s = torch.empty(cfg.batch_size)

        def step(net=net, y=y, s=s):
            net(y, s).sum().backward()

        total += count_flops(step)
    return total


def optimizer_steps(cfg) -> int:
    return len(cfg.arms) * cfg.steps


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 256 + 64 points, a 16-wide MLP, 4 steps per arm with a checkpoint after 2.
    ``gpu``: the full sizes for 2,000 of the 20,000 steps per arm."""
    if scale == "tiny":
        overrides = dict(
            n_train=256,
            n_test=64,
            hidden=16,
            depth=2,
            batch_size=64,
            steps=4,
            eval_repeats=2,
            premise_samples=500,
            checkpoint_every=2,
        )
        return FullCheck(overrides, STEPS_KEY, "no files: 256 + 64 generated two-moons points")
    return FullCheck({"steps": 2000}, STEPS_KEY, DATA)
