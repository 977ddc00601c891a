"""mega: the full preset without real data (the task is generated; fixtures on CPU)."""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F

from companion.core.fullscale import FullCheck, count_flops

DATA = (
    "nothing to download: the motif task is generated from the seed (50,000 training and "
    "5,000 test sequences of 2,048 tokens in the full preset)"
)
HARDWARE = (
    "one GPU with ≥ 24 GB (estimate: the softmax transformer's full attention over 2,048 "
    "tokens dominates memory; the Mega arms use chunks of 128), bf16"
)
REPORTED = (
    "Long Range Arena average accuracy 88.21 for Mega and 85.66 for Mega-chunk (c = 128), "
    "above the Transformer, the efficient-attention baselines and S4 (paper's LRA table; "
    "Image 90.44, Path-X 97.98); not reproduced here: the full preset runs the generated "
    "motif task at LRA sequence lengths"
)
STEPS_KEY = "steps"


def flops_per_step(cfg) -> float:
    """FLOPs of one step of the run: forward and backward of *every arm* in ``cfg.arms`` (they
    train one after the other for ``steps`` steps each) at ``cfg.batch_size`` sequences of
    ``seq_len`` tokens. The FFT of the EMA is not counted (FlopCounterMode skips it: O(L log L)
    per channel), nor the evaluations and the timing."""
    from companion.papers.mega.experiment import build_model

    total = 0.0
    for arm in cfg.arms:
        with torch.device("meta"):
            model = build_model(cfg, arm)
            x = torch.zeros(cfg.batch_size, cfg.seq_len, dtype=torch.long)
            y = torch.zeros(cfg.batch_size, dtype=torch.long)

        def step(model=model, x=x, y=y):
            F.cross_entropy(model(x), y).backward()

        total += count_flops(step)
    return total


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run: ``steps`` for each arm in ``cfg.arms``."""
    return len(cfg.arms) * cfg.steps


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """The task is generated, so nothing is written to ``data_dir``.

    ``tiny``: sequences of 64 tokens in chunks of 16, a 16-wide model of 2 layers, 4 steps per
    arm with a checkpoint after 2, timing at 3 short lengths.
    ``gpu``: the preset's sizes, 300 of its 20,000 steps per arm.
    """
    if scale == "tiny":
        overrides = dict(
            seq_len=64,
            n_train=64,
            n_test=32,
            embed_dim=16,
            zdim=8,
            hdim=16,
            ndim=4,
            depth=2,
            ffn_dim=32,
            chunk_size=16,
            batch_size=8,
            steps=4,
            eval_every=2,
            checkpoint_every=2,
            timing_lengths=(64, 128, 256),
            timing_chunk=32,
            timing_batch=1,
            timing_repeats=1,
        )
        return FullCheck(overrides, STEPS_KEY, "motif task generated in memory (64 + 32)")
    return FullCheck(dict(steps=300), STEPS_KEY, "motif task generated in memory, full size")
