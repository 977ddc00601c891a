"""Mimetic initialization (Trockman & Kolter, ICML 2023) for the shared attention module.

Notation of the paper. Tokens are rows: ``X ∈ R^{n×d}``; head ``h`` has ``W_q^h, W_k^h ∈ R^{d×k}``
(``k = d / heads``), its attention map is ``softmax(X W_q^h (W_k^h)ᵀ Xᵀ / √k)``, and the values
and output projection are the full ``W_v, W_proj ∈ R^{d×d}`` (all heads side by side). The
initialization asks for

    W_q^h (W_k^h)ᵀ ≈ α₁ Z₁ + β₁ I          (one Z₁ per head)
    W_v W_proj      ≈ α₂ Z₂ − β₂ I          (one Z₂ per layer)

with ``Z_i`` having i.i.d. ``N(0, 1/d)`` entries, and solves both with an SVD: if
``α₁Z₁ + β₁I = U Σ Vᵀ`` then ``W_q^h = U_{:, :k} Σ_{:k}^{1/2}`` and
``W_k^h = V_{:, :k} Σ_{:k}^{1/2}``, so the product is the best rank-``k`` approximation
(Eckart–Young); if ``α₂Z₂ − β₂I = U₂ Σ₂ V₂ᵀ`` then ``W_v = U₂ Σ₂^{1/2}`` and
``W_proj = Σ₂^{1/2} V₂ᵀ``, so that product is exact. Defaults α₁ = β₁ = 0.7, α₂ = β₂ = 0.4.

The transposes. ``nn.Linear`` computes ``x @ weightᵀ`` with ``weight`` stored ``[out, in]``, so
the paper's matrices are the *transposed* weights: ``W_q = q.weightᵀ`` (head ``h`` is the rows
``h·k … (h+1)·k`` of ``q.weight``), ``W_v = v.weightᵀ`` and ``W_proj = proj.weightᵀ`` (head
``h`` reads the columns ``h·k … (h+1)·k`` of ``proj.weight``). :func:`query_key_product` and
:func:`value_proj_product` read the products back in the paper's orientation; the tests check
them against the forward pass itself.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from companion.errors import CompanionError
from companion.nn import MultiHeadSelfAttention, attention_blocks

ALPHA1, BETA1 = 0.7, 0.7  # W_q W_kᵀ ≈ α₁Z₁ + β₁I (the paper's default)
ALPHA2, BETA2 = 0.4, 0.4  # W_v W_proj ≈ α₂Z₂ − β₂I (the paper's default)


def mimetic_target(
    dim: int, alpha: float, beta: float, generator: torch.Generator | None = None
) -> torch.Tensor:
    """``α Z + β I`` with ``Z_ij ~ N(0, 1/d)`` i.i.d. (pass ``beta < 0`` for ``α Z − |β| I``).

    Computed in float64 so that the SVD below is accurate at any width.
    """
    z = torch.randn(dim, dim, generator=generator, dtype=torch.float64) / math.sqrt(dim)
    return alpha * z + beta * torch.eye(dim, dtype=torch.float64)


def factorize(target: torch.Tensor, rank: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(L, R)`` with ``L = U_{:, :r} Σ_{:r}^{1/2}`` (d×r) and ``R = Σ_{:r}^{1/2} V_{:, :r}ᵀ``
    (r×d) from ``target = U Σ Vᵀ``: ``L @ R`` is the best rank-``r`` approximation of ``target``
    (exactly ``target`` when ``r = d``), split evenly between the two factors."""
    u, s, vh = torch.linalg.svd(target)
    root = s[:rank].sqrt()
    return u[:, :rank] * root, root[:, None] * vh[:rank]


@torch.no_grad()
def mimetic_init_(
    attn: MultiHeadSelfAttention,
    alpha1: float = ALPHA1,
    beta1: float = BETA1,
    alpha2: float = ALPHA2,
    beta2: float = BETA2,
    generator: torch.Generator | None = None,
) -> MultiHeadSelfAttention:
    """Mimetic initialization of one attention module, in place (the paper's method).

    Every head gets its own ``Z₁``: ``W_q^h (W_k^h)ᵀ ≈ α₁Z₁ + β₁I`` (rank k). The layer gets one
    ``Z₂``: ``W_v W_proj = α₂Z₂ − β₂I`` (full rank). Biases of q, k, v and proj are set to zero.
    """
    for name, value in (("alpha1", alpha1), ("beta1", beta1), ("alpha2", alpha2), ("beta2", beta2)):
        if not math.isfinite(value) or value < 0:
            raise CompanionError(f"{name} must be a finite number >= 0, got {value!r}")
    d, k = attn.heads * attn.head_dim, attn.head_dim
    for h in range(attn.heads):
        w_q, w_k_t = factorize(mimetic_target(d, alpha1, beta1, generator), k)  # d×k, k×d
        rows = slice(h * k, (h + 1) * k)
        # q.weight[rows] is (W_q^h)ᵀ and k.weight[rows] is (W_k^h)ᵀ: W_k^h = w_k_tᵀ
        attn.q.weight[rows] = w_q.T.to(attn.q.weight)
        attn.k.weight[rows] = w_k_t.to(attn.k.weight)
    w_v, w_proj = factorize(mimetic_target(d, alpha2, -beta2, generator), d)
    attn.v.weight.copy_(w_v.T)  # v.weight = W_vᵀ
    attn.proj.weight.copy_(w_proj.T)  # proj.weight = W_projᵀ
    for layer in (attn.q, attn.k, attn.v, attn.proj):
        if layer.bias is not None:
            layer.bias.zero_()
    return attn


