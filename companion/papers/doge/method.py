"""DOGE's pieces: the state-conditioned distance function, the TD3 critic and the three actors.

Names follow the paper (Li et al., ICLR 2023) and its code (Facebear-ljx/DOGE,
``RL_algos/doge.py`` and ``Network/Actor_Critic_net.py``):

* the distance function g(s, a) (paper Eq. 5): regress g(s, â) onto ‖â − a‖₂ for (s, a) from the
  data and â drawn uniformly from a box a bit larger than the action space; its minimiser is the
  *expected* distance from â to the dataset actions at s, small inside the data's convex hull
  (paper Theorem 1) [code: ``Distance.linear_distance``, ``DOGE.train_Distance``];
* the TD3 critic (twin Q, clipped target noise, the smaller target) [code: ``train_Q_pi``];
* the DOGE actor (paper Eq. 8): −(α / mean|Q|)·mean Q₁(s, π(s)) + λ·mean[g(s, π(s)) − g(s, a)],
  with λ a dual variable updated without gradients [code: ``train_actor_with_auto_lmbda``,
  ``auto_lmbda_update``];
* the control, TD3+BC (Fujimoto & Gu, 2021): the same actor loss with the distance term replaced by
  the behaviour-cloning (support) term mean‖π(s) − a‖²;
* the unconstrained actor: the Q term alone (TD3 on offline data).
"""

from __future__ import annotations

import copy

import torch
from torch import nn


def mlp(inputs: int, hidden: int, layers: int, outputs: int) -> nn.Sequential:
    """``layers`` hidden ReLU layers of width ``hidden`` (the official nets: 3 × 256)."""
    mods, width = [], inputs
    for _ in range(layers):
        mods += [nn.Linear(width, hidden), nn.ReLU()]
        width = hidden
    mods.append(nn.Linear(width, outputs))
    return nn.Sequential(*mods)


class Actor(nn.Module):
    """Deterministic policy π(s) = max_action · tanh(f(s)) [code: ``Actor_deterministic``]."""

    def __init__(self, state_dim: int, action_dim: int, hidden: int, layers: int):
        super().__init__()
        self.net = mlp(state_dim, hidden, layers, action_dim)

    def forward(self, s: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.net(s))


class DoubleCritic(nn.Module):
    """Twin Q networks Q₁, Q₂ of (s, a) [code: ``Double_Critic``]."""

    def __init__(self, state_dim: int, action_dim: int, hidden: int, layers: int):
        super().__init__()
        self.q1 = mlp(state_dim + action_dim, hidden, layers, 1)
        self.q2 = mlp(state_dim + action_dim, hidden, layers, 1)

    def forward(self, s, a):
        sa = torch.cat([s, a], -1)
        return self.q1(sa), self.q2(sa)

    def Q1(self, s, a):  # noqa: N802 (the official name)
        return self.q1(torch.cat([s, a], -1))


class DistanceNetwork(nn.Module):
    """g(s, a): a scalar MLP of (s, a) [code: ``Distance``, 3 × 256 ReLU], trained by Eq. 5."""

    def __init__(self, state_dim: int, action_dim: int, hidden: int, layers: int):
        super().__init__()
        self.net = mlp(state_dim + action_dim, hidden, layers, 1)

    def forward(self, s, a):
        return self.net(torch.cat([s, a], -1))


