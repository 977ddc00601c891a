"""iac: the full preset (generated data: nothing to download)."""

from __future__ import annotations

from pathlib import Path

from companion.core.fullscale import FullCheck

DATA = (
    "nothing to download: each seed generates a random finite MDP (100 states, 10 actions, 3 "
    "never taken per state) and 2,000 episodes of 50 steps from its behaviour policy, and 1,600 "
    "Pendulum-v1 episodes in gymnasium; or pass pend_data=PATH, a D4RL-style .npz of Pendulum-v1 "
    "steps (companion.data.offline_rl.save_d4rl's format)"
)
HARDWARE = "one CPU core (NumPy tables; no GPU use)"
REPORTED = (
    "the paper reports D4RL Gym-MuJoCo and AntMaze scores competitive with the state of the art "
    "(abstract); its tables were not available, and a finite MDP has no published numbers"
)
STEPS_KEY = "steps"
SINGLE_DEVICE = True


def flops_per_step(cfg) -> float:
    """Arithmetic of one step of every critic (NumPy, counted by hand): the SIR weights over
    the dataset's rows, a minibatch of TD targets and table updates, an actor step; the exact
    policy evaluation every ``measure_every`` steps (an S×S solve) is amortised."""
    rows = cfg.n_episodes * cfg.horizon
    per_step = 10 * rows + 20 * cfg.batch_size * cfg.n_actions
    solve = (2 / 3) * cfg.n_states**3 + 10 * rows
    mlp = 2 * 3 * (4 * cfg.pend_hidden + cfg.pend_hidden**2 + cfg.pend_hidden) * cfg.pend_batch
    pend = len(cfg.pend_critics) * 2 * mlp * cfg.pend_steps / max(cfg.steps, 1)
    return len(cfg.critics) * (per_step + solve / cfg.measure_every) + pend


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: the full preset's MDP with 20 episodes and 20 steps per critic (each critic
    writes its arm when done, so an interrupted run resumes after the last finished critic).
    ``gpu``: the full data, 2,000 steps."""
    from companion.data.offline_rl import save_d4rl
    from companion.papers.iac.continuous import collect
    from companion.papers.iac.experiment import PRESETS

    episodes = 20 if scale == "tiny" else PRESETS["full"].pend_episodes
    path = Path(data_dir) / f"pendulum-{episodes}.npz"
    if not path.exists():  # a D4RL-style file, read back by load_d4rl
        save_d4rl(path, collect(PRESETS["full"].replace(pend_episodes=episodes), seed=0))
    if scale == "tiny":
        return FullCheck(
            {
                "n_episodes": 20,
                "steps": 20,
                "measure_every": 10,
                "pend_data": str(path),
                "pend_steps": 20,
                "pend_measure_every": 10,
                "pend_eval_states": 20,
                "pend_eval_rollouts": 2,
            },
            STEPS_KEY,
            "20 generated MDP episodes; a D4RL-style .npz of 20 Pendulum-v1 episodes",
        )
    return FullCheck(
        {"steps": 2000, "pend_data": str(path), "pend_steps": 2000},
        STEPS_KEY,
        "the full preset's generated MDP data; a D4RL-style .npz of 1,600 Pendulum-v1 episodes",
    )
