"""unimax: the full preset without its real data (fixtures on CPU, bounded GPU check)."""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F

from companion.core.fullscale import FullCheck, count_flops
from companion.papers.unimax.experiment import METHODS, NextTokenModel, UniMaxConfig

DATA = (
    "nothing to download: the corpus part uses a Zipf–Mandelbrot fit to the paper's figures "
    "(107 languages, 29T characters), or per-language character counts from a CSV "
    "'language,characters' or a JSON object (the setting counts_path); the toy run generates "
    "its 32 synthetic languages in memory"
)
HARDWARE = "one GPU (estimate: a 0.2M-parameter model, under 1 GB; also runs on a CPU, slower)"
REPORTED = (
    "umT5 models (up to 13B parameters) pretrained on the mC4 refresh (29T characters, 107 "
    "languages) with UniMax sampling beat temperature sampling on multilingual benchmarks, "
    "and the benefit persists as models grow (paper's result tables); not reproduced here: "
    "the full preset computes the distributions at that scale and trains a toy"
)
STEPS_KEY = "steps"


def flops_per_step(cfg: UniMaxConfig) -> float:
    """FLOPs of one step of the run: one Adam step of the toy model (forward + backward,
    batch ``cfg.batch_size``) for *each* sampling method (the run trains both, one after the
    other, for ``steps`` steps each), plus their per-language evaluations (all language ×
    token pairs, and ``train_eval_size`` training examples per language) divided by
    ``eval_every``. The corpus part (a sort and a running sum over 107 languages) is not
    counted."""
    with torch.device("meta"):
        model = NextTokenModel(cfg.languages, cfg.vocab, cfg.embed_dim, cfg.hidden)
        x = torch.zeros(cfg.batch_size, 2, dtype=torch.long)
        y = torch.zeros(cfg.batch_size, dtype=torch.long)
        grid = torch.zeros(cfg.languages * cfg.vocab, 2, dtype=torch.long)
        seen = torch.zeros(cfg.languages * cfg.train_eval_size, 2, dtype=torch.long)

    def step():
        F.cross_entropy(model(x), y).backward()

    def evaluate():
        with torch.no_grad():
            model(grid)
            model(seen)

    per_arm = count_flops(step) + count_flops(evaluate) / cfg.eval_every
    return len(METHODS) * per_arm


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run: ``steps`` for each of the two sampling methods."""
    return 2 * cfg.steps


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """The ``full`` preset reads no files (``counts_path`` empty: the corpus fit; the toy
    languages are generated), so nothing is written to ``data_dir``.

    ``tiny``: 6 languages of 2,048 down to 4 examples, a 16-token vocabulary and a 32-wide MLP,
    12 steps of 32 examples per method (temperature sampling repeats the smallest language more
    than N times), an evaluation every 4 steps and a checkpoint every 4.
    ``gpu``: the full sizes (32 languages, 2^20 down to 64 examples, vocabulary 256, MLP 512,
    batch 512) for 2,000 of the 20,000 steps per method.
    """
    if scale == "tiny":
        overrides = {
            "languages": 6,
            "largest": 2048,
            "smallest": 4,
            "vocab": 16,
            "embed_dim": 8,
            "hidden": 32,
            "batch_size": 32,
            "steps": 12,
            "eval_every": 4,
            "train_eval_size": 64,
            "checkpoint_every": 4,
        }
        data = "no files: the corpus fit to the paper's figures and 6 generated toy languages"
    else:
        overrides = {"steps": 2000}
        data = (
            "no files: the corpus fit to the paper's figures and the full preset's 32 generated "
            "toy languages (2^20 down to 64 examples each)"
        )
    return FullCheck(overrides=overrides, steps_key=STEPS_KEY, data=data)