def distance_loss(
    g: DistanceNetwork,
    s: torch.Tensor,
    a: torch.Tensor,
    samples: int,
    low: float = -1.5,
    high: float = 1.5,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Paper Eq. 5: E_{(s,a)~D, â~U[low,high]^d} [ (g(s, â) − ‖â − a‖₂)² ].

    For each of the B pairs, ``samples`` random actions â (the official N = 20, box [−1.5, 1.5]);
    the minimiser over functions g is g*(s, â) = E_{a~D(·|s)} ‖â − a‖₂, the expected distance from
    â to the data's actions at s [code: ``Distance.linear_distance`` + MSE].
    """
    batch, dim = a.shape
    a_hat = low + (high - low) * torch.rand(batch, samples, dim, generator=generator)
    a_hat = a_hat.to(a.device)
    label = torch.linalg.vector_norm(a_hat - a[:, None, :], dim=-1)  # [B, N]
    s_rep = s[:, None, :].expand(batch, samples, s.shape[-1])
    predict = g(s_rep.reshape(batch * samples, -1), a_hat.reshape(batch * samples, dim))
    return nn.functional.mse_loss(predict.reshape(batch, samples), label)


def critic_loss(
    critic: DoubleCritic,
    critic_target: DoubleCritic,
    actor_target: Actor,
    batch: dict[str, torch.Tensor],
    gamma: float,
    policy_noise: float = 0.2,
    noise_clip: float = 0.5,
) -> torch.Tensor:
    """TD3's critic loss: y = r + γ(1 − done)·min(Q₁', Q₂')(s', π'(s') + clip(ε)), ε ~ N(0, σ²);
    MSE of both heads to y [code: ``train_Q_pi``]."""
    s, a, r, s2, done = (batch[k] for k in ("s", "a", "r", "s2", "done"))
    with torch.no_grad():
        noise = (torch.randn_like(a) * policy_noise).clamp(-noise_clip, noise_clip)
        a2 = (actor_target(s2) + noise).clamp(-1.0, 1.0)
        tq1, tq2 = critic_target(s2, a2)
        y = r + (1.0 - done) * gamma * torch.min(tq1, tq2)
    q1, q2 = critic(s, a)
    return nn.functional.mse_loss(q1, y) + nn.functional.mse_loss(q2, y)


def q_weight(q_pi: torch.Tensor, alpha: float) -> torch.Tensor:
    """The normalised Q weight α / mean|Q₁(s, π(s))| (detached), shared by DOGE and TD3+BC."""
    return alpha / q_pi.abs().mean().detach()


def doge_actor_loss(
    q_pi: torch.Tensor, g_pi: torch.Tensor, g_data: torch.Tensor, alpha: float, lam: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Paper Eq. 8 as in the code: −(α/mean|Q|)·mean Q₁(s, π(s)) + λ·mean[g(s, π(s)) − g(s, a)].

    Returns (loss, distance_diff) where distance_diff = mean g(s, π(s)) − mean g(s, a) feeds the
    dual update; g(s, a) is detached, λ is a number (no gradient)."""
    diff = (g_pi - g_data.detach()).mean()
    return -q_weight(q_pi, alpha) * q_pi.mean() + lam * diff, diff


def td3_bc_actor_loss(
    q_pi: torch.Tensor, pi: torch.Tensor, a: torch.Tensor, alpha: float
) -> torch.Tensor:
    """TD3+BC: −(α/mean|Q|)·mean Q₁(s, π(s)) + mean (π(s) − a)² (the support constraint)."""
    return -q_weight(q_pi, alpha) * q_pi.mean() + nn.functional.mse_loss(pi, a)


def unconstrained_actor_loss(q_pi: torch.Tensor, alpha: float) -> torch.Tensor:
    """TD3 on offline data: the Q term alone, −(α/mean|Q|)·mean Q₁(s, π(s))."""
    return -q_weight(q_pi, alpha) * q_pi.mean()


def dual_update(
    lam: float, distance_diff: float, step: float, threshold: float, lam_min: float, lam_max: float
) -> float:
    """λ ← clip(λ + η·λ·(diff − thr), λ_min, λ_max) [code: ``auto_lmbda_update``]: λ grows while
    the policy's actions are farther from the data than the data itself (diff > thr)."""
    lam = lam + step * lam * (distance_diff - threshold)
    return float(min(max(lam, lam_min), lam_max))


@torch.no_grad()
def soft_update(net: nn.Module, target: nn.Module, tau: float) -> None:
    """θ' ← τθ + (1 − τ)θ' (Polyak averaging of the target networks)."""
    for p, tp in zip(net.parameters(), target.parameters()):
        tp.mul_(1 - tau).add_(p, alpha=tau)


def target_of(net: nn.Module) -> nn.Module:
    """A frozen copy for the target network."""
    target = copy.deepcopy(net)
    for p in target.parameters():
        p.requires_grad_(False)
    return target
