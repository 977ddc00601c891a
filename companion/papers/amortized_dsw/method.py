"""Sliced distances between point clouds and the amortized choice of their slicing direction.

Point clouds are tensors ``[batch, points, d]`` (``d = 3``); directions are ``[batch, L, d]``.
Names follow the paper (Nguyen, Nguyen, Ho, ICML 2023) and the official code
(hsgser/Self-Amortized-DSW: ``loss/sw_variants.py``, ``loss/amortized_functions.py``,
``loss/von_mises_fisher.py``).

The paper's text was not read here (only its abstract); the formulas below are written from the
official code, and the equation labels (SW), (v-DSW), (A-vDSW), (Att) are this package's.

* Sliced Wasserstein (SW): ``SW_2^2(X, Y) = E_{θ ~ U(S^{d-1})} W_2^2(θ♯X, θ♯Y)``; the
  one-dimensional W₂ between two clouds of equal size sorts both projections. As in the official
  ``compute_practical_moments_sw``, the squared differences are *summed* over the points (not
  averaged), so the value scales with the number of points.
* Max-SW: ``max_θ W_2^2(θ♯X, θ♯Y)``; v-DSW (von Mises–Fisher distributional SW), (v-DSW):
  ``max_ε E_{θ ~ vMF(ε, κ)} W_2^2(θ♯X, θ♯Y)``. κ → 0 gives SW, κ → ∞ gives Max-SW.
* Amortized v-DSW (A-vDSW): the location is predicted, ``ε = f_ψ(X, Y)``, and ψ ascends the
  v-DSW over the mini-batch (one Adam step per batch, on detached clouds), while the
  autoencoder descends it with ``ε`` detached.
* The amortized maps: the linear map on the concatenation ``[X; Y]`` (``Linear_Mapping``: one
  weight per point *index*, so it is neither permutation invariant nor symmetric), and the
  self-attention map (Att) (``Attention_Mapping``): ``ε = normalize((A(X) + A(Y)) / 2)`` with
  ``A`` a softmax attention over the points followed by a mean over them, hence permutation
  invariant in each cloud and symmetric in (X, Y).

Every random draw (directions, vMF samples, initial weights) comes from a NumPy generator, so a
run gives the same numbers on any CPU (torch's samplers differ between instruction sets).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

# ---------------------------------------------------------------- sliced distances


def random_directions(
    rng: np.random.Generator, batch: int, num_projections: int, dim: int = 3, like=None
) -> torch.Tensor:
    """``[batch, L, dim]`` directions uniform on the sphere (normalized Gaussians), drawn by
    NumPy (the official ``minibatch_rand_projections``)."""
    theta = rng.standard_normal((batch, num_projections, dim))
    theta /= np.linalg.norm(theta, axis=2, keepdims=True)
    return _tensor(theta, like)


def _tensor(values: np.ndarray, like: torch.Tensor | None) -> torch.Tensor:
    t = torch.from_numpy(np.ascontiguousarray(values))
    if like is not None:
        t = t.to(device=like.device, dtype=like.dtype)
    else:
        t = t.float()
    return t


def sliced_wasserstein(x: torch.Tensor, y: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """(SW) with given directions: ``(1/L) Σ_l Σ_i |sort(θ_l·X)_i − sort(θ_l·Y)_i|²`` per
    pair, shape ``[batch]`` (the official ``compute_practical_moments_sw_with_predefined_
    projections``, first moment). Sorting solves the one-dimensional transport exactly."""
    x_proj = torch.sort(x.bmm(theta.transpose(1, 2)), dim=1).values  # [B, n, L]
    y_proj = torch.sort(y.bmm(theta.transpose(1, 2)), dim=1).values
    return (x_proj - y_proj).pow(2).sum(dim=1).mean(dim=1)


def sw(x, y, num_projections: int, rng: np.random.Generator) -> torch.Tensor:
    """Monte Carlo (SW): ``L`` uniform directions per pair (the official ``SWD``)."""
    theta = random_directions(rng, x.shape[0], num_projections, x.shape[2], like=x)
    return sliced_wasserstein(x, y, theta)


def fibonacci_sphere(n: int) -> np.ndarray:
    """``n`` directions spread evenly over S² (a Fibonacci lattice), ``[n, 3]``."""
    g = np.arange(n) + 0.5
    phi, z = np.pi * (1 + 5**0.5) * g, 1 - 2 * g / n
    r = np.sqrt(1 - z**2)
    return np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=1)


def max_sw_grid(x, y, num_directions: int = 2000) -> torch.Tensor:
    """Max-SW by brute force: the largest one-direction value of (SW) over a Fibonacci grid of
    ``num_directions`` directions (spacing ≈ 3.6°/√(n/1000)), per pair, ``[batch]``. A reference
    for how discriminative the best direction is, with no optimizer involved."""
    grid = _tensor(fibonacci_sphere(num_directions), x)
    best = []
    for b in range(x.shape[0]):
        n = grid.shape[0]
        values = sliced_wasserstein(
            x[b : b + 1].expand(n, -1, -1), y[b : b + 1].expand(n, -1, -1), grid[:, None]
        )
        best.append(values.max())
    return torch.stack(best)


# ---------------------------------------------------------------- von Mises–Fisher


def vmf_w(u: np.ndarray, kappa: float) -> np.ndarray:
    """The cosine ``w = θ·ε`` of a vMF(ε, κ) sample on S², by inversion (Wood 1994, d = 3):
    ``w = 1 + log(u + (1 − u) e^{−2κ}) / κ`` for ``u ~ U(0, 1)``. Its mean is
    ``coth κ − 1/κ``; ``κ → 0`` gives the uniform ``w ~ U(−1, 1)``."""
    u = np.clip(u, 1e-12, 1.0)
    if kappa < 1e-6:
        return 2.0 * u - 1.0
    return 1.0 + np.log(u + (1.0 - u) * np.exp(-2.0 * kappa)) / kappa


def vmf_sample(
    loc: torch.Tensor, kappa: float, num_samples: int, rng: np.random.Generator
) -> torch.Tensor:
    """``[batch, L, 3]`` reparameterized samples of vMF(loc, κ) (the official ``VonMisesFisher.
    rsample``): a sample around ``e₁`` (cosine ``w`` from :func:`vmf_w`, a uniform tangent
    angle), then the Householder reflection that maps ``e₁`` onto ``loc``. The randomness does
    not depend on ``loc``, so gradients reach ``loc`` (and the map that predicted it)."""
    if loc.shape[-1] != 3:
        raise ValueError(f"vmf_sample draws on S² (d = 3), got d = {loc.shape[-1]}")
    batch = loc.shape[0]
    w = vmf_w(rng.uniform(size=(batch, num_samples)), kappa)
    phi = rng.uniform(0.0, 2 * np.pi, size=(batch, num_samples))
    r = np.sqrt(np.clip(1.0 - w**2, 0.0, None))
    z = np.stack([w, r * np.cos(phi), r * np.sin(phi)], axis=2)  # around e1
    z = _tensor(z, loc)
    e1 = torch.zeros_like(loc)
    e1[:, 0] = 1.0
    u = e1 - loc  # Householder: H e1 = loc
    u = u / (u.norm(dim=1, keepdim=True) + 1e-5)
    return z - 2 * (z * u[:, None, :]).sum(-1, keepdim=True) * u[:, None, :]


def vdsw_value(x, y, loc, kappa: float, num_projections: int, rng) -> torch.Tensor:
    """The inner expectation of (v-DSW) at location ``loc``, by ``L`` vMF samples: ``[batch]``."""
    return sliced_wasserstein(x, y, vmf_sample(loc, kappa, num_projections, rng))


def random_locations(rng: np.random.Generator, batch: int, like: torch.Tensor) -> torch.Tensor:
    """``[batch, 3]`` locations uniform on the sphere: the control's non-learned ε."""
    return random_directions(rng, batch, 1, 3, like=like)[:, 0]


