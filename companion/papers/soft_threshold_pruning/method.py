"""Soft-threshold pruning as implicit ISTA, and the threshold schedulers it implies.

Chen, Ma, Fang, Zheng, Yu & Tian, "A Unified Framework for Soft Threshold Pruning", ICLR 2023
(arXiv:2302.13019); official code github.com/Yanqi-Chen/LATS.

Reparameterisation (official ``utils/conv_type.py``, ``STRConv`` with ``softThresholdmod``):
every weight tensor stores a hidden θ and the network computes with

    w = S_D(θ) = sign(θ) · ReLU(|θ| − D)                                  (soft threshold)

where the ReLU's backward is the identity (``PseudoRelu``), so ∂w/∂θ = 1 everywhere and a pruned
weight (w = 0) still receives ∂L/∂w and can grow back.

Why this is ISTA. Plain SGD on θ with learning rate η_t gives θ_{t+1} = θ_t − η_t ∇L(w_t). If
the threshold grows by D_{t+1} − D_t = η_t λ, then for every weight that is active
(|θ_t| > D_t) and keeps its sign,

    w_{t+1} = S_{D_{t+1}}(θ_{t+1}) = S_{η_t λ}(w_t − η_t ∇L(w_t)),                 (ISTA)

the proximal-gradient step on L(w) + λ‖w‖₁. So every threshold schedule D_t is a schedule of the
L1 coefficient λ_t = (D_{t+1} − D_t)/η_t, and the scheduler that keeps λ constant (the objective
fixed) is D_t = λ Σ_{s<t} η_s: the Learning-rate-Adapted Threshold Scheduler (LATS). For a
weight that sits in the dead zone (|θ_t| ≤ D_t, w_t = 0), θ keeps a memory that ISTA does not
have; the two differ only there (:func:`reparam_sgd` vs :func:`ista`).

With a cosine learning rate η_s ∝ 1 + cos(π s/T) the sum has the closed form

    D_t / D_T = x + sin(πx)/π,   x = t/T                                        (S-LATS)

(official ``trainer.py``, ``sinpInc``). Baselines of the paper's comparison: a fixed threshold
(official code without ``--gradual``: θ starts at S_D⁻¹(w₀) = sign(w₀)(|w₀| + D)), a linear
ramp D_t = D·x, and gradual magnitude pruning (Zhu & Gupta's cubic sparsity schedule,
official ``GMPConv``: the smallest-magnitude fraction of each layer zeroed, no gradient to them).
``gmp_global`` is the same schedule with one magnitude ranking over all layers together (the
sparsity is allocated across layers by magnitude, as one soft threshold for all layers does).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from companion.errors import unknown

SCHEDULES = ("lats", "s_lats", "fixed", "linear", "linear_early", "gmp", "gmp_global")
MAGNITUDE_SCHEDULES = ("gmp", "gmp_global")
SOFT_SCHEDULES = ("lats", "s_lats", "fixed", "linear", "linear_early")
EARLY_END = 0.5  # ``linear_early`` reaches its final threshold at this fraction of training


class PseudoReLU(torch.autograd.Function):
    """ReLU forward, identity backward (official ``PseudoRelu``)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output


def soft_threshold(theta: torch.Tensor, threshold: float | torch.Tensor) -> torch.Tensor:
    """w = sign(θ)·ReLU(|θ| − D) with the pseudo-ReLU, so that ∂w/∂θ = 1 (``softThresholdmod``)."""
    return torch.sign(theta) * PseudoReLU.apply(theta.abs() - threshold)


def soft_threshold_inverse(w: torch.Tensor, threshold: float | torch.Tensor) -> torch.Tensor:
    """θ = sign(w)(|w| + D): a θ with S_D(θ) = w (``softThresholdinv``)."""
    return torch.sign(w) * (w.abs() + threshold)


def prox_l1(v: torch.Tensor, t: float | torch.Tensor) -> torch.Tensor:
    """The proximal map of t‖·‖₁: argmin_w ½‖w − v‖² + t‖w‖₁ (true soft thresholding)."""
    return torch.sign(v) * torch.clamp(v.abs() - t, min=0.0)


# ---------------------------------------------------------------------------- schedules


def s_lats(x: float) -> float:
    """S-LATS: D_t/D_T = x + sin(πx)/π, the normalised integral of a cosine learning rate."""
    return x + math.sin(math.pi * x) / math.pi


def lats_thresholds(lrs: Sequence[float], lam: float) -> list[float]:
    """LATS: D_t = λ Σ_{s<t} η_s for t = 0..len(lrs) (the threshold before step t)."""
    out, total = [0.0], 0.0
    for lr in lrs:
        total += lr * lam
        out.append(total)
    return out


def implied_l1(thresholds: Sequence[float], lrs: Sequence[float]) -> list[float]:
    """λ_t = (D_{t+1} − D_t)/η_t: the L1 coefficient a threshold schedule implies."""
    return [(thresholds[t + 1] - thresholds[t]) / lrs[t] for t in range(len(lrs))]


def gmp_sparsity(x: float, final: float) -> float:
    """Zhu & Gupta's cubic schedule: s(x) = s_f (1 − (1 − x)³), x ∈ [0, 1]."""
    x = min(max(x, 0.0), 1.0)
    return final * (1.0 - (1.0 - x) ** 3)


