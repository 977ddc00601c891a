"""IAC's in-sample policy evaluation on a small continuous task: Pendulum-v1 (gymnasium), offline.

The finite MDP (``method``) scores critics against an exact Q^π. Here the same three targets
are trained as MLP critics on offline Pendulum data and scored against **Monte Carlo** returns
of the target policy π from the dataset's own (s, a) pairs.

* Data: episodes of a noisy linear controller μ(a|s) = N(k_μ·φ(s), σ_μ²), φ(s) = (sin θ, θ̇)
  (a heuristic that pushes the pendulum towards upright), collected in gymnasium's Pendulum-v1 and
  stored as a D4RL-style :class:`~companion.data.offline_rl.Transitions` with provenance (or read
  from a D4RL-style ``.npz`` with ``load_d4rl``: the ``full`` preset's path).
* Behaviour model μ̂ (reconstructed: the paper's model family is not known): a Gaussian whose mean
  is linear in the observation (cos θ, sin θ, θ̇, 1) with one standard deviation, fitted by maximum
  likelihood (closed form: least squares for the mean, the root mean squared residual for σ̂).
* Target policy π(a|s) = N(k_π·φ(s), σ_π²), fixed and stochastic (the density ratio needs it),
  different from μ.
* Critics (everything else shared: network, optimiser, steps, batch size, target network):
  ``naive`` r + γ Q̄(s', a'), a' ~ π(·|s'); ``iac`` r + γ Q̄(s', a'_data) on minibatches drawn by
  SIR with w_i = π(a'_i|s'_i)/μ̂(a'_i|s'_i) (Eq. 2; π is fixed, so the weights are computed once,
  and they are **not clipped**); ``sarsa`` the same target on uniform minibatches (evaluates μ).
* Yardstick: Q^π(s_i, a_i) = r_i + γ·(return of π from s'_i), averaged over rollouts of a
  vectorised copy of Pendulum-v1's dynamics (:func:`pendulum_step`, tested against gymnasium).
"""

from __future__ import annotations

import dataclasses
import json
import math
import time

import numpy as np
import torch
from torch import nn

from companion.core import Result
from companion.data.offline_rl import Transitions, load_d4rl
from companion.errors import CompanionError

CONTINUOUS_CRITICS = ("naive", "iac", "sarsa")
MAX_TORQUE, MAX_SPEED, DT, G = 2.0, 8.0, 0.05, 10.0


def angle(obs: np.ndarray) -> np.ndarray:
    """θ from Pendulum's observation (cos θ, sin θ, θ̇)."""
    return np.arctan2(obs[..., 1], obs[..., 0])


def pendulum_step(theta, theta_dot, u):
    """Pendulum-v1's dynamics and reward (gymnasium 1.x, g = 10, m = l = 1), vectorised:
    returns (θ', θ̇', r). The torque is clipped to ±2 before it acts and before its cost."""
    u = np.clip(u, -MAX_TORQUE, MAX_TORQUE)
    wrapped = (theta + np.pi) % (2 * np.pi) - np.pi
    reward = -(wrapped**2 + 0.1 * theta_dot**2 + 0.001 * u**2)
    new_dot = np.clip(theta_dot + (1.5 * G * np.sin(theta) + 3.0 * u) * DT, -MAX_SPEED, MAX_SPEED)
    return theta + new_dot * DT, new_dot, reward


def features(obs: np.ndarray) -> np.ndarray:
    """φ(s) = (sin θ, θ̇): the controllers' inputs (θ̇ is the observation's third entry)."""
    return np.stack([obs[..., 1], obs[..., 2]], axis=-1)


def gaussian_log_density(a: np.ndarray, mean: np.ndarray, std) -> np.ndarray:
    """log N(a; mean, std²) of scalar actions."""
    z = (a - mean) / std
    return -0.5 * z**2 - np.log(std) - 0.5 * math.log(2 * math.pi)


def policy_mean(obs: np.ndarray, gains) -> np.ndarray:
    """A linear controller's mean action k·φ(s) = k₁ sin θ + k₂ θ̇ (negative gains push the
    pendulum towards upright)."""
    return features(obs) @ np.asarray(gains, dtype=float)