def optimized_vdsw(
    x, y, kappa: float, num_projections: int, rng, steps: int = 50, lr: float = 0.05
) -> tuple[torch.Tensor, torch.Tensor]:
    """v-DSW by per-pair optimization (the official ``VSW``): ``steps`` Adam ascent steps on one
    location per pair from a random start, projected back on the sphere after each, then the
    value at the found location. Returns (value ``[batch]``, location ``[batch, 3]``)."""
    x, y = x.detach(), y.detach()
    loc = random_locations(rng, x.shape[0], x).requires_grad_(True)
    opt = torch.optim.Adam([loc], lr=lr)
    for _ in range(steps):
        value = vdsw_value(x, y, loc, kappa, num_projections, rng).mean()
        opt.zero_grad()
        (-value).backward()
        opt.step()
        with torch.no_grad():
            loc /= loc.norm(dim=1, keepdim=True)
    loc = loc.detach()
    with torch.no_grad():
        return vdsw_value(x, y, loc, kappa, num_projections, rng), loc


# ---------------------------------------------------------------- amortized maps


def _normalize(a: torch.Tensor) -> torch.Tensor:
    return a / torch.sqrt(torch.sum(a**2, dim=2, keepdim=True))


class LinearMapping(nn.Module):
    """The official ``Linear_Mapping``: ``ε = normalize(w·[X; Y] + b)``, one weight per point of
    the concatenation (``2m`` weights for clouds of ``m`` points). Shuffling the points, or
    swapping X and Y, changes which weight meets which point, hence ε."""

    def __init__(self, m: int):
        super().__init__()
        self.m = m
        self.f = nn.Linear(2 * m, 1)

    def forward(self, xy: torch.Tensor, detach: bool = True) -> torch.Tensor:
        if detach:
            xy = xy.detach()
        return _normalize(self.f(xy.transpose(1, 2)).transpose(1, 2))  # [B, 1, d]


