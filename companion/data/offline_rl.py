"""Offline reinforcement-learning data in the D4RL layout, and evaluation rollouts.

Offline RL learns from a fixed set of transitions that some behaviour policy left behind. D4RL
(Fu et al., 2020, https://github.com/Farama-Foundation/D4RL) stores such a set as flat per-step
arrays; the companion keeps the same keys, in an ``.npz`` file:

==========================  ===========  ==============================================
key                         shape        meaning
==========================  ===========  ==============================================
``observations``            [M, ...]     s_t
``actions``                 [M, ...]     a_t (integers for discrete actions)
``rewards``                 [M]          r_t
``next_observations``       [M, ...]     s_{t+1}
``terminals``               [M]          s_{t+1} ends the task (no bootstrapping)
``timeouts``                [M]          the episode was cut after a_t (bootstrapping)
==========================  ===========  ==============================================

plus a ``provenance`` string (JSON: which environment, behaviour policy and seed made the data),
because an offline dataset without its behaviour policy cannot be interpreted.

:func:`evaluation_returns` rolls a policy out in a gymnasium environment: the Monte Carlo
yardstick for every value estimate made from offline data.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from companion.errors import CompanionError

D4RL_KEYS = ("observations", "actions", "rewards", "next_observations", "terminals", "timeouts")


@dataclasses.dataclass
class Transitions:
    """A D4RL-style offline dataset: one row per step, episodes back to back.

    ``provenance`` says where the data comes from (environment, behaviour policy, seed).
    """

    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    next_observations: np.ndarray
    terminals: np.ndarray
    timeouts: np.ndarray
    provenance: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        lengths = {key: len(getattr(self, key)) for key in D4RL_KEYS}
        if len(set(lengths.values())) != 1:
            raise CompanionError(f"D4RL arrays differ in length: {lengths}")
        self.terminals = np.asarray(self.terminals, dtype=bool)
        self.timeouts = np.asarray(self.timeouts, dtype=bool)

    def __len__(self) -> int:
        return len(self.rewards)

    def episode_bounds(self) -> list[tuple[int, int]]:
        """[(start, stop)] of every episode: an episode ends where ``terminals`` or ``timeouts``
        is set (a trailing unfinished episode counts too)."""
        ends = np.flatnonzero(self.terminals | self.timeouts) + 1
        if len(ends) == 0 or ends[-1] != len(self):
            ends = np.r_[ends, len(self)]
        starts = np.r_[0, ends[:-1]]
        return [(int(a), int(b)) for a, b in zip(starts, ends) if b > a]

    def episode_returns(self, gamma: float = 1.0) -> np.ndarray:
        """The (discounted) return of every episode, from its first step."""
        out = []
        for a, b in self.episode_bounds():
            out.append(float(np.sum(self.rewards[a:b] * gamma ** np.arange(b - a))))
        return np.array(out)

    def sample(self, batch_size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """A uniform minibatch of transitions (with replacement), as a dict of arrays."""
        idx = rng.integers(len(self), size=batch_size)
        return {key: getattr(self, key)[idx] for key in D4RL_KEYS}


def concatenate(parts: list[Transitions], provenance: dict | None = None) -> Transitions:
    """Join datasets (e.g. a mixture of behaviour policies) into one; each part's unfinished
    last episode is closed by a time-out."""
    if not parts:
        raise CompanionError("concatenate needs at least one dataset")
    arrays = {key: np.concatenate([getattr(p, key) for p in parts]) for key in D4RL_KEYS}
    # a part's unfinished last episode ends where the part ends (a time-out), never runs on
    last = np.cumsum([len(p) for p in parts]) - 1
    arrays["timeouts"][last] |= ~arrays["terminals"][last]
    merged = provenance if provenance is not None else {"parts": [p.provenance for p in parts]}
    return Transitions(**arrays, provenance=merged)


def save_d4rl(path, data: Transitions) -> Path:
    """Write ``data`` as a D4RL-style ``.npz``: the keys of :data:`D4RL_KEYS` and ``provenance``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {key: getattr(data, key) for key in D4RL_KEYS}
    np.savez_compressed(path, **arrays, provenance=np.array(json.dumps(data.provenance)))
    return path


def _default_dtype(key: str) -> type:
    return float if key == "rewards" else bool


def load_d4rl(path, required: tuple[str, ...] = D4RL_KEYS) -> Transitions:
    """Read a D4RL-style ``.npz``. Keys outside ``required`` may be missing: ``rewards`` become
    zeros, ``terminals`` and ``timeouts`` all False (a file without either is one episode)."""
    path = Path(path)
    if not path.exists():
        raise CompanionError(f"no dataset file at {path}")
    with np.load(path, allow_pickle=False) as f:
        missing = set(required) - set(f.files)
        if missing:
            raise CompanionError(f"{path} lacks D4RL keys: {', '.join(sorted(missing))}")
        n = len(f["actions"])
        arrays = {
            key: f[key]
            if key in f.files
            else np.zeros(n, dtype=float if key == "rewards" else bool)
            for key in D4RL_KEYS
        }
        provenance = json.loads(str(f["provenance"])) if "provenance" in f.files else {}
    return Transitions(**arrays, provenance=provenance)


def evaluation_returns(
    make_env: Callable[[], object],
    policy: Callable[[np.ndarray], np.ndarray],
    episodes: int,
    seed: int,
    gamma: float = 1.0,
    max_steps: int | None = None,
) -> np.ndarray:
    """Monte Carlo returns of ``policy`` in a gymnasium environment, one per episode.

    ``make_env()`` builds the environment (gymnasium API: ``reset(seed=)`` and ``step``);
    ``policy(observation) -> action``. Episode ``i`` resets with seed ``seed + i``, so two
    policies evaluated with one seed face the same start states. Returns are discounted by
    ``gamma`` (1: the undiscounted score the offline-RL papers report) and stop at termination,
    truncation or ``max_steps``.
    """
    env = make_env()
    returns = np.zeros(episodes)
    for i in range(episodes):
        obs, _ = env.reset(seed=seed + i)
        discount, t = 1.0, 0
        while True:
            obs, reward, terminated, truncated, _ = env.step(policy(obs))
            returns[i] += discount * float(reward)
            discount *= gamma
            t += 1
            if terminated or truncated or (max_steps is not None and t >= max_steps):
                break
    close = getattr(env, "close", None)
    if close is not None:
        close()
    return returns
