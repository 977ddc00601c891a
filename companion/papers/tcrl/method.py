"""TCRL's latent model, its temporal-consistency loss, the comparison models, and MPPI.

The model (official code: ``tcrl.py`` and ``utils/helper.py`` of zhaoyi11/tcrl):

* an encoder e(o) → z and a latent model d(z, a) → (z', r̂) with two MLP heads (dynamics and
  reward), ELU activations, orthogonal initialisation;
* a target encoder ē, an exponential moving average of e:  ē ← (1 − τ) ē + τ e  (τ = 0.005);
* the temporal-consistency loss (paper Eq. 3-4): encode only o_0, roll the latent model forward
  with the data's actions, never re-encode, and compare each predicted latent with the target
  encoder's latent of the real next observation, by cosine similarity:

      L = mean_batch Σ_{t=0}^{H-1} ρ^t [ c_s · (2 − 2 cos(ẑ_{t+1}, ē(o_{t+1})))
                                          + c_r · (r̂_t − r_t)² ],   ẑ_0 = e(o_0),
                                          (ẑ_{t+1}, r̂_t) = d(ẑ_t, a_t),

  each term clamped at 1e4, the gradient scaled by 1/H, gradient norm clipped at 10.

No observation is ever reconstructed. The comparisons share the planner and the data:

* ``ReconstructionModel``: the same encoder and latent model, trained by decoding every
  predicted latent back to the observation (a deterministic PlaNet/Dreamer-style model);
* ``EnsembleModel``: K one-step MLPs in observation space (PETS-style, deterministic members);
* the true simulator: Pendulum-v1's equations, batched (``pendulum_step``).

``mppi`` is the planner of the ``use_dynamics`` branch (TD-MPC's MPPI): Gaussian action
sequences, elites, an exponentially weighted refit with temperature, momentum on the mean.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

# --- Pendulum-v1, batched --------------------------------------------------------------------

G, MAX_SPEED, MAX_TORQUE, DT = 10.0, 8.0, 2.0, 0.05


def angle_normalize(th):
    return ((th + np.pi) % (2 * np.pi)) - np.pi


def pendulum_step(th, thdot, u):
    """One step of gymnasium's Pendulum-v1 for batches: (θ', θ̇', reward). ``u`` is the torque
    (clipped to ±2); the reward is −(θ² + 0.1 θ̇² + 0.001 u²) at the *current* state."""
    u = u.clamp(-MAX_TORQUE, MAX_TORQUE) if torch.is_tensor(u) else np.clip(u, -2.0, 2.0)
    sin = torch.sin if torch.is_tensor(th) else np.sin
    reward = -(angle_normalize(th) ** 2 + 0.1 * thdot**2 + 0.001 * u**2)
    new_thdot = thdot + (3 * G / 2 * sin(th) + 3.0 * u) * DT
    new_thdot = (
        new_thdot.clamp(-MAX_SPEED, MAX_SPEED)
        if torch.is_tensor(th)
        else np.clip(new_thdot, -MAX_SPEED, MAX_SPEED)
    )
    return th + new_thdot * DT, new_thdot, reward


def observation_to_state(obs):
    """(θ, θ̇) from Pendulum's observation (cos θ, sin θ, θ̇): the observation is the state."""
    if torch.is_tensor(obs):
        return torch.atan2(obs[..., 1], obs[..., 0]), obs[..., 2]
    return np.arctan2(obs[..., 1], obs[..., 0]), obs[..., 2]


# --- networks -----------------------------------------------------------------------------------


def mlp(n_in: int, hidden: tuple[int, ...], n_out: int) -> nn.Sequential:
    """Linear-ELU layers of widths ``hidden``, then a linear output (``utils/net.py: mlp``)."""
    layers, width = [], n_in
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ELU()]
        width = h
    layers.append(nn.Linear(width, n_out))
    return nn.Sequential(*layers)


