"""DARTS and Λ-DARTS: a cell-based search network with shared architecture weights α, the
layer-alignment measure Λ and the finite-difference regulariser that raises it.

Follows the official code, ``sota/cnn/model_search.py`` (``MixedOp``, ``Cell``, ``Network.forward``
with per-cell copies of the mixing weights, ``get_corr``, ``get_perturbations``,
``get_reg_grads``, ``genotype``) and ``sota/cnn/train_search.py`` (the weight step), of
dr-faustus/Lambda-DARTS (Movahedi et al., ICLR 2023, Sec. 3–4).

Notation. Every normal cell ℓ uses the same mixing weights w = softmax(α) (shape
[edges, ops]) but gets its own copy w_ℓ in the graph, so g_ℓ = ∂L/∂w_ℓ is cell ℓ's "vote" on the
shared architecture and ∂L/∂α = Σ_ℓ g_ℓ (through the softmax). The layer alignment is

    Λ = mean over pairs i < j of cos(g_i, g_j)                         (paper Sec. 4)

and Λ-DARTS adds −λ·∇_θ Λ to the gradient of the network weights θ (SGD then descends
L − λΛ), computed by a central finite difference along u = ∂Λ/∂g.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

import companion.nn.init as nn_init
from companion.errors import unknown

#: The operations of the toy search space: no pooling, so that the only parameter-free
#: operation a collapse can drift to is the skip connection (``none`` is never derived).
PRIMITIVES = ("none", "skip_connect", "conv_3x3")
PARAMETER_FREE = ("none", "skip_connect", "avg_pool_3x3", "max_pool_3x3")
ALL_PRIMITIVES = (
    "none",
    "skip_connect",
    "avg_pool_3x3",
    "max_pool_3x3",
    "conv_3x3",
    "sep_conv_3x3",
)


class Zero(nn.Module):
    def forward(self, x):
        return x * 0.0


class ReLUConvBN(nn.Sequential):
    def __init__(self, c_in: int, c_out: int, kernel: int, affine: bool):
        super().__init__(
            nn.ReLU(),
            nn.Conv2d(c_in, c_out, kernel, padding=kernel // 2, bias=False),
            nn.BatchNorm2d(c_out, affine=affine),
        )


class SepConv(nn.Sequential):
    def __init__(self, c: int, affine: bool):
        super().__init__(
            nn.ReLU(),
            nn.Conv2d(c, c, 3, padding=1, groups=c, bias=False),
            nn.Conv2d(c, c, 1, bias=False),
            nn.BatchNorm2d(c, affine=affine),
        )


def make_op(name: str, c: int, affine: bool = False) -> nn.Module:
    """One candidate operation (stride 1). Pooling is followed by a non-affine BatchNorm, as
    in the official ``MixedOp``."""
    if name == "none":
        return Zero()
    if name == "skip_connect":
        return nn.Identity()
    if name == "avg_pool_3x3":
        pool = nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False)
        return nn.Sequential(pool, nn.BatchNorm2d(c, affine=False))
    if name == "max_pool_3x3":
        return nn.Sequential(nn.MaxPool2d(3, stride=1, padding=1), nn.BatchNorm2d(c, affine=False))
    if name == "conv_3x3":
        return ReLUConvBN(c, c, 3, affine)
    if name == "sep_conv_3x3":
        return SepConv(c, affine)
    raise unknown("operation", name, ALL_PRIMITIVES)


class MixedOp(nn.Module):
    """An edge of the search cell: Σ_k w_k · op_k(x) (DARTS Eq. 2)."""

    def __init__(self, c: int, primitives: tuple[str, ...]):
        super().__init__()
        self.ops = nn.ModuleList(make_op(p, c) for p in primitives)

    def forward(self, x: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        if weights.requires_grad:
            return sum(w * op(x) for w, op in zip(weights, self.ops))
        # fixed weights (a derived cell): operations weighted exactly 0 add exactly 0, skip them
        terms = [w * op(x) for w, op in zip(weights, self.ops) if w.item() != 0.0]
        return sum(terms) if terms else x * 0.0


def num_edges(steps: int) -> int:
    """Edges of a cell with ``steps`` intermediate nodes: node i has i + 2 inputs."""
    return sum(i + 2 for i in range(steps))


class Cell(nn.Module):
    """A normal DARTS cell: inputs s₀, s₁ (the two previous cells), ``steps`` nodes each summing
    a mixed operation of every earlier state, output the concatenation of the last
    ``multiplier`` nodes."""

    def __init__(
        self,
        c_prev_prev: int,
        c_prev: int,
        c: int,
        steps: int,
        multiplier: int,
        primitives: tuple[str, ...],
    ):
        super().__init__()
        self.pre0 = ReLUConvBN(c_prev_prev, c, 1, affine=False)
        self.pre1 = ReLUConvBN(c_prev, c, 1, affine=False)
        self.steps, self.multiplier = steps, multiplier
        self.edges = nn.ModuleList(MixedOp(c, primitives) for _ in range(num_edges(steps)))

    def forward(self, s0, s1, weights):
        states = [self.pre0(s0), self.pre1(s1)]
        offset = 0
        for _ in range(self.steps):
            s = sum(self.edges[offset + j](h, weights[offset + j]) for j, h in enumerate(states))
            offset += len(states)
            states.append(s)
        return torch.cat(states[-self.multiplier :], dim=1)


class SearchNetwork(nn.Module):
    """Stem → ``layers`` normal cells sharing α → global pooling → classifier.

    ``forward(x, weights=None, perturbation=None)``: the cells mix with ``weights`` (default
    softmax(α)); each cell gets its own copy ``w_ℓ`` (kept in ``self.cell_weights`` with
    ``retain_grad``, so ``g_ℓ = w_ℓ.grad`` after a backward), then ``w_ℓ − perturbation[ℓ]``
    is what the cell uses, as in the official ``Network.forward``. The toy network has no
    reduction cells (the official one reduces at 1/3 and 2/3 of the depth; Λ is measured on
    normal cells only there too). α is a parameter of the module; :meth:`weight_parameters`
    are the others.
    """

    def __init__(
        self,
        in_channels: int,
        num_classes: int,
        c: int = 8,
        layers: int = 4,
        steps: int = 2,
        multiplier: int = 2,
        primitives: tuple[str, ...] = PRIMITIVES,
        stem_multiplier: int = 3,
    ):
        super().__init__()
        for p in primitives:
            if p not in ALL_PRIMITIVES:
                raise unknown("operation", p, ALL_PRIMITIVES)
        self.primitives = tuple(primitives)
        self.steps = steps
        c_stem = stem_multiplier * c
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, c_stem, 3, padding=1, bias=False), nn.BatchNorm2d(c_stem)
        )
        c_pp, c_p = c_stem, c_stem
        self.cells = nn.ModuleList()
        for _ in range(layers):
            self.cells.append(Cell(c_pp, c_p, c, steps, multiplier, self.primitives))
            c_pp, c_p = c_p, multiplier * c
        self.classifier = nn.Linear(c_p, num_classes)
        self.alpha = nn.Parameter(1e-3 * torch.randn(num_edges(steps), len(self.primitives)))
        self.cell_weights: list[torch.Tensor] = []
        portable_init(self)

    def weight_parameters(self) -> list[nn.Parameter]:
        return [p for name, p in self.named_parameters() if name != "alpha"]

    def forward(self, x, weights: torch.Tensor | None = None, perturbation=None):
        if weights is None:
            weights = F.softmax(self.alpha, dim=-1)
        s0 = s1 = self.stem(x)
        self.cell_weights = []
        for i, cell in enumerate(self.cells):
            w = weights.clone()
            if w.requires_grad:
                w.retain_grad()
            self.cell_weights.append(w)
            if perturbation is not None:
                w = w - perturbation[i]
            s0, s1 = s1, cell(s0, s1, w)
        return self.classifier(s1.mean(dim=(2, 3)))


def portable_init(model: nn.Module) -> None:
    """Redraw PyTorch's default initialisation, U(±1/√fan_in) for the convolutions and the
    classifier and N(0, 10⁻⁶) for α, from NumPy's generator (seeded from torch's). Torch's CPU
    samplers are vectorised per instruction set and give other last bits on another CPU (or
    under ``ATEN_CPU_CAPABILITY=default``), which the chaotic search turns into another result;
    NumPy's draws are the same everywhere. A model on the meta device (FLOP counting) has no
    values to draw and is left as it is."""
    if any(p.is_meta for p in model.parameters()):
        return
    rng = np.random.default_rng(int(torch.randint(0, 2**31 - 1, ()).item()))
    nn_init.portable_init(model, rng)
    if isinstance(getattr(model, "alpha", None), torch.Tensor):
        with torch.no_grad():
            alpha = torch.from_numpy(1e-3 * rng.standard_normal(model.alpha.shape))
            model.alpha.copy_(alpha)


def layer_alignment(grads: list[torch.Tensor]) -> torch.Tensor:
    """Λ: the mean cosine similarity over pairs i < j of the per-cell gradients (``get_corr``)."""
    g = torch.stack([x.reshape(-1) for x in grads])
    u = g / g.norm(dim=1, keepdim=True)
    cos = u @ u.T
    n = len(grads)
    return (cos.sum() - cos.diagonal().sum()) / (n * (n - 1))


def alignment_direction(grads: list[torch.Tensor]) -> list[torch.Tensor]:
    """u_ℓ = ∂Λ/∂g_ℓ = (1/P)·(1/‖g_ℓ‖)·(I − ĝ_ℓĝ_ℓᵀ)·Σ_k ĝ_k, P = L(L−1)/2 pairs
    (``get_perturbations``, corr variant; the ĝ_ℓ term of Σ_k drops out of the projection)."""
    n = len(grads)
    weight = 2.0 / (n * (n - 1))
    flat = [g.reshape(-1) for g in grads]
    unit = [g / g.norm() for g in flat]
    total = sum(unit)
    out = []
    for g, u, shape in zip(flat, unit, (x.shape for x in grads)):
        proj = total - u * torch.dot(u, total)
        out.append((weight / g.norm() * proj).reshape(shape))
    return out


def lambda_darts_gradients(
    model: SearchNetwork,
    loss_fn,
    x,
    y,
    lam: float,
    epsilon_0: float,
    weights: torch.Tensor | None = None,
):
    """The Λ-DARTS weight gradient on one training batch (``train_search.py``, ``train``).

    Returns ``(loss, grads, Λ, cell_grads)``: ``grads[i] = ∂L/∂θ_i + λ·reg_i`` for
    ``θ = model.weight_parameters()``, where ``reg = (∇_θ L(w − εu) − ∇_θ L(w + εu)) / 2ε``
    ≈ −∇_θ Λ (the cells' mixing weights shifted by ∓εu, ε = ε₀/‖u‖), and Λ measured on the
    unperturbed gradients; ``cell_grads`` are the g_ℓ of the unperturbed pass. ``weights``:
    the mixing weights to use (default softmax(α),
    detached: the weight step does not train α). ``lam = 0`` is plain DARTS (no extra passes).
    """
    if weights is None:
        weights = F.softmax(model.alpha, dim=-1).detach()
    weights = weights.detach().requires_grad_(True)
    params = model.weight_parameters()
    loss = loss_fn(model(x, weights=weights), y)
    cells = list(model.cell_weights)
    out = torch.autograd.grad(loss, params + cells)
    grads, cell_grads = list(out[: len(params)]), list(out[len(params) :])
    alignment = layer_alignment(cell_grads).detach()
    if lam == 0:
        return loss.detach(), grads, alignment, cell_grads
    u = alignment_direction(cell_grads)
    eps = epsilon_0 / torch.cat([v.reshape(-1) for v in u]).norm().item()
    shifted = [v * eps for v in u]
    fwd = torch.autograd.grad(
        loss_fn(model(x, weights=weights.detach(), perturbation=shifted), y), params
    )
    bwd = torch.autograd.grad(
        loss_fn(model(x, weights=weights.detach(), perturbation=[-s for s in shifted]), y), params
    )
    grads = [g + lam * (f - b) / (2 * eps) for g, f, b in zip(grads, fwd, bwd)]
    return loss.detach(), grads, alignment, cell_grads


def validation_gradients(model: SearchNetwork, loss_fn, x, y):
    """The first-order architecture gradient on one validation batch (``architect.step`` →
    ``_backward_step(input_valid)``) and the cells' votes behind it.

    Returns ``(∂L_val/∂α, Λ_val, cell_grads)``: ``cell_grads[ℓ] = ∂L_val/∂w_ℓ`` for the mixing
    weights w = softmax(α) of the current α (so ``∂L_val/∂α`` is Σ_ℓ g_ℓ pulled back through the
    softmax), and Λ_val = :func:`layer_alignment` of them, the official code's ``valid_corr``
    (``model.get_corr()`` right after the architecture step's backward)."""
    loss = loss_fn(model(x), y)
    cells = list(model.cell_weights)
    out = torch.autograd.grad(loss, [model.alpha, *cells])
    cell_grads = [g.detach() for g in out[1:]]
    return out[0], layer_alignment(cell_grads).detach(), cell_grads


def derive_genotype(weights: torch.Tensor, primitives: tuple[str, ...], steps: int):
    """The discrete cell (``Network.genotype``): for node i keep the two incoming edges with the
    largest non-``none`` weight, each with its strongest non-``none`` operation.
    Returns ``[(op_name, input_state), ...]``, two per node."""
    w = weights.detach().cpu()
    keep = [k for k, p in enumerate(primitives) if p != "none"]
    gene, start = [], 0
    for i in range(steps):
        n = i + 2
        block = w[start : start + n][:, keep]
        best = block.max(dim=1).values
        edges = sorted(range(n), key=lambda j: -best[j].item())[:2]
        for j in edges:
            gene.append((primitives[keep[int(block[j].argmax())]], j))
        start += n
    return gene


def genotype_weights(gene, primitives: tuple[str, ...], steps: int) -> torch.Tensor:
    """One-hot mixing weights of a discrete cell: 1 on each kept (edge, op), 0 elsewhere. A
    :class:`SearchNetwork` with these fixed weights computes exactly the derived network
    (dropped edges and ops contribute zero)."""
    w = torch.zeros(num_edges(steps), len(primitives))
    start = 0
    for i in range(steps):
        for op, j in gene[2 * i : 2 * i + 2]:
            w[start + j, primitives.index(op)] = 1.0
        start += i + 2
    return w


def parameter_free_mass(weights: torch.Tensor, primitives: tuple[str, ...]) -> float:
    """Mean over edges of the softmax mass on parameter-free operations other than ``none``."""
    idx = [k for k, p in enumerate(primitives) if p in PARAMETER_FREE and p != "none"]
    return weights[:, idx].sum(dim=1).mean().item()
