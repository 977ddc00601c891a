"""Hrrformer's self-attention in Holographic Reduced Representations (HRR), and the softmax
attention it replaces.

Follows the paper (Sec. 3, Eqs. 1-5) and the official code (FutureComputing4AI/Hrrformer,
``image/hrrformer_mgpu.py``: ``SelfAttention``, ``MLP``, ``EncoderLayer``, ``Network``; HRR
operations from the ``hrr`` package, ``HRR/with_flax.py``: ``Binding``, ``Unbinding``,
``CosineSimilarity``).

* Binding (Eq. 1): circular convolution over the feature axis,
  a ⊛ b = IFFT(FFT(a) ⊙ FFT(b)), computed here with real FFTs (``rfft``) in float32.
* Approximate inverse (Eq. 2): y† = (y₀, y_{H−1}, …, y₁), the vector flipped and rolled by one,
  so that y† ⊛ y ≈ the identity for random y; unbinding is s ⊛ y†.
* Attention (Eqs. 3-5): per head, β = Σ_t k_t ⊛ v_t (one H′-vector for the whole sequence);
  v̂_t = β ⊛ q_t†; score a_t = cos(v_t, v̂_t); weights w = softmax of the scores over the
  *sequence* axis; output_t = w_t · v_t (an elementwise rescale of each token's own value).
  Time O(T·H′ log H′) per head, memory O(T·H′): no T × T matrix is formed.
"""

from __future__ import annotations

import contextlib
import math

import torch
from torch import nn

from companion.errors import unknown

ATTENTIONS = ("hrr", "softmax", "none")  # "none": the no-mixing control


def _float32(device: torch.device):
    """Autocast off on CPU and CUDA (FFTs run in float32); nothing to do elsewhere (meta)."""
    if device.type in ("cpu", "cuda"):
        return torch.autocast(device.type, enabled=False)
    return contextlib.nullcontext()


