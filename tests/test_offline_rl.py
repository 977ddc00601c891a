"""Shared offline-RL code: exact values on finite MDPs (companion.core.mdp) and D4RL-style
datasets and evaluation rollouts (companion.data.offline_rl), each against an independent
computation (a Bellman-backup loop, brute force over deterministic policies, a power series,
sample frequencies, an explicit loop over an episode)."""

from __future__ import annotations

import itertools

import gymnasium as gym
import numpy as np
import pytest

from companion.core import mdp
from companion.data import offline_rl
from companion.errors import CompanionError


def random_mdp(S=4, A=3, seed=0):
    rng = np.random.default_rng(seed)
    P = rng.random((S, A, S)) ** 3
    P /= P.sum(axis=2, keepdims=True)
    R = rng.normal(size=(S, A))
    pi = rng.random((S, A))
    pi /= pi.sum(axis=1, keepdims=True)
    return P, R, pi


def test_policy_evaluation_matches_iterated_bellman_backups():
    P, R, pi = random_mdp()
    gamma = 0.9
    Q, V = mdp.policy_evaluation(P, R, pi, gamma)
    q = np.zeros_like(R)
    for _ in range(2000):  # Q ← R + γ Σ_s' P(s'|s,a) Σ_a' π(a'|s') Q(s', a')
        q = R + gamma * np.einsum("sat,t->sa", P, (pi * q).sum(axis=1))
    np.testing.assert_allclose(Q, q, atol=1e-8)
    np.testing.assert_allclose(V, (pi * q).sum(axis=1), atol=1e-8)


def test_optimal_q_is_the_best_deterministic_policy():
    P, R, _ = random_mdp(S=3, A=2, seed=1)
    gamma = 0.8
    Qstar = mdp.optimal_q(P, R, gamma)
    best = np.full(3, -np.inf)
    for choice in itertools.product(range(2), repeat=3):  # brute force: all 2^3 policies
        pi = np.eye(2)[list(choice)]
        _, V = mdp.policy_evaluation(P, R, pi, gamma)
        best = np.maximum(best, V)
    np.testing.assert_allclose(Qstar.max(axis=1), best, atol=1e-8)


def test_state_distribution_is_the_discounted_power_series():
    P, _, pi = random_mdp(seed=2)
    gamma, start = 0.7, np.array([1.0, 0.0, 0.0, 0.0])
    P_pi = np.einsum("sa,sat->st", pi, P)
    series, row = np.zeros(4), start.copy()
    for t in range(400):
        series += (1 - gamma) * gamma**t * row
        row = row @ P_pi
    np.testing.assert_allclose(mdp.state_distribution(P, pi, start, gamma), series, atol=1e-10)


def test_sampled_transitions_follow_the_behaviour_and_the_dynamics():
    P, R, pi = random_mdp(seed=3)
    rng = np.random.default_rng(0)
    batch = mdp.sample_transitions(P, R, pi, np.zeros(40_000, dtype=int), rng)
    np.testing.assert_allclose(
        np.bincount(batch["actions"], minlength=3) / 40_000, pi[0], atol=0.01
    )
    a0 = batch["actions"] == 0
    freq = np.bincount(batch["next_observations"][a0], minlength=4) / a0.sum()
    np.testing.assert_allclose(freq, P[0, 0], atol=0.015)
    np.testing.assert_array_equal(batch["rewards"], R[0, batch["actions"]])


def test_mdp_inputs_are_checked():
    P, R, pi = random_mdp()
    with pytest.raises(CompanionError, match="gamma"):
        mdp.policy_evaluation(P, R, pi, 1.0)
    with pytest.raises(CompanionError, match="sum to one"):
        mdp.optimal_q(P * 2, R, 0.9)
    with pytest.raises(CompanionError, match="pi must be"):
        mdp.policy_evaluation(P, R, pi[:, :2], 0.9)


def small_dataset():
    rewards = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    return offline_rl.Transitions(
        observations=np.arange(5.0)[:, None],
        actions=np.array([0, 1, 0, 1, 0]),
        rewards=rewards,
        next_observations=np.arange(1.0, 6.0)[:, None],
        terminals=np.array([False, True, False, False, False]),
        timeouts=np.array([False, False, False, True, False]),
        provenance={"env": "test", "seed": 3},
    )


def test_episode_bounds_and_returns():
    data = small_dataset()
    assert data.episode_bounds() == [(0, 2), (2, 4), (4, 5)]
    np.testing.assert_allclose(data.episode_returns(0.5), [1 + 0.5 * 2, 3 + 0.5 * 4, 5])


def test_d4rl_round_trip_and_errors(tmp_path):
    data = small_dataset()
    loaded = offline_rl.load_d4rl(offline_rl.save_d4rl(tmp_path / "d.npz", data))
    for key in offline_rl.D4RL_KEYS:
        np.testing.assert_array_equal(getattr(loaded, key), getattr(data, key))
    assert loaded.provenance == {"env": "test", "seed": 3}
    with pytest.raises(CompanionError, match="no dataset"):
        offline_rl.load_d4rl(tmp_path / "missing.npz")
    np.savez(tmp_path / "bad.npz", observations=np.zeros((3, 1)), actions=np.zeros(3))
    with pytest.raises(CompanionError, match="lacks D4RL keys"):
        offline_rl.load_d4rl(tmp_path / "bad.npz")
    with pytest.raises(CompanionError, match="differ in length"):
        offline_rl.Transitions(**{k: np.zeros(3) for k in offline_rl.D4RL_KEYS[:-1]}, timeouts=[0])
    both = offline_rl.concatenate([data, data])
    assert len(both) == 10 and both.episode_bounds()[3] == (5, 7)


class Countdown(gym.Env):
    """Reward t at step t; terminates after ``length`` steps; the action adds to the reward."""

    observation_space = gym.spaces.Discrete(100)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, length=4):
        self.length = length

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.t, {}

    def step(self, action):
        self.t += 1
        return self.t, float(self.t + action), self.t >= self.length, False, {}


def test_evaluation_returns_match_a_hand_rollout():
    returns = offline_rl.evaluation_returns(Countdown, lambda obs: 1, episodes=3, seed=0, gamma=0.5)
    expected = sum(0.5**t * (t + 1 + 1) for t in range(4))
    np.testing.assert_allclose(returns, expected)
    capped = offline_rl.evaluation_returns(Countdown, lambda obs: 0, 2, seed=0, max_steps=2)
    np.testing.assert_allclose(capped, 1 + 2)
