"""tcrl: the full preset without its data (a D4RL-style fixture on CPU, bounded GPU check)."""

from __future__ import annotations

from pathlib import Path

from companion.core.fullscale import FullCheck
from companion.data import offline_rl

DATA = (
    "nothing to download: 500 random-policy episodes of gymnasium's Pendulum-v1 are generated "
    "per seed; or a D4RL-style .npz (observations, actions in [-1, 1], rewards, "
    "next_observations, terminals, timeouts) given by the setting data_path"
)
HARDWARE = (
    "a few CPU cores or one GPU (estimate: 512-512 MLPs, batch 512; planning runs MPPI in the "
    "real environment, one decision at a time, which a CPU does as fast as a GPU)"
)
REPORTED = (
    "DMC from states: TCRL matches or beats TD-MPC and model-free baselines on 24 tasks, e.g. "
    "Humanoid Walk ≈ 870 and Dog Run ≈ 650 at 5M steps (results/results.png, read off the "
    "plot); 4.1× faster than ensemble-based planning, 2.4× faster than model-based methods of "
    "similar sample efficiency (paper); no Pendulum numbers"
)
STEPS_KEY = "steps"


def flops_per_step(cfg) -> float:
    """FLOPs of one step of the run: one update of every trained model in ``cfg.arms`` (TCRL,
    the online-target control, the reconstruction model, the ensemble), forward and backward on
    a batch of ``batch_size`` sequences of ``horizon`` steps. Planning is not counted."""
    from companion.papers.tcrl.experiment import count_costs

    trained = ("tcrl", "online_target", "reconstruction", "ensemble")
    return sum(count_costs(cfg, arm)[0] for arm in cfg.arms if arm in trained)


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: a D4RL-style file of 4 random episodes written to ``data_dir`` (the real
    format), tiny networks, 4 updates, one planned episode of 16 samples per arm.
    ``gpu``: the preset's data and networks, 2,000 of its 30,000 updates, one planned episode."""
    from companion.papers.tcrl.experiment import collect_random

    if scale == "tiny":
        path = Path(data_dir) / "pendulum_random.npz"
        if not path.exists():
            offline_rl.save_d4rl(path, collect_random(4, 2, seed=0))
        overrides = dict(
            data_path=str(path),
            test_episodes=2,
            latent_dim=8,
            hidden=(16,),
            members=2,
            batch_size=16,
            steps=4,
            log_every=2,
            plan_episodes=1,
            plan_samples=16,
            plan_elites=4,
            plan_iterations=1,
        )
        return FullCheck(overrides, STEPS_KEY, "a D4RL-style .npz of 4 random Pendulum episodes")
    overrides = dict(steps=2000, plan_episodes=1)
    return FullCheck(overrides, STEPS_KEY, "no files: the preset's generated random-policy data")
