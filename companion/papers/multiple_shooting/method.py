"""Sparse Bayesian multiple shooting for latent neural ODEs (Iakovlev et al., ICLR 2023).

Notation of the paper and of the official code (github.com/yakovlev31/msvi):

* observations y_1..M at times t_1..M, latent states x_i ∈ R^K, decoder p(y_i|x_i) =
  N(g(x_i), σ_Y² I) (``msvi/model.py``: ``loglik``);
* the grid is cut into B blocks of ``block_size`` intervals; block b starts from its shooting
  variable s_b and is integrated by the ODE solver over its own sub-grid; all blocks are solved
  in one batched call (``msvi/posterior.py``: ``extract_time_grids``, ``sample_s``);
* priors: p(s_1) = N(0, I) and the continuity prior p(s_b | s_{b-1}) = N(x_end(b-1), σ_ξ² I) with
  σ_ξ = Xi/√K (``create_elbo``), where x_end(b-1) is the state block b-1 reaches at its last point;
* amortized posterior q(s_b) = N(γ_b, diag τ_b²) from a recognition network: a per-time encoder,
  then attention restricted in time, then linear heads for γ and τ ≥ τ_min (``msvi/rec_net.py``,
  ``msvi/attention.py``);
* ELBO = Σ_i log p(y_i|x_i) − KL(q(s_1)‖p(s_1)) − Σ_{b≥2} KL(q(s_b)‖p(s_b|s_{b-1}))
  (``msvi/elbo.py``: ``AmortizedMultipleShootingELBO``). Single shooting is the same ELBO with one
  block (``block_size = M − 1``): only s_1 is inferred, and the continuity sum is empty.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torchdiffeq import odeint


class SecondOrderDynamics(nn.Module):
    """F: the latent vector field. As in the code's pendulum model the latent state is split into
    position and velocity halves, x = (q, v), with dq/dt = v and dv/dt = f_θ(q, v) (an MLP)."""

    def __init__(self, latent_dim: int, width: int):
        super().__init__()
        if latent_dim % 2:
            raise ValueError(f"latent_dim must be even (position and velocity), got {latent_dim}")
        # f_θ = out ∘ tanh ∘ hidden, called directly rather than through nn.Sequential: the
        # solver calls F hundreds of times per step and the module calls cost more than the math
        self.hidden = nn.Linear(latent_dim, width)
        self.out = nn.Linear(width, latent_dim // 2)
        self.nfe = 0  # function evaluations, counted for the equal-budget report

    def forward(self, t: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        self.nfe += 1
        half = x.shape[-1] // 2
        return torch.cat([x[..., half:], self.out(torch.tanh(self.hidden(x)))], dim=-1)


def block_starts(num_points: int, block_size: int) -> list[int]:
    """Indices of the shooting points: 0, block_size, 2·block_size, … (the last point of the grid
    is never a block start). ``(num_points − 1)`` must be a multiple of ``block_size``."""
    if (num_points - 1) % block_size:
        raise ValueError(
            f"block_size {block_size} does not divide the {num_points - 1} intervals of the grid"
        )
    return list(range(0, num_points - 1, block_size))


def solve_blocks(
    F: nn.Module,
    s: torch.Tensor,
    t: torch.Tensor,
    block_size: int,
    method: str = "rk4",
    step_size: float | None = None,
) -> torch.Tensor:
    """x_1..M from the shooting variables s [S, B, K] on the uniform grid t [M] (code:
    ``AmortizedMultipleShootingPosterior.sample_s``): x_1 = s_1 and block b fills the
    ``block_size`` points after its start by ODESolve(F, s_b) over its own sub-grid. A block's
    last point is the next block's first point, so x there is x_end(b) (predicted once, by the
    ODE) and not s_{b+1}; all blocks run in one batched solve."""
    S, B, K = s.shape
    sub_t = t[: block_size + 1] - t[0]  # uniform grid: every block has the same relative times
    options = {"step_size": step_size} if method in ("rk4", "euler", "midpoint") else None
    xs = odeint(F, s.reshape(S * B, K), sub_t, method=method, options=options)  # [bs+1, S·B, K]
    xs = xs[1:].permute(1, 0, 2).reshape(S, B * block_size, K)
    return torch.cat([s[:, :1], xs], dim=1)  # [S, M, K]


def kl_norm_norm(
    mu0: torch.Tensor, mu1: torch.Tensor, sig0: torch.Tensor, sig1: torch.Tensor
) -> torch.Tensor:
    """KL(N(μ0, diag σ0²) ‖ N(μ1, diag σ1²)), summed over the last axis (code:
    ``ELBOBase.kl_norm_norm``)."""
    a = (sig0 / sig1).pow(2).sum(-1)
    b = ((mu1 - mu0) / sig1).pow(2).sum(-1)
    c = 2 * (torch.log(sig1) - torch.log(sig0)).sum(-1)
    return 0.5 * (a + b + c - mu0.shape[-1])


class RecognitionNet(nn.Module):
    """q(s_i | y): γ_i and τ_i for every time point (code: ``RecognitionNet``).

    A per-time encoder h_i = MLP(y_i), one attention layer whose weights are restricted in time,
    logit_ij = q_i·k_j/√d + log ε·(|t_i − t_j|/δ_r)^p with p = ∞ (a hard window: j attends to i
    only if |t_i − t_j| ≤ δ_r of the duration; ``TemporalAttention``), a residual update, and
    linear heads γ and τ = τ_min + softplus(·). ``observed`` masks time points the encoder may
    not see (the test: s_1 from the first part of a trajectory)."""

    def __init__(self, obs_dim: int, latent_dim: int, width: int, delta_r: float, tau_min: float):
        super().__init__()
        self.encode = nn.Sequential(nn.Linear(obs_dim, width), nn.ReLU(), nn.Linear(width, width))
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.head_gamma = nn.Linear(width, latent_dim)
        self.head_tau = nn.Linear(width, latent_dim)
        self.delta_r, self.tau_min = delta_r, tau_min

    def window(self, t: torch.Tensor) -> torch.Tensor:
        """The hard temporal window [M, M]: True where |t_i − t_j| ≤ δ_r·(t_M − t_1) (δ_r is a
        fraction of the trajectory's duration, as on the code's time grids scaled to [0, 1])."""
        span = self.delta_r * (t[-1] - t[0])
        return (t[:, None] - t[None, :]).abs() <= span + 1e-9

    def forward(self, y: torch.Tensor, t: torch.Tensor, observed: torch.Tensor | None = None):
        h = self.encode(y)  # [S, M, d]
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        logits = q @ k.transpose(1, 2) / math.sqrt(h.shape[-1])
        allowed = self.window(t)[None].expand_as(logits)
        if observed is not None:  # keys the encoder may not see
            allowed = allowed & observed[None, None, :]
        logits = logits.masked_fill(~allowed, float("-inf"))
        h = h + self.out(torch.softmax(logits, dim=-1) @ v)
        gamma = self.head_gamma(h)
        tau = self.tau_min + nn.functional.softplus(self.head_tau(h))
        return gamma, tau


class LatentODE(nn.Module):
    """The generative model p (decoder g, dynamics F) and the amortized posterior q(s|y)."""

    def __init__(
        self,
        obs_dim: int,
        latent_dim: int = 4,
        width: int = 32,
        enc_width: int = 32,
        delta_r: float = 0.45,
        tau_min: float = 0.02,
        sigma_y: float = 0.1,
        xi: float = 0.1,
    ):
        super().__init__()
        self.F = SecondOrderDynamics(latent_dim, width)
        self.g = nn.Sequential(nn.Linear(latent_dim, width), nn.Tanh(), nn.Linear(width, obs_dim))
        self.rec_net = RecognitionNet(obs_dim, latent_dim, enc_width, delta_r, tau_min)
        self.latent_dim, self.sigma_y = latent_dim, sigma_y
        self.sigma_xi = xi / math.sqrt(latent_dim)  # code: sigXi = Xi / sqrt(K)

    def loglik(self, y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Σ_i log N(y_i | g(x_i), σ_Y² I) per trajectory [S]."""
        var = self.sigma_y**2
        sq = (y - self.g(x)).pow(2)
        return (-0.5 * sq / var - 0.5 * math.log(2 * math.pi * var)).sum((1, 2))


