"""doge: the full preset (the paper's network sizes and a 10^5-step budget on the same task)."""

from __future__ import annotations

from pathlib import Path

from companion.core.fullscale import FullCheck
from companion.data import offline_rl

DATA = (
    "nothing to download: the one-step navigation task generates its data per seed; or a "
    "D4RL-style .npz (observations [M, 1], actions [M, 2], rewards, next_observations, terminals, "
    "timeouts) given by the setting data_path"
)
HARDWARE = "a few CPU cores or one GPU (3 × 256 MLPs, batch 256, 10^5 steps per arm)"
REPORTED = (
    "D4RL: DOGE beats TD3+BC on most MuJoCo and all AntMaze tasks (paper Table 1); on AntMaze with "
    "regions of the data removed DOGE still reaches the goal (README Figure 1); no bandit numbers"
)
STEPS_KEY = "steps"


def flops_per_step(cfg) -> float:
    """FLOPs of one step of all arms: critic forward/backward on the batch (two heads), the
    actor every ``policy_freq`` steps, the distance regression on N samples per pair (DOGE)."""
    d_in, h, layers = 3, cfg.hidden, cfg.layers
    per_row = 2 * (d_in * h + (layers - 1) * h * h + h)  # one MLP forward
    critic = 3 * 2 * per_row * cfg.batch_size
    actor = 3 * 2 * per_row * cfg.batch_size / cfg.policy_freq
    distance = 3 * per_row * cfg.batch_size * cfg.distance_samples * cfg.distance_fraction
    return len(cfg.arms) * (critic + actor) + distance


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: a D4RL-style file of 300 transitions written to ``data_dir`` (the real format),
    tiny networks, 6 steps per arm. ``gpu``: the preset, 2,000 of its steps."""
    from companion.papers.doge.experiment import PRESETS, make_dataset

    if scale == "tiny":
        path = Path(data_dir) / "doge_gap_bandit.npz"
        if not path.exists():
            offline_rl.save_d4rl(path, make_dataset(PRESETS["smoke"].replace(transitions=300), 0))
        overrides = dict(
            data_path=str(path), hidden=8, steps=6, eval_episodes=5, grid=11, probe_states=3
        )
        return FullCheck(overrides, STEPS_KEY, "a D4RL-style .npz of 300 transitions")
    return FullCheck(dict(steps=2000), STEPS_KEY, "no files: the generated task data")


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run: ``cfg.steps`` for each arm in ``cfg.arms``."""
    return len(cfg.arms) * cfg.steps