def fit_behaviour(obs: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, float]:
    """μ̂ by maximum likelihood (reconstructed family): a ~ N(β·x(s), σ̂²) with x(s) = (cos θ,
    sin θ, θ̇, 1). The likelihood's maximiser is least squares for β and the root mean squared
    residual for σ̂. Returns (β, σ̂)."""
    x = np.column_stack([obs, np.ones(len(obs))])
    beta, *_ = np.linalg.lstsq(x, actions, rcond=None)
    resid = actions - x @ beta
    return beta, float(np.sqrt(np.mean(resid**2)))


def behaviour_mean(obs: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """μ̂'s mean β·(cos θ, sin θ, θ̇, 1)."""
    return np.column_stack([obs, np.ones(len(obs))]) @ beta


def continuous_sir_weights(next_obs, next_actions, pi_gains, pi_std, beta, mu_std) -> np.ndarray:
    """Eq. (2) for Gaussian π and μ̂: w_i = π(a'_i|s'_i) / μ̂(a'_i|s'_i), not clipped."""
    log_pi = gaussian_log_density(next_actions, policy_mean(next_obs, pi_gains), pi_std)
    log_mu = gaussian_log_density(next_actions, behaviour_mean(next_obs, beta), mu_std)
    return np.exp(log_pi - log_mu)


def collect(cfg, seed: int) -> Transitions:
    """``pend_episodes`` episodes of ``pend_horizon`` steps of μ in gymnasium's Pendulum-v1
    (episode i resets with seed 1000·seed + i). Actions are stored as drawn (the environment
    clips them to ±2), so μ's Gaussian is the data's exact action distribution."""
    import gymnasium as gym

    env = gym.make("Pendulum-v1", max_episode_steps=cfg.pend_horizon)
    rng = np.random.default_rng([seed, 10])
    rows = {k: [] for k in ("observations", "actions", "rewards", "next_observations")}
    timeouts = []
    for i in range(cfg.pend_episodes):
        obs, _ = env.reset(seed=1000 * seed + i)
        for t in range(cfg.pend_horizon):
            a = policy_mean(obs, cfg.pend_mu_gains) + cfg.pend_mu_std * rng.standard_normal()
            nxt, r, _, _, _ = env.step(np.array([a], dtype=np.float32))
            rows["observations"].append(obs)
            rows["actions"].append(float(a))
            rows["rewards"].append(float(r))
            rows["next_observations"].append(nxt)
            timeouts.append(t == cfg.pend_horizon - 1)
            obs = nxt
    env.close()
    n = len(timeouts)
    return Transitions(
        observations=np.array(rows["observations"], dtype=np.float32),
        actions=np.array(rows["actions"], dtype=np.float32),
        rewards=np.array(rows["rewards"], dtype=np.float32),
        next_observations=np.array(rows["next_observations"], dtype=np.float32),
        terminals=np.zeros(n, dtype=bool),
        timeouts=np.array(timeouts),
        provenance={
            "environment": f"gymnasium Pendulum-v1, {cfg.pend_horizon}-step episodes",
            "behaviour": (
                f"a ~ N(k·(sin θ, θ̇), σ²), k = {tuple(cfg.pend_mu_gains)}, σ = {cfg.pend_mu_std}"
            ),
            "seed": seed,
        },
    )


def monte_carlo_q(cfg, obs, actions, rng: np.random.Generator) -> np.ndarray:
    """Q^π(s_i, a_i) by Monte Carlo: the dataset's first step, then π for ``pend_eval_horizon``
    steps, ``pend_eval_rollouts`` rollouts per pair, discounted by ``pend_gamma`` (the state is
    set from the observation: θ = atan2(sin θ, cos θ))."""
    k = cfg.pend_eval_rollouts
    th = np.repeat(angle(obs).astype(float), k)
    dot = np.repeat(obs[:, 2].astype(float), k)
    th, dot, ret = pendulum_step(th, dot, np.repeat(actions.astype(float), k))
    disc = 1.0
    for _ in range(cfg.pend_eval_horizon):
        disc *= cfg.pend_gamma
        o = np.stack([np.cos(th), np.sin(th), dot], axis=-1)
        a = policy_mean(o, cfg.pend_pi_gains) + cfg.pend_pi_std * rng.standard_normal(len(th))
        th, dot, r = pendulum_step(th, dot, a)
        ret = ret + disc * r
    return ret.reshape(-1, k).mean(axis=1)


def make_critic(hidden: int) -> nn.Module:
    """Q(s, a): an MLP on (cos θ, sin θ, θ̇, a)."""
    return nn.Sequential(
        nn.Linear(4, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1)
    )


def train_continuous_critic(critic: str, cfg, tensors: dict, weights: np.ndarray, eval_xa, seed):
    """One critic's TD training (Adam, Polyak target network Q̄, rewards × ``pend_reward_scale``
    during training, Q reported in the environment's units). Returns the Q̂ curve on the
    evaluation pairs (every ``pend_measure_every`` steps) and the training seconds."""
    if critic not in CONTINUOUS_CRITICS:
        raise CompanionError(
            f"unknown continuous critic {critic!r}; valid: {', '.join(CONTINUOUS_CRITICS)}"
        )
    start = time.perf_counter()
    torch.manual_seed(seed * 100 + CONTINUOUS_CRITICS.index(critic))
    q = make_critic(cfg.pend_hidden)
    with torch.no_grad():  # start at the data's mean per-step reward / (1 − γ), not at 0
        q[-1].bias.fill_(float(cfg.pend_reward_scale * tensors["r"].mean()) / (1 - cfg.pend_gamma))
    q_bar = make_critic(cfg.pend_hidden)
    q_bar.load_state_dict(q.state_dict())
    opt = torch.optim.Adam(q.parameters(), lr=cfg.pend_lr)
    rng = np.random.default_rng([seed, 20])
    n = len(tensors["r"])
    p = weights / weights.sum()
    pi_gains = torch.tensor(cfg.pend_pi_gains, dtype=torch.float32)
    curve, steps = [], []
    scale = cfg.pend_reward_scale
    for step in range(cfg.pend_steps + 1):
        if step % cfg.pend_measure_every == 0:
            with torch.no_grad():
                curve.append((q(eval_xa).squeeze(-1) / scale).tolist())
            steps.append(step)
        if step == cfg.pend_steps:
            break
        if critic == "iac":
            idx = rng.choice(n, size=cfg.pend_batch, p=p)  # SIR (Eq. 2)
        else:
            idx = rng.integers(n, size=cfg.pend_batch)
        idx = torch.from_numpy(idx)
        s, a, r, s2 = tensors["s"][idx], tensors["a"][idx], tensors["r"][idx], tensors["s2"][idx]
        if critic == "naive":  # a' ~ π(·|s'): any action, also where the data has none
            mean = torch.stack([s2[:, 1], s2[:, 2]], dim=-1) @ pi_gains
            noise = torch.from_numpy(rng.standard_normal(len(idx)).astype(np.float32))
            a2 = mean + cfg.pend_pi_std * noise
        else:  # Eq. (1): the dataset's next action
            a2 = tensors["a2"][idx]
        with torch.no_grad():
            target = scale * r + cfg.pend_gamma * q_bar(
                torch.cat([s2, a2[:, None]], dim=-1)
            ).squeeze(-1)
        pred = q(torch.cat([s, a[:, None]], dim=-1)).squeeze(-1)
        loss = 0.5 * ((pred - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            for pb, pq in zip(q_bar.parameters(), q.parameters()):
                pb.mul_(1 - cfg.pend_tau).add_(cfg.pend_tau * pq)
    return steps, curve, time.perf_counter() - start


@dataclasses.dataclass
class ContinuousResult(Result):
    """The Pendulum part: each critic's Q̂ on the evaluation pairs against Monte Carlo Q^π."""

    source: str  # where the data came from (provenance)
    dataset_size: int
    mu_std_hat: float  # μ̂'s fitted standard deviation
    ess: float  # SIR weights' effective sample size / N
    max_weight_share: float  # the largest SIR probability w_i / Σ w
    mc_q: list[float]  # Monte Carlo Q^π at the evaluation pairs
    mc_se: float  # mean standard error of those Monte Carlo means
    behaviour_q: list[float]  # Monte Carlo Q^μ at the same pairs (what SARSA estimates)
    steps: list[int]
    bias: dict[str, list[float]]  # critic -> mean Q̂ − Q^π over the pairs, per measurement
    final_q: dict[str, list[float]]  # critic -> Q̂ at the pairs (mean of the tail measurements)
    final_bias: dict[str, float]  # tail mean of the mean error
    final_rmse: dict[str, float]  # RMS error of final_q
    seconds: dict[str, float]
    # critic -> RMS error at the evaluation pairs weighted by their SIR resampling probability
    # (the pairs the in-sample critic is actually fitted to; pairs without a next action get 0)
    sir_rmse: dict[str, float] = dataclasses.field(default_factory=dict)


def run_continuous(cfg) -> ContinuousResult:
    """The Pendulum experiment of one seed: data (generated, or ``cfg.pend_data``), μ̂, the SIR
    weights, Monte Carlo Q^π (and Q^μ) at ``pend_eval_states`` dataset pairs, every critic."""
    seed = cfg.seed
    if cfg.pend_data:
        data = load_d4rl(cfg.pend_data)
    else:
        data = collect(cfg, seed)
    ends = data.terminals | data.timeouts
    valid = np.flatnonzero(~ends[:-1])  # rows with a next action a'_i = a_{i+1}
    obs = data.observations.astype(np.float32)
    act = data.actions.reshape(len(data), -1)[:, 0].astype(np.float32)
    beta, mu_std = fit_behaviour(obs.astype(float), act.astype(float))
    w = continuous_sir_weights(
        data.next_observations[valid].astype(float),
        act[valid + 1].astype(float),
        cfg.pend_pi_gains,
        cfg.pend_pi_std,
        beta,
        mu_std,
    )
    tensors = {
        "s": torch.from_numpy(obs[valid]),
        "a": torch.from_numpy(act[valid]),
        "r": torch.from_numpy(data.rewards[valid].astype(np.float32)),
        "s2": torch.from_numpy(data.next_observations[valid].astype(np.float32)),
        "a2": torch.from_numpy(act[valid + 1]),
    }
    rng = np.random.default_rng([seed, 30])
    pick = np.sort(rng.choice(len(data), size=min(cfg.pend_eval_states, len(data)), replace=False))
    e_obs, e_act = obs[pick], act[pick]
    mc_all = np.stack([monte_carlo_q(cfg, e_obs, e_act, rng) for _ in range(2)])
    mc = mc_all.mean(axis=0)
    mc_se = float(np.mean(np.abs(mc_all[0] - mc_all[1])) / 2)  # half-difference of halves
    mu_cfg = cfg.replace(pend_pi_gains=cfg.pend_mu_gains, pend_pi_std=cfg.pend_mu_std)
    behaviour_q = monte_carlo_q(mu_cfg, e_obs, e_act, rng)
    eval_xa = torch.from_numpy(np.column_stack([e_obs, e_act]).astype(np.float32))
    w_all = np.zeros(len(data))
    w_all[valid] = w
    w_eval = w_all[pick]
    bias, final_q, final_bias, final_rmse, seconds, sir_rmse = {}, {}, {}, {}, {}, {}
    steps: list[int] = []
    for critic in cfg.pend_critics:
        steps, curve, secs = train_continuous_critic(critic, cfg, tensors, w, eval_xa, seed)
        curve = np.asarray(curve)
        n_tail = max(1, int(round(cfg.tail * len(curve))))
        q_final = curve[-n_tail:].mean(axis=0)
        bias[critic] = [float(v) for v in (curve - mc).mean(axis=1)]
        final_q[critic] = [round(float(v), 4) for v in q_final]
        final_bias[critic] = float(np.mean(bias[critic][-n_tail:]))
        final_rmse[critic] = float(np.sqrt(np.mean((q_final - mc) ** 2)))
        seconds[critic] = secs
        if w_eval.sum() > 0:
            err2 = (q_final - mc) ** 2
            sir_rmse[critic] = float(np.sqrt(np.sum(w_eval * err2) / np.sum(w_eval)))
    return ContinuousResult(
        source=json.dumps(data.provenance, ensure_ascii=False),
        dataset_size=len(data),
        mu_std_hat=mu_std,
        ess=float(w.sum() ** 2 / (w**2).sum() / len(w)),
        max_weight_share=float(w.max() / w.sum()),
        mc_q=[round(float(v), 4) for v in mc],
        mc_se=mc_se,
        behaviour_q=[round(float(v), 4) for v in behaviour_q],
        steps=steps,
        bias=bias,
        final_q=final_q,
        final_bias=final_bias,
        final_rmse=final_rmse,
        seconds=seconds,
        sir_rmse=sir_rmse,
    )
