"""dwsl: the full preset without its real data (fixtures on CPU, bounded GPU check)."""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F

from companion.core.fullscale import FullCheck, count_flops
from companion.papers.dwsl.env import GridMaze
from companion.papers.dwsl.experiment import DWSLConfig
from companion.papers.dwsl.method import GoalReachingAgent

DATA = (
    "nothing to download: each seed's offline data (2,000 episodes of 50 steps, half noisy "
    "expert, half random) is generated in the four-rooms maze; or a D4RL-style .npz "
    "(observations, actions, next_observations, timeouts; see env.save_d4rl) given by the "
    "setting data_path"
)
HARDWARE = (
    "one GPU or a few CPU cores (estimate: six 3 x 256 MLPs on one-hot cells, under 1 GB); "
    "the cost is 5 seeds x 200,000 steps"
)
REPORTED = (
    "DWSL keeps behaviour cloning as a lower bound while improving on it, and beats GCSL, "
    "WGCSL, GoFar and IQL on image-based goal reaching (Fetch, Shadow hand, Franka Kitchen, "
    "robomimic, AntMaze; paper abstract and result tables); the gridworld here has no "
    "published numbers to compare with"
)
STEPS_KEY = "steps"


def flops_per_step(cfg: DWSLConfig) -> float:
    """FLOPs of one step of the run: one Adam step of the agent (the distance classifier at
    (s, g) with gradient and at (s', g) without, and one actor per arm: GCBC and each α),
    forward + backward on a batch of ``cfg.batch_size`` relabelled transitions, times
    ``n_seeds`` (the run trains every seed, one after another, for ``steps`` steps each).
    The first layer on one-hot cells is an embedding lookup (no multiply, not counted); the
    success measurements every ``measure_every`` steps (greedy rollouts) are not counted."""
    env = GridMaze(cfg.layout, cfg.episode_length)
    with torch.device("meta"):
        agent = GoalReachingAgent(env.n_cells, 4, cfg.hidden, cfg.bins, cfg.arms, seed=cfg.seed)
        cells = torch.zeros(cfg.batch_size, dtype=torch.long)
        actions = torch.zeros(cfg.batch_size, dtype=torch.long)

    def step():
        logits, _, action_logits = agent(cells, cells, cells)
        loss = F.cross_entropy(logits, cells % cfg.bins)
        for out in action_logits:
            loss = loss + F.cross_entropy(out, actions)
        loss.backward()

    return count_flops(step) * cfg.n_seeds


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run: ``steps`` for each of the ``n_seeds`` seeds."""
    return cfg.steps * cfg.n_seeds


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """The ``full`` preset reads no files (``data_path`` empty: each seed generates its offline
    data), so nothing is written to ``data_dir``; the maze, episode length, bins, arms and
    networks stay the preset's.

    ``tiny``: one seed of 40 episodes, batch 64, 4 steps, success measured at the first and
    the last step and a checkpoint every 2 steps, so an interrupted run resumes mid-seed.
    ``gpu``: the full data (2,000 episodes per seed) and all 5 seeds, 1,000 of the 200,000
    steps each (the time per step times the preset's steps covers all seeds).
    """
    if scale == "tiny":
        overrides = {
            "n_episodes": 40,
            "batch_size": 64,
            "steps": 4,
            "measure_every": 4,
            "n_seeds": 1,
            "checkpoint_every": 2,
        }
        data = "no files: 40 generated episodes per seed in the four-rooms maze"
    else:
        overrides = {"steps": 1000, "measure_every": 500}
        data = (
            "no files: the full preset's generated data (2,000 episodes of 50 steps per seed "
            "in the four-rooms maze)"
        )
    return FullCheck(overrides=overrides, steps_key=STEPS_KEY, data=data)
