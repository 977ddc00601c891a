"""neural_constraint_satisfaction: the full preset without real data (it generates its own)."""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F

from companion.core.fullscale import FullCheck, count_flops

DATA = (
    "nothing to download: each run generates its offline data (5,000 episodes of a noisy "
    "oracle in a 6×6 block world with 2-4 objects, rendered to 24×24 images)"
)
HARDWARE = "one GPU or a few CPU cores (two small BC networks; planning is CPU-bound)"
REPORTED = (
    "NCS generalizes to different numbers and configurations of objects and outperforms "
    "offline deep-RL baselines on simulated rearrangement (abstract); the paper's numbers "
    "and environments were not retrieved, so none are compared here"
)
STEPS_KEY = "steps"
SINGLE_DEVICE = True


def flops_per_step(cfg) -> float:
    """FLOPs of one BC step: forward and backward of the pixel policy and of the entity policy
    at ``batch_size`` (the two BC arms train ``steps`` each). Data generation, k-means, graph
    building and the planner's rollouts are not counted."""
    from companion.papers.neural_constraint_satisfaction.method import EntityPolicy, PixelPolicy

    n_actions = cfg.grid * cfg.grid * 4
    side = cfg.grid * cfg.cell_px
    with torch.device("meta"):
        pix = PixelPolicy(cfg.grid, cfg.cell_px, cfg.channels, cfg.hidden, n_actions)
        ent = EntityPolicy(cfg.colours * (1 + 2 * cfg.n_clusters), cfg.hidden, n_actions)
        x = torch.empty(cfg.batch_size, 6, side, side)
        e = torch.empty(cfg.batch_size, cfg.colours * (1 + 2 * cfg.n_clusters))
        y = torch.zeros(cfg.batch_size, dtype=torch.long)

    def step():
        (F.cross_entropy(pix(x), y) + F.cross_entropy(ent(e), y)).backward()

    return count_flops(step)


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run: ``steps`` for each BC arm."""
    return 2 * cfg.steps


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """The full preset reads no files, so nothing is written to ``data_dir``.

    ``tiny``: 40 episodes, 4 BC steps, 2 tasks per count (board, counts, networks stay the
    preset's). ``gpu``: the preset's data and tasks, 1,000 of the 20,000 BC steps."""
    if scale == "tiny":
        overrides = {"n_episodes": 40, "steps": 4, "eval_every": 2, "n_eval": 2, "batch_size": 16}
        data = "no files: 40 generated episodes"
    else:
        overrides = {"steps": 1000}
        data = "no files: the full preset's generated episodes"
    return FullCheck(overrides=overrides, steps_key=STEPS_KEY, data=data)