def threshold_fraction(schedule: str, x: float) -> float:
    """D_t / D_final at progress x = t/T for the soft-threshold schedules.

    ``lats`` is the discrete sum (computed from the actual learning rates in the experiment);
    for a pure cosine learning rate it tends to ``s_lats`` as the number of steps grows.
    ``linear_early`` is a linear ramp that reaches D at ``EARLY_END`` = half of training: since
    x + sin(πx)/π ≤ 2x (concave, slope 2 at 0) it is at or above LATS's D_t/D_T at every step
    (it prunes at least as early), but its λ_t = ΔD/η_t grows while η falls in the first half
    and is 0 in the second: earlier pruning without LATS's constant λ.
    """
    x = min(max(x, 0.0), 1.0)
    if schedule in ("s_lats", "lats"):
        return s_lats(x)
    if schedule == "fixed":
        return 1.0
    if schedule == "linear":
        return x
    if schedule == "linear_early":  # a control: at least as early as LATS, λ not constant
        return min(1.0, x / EARLY_END)
    raise unknown("threshold schedule", schedule, SOFT_SCHEDULES)


# ---------------------------------------------------------------------------- ISTA check


def ista(
    grad: Callable[[torch.Tensor], torch.Tensor],
    w0: torch.Tensor,
    lrs: Sequence[float],
    lam: float,
) -> list[torch.Tensor]:
    """Proximal gradient descent on L(w) + λ‖w‖₁: w ← prox_{ηλ}(w − η∇L(w)). All iterates."""
    ws = [w0.clone()]
    for lr in lrs:
        w = ws[-1]
        ws.append(prox_l1(w - lr * grad(w), lr * lam))
    return ws


def reparam_sgd(
    grad: Callable[[torch.Tensor], torch.Tensor],
    theta0: torch.Tensor,
    lrs: Sequence[float],
    thresholds: Sequence[float],
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Soft-threshold reparameterisation trained by plain SGD on θ: the gradient wrt θ is ∇L(w)
    (pseudo-ReLU), θ ← θ − η∇L(S_D(θ)), w = S_{D_t}(θ_t). Returns (w iterates, θ iterates)."""
    thetas = [theta0.clone()]
    ws = [prox_l1(theta0, thresholds[0])]
    for t, lr in enumerate(lrs):
        theta = thetas[-1] - lr * grad(ws[-1])
        thetas.append(theta)
        ws.append(prox_l1(theta, thresholds[t + 1]))
    return ws, thetas


# ---------------------------------------------------------------------------- layers


class SoftThresholdLinear(nn.Linear):
    """A linear layer computing with w = S_D(θ); ``self.weight`` is θ, ``threshold`` is D."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True):
        super().__init__(in_features, out_features, bias)
        self.register_buffer("threshold", torch.zeros(()))

    def sparse_weight(self) -> torch.Tensor:
        return soft_threshold(self.weight, self.threshold)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.sparse_weight(), self.bias)


def magnitude_mask(weight: torch.Tensor, rate: float) -> torch.Tensor:
    """1 for weights kept, 0 for the ⌊rate·n⌋ smallest |w| of the tensor (``GMPChooseEdges``)."""
    k = int(rate * weight.numel())
    mask = torch.ones_like(weight)
    if k > 0:
        idx = weight.detach().abs().flatten().argsort()[:k]
        mask.view(-1)[idx] = 0.0
    return mask


class MagnitudeLinear(nn.Linear):
    """Gradual magnitude pruning (official ``GMPConv``): the ``prune_rate`` fraction of smallest
    |w| is zeroed in the forward pass; pruned weights get no gradient."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True):
        super().__init__(in_features, out_features, bias)
        self.register_buffer("prune_rate", torch.zeros(()))

    def sparse_weight(self) -> torch.Tensor:
        return self.weight * magnitude_mask(self.weight, float(self.prune_rate))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.sparse_weight(), self.bias)


def prunable_layers(model: nn.Module) -> list[nn.Module]:
    return [m for m in model.modules() if isinstance(m, (SoftThresholdLinear, MagnitudeLinear))]


@torch.no_grad()
def set_threshold(model: nn.Module, value: float) -> None:
    for m in model.modules():
        if isinstance(m, SoftThresholdLinear):
            m.threshold.fill_(value)


@torch.no_grad()
def set_prune_rate(model: nn.Module, value: float) -> None:
    for m in model.modules():
        if isinstance(m, MagnitudeLinear):
            m.prune_rate.fill_(value)


@torch.no_grad()
def set_global_prune_rate(model: nn.Module, value: float) -> None:
    """Global magnitude pruning: rank |w| over all layers together, zero the ⌊value·n⌋ smallest.

    Each layer's prune rate becomes the share of its weights among the globally smallest, so
    :func:`magnitude_mask` per layer zeroes exactly the global selection."""
    layers = [m for m in model.modules() if isinstance(m, MagnitudeLinear)]
    mags = torch.cat([m.weight.detach().abs().flatten() for m in layers])
    k = int(value * mags.numel())
    chosen = torch.zeros(mags.numel(), dtype=torch.bool)
    if k > 0:
        chosen[mags.argsort()[:k]] = True
    start = 0
    for m in layers:
        n = m.weight.numel()
        # the count this layer holds, as a rate that magnitude_mask turns back into that count
        m.prune_rate.fill_((int(chosen[start : start + n].sum()) + 0.5) / n)
        start += n


@torch.no_grad()
def sparsity(model: nn.Module) -> float:
    """Fraction of exact zeros in the weights the network computes with (w, not θ)."""
    zeros = total = 0
    for m in prunable_layers(model):
        w = m.sparse_weight()
        zeros += int((w == 0).sum())
        total += w.numel()
    return zeros / max(total, 1)