def mimetic_init(
    model: nn.Module,
    alpha1: float = ALPHA1,
    beta1: float = BETA1,
    alpha2: float = ALPHA2,
    beta2: float = BETA2,
    generator: torch.Generator | None = None,
) -> nn.Module:
    """Apply :func:`mimetic_init_` to every :class:`~companion.nn.MultiHeadSelfAttention` of
    ``model`` (found with :func:`companion.nn.attention_blocks`); other weights are untouched."""
    blocks = attention_blocks(model)
    if not blocks:
        raise CompanionError(
            f"{type(model).__name__} has no companion.nn.MultiHeadSelfAttention module to "
            "initialize; build it from the shared attention module"
        )
    for attn in blocks:
        if not isinstance(attn.q, nn.Linear):
            raise CompanionError(
                f"mimetic_init sets nn.Linear weights; this attention uses {type(attn.q).__name__}"
            )
        mimetic_init_(attn, alpha1, beta1, alpha2, beta2, generator)
    return model


def _head_rows(attn: MultiHeadSelfAttention, head: int) -> slice:
    if not 0 <= head < attn.heads:
        raise CompanionError(f"head {head} is out of range; valid: 0 to {attn.heads - 1}")
    return slice(head * attn.head_dim, (head + 1) * attn.head_dim)


@torch.no_grad()
def query_key_product(attn: MultiHeadSelfAttention, head: int) -> torch.Tensor:
    """``W_q^h (W_k^h)ᵀ`` (d×d) in the paper's orientation: logit(i, j) = x_i W_q W_kᵀ x_jᵀ/√k
    (plus bias terms)."""
    rows = _head_rows(attn, head)
    return attn.q.weight[rows].T @ attn.k.weight[rows]


@torch.no_grad()
def value_proj_product(attn: MultiHeadSelfAttention, head: int | None = None) -> torch.Tensor:
    """``W_v W_proj`` (d×d), or head ``h``'s share ``W_v^h W_proj^h`` (rank k): what a token that
    is attended to adds to the output, ``out = Σ_h A_h X W_v^h W_proj^h`` (plus biases)."""
    if head is None:
        return attn.v.weight.T @ attn.proj.weight.T
    cols = _head_rows(attn, head)
    return attn.v.weight[cols].T @ attn.proj.weight[:, cols].T


def patch_grid_distance(grid: int, cls_token: bool = True) -> torch.Tensor:
    """``[T, T]`` Chebyshev distance between the patches of a ``grid × grid`` image (row-major,
    as the ViT flattens them); with ``cls_token`` the class token comes first, at distance
    ``-1`` from everything (it has no position on the grid)."""
    index = torch.arange(grid * grid)
    rows, cols = index // grid, index % grid
    dist = torch.maximum(
        (rows[:, None] - rows[None, :]).abs(), (cols[:, None] - cols[None, :]).abs()
    )
    if cls_token:
        dist = nn.functional.pad(dist, (1, 0, 1, 0), value=-1)
    return dist


def local_attention_mass(probs: torch.Tensor, grid: int, radius: int = 1) -> torch.Tensor:
    """How much attention each patch query puts on the *other* patches of its ``(2r+1)²``
    neighbourhood (the query itself left out, see :func:`self_attention_mass`): ``probs``
    ``[..., T, T]`` with the class token first, returns ``[...]`` averaged over the patch queries.

    The query is left out because ``W_q W_kᵀ ≈ I`` already makes a token attend to itself; only
    attention to *other* nearby patches is locality. Uniform attention over ``T`` keys scores
    (mean number of neighbours) / T.
    """
    dist = patch_grid_distance(grid).to(probs.device)
    near = ((dist >= 1) & (dist <= radius)).to(probs.dtype)
    return (probs[..., 1:, :] * near[1:]).sum(-1).mean(-1)


def self_attention_mass(probs: torch.Tensor) -> torch.Tensor:
    """How much attention each patch query puts on itself (the diagonal of the map), averaged
    over the patch queries: ``probs`` ``[..., T, T]`` with the class token first → ``[...]``.
    Uniform attention scores 1 / T."""
    return probs.diagonal(dim1=-2, dim2=-1)[..., 1:].mean(-1)


def diagonal_score(matrix: torch.Tensor) -> torch.Tensor:
    """Mean of the diagonal divided by the spread (std) of the off-diagonal entries: about 0 for
    a random matrix, large and positive for ``+βI + noise``, negative for ``−βI + noise``.
    Works on ``[..., d, d]``."""
    d = matrix.shape[-1]
    eye = torch.eye(d, dtype=torch.bool, device=matrix.device)
    diag = matrix.diagonal(dim1=-2, dim2=-1).mean(-1)
    off = matrix[..., ~eye].std(-1)
    return diag / off