def portable_orthogonal_init(module: nn.Module, rng: np.random.Generator) -> None:
    """Orthogonal weights and zero biases (``net.orthogonal_init``), drawn from NumPy so that
    the initial weights are the same on every CPU (torch's samplers differ per instruction set):
    the Q factor of a Gaussian matrix, signs fixed by R's diagonal."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.Linear):
                rows, cols = m.weight.shape
                a = rng.standard_normal((max(rows, cols), min(rows, cols)))
                q, r = np.linalg.qr(a)
                q = q * np.sign(np.diag(r))
                w = q if rows >= cols else q.T
                m.weight.copy_(torch.from_numpy(np.ascontiguousarray(w[:rows, :cols])))
                m.bias.zero_()


class LatentModel(nn.Module):
    """Encoder e(o) → z, and the latent model d(z, a) → (z', r̂) with two heads."""

    def __init__(self, obs_dim: int, action_dim: int, latent_dim: int, hidden: tuple[int, ...]):
        super().__init__()
        self.encoder = mlp(obs_dim, hidden, latent_dim)
        self.dynamics = mlp(latent_dim + action_dim, hidden, latent_dim)
        self.reward = mlp(latent_dim + action_dim, hidden, 1)

    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        return self.encoder(obs)

    def next(self, z: torch.Tensor, a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(ẑ_{t+1}, r̂_t) = d(ẑ_t, a_t)."""
        za = torch.cat([z, a], dim=-1)
        return self.dynamics(za), self.reward(za).squeeze(-1)


class TargetEncoder(nn.Module):
    """ē: a copy of the encoder, updated only by :func:`ema_update` (never by gradients)."""

    def __init__(self, encoder: nn.Module):
        super().__init__()
        import copy

        self.net = copy.deepcopy(encoder)
        for p in self.net.parameters():
            p.requires_grad_(False)

    def forward(self, obs):
        return self.net(obs)


@torch.no_grad()
def ema_update(online: nn.Module, target: nn.Module, tau: float) -> None:
    """ē ← (1 − τ) ē + τ e  (``helper.soft_update_params``). τ = 1 copies the online encoder:
    the control without the slow target."""
    for p, q in zip(online.parameters(), target.parameters()):
        q.lerp_(p, tau)


def cosine_consistency(z_pred: torch.Tensor, z_target: torch.Tensor) -> torch.Tensor:
    """2 − 2 cos(ẑ, z̄) per row (``helper.cosine``): the squared distance of unit vectors."""
    a = nn.functional.normalize(z_pred, dim=-1, eps=1e-8)
    b = nn.functional.normalize(z_target, dim=-1, eps=1e-8)
    return 2 - 2 * (a * b).sum(-1)


def consistency_loss(
    model: LatentModel,
    target: nn.Module,
    obs0: torch.Tensor,
    actions: torch.Tensor,
    rewards: torch.Tensor,
    next_obs: torch.Tensor,
    rho: float,
    state_coef: float = 1.0,
    reward_coef: float = 1.0,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """TCRL's loss (Eq. 3-4) on a batch of sequences: ``obs0`` [B, O], ``actions`` [H, B, A],
    ``rewards`` [H, B], ``next_obs`` [H, B, O] (o_1 … o_H). Only o_0 is encoded online."""
    horizon = actions.shape[0]
    z = model.encode(obs0)
    with torch.no_grad():
        z_target = target(next_obs)  # [H, B, Z]
    state_loss = reward_loss = 0.0
    for t in range(horizon):
        z, r_hat = model.next(z, actions[t])
        state_loss = state_loss + rho**t * cosine_consistency(z, z_target[t]).clamp(max=1e4)
        reward_loss = reward_loss + rho**t * ((r_hat - rewards[t]) ** 2).clamp(max=1e4)
    loss = (state_coef * state_loss + reward_coef * reward_loss).mean()
    loss = loss / horizon  # the gradient scaled by 1/H (``loss.register_hook(lambda g: g/H)``)
    return loss, {
        "consistency": state_loss.mean().detach() / horizon,
        "reward": reward_loss.mean().detach() / horizon,
    }


class ReconstructionModel(LatentModel):
    """The same latent model with a decoder o ≈ g(z): trained by reconstruction, not consistency."""

    def __init__(self, obs_dim: int, action_dim: int, latent_dim: int, hidden: tuple[int, ...]):
        super().__init__(obs_dim, action_dim, latent_dim, hidden)
        self.decoder = mlp(latent_dim, hidden, obs_dim)


def reconstruction_loss(
    model: ReconstructionModel,
    obs0: torch.Tensor,
    actions: torch.Tensor,
    rewards: torch.Tensor,
    next_obs: torch.Tensor,
    rho: float,
    reward_coef: float = 1.0,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Σ_t ρ^t [ ‖g(ẑ_{t+1}) − o_{t+1}‖² + c_r (r̂_t − r_t)² ] + ‖g(z_0) − o_0‖², the same
    rollout as :func:`consistency_loss` with a decoder in place of the target encoder."""
    horizon = actions.shape[0]
    z = model.encode(obs0)
    recon = ((model.decoder(z) - obs0) ** 2).sum(-1)
    reward_loss = 0.0
    for t in range(horizon):
        z, r_hat = model.next(z, actions[t])
        recon = recon + rho**t * ((model.decoder(z) - next_obs[t]) ** 2).sum(-1).clamp(max=1e4)
        reward_loss = reward_loss + rho**t * ((r_hat - rewards[t]) ** 2).clamp(max=1e4)
    loss = (recon + reward_coef * reward_loss).mean() / horizon
    return loss, {
        "reconstruction": recon.mean().detach() / horizon,
        "reward": reward_loss.mean().detach() / horizon,
    }


class EnsembleModel(nn.Module):
    """K one-step models in observation space: f_k(o, a) → (o' − o, r), trained by MSE."""

    def __init__(self, obs_dim: int, action_dim: int, hidden: tuple[int, ...], members: int):
        super().__init__()
        self.members = nn.ModuleList(
            mlp(obs_dim + action_dim, hidden, obs_dim + 1) for _ in range(members)
        )

    def next(self, obs: torch.Tensor, a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """obs [K, N, O] (each member its own state) → (next obs, reward) [K, N, O], [K, N]."""
        outs = [m(torch.cat([o, a], -1)) for m, o in zip(self.members, obs)]
        out = torch.stack(outs)
        return obs + out[..., :-1], out[..., -1]


def ensemble_loss(
    model: EnsembleModel, obs: torch.Tensor, action: torch.Tensor, reward, next_obs
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Σ_k mean ‖f_k(o, a) − (o' − o, r)‖²: every member on the same one-step batch."""
    target = torch.cat([next_obs - obs, reward[:, None]], -1)
    loss = 0.0
    for m in model.members:
        loss = loss + ((m(torch.cat([obs, action], -1)) - target) ** 2).sum(-1).mean()
    return loss, {"one_step": loss.detach() / len(model.members)}


# --- planning -----------------------------------------------------------------------------------


def mppi(
    value,
    horizon: int,
    action_dim: int,
    generator: torch.Generator,
    samples: int = 512,
    elites: int = 64,
    iterations: int = 6,
    temperature: float = 0.5,
    momentum: float = 0.1,
    min_std: float = 0.05,
    max_std: float = 2.0,
    prev_mean: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """MPPI over action sequences in [−1, 1] (``plan`` of the ``use_dynamics`` branch).

    ``value(actions [N, H, A]) -> [N]`` scores sequences (Σ γ^t r̂_t under a model). Each
    iteration samples N sequences around the mean, keeps the top ``elites``, weights them by
    exp(temperature · (v − max v)), refits mean and std, and mixes the new mean with the old
    (``momentum``). Returns the first action of an elite drawn by its weight, and the mean,
    shifted by one step, to warm-start the next call.
    """
    mean = torch.zeros(horizon, action_dim)
    if prev_mean is not None:
        mean[:-1] = prev_mean[1:]
    std = torch.full((horizon, action_dim), max_std)
    for _ in range(iterations):
        noise = torch.randn(samples, horizon, action_dim, generator=generator)
        actions = (mean + std * noise).clamp(-1, 1)
        v = value(actions)
        v = torch.nan_to_num(v, nan=-1e9)
        top = torch.topk(v, elites).indices
        elite_v, elite_a = v[top], actions[top]
        score = torch.exp(temperature * (elite_v - elite_v.max()))
        score = score / score.sum()
        new_mean = (score[:, None, None] * elite_a).sum(0)
        new_std = (score[:, None, None] * (elite_a - new_mean) ** 2).sum(0).sqrt()
        mean = momentum * mean + (1 - momentum) * new_mean
        std = new_std.clamp(min_std, max_std)
    pick = torch.multinomial(score, 1, generator=generator)[0]
    return elite_a[pick, 0], mean


def discounted_sum(rewards: torch.Tensor, gamma: float) -> torch.Tensor:
    """Σ_t γ^t r_t over the last axis."""
    weights = gamma ** torch.arange(rewards.shape[-1], dtype=rewards.dtype)
    return (rewards * weights).sum(-1)


def latent_rollout_rewards(model: LatentModel, z0: torch.Tensor, actions: torch.Tensor):
    """Predicted rewards [N, H] of action sequences [N, H, A] from one latent z0 [Z]."""
    z = z0.expand(actions.shape[0], -1)
    out = []
    for t in range(actions.shape[1]):
        z, r = model.next(z, actions[:, t])
        out.append(r)
    return torch.stack(out, 1)


def ensemble_rollout_rewards(model: EnsembleModel, obs0: torch.Tensor, actions: torch.Tensor):
    """Rewards [N, H] averaged over members, each member propagating its own states."""
    k = len(model.members)
    o = obs0.expand(k, actions.shape[0], -1)
    out = []
    for t in range(actions.shape[1]):
        o, r = model.next(o, actions[:, t])
        out.append(r.mean(0))
    return torch.stack(out, 1)


def simulator_rollout_rewards(obs0: torch.Tensor, actions: torch.Tensor, repeat: int, scale):
    """The true Pendulum-v1 rewards [N, H] of action sequences (actions in [−1, 1] → ±2 N·m,
    each held ``repeat`` steps, rewards summed and divided by ``scale`` like the data's)."""
    th, thdot = observation_to_state(obs0)
    th = th.expand(actions.shape[0]).double()
    thdot = thdot.expand(actions.shape[0]).double()
    out = []
    for t in range(actions.shape[1]):
        total = 0.0
        for _ in range(repeat):
            th, thdot, r = pendulum_step(th, thdot, MAX_TORQUE * actions[:, t, 0].double())
            total = total + r
        out.append(total / scale)
    return torch.stack(out, 1).float()


def reward_scale(repeat: int) -> float:
    """The largest cost of ``repeat`` Pendulum steps (π² + 0.1·8² + 0.001·2²): rewards divided
    by it lie in [−1, 0], as DMC's lie in [0, 1]."""
    return repeat * (math.pi**2 + 0.1 * MAX_SPEED**2 + 0.001 * MAX_TORQUE**2)