def elbo(
    model: LatentODE,
    y: torch.Tensor,
    t: torch.Tensor,
    block_size: int,
    method: str = "rk4",
    step_size: float | None = None,
    sample: bool = True,
) -> dict[str, torch.Tensor]:
    """The amortized multiple-shooting ELBO of one batch y [S, M, D] on grid t [M] (paper Eq. of
    Sec. 3; code ``AmortizedMultipleShootingELBO``), its parts per trajectory, the states x, the
    continuity gaps ‖s_b − x_end(b−1)‖ and the posterior widths τ_b (one reparametrized sample;
    ``sample=False`` uses s_b = γ_b, the posterior means, to measure how well the blocks join)."""
    gamma, tau = model.rec_net(y, t)
    starts = block_starts(len(t), block_size)
    gamma_b, tau_b = gamma[:, starts], tau[:, starts]  # q(s_b) at the block starts
    s = gamma_b + tau_b * torch.randn_like(tau_b) if sample else gamma_b
    x = solve_blocks(model.F, s, t, block_size, method, step_size)
    loglik = model.loglik(y, x)
    kl_first = kl_norm_norm(
        gamma_b[:, 0], torch.zeros_like(gamma_b[:, 0]), tau_b[:, 0], torch.ones_like(tau_b[:, 0])
    )
    x_end = x[:, starts[1:]]  # where block b−1 ends = the prior mean of s_b
    kl_cont = kl_norm_norm(
        gamma_b[:, 1:], x_end, tau_b[:, 1:], torch.full_like(tau_b[:, 1:], model.sigma_xi)
    ).sum(-1)
    gap = (s[:, 1:] - x_end).norm(dim=-1)
    return {
        "elbo": loglik - kl_first - kl_cont,
        "loglik": loglik,
        "kl_first": kl_first,
        "kl_continuity": kl_cont,
        "x": x,
        "gap": gap,
        "tau_b": tau_b,
    }


@torch.no_grad()
def forecast(
    model: LatentODE,
    y: torch.Tensor,
    t: torch.Tensor,
    observed_fraction: float = 0.45,
    method: str = "rk4",
    step_size: float | None = None,
) -> torch.Tensor:
    """The paper's test: s_1 = γ_1 inferred from the first ``observed_fraction`` of the
    observations only, then ONE solve (single shooting) over the whole grid, decoded: ŷ [S, M, D].
    Never evaluated with the per-block s_b."""
    observed = t <= t[0] + observed_fraction * (t[-1] - t[0]) + 1e-9
    gamma, _ = model.rec_net(y, t, observed)
    x = solve_blocks(model.F, gamma[:, :1], t, len(t) - 1, method, step_size)
    return model.g(x)