def binding(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Circular convolution of the last axis, a ⊛ b (Eq. 1), by real FFTs in float32.

    (a ⊛ b)_i = Σ_j a_j b_{(i−j) mod H}. The official code uses complex FFTs and keeps the
    real part; ``rfft``/``irfft`` give the same numbers with half the work.
    """
    n = a.shape[-1]
    with _float32(a.device):
        fa = torch.fft.rfft(a.float(), dim=-1)
        fb = torch.fft.rfft(b.float(), dim=-1)
        return torch.fft.irfft(fa * fb, n=n, dim=-1)


def approx_inverse(y: torch.Tensor) -> torch.Tensor:
    """y† (Eq. 2): index i ↦ y_{(−i) mod H}, i.e. flip the last axis, then roll it by one."""
    return torch.roll(torch.flip(y, dims=(-1,)), 1, dims=-1)


def unbinding(s: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Retrieve what was bound to ``y`` in ``s``: s ⊛ y† (``Unbinding`` in the hrr package)."""
    return binding(s, approx_inverse(y))


def cosine_similarity(a: torch.Tensor, b: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """cos(a, b) over the last axis, keeping it (shape [..., 1]).

    The official ``CosineSimilarity`` divides without an epsilon (a zero vector gives NaN, whose
    gradients the official training loop then silently zeroes); we add ``eps`` to the norms.
    """
    num = (a * b).sum(-1, keepdim=True)
    return num / (a.norm(dim=-1, keepdim=True) * b.norm(dim=-1, keepdim=True) + eps)


def split_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    """[B, T, d] -> [B, h, T, d/h]."""
    b, t, d = x.shape
    return x.view(b, t, heads, d // heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """[B, h, T, d/h] -> [B, T, d]."""
    b, h, t, hd = x.shape
    return x.transpose(1, 2).reshape(b, t, h * hd)


def hrr_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Hrrformer attention on split heads ``[B, h, T, H′]`` (Eqs. 3-5).

    Returns ``(output, weights)``: output_t = w_t · v_t and the weights ``[B, h, T, 1]``
    (softmax over T). ``mask`` ([B, T], True = real token): padded keys and values are zeroed
    *before* binding, so they do not enter β (the official text/ListOps code masks only the
    scores), and padded scores get weight 0.
    """
    if mask is not None:
        keep = mask[:, None, :, None].to(k.dtype)
        k, v = k * keep, v * keep
    beta = binding(k, v).sum(dim=-2, keepdim=True)  # β = Σ_t k_t ⊛ v_t: [B, h, 1, H′]
    v_hat = unbinding(beta, q)  # v̂_t = β ⊛ q_t†: [B, h, T, H′]
    scores = cosine_similarity(v.float(), v_hat)  # a_t ∈ [−1, 1]: [B, h, T, 1]
    if mask is not None:
        scores = scores.masked_fill(~mask[:, None, :, None], float("-inf"))
    weights = torch.softmax(scores, dim=-2)  # over the sequence, not over features
    return weights.to(v.dtype) * v, weights


def softmax_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention, softmax(q kᵀ/√H′) v, with the T × T matrix formed
    explicitly (as a plain Transformer does; fused kernels would hide its memory)."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # [B, h, T, T]
    if mask is not None:
        scores = scores.masked_fill(~mask[:, None, None, :], float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def no_mixing(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The control: attention removed. The output is zero, so the block keeps only its
    residual path and per-token MLP, and tokens never meet before the head (a classifier's
    mean over the sequence is then the only place they do)."""
    return torch.zeros_like(v), torch.zeros_like(v[..., :1])


class SelfAttention(nn.Module):
    """Multi-head self-attention with bias-free q, k, v and output projections, as in the
    official ``SelfAttention``; ``kind`` selects Hrrformer's (``"hrr"``) or softmax attention, or
    ``"none"``, the no-mixing control (output zero)."""

    def __init__(self, dim: int, heads: int, kind: str = "hrr"):
        super().__init__()
        if kind not in ATTENTIONS:
            raise unknown("attention", kind, ATTENTIONS)
        self.heads, self.kind = heads, kind
        self.query = nn.Linear(dim, dim, bias=False)
        self.key = nn.Linear(dim, dim, bias=False)
        self.value = nn.Linear(dim, dim, bias=False)
        self.output = nn.Linear(dim, dim, bias=False)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, return_weights=False):
        q, k, v = (split_heads(f(x), self.heads) for f in (self.query, self.key, self.value))
        attend = {"hrr": hrr_attention, "softmax": softmax_attention, "none": no_mixing}[self.kind]
        out, weights = attend(q, k, v, mask)
        out = self.output(merge_heads(out.to(x.dtype)))
        return (out, weights) if return_weights else out


class EncoderLayer(nn.Module):
    """Post-norm block of the official code: x = LN(x + Drop(attn(x))); x = LN(x + MLP(x)),
    MLP = Dense(d/2) → GELU → Dense(d, no bias) → Drop."""

    def __init__(self, dim: int, heads: int, kind: str, dropout: float = 0.0):
        super().__init__()
        self.attention = SelfAttention(dim, heads, kind)
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = nn.Sequential(
            nn.Linear(dim, dim // 2), nn.GELU(), nn.Linear(dim // 2, dim, bias=False)
        )
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        x = self.norm1(x + self.drop(self.attention(x, mask)))
        return self.norm2(x + self.drop(self.mlp(x)))


def sinusoidal_positions(length: int, dim: int) -> torch.Tensor:
    """The fixed sinusoidal position table [length, dim] (official ``EmbeddingFixed``)."""
    pos = torch.arange(length, dtype=torch.float32)[:, None]
    freq = torch.exp(-math.log(10_000.0) * torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    table = torch.zeros(length, dim)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq[: dim // 2])
    return table


class SequenceModel(nn.Module):
    """The official ``Network``: token embedding + sinusoidal positions, ``depth`` encoder
    layers, then a head Dense → GELU → Dense. ``pool=True`` averages over the sequence first
    (sequence classification, as the official code); ``pool=False`` classifies every position
    (a sequence-to-sequence task such as reversing)."""

    def __init__(
        self,
        vocab_size: int,
        max_len: int,
        classes: int,
        dim: int = 64,
        heads: int = 4,
        depth: int = 1,
        kind: str = "hrr",
        pool: bool = True,
        dropout: float = 0.0,
    ):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.register_buffer("positions", sinusoidal_positions(max_len, dim), persistent=False)
        self.drop = nn.Dropout(dropout)
        self.layers = nn.ModuleList(EncoderLayer(dim, heads, kind, dropout) for _ in range(depth))
        self.head = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, classes))
        self.pool = pool

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        x = self.drop(self.embed(tokens) + self.positions[: tokens.shape[1]])
        for layer in self.layers:
            x = layer(x, mask)
        if self.pool:
            x = x.mean(dim=1)
        return self.head(x)
