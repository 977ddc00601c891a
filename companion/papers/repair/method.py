"""Permutation alignment, weight interpolation and REPAIR (Jordan et al., ICLR 2023).

The networks here are ``nn.Sequential`` stacks of ``Linear``/``Conv2d`` layers, each hidden one
followed by a ``ReLU`` (and optionally pooling), with ``Flatten`` where convolutions meet linear
layers: the MLPs and VGGs of the paper. A *hidden layer* is a weighted layer whose outputs
("units", "neurons", "channels") feed a ReLU; permuting its units and the next weighted layer's
inputs in the same way leaves the network's function unchanged.

1. **Alignment** (paper Sec. 2; the official ``run_corr_matrix``/``get_layer_perm``). For every
   hidden layer, feed the same training batches through A and B, treat every spatial position
   as a sample (``N·H·W × C``), and form the correlation of A's unit i with B's unit j after
   the ReLU,

       corr_ij = cov(a_i, b_j) / (σ(a_i) σ(b_j) + 1e-4).

   The permutation π maximizing Σ_i corr_{i π(i)} (a linear assignment problem, solved by
   ``scipy.optimize.linear_sum_assignment``) is applied to B's units: B' = π(B).

2. **Interpolation**: θ_α = (1 − α) θ_A + α θ_B', every parameter entry.

3. **Variance collapse** (Sec. 3). If two aligned units have equal std σ and correlation ρ,
   the unit of the interpolated network (at the first layer exactly, deeper approximately) has

       std(x_α) = σ · sqrt((1 − α)² + α² + 2α(1 − α)ρ)          ( = σ · sqrt((1 + ρ)/2) at α = ½)

   which is below σ whenever ρ < 1, and the shrinkage compounds layer after layer.

4. **REPAIR** (Sec. 4, "exact" variant; the official ``ResetLayer``/``reset_bn_stats``/
   ``fuse_conv_bn``). For every REPAIR'd layer, measure each unit's pre-activation mean and std
   on training data in A and in B', set the targets

       μ_α = (1 − α) μ_A + α μ_B',      σ_α = (1 − α) σ_A + α σ_B'          (stds, not variances)

   put a BatchNorm with weight γ = σ_α and bias β = μ_α after the layer of the interpolated
   network, estimate its running mean m and variance v in one no-grad pass over training data
   in train mode (momentum ``None``: a plain average over batches), and fold it back:

       W' = W · γ / sqrt(v + ε),      b' = β + γ (b − m) / sqrt(v + ε).

   The repaired network has the original architecture, and each unit's pre-activation now has
   mean μ_α and std σ_α.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence

import numpy as np
import scipy.optimize
import torch
from torch import nn

from companion.errors import CompanionError

WEIGHTED = (nn.Linear, nn.Conv2d)
# modules that move units around without mixing them: allowed between weighted layers
PASSTHROUGH = (nn.ReLU, nn.MaxPool2d, nn.AvgPool2d, nn.Flatten, nn.Identity)
CORR_EPS = 1e-4  # the official code's guard in the correlation's denominator


# --- the networks' structure ---------------------------------------------------------------------


def weighted_layers(model: nn.Sequential) -> list[int]:
    """Indices of the ``Linear``/``Conv2d`` layers of ``model``, refusing what this module does
    not know how to permute (e.g. BatchNorm, residual blocks)."""
    if not isinstance(model, nn.Sequential):
        raise CompanionError(f"REPAIR here needs an nn.Sequential network, got {type(model)}")
    for i, module in enumerate(model):
        if not isinstance(module, WEIGHTED + PASSTHROUGH):
            valid = ", ".join(t.__name__ for t in WEIGHTED + PASSTHROUGH)
            raise CompanionError(
                f"unsupported layer {i} ({type(module).__name__}); valid layer types: {valid}"
            )
    layers = [i for i, m in enumerate(model) if isinstance(m, WEIGHTED)]
    if not layers:
        raise CompanionError("the network has no Linear or Conv2d layer")
    return layers


def hidden_layers(model: nn.Sequential) -> list[tuple[int, int]]:
    """``(layer, relu)`` index pairs: every weighted layer but the last, with its ReLU."""
    layers = weighted_layers(model)
    pairs = []
    for i in layers[:-1]:
        relu = next((j for j in range(i + 1, len(model)) if isinstance(model[j], nn.ReLU)), None)
        if relu is None or any(isinstance(model[j], WEIGHTED) for j in range(i + 1, relu)):
            raise CompanionError(f"hidden layer {i} is not followed by a ReLU")
        pairs.append((i, relu))
    return pairs


def forward_taps(
    model: nn.Sequential, x: torch.Tensor, taps: Sequence[int]
) -> dict[int, torch.Tensor]:
    """Run ``model`` on ``x`` and return the outputs of the modules at indices ``taps``
    (stops after the last one)."""
    out, last = {}, max(taps)
    for i, module in enumerate(model):
        x = module(x)
        if i in taps:
            out[i] = x
        if i == last:
            break
    return out


def as_samples(t: torch.Tensor) -> torch.Tensor:
    """``[N, C]`` or ``[N, C, H, W]`` -> ``[samples, C]`` in float64: every spatial position of
    every image is one sample of each channel (the official ``permute(0, 2, 3, 1)``)."""
    if t.dim() == 4:
        t = t.permute(0, 2, 3, 1).reshape(-1, t.shape[1])
    if t.device.type == "mps":  # MPS has no float64
        t = t.cpu()
    return t.double()


# --- statistics over batches ---------------------------------------------------------------------


class Moments:
    """Running float64 sums for means, stds and the cross-covariance of two sets of units."""

    def __init__(self) -> None:
        self.n = 0
        self.sum_a = self.sum_b = self.sq_a = self.sq_b = self.cross = None

    def add(self, a: torch.Tensor, b: torch.Tensor | None = None) -> None:
        a = as_samples(a)
        b = None if b is None else as_samples(b)
        first = self.sum_a is None
        self.n += a.shape[0]
        self.sum_a = a.sum(0) if first else self.sum_a + a.sum(0)
        self.sq_a = a.square().sum(0) if first else self.sq_a + a.square().sum(0)
        if b is not None:
            self.sum_b = b.sum(0) if first else self.sum_b + b.sum(0)
            self.sq_b = b.square().sum(0) if first else self.sq_b + b.square().sum(0)
            self.cross = a.T @ b if first else self.cross + a.T @ b

    def mean_std(self, which: str = "a") -> tuple[torch.Tensor, torch.Tensor]:
        """Per-unit mean and (population) std."""
        s, sq = (self.sum_a, self.sq_a) if which == "a" else (self.sum_b, self.sq_b)
        mean = s / self.n
        return mean, (sq / self.n - mean.square()).clamp_min(0).sqrt()

    def correlation(self) -> torch.Tensor:
        """corr_ij = cov(a_i, b_j) / (σ_a,i σ_b,j + 1e-4), as in the official code."""
        mean_a, std_a = self.mean_std("a")
        mean_b, std_b = self.mean_std("b")
        cov = self.cross / self.n - torch.outer(mean_a, mean_b)
        return torch.nan_to_num(cov / (torch.outer(std_a, std_b) + CORR_EPS))


def activation_stats(
    model: nn.Sequential, batches: Iterable[torch.Tensor], layers: Sequence[int]
) -> dict[int, tuple[torch.Tensor, torch.Tensor]]:
    """Per-unit mean and std of the *pre-activations* (outputs) of ``layers`` over ``batches``.

    Spatial positions count as samples. Returns ``{layer: (mean, std)}`` in float64 on the CPU.
    """
    model.eval()
    moments = {i: Moments() for i in layers}
    with torch.no_grad():
        for x in batches:
            for i, out in forward_taps(model, x, layers).items():
                moments[i].add(out)
    return {i: tuple(t.cpu() for t in m.mean_std()) for i, m in moments.items()}


def correlation_matrices(
    model_a: nn.Sequential, model_b: nn.Sequential, batches: Iterable[torch.Tensor]
) -> list[torch.Tensor]:
    """For every hidden layer, the ``C × C`` correlation of A's and B's post-ReLU units.

    One pass over ``batches`` serves all layers: permuting B's earlier layers would not change
    the activations of a later layer (the function is the same), so matching the layers one by
    one, as the official code does, gives the same matrices.
    """
    model_a.eval()
    model_b.eval()
    relus = [relu for _, relu in hidden_layers(model_a)]
    moments = [Moments() for _ in relus]
    with torch.no_grad():
        for x in batches:
            acts_a, acts_b = forward_taps(model_a, x, relus), forward_taps(model_b, x, relus)
            for m, j in zip(moments, relus):
                m.add(acts_a[j], acts_b[j])
    return [m.correlation().cpu() for m in moments]


# --- alignment ------------------------------------------------------------------------------------


def match_permutation(corr: torch.Tensor) -> torch.Tensor:
    """The permutation π maximizing Σ_i corr[i, π(i)]: B's unit π(i) is matched to A's unit i.

    A linear assignment problem, solved exactly by ``scipy.optimize.linear_sum_assignment``.
    """
    rows, cols = scipy.optimize.linear_sum_assignment(corr.cpu().numpy(), maximize=True)
    assert (rows == np.arange(len(rows))).all()  # scipy returns rows in order for square input
    return torch.as_tensor(cols, dtype=torch.long)


def _permute_inputs(layer: nn.Module, perm: torch.Tensor, channels: int) -> None:
    """Reorder the input units of ``layer``. A Linear after Flatten sees each channel as a block
    of ``in_features / channels`` consecutive inputs (channel-major flattening)."""
    if isinstance(layer, nn.Conv2d):
        layer.weight.data = layer.weight.data[:, perm]
        return
    block = layer.in_features // channels
    cols = (perm[:, None] * block + torch.arange(block, device=perm.device)).flatten()
    layer.weight.data = layer.weight.data[:, cols]


def permute_units(model: nn.Sequential, perms: Sequence[torch.Tensor]) -> nn.Sequential:
    """A copy of ``model`` whose hidden layer k has its units reordered by ``perms[k]``: unit i of
    the result is unit ``perms[k][i]`` of ``model``. Output rows (weight and bias) of the layer
    and input columns of the next weighted layer move together, so the function is unchanged."""
    out = copy.deepcopy(model)
    layers = weighted_layers(out)
    if len(perms) != len(layers) - 1:
        raise CompanionError(f"need {len(layers) - 1} permutations (one per hidden layer)")
    for k, perm in enumerate(perms):
        layer, nxt = out[layers[k]], out[layers[k + 1]]
        perm = perm.to(layer.weight.device)
        layer.weight.data = layer.weight.data[perm]
        if layer.bias is not None:
            layer.bias.data = layer.bias.data[perm]
        _permute_inputs(nxt, perm, len(perm))
    return out


def align(
    model_a: nn.Sequential, model_b: nn.Sequential, batches: Iterable[torch.Tensor]
) -> tuple[nn.Sequential, list[torch.Tensor], list[torch.Tensor]]:
    """Permute B's units to match A's by activation correlation.

    Returns ``(B', perms, correlation matrices)``; the matrices are in B's original order.
    """
    corrs = correlation_matrices(model_a, model_b, batches)
    perms = [match_permutation(c) for c in corrs]
    return permute_units(model_b, perms), perms, corrs


# --- interpolation and REPAIR ---------------------------------------------------------------------


def interpolate(model_a: nn.Module, model_b: nn.Module, alpha: float) -> nn.Module:
    """θ_α = (1 − α) θ_A + α θ_B for every state-dict entry (a copy of A's architecture)."""
    out = copy.deepcopy(model_a)
    sd_a, sd_b = model_a.state_dict(), model_b.state_dict()
    out.load_state_dict({k: (1 - alpha) * sd_a[k] + alpha * sd_b[k] for k in sd_a})
    return out


def repair_targets(
    stats_a: dict[int, tuple[torch.Tensor, torch.Tensor]],
    stats_b: dict[int, tuple[torch.Tensor, torch.Tensor]],
    alpha: float,
) -> dict[int, tuple[torch.Tensor, torch.Tensor]]:
    """μ_α = (1 − α) μ_A + α μ_B and σ_α = (1 − α) σ_A + α σ_B per unit (stds interpolated)."""
    return {
        i: (
            (1 - alpha) * stats_a[i][0] + alpha * stats_b[i][0],
            (1 - alpha) * stats_a[i][1] + alpha * stats_b[i][1],
        )
        for i in stats_a
    }


def fold_batchnorm(layer: nn.Linear | nn.Conv2d, bn: nn.modules.batchnorm._BatchNorm) -> None:
    """Fold an eval-mode BatchNorm that follows ``layer`` into it, in place (``fuse_conv_bn``):
    W' = W · γ/sqrt(v + ε) and b' = β + γ/sqrt(v + ε) · (b − m)."""
    scale = bn.weight / (bn.running_var + bn.eps).sqrt()
    bias = layer.bias if layer.bias is not None else torch.zeros_like(bn.running_mean)
    shape = (-1,) + (1,) * (layer.weight.dim() - 1)
    layer.weight.data = layer.weight.data * scale.reshape(shape)
    new_bias = bn.bias + scale * (bias - bn.running_mean)
    if layer.bias is None:
        layer.bias = nn.Parameter(new_bias.detach().clone())
    else:
        layer.bias.data = new_bias.detach().clone()


def repair(
    merged: nn.Sequential,
    targets: dict[int, tuple[torch.Tensor, torch.Tensor]],
    batches: Iterable[torch.Tensor],
) -> nn.Sequential:
    """REPAIR: reset the per-unit statistics of ``merged``'s layers (``targets`` keys) to the
    targets ``(μ_α, σ_α)``; returns a new network with the original architecture.

    As in the official code: a BatchNorm with γ = σ_α, β = μ_α goes after each layer, a
    train-mode pass over ``batches`` estimates its running statistics (momentum ``None``, so a
    plain average over batches; upstream layers are already normalized by their batch
    statistics during that pass), then each BatchNorm is folded into its layer.
    """
    net = copy.deepcopy(merged)
    pairs = []
    for i, (mean, std) in targets.items():
        layer = net[i]
        channels = layer.out_features if isinstance(layer, nn.Linear) else layer.out_channels
        norm = nn.BatchNorm1d if isinstance(layer, nn.Linear) else nn.BatchNorm2d
        bn = norm(channels, momentum=None).to(layer.weight.device)
        bn.weight.data = std.to(bn.weight)
        bn.bias.data = mean.to(bn.bias)
        net[i] = nn.Sequential(layer, bn)
        pairs.append((i, layer, bn))
    net.train()
    with torch.no_grad():
        for x in batches:
            net(x)
        net.eval()
        for i, layer, bn in pairs:
            fold_batchnorm(layer, bn)
            net[i] = layer
    return net


def predicted_std(std_a, std_b, rho, alpha: float):
    """Std of (1 − α)x_A + αx_B for units with stds σ_A, σ_B and correlation ρ (Sec. 3):
    sqrt((1 − α)²σ_A² + α²σ_B² + 2α(1 − α)ρσ_Aσ_B)."""
    var = (
        (1 - alpha) ** 2 * std_a**2
        + alpha**2 * std_b**2
        + 2 * alpha * (1 - alpha) * rho * std_a * std_b
    )
    return var**0.5