class Attention(nn.Module):
    """Single-head attention over the points, then a mean over them (the official ``Attention``,
    (Att)): ``A(X) = (1/m) Σ_i softmax(q_i K^T / √d_k) V`` with ``q, K, V`` linear in ``X``."""

    def __init__(self, d: int = 3, d_k: int = 64):
        super().__init__()
        self.toqueries = nn.Linear(d, d_k)
        self.tokeys = nn.Linear(d, d_k)
        self.tovalues = nn.Linear(d, d)
        self.temperature = d_k**0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.toqueries(x), self.tokeys(x), self.tovalues(x)
        attn = F.softmax(torch.bmm(q / self.temperature, k.transpose(1, 2)), dim=-1)
        return torch.bmm(attn, v).mean(dim=1, keepdim=True)  # [B, 1, d]


class AttentionMapping(nn.Module):
    """The official ``Attention_Mapping`` (Att): ``ε = normalize((A(X) + A(Y)) / 2)`` with one
    attention ``A`` shared by both clouds. Input: the concatenation ``[X; Y]`` of two clouds of
    equal size, as for :class:`LinearMapping`."""

    def __init__(self, d: int = 3, d_k: int = 64):
        super().__init__()
        self.attn = Attention(d, d_k)

    def forward(self, xy: torch.Tensor, detach: bool = True) -> torch.Tensor:
        if detach:
            xy = xy.detach()
        x, y = torch.chunk(xy, 2, dim=1)
        return _normalize((self.attn(x) + self.attn(y)) / 2)


def predict_location(f_slice: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``ε = f_ψ(X, Y)``, shape ``[batch, 3]``, from detached clouds (``detach=True``)."""
    return f_slice(torch.cat([x.detach(), y.detach()], dim=1), True)[:, 0]


def amortized_ascent_step(
    f_slice: nn.Module, optimizer, x, y, kappa: float, num_projections: int, rng
) -> float:
    """One ascent step on ψ (the official ``Amortized_VSW`` with ``amortize_num_iters=1``):
    maximize ``E_{θ ~ vMF(f_ψ(X, Y), κ)} W_2^2(θ♯X, θ♯Y)`` over the batch on *detached* clouds,
    with reparameterized vMF samples. Returns the value before the step."""
    loc = predict_location(f_slice, x, y)
    value = vdsw_value(x.detach(), y.detach(), loc, kappa, num_projections, rng).mean()
    optimizer.zero_grad(set_to_none=True)
    (-value).backward()
    optimizer.step()
    return float(value.detach())


def amortized_vdsw(f_slice, x, y, kappa: float, num_projections: int, rng) -> torch.Tensor:
    """Amortized v-DSW (A-vDSW), as the autoencoder's loss: ``L`` samples of vMF(ε, κ) at the
    *detached* predicted location, then SW along them, differentiable in the clouds: ``[batch]``."""
    with torch.no_grad():
        loc = predict_location(f_slice, x, y)
    return vdsw_value(x, y, loc, kappa, num_projections, rng)


# ---------------------------------------------------------------- autoencoder and metric


class PointNetAE(nn.Module):
    """A small PointNet autoencoder (the official ``PointNetAE``, scaled down): a per-point MLP,
    a max over points (a permutation-invariant code), and an MLP decoder to ``m × 3`` points."""

    def __init__(self, num_points: int, code_dim: int = 64, hidden: int = 128, dim: int = 3):
        super().__init__()
        self.num_points, self.dim = num_points, dim
        self.encoder = nn.Sequential(
            nn.Linear(dim, hidden // 2),
            nn.ReLU(),
            nn.Linear(hidden // 2, hidden),
            nn.ReLU(),
            nn.Linear(hidden, code_dim),
        )
        self.decoder = nn.Sequential(
            nn.Linear(code_dim, 2 * hidden),
            nn.ReLU(),
            nn.Linear(2 * hidden, 2 * hidden),
            nn.ReLU(),
            nn.Linear(2 * hidden, num_points * dim),
        )

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x).max(dim=1).values

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.encode(x)).view(x.shape[0], self.num_points, self.dim)


def emd(x: np.ndarray, y: np.ndarray) -> float:
    """Exact earth mover's distance between two clouds of equal size with uniform weights, on
    the Euclidean ground cost: the mean distance a point travels under the optimal matching.

    With equal sizes and uniform weights an optimal transport plan can be taken to be a
    permutation (Birkhoff–von Neumann), so the linear program is an assignment problem, solved
    exactly by SciPy's ``linear_sum_assignment``; the tests check it against POT's network
    simplex (``ot.emd2``) and a brute force over permutations. (SciPy imports in a fraction of
    POT's time, which matters for a notebook's smoke budget.)"""
    from scipy.optimize import linear_sum_assignment

    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"emd needs clouds of equal size, got {x.shape} and {y.shape}")
    cost = np.sqrt(np.maximum(((x[:, None, :] - y[None, :, :]) ** 2).sum(-1), 0.0))
    rows, cols = linear_sum_assignment(cost)
    return float(cost[rows, cols].mean())


def angle_degrees(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The angle between unit vectors (rows), in degrees."""
    cos = (a * b).sum(-1).clamp(-1.0, 1.0)
    return torch.rad2deg(torch.arccos(cos))
