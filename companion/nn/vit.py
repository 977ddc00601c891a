"""A Vision Transformer (Dosovitskiy et al., 2021) whose attention and linear layers plug in.

Papers that change attention (σReparam, mimetic initialization, ...) swap parts of this model
instead of writing their own:

* ``linear``: a factory ``(in_features, out_features, bias) -> nn.Module`` used for every linear
  map (q, k, v, output projection, MLP, head); ``nn.Linear`` by default;
* ``attention``: the self-attention class (default :class:`MultiHeadSelfAttention`, with separate
  ``q``, ``k``, ``v`` and ``proj`` maps so per-head weights ``W_q``, ``W_k`` are explicit);
* ``norm``: the normalization factory (``nn.LayerNorm``; ``nn.Identity`` removes it).

``model(x, return_attention=True)`` also returns, per block, the attention logits (scores) and
probabilities, each ``[batch, heads, tokens, tokens]``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

LinearFactory = Callable[[int, int, bool], nn.Module]


def default_linear(in_features: int, out_features: int, bias: bool = True) -> nn.Module:
    return nn.Linear(in_features, out_features, bias=bias)


class Attention(NamedTuple):
    """One block's attention: ``scores`` = QKᵀ/√d_head (pre-softmax) and ``probs`` = softmax."""

    scores: torch.Tensor
    probs: torch.Tensor


class MultiHeadSelfAttention(nn.Module):
    """softmax(Q Kᵀ / √d_head) V per head, then an output projection."""

    def __init__(
        self,
        dim: int,
        heads: int,
        linear: LinearFactory = default_linear,
        qkv_bias: bool = True,
        dropout: float = 0.0,
    ):
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim {dim} is not divisible by heads {heads}")
        self.heads, self.head_dim = heads, dim // heads
        self.q = linear(dim, dim, qkv_bias)
        self.k = linear(dim, dim, qkv_bias)
        self.v = linear(dim, dim, qkv_bias)
        self.proj = linear(dim, dim, True)
        self.dropout = nn.Dropout(dropout)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        return x.view(b, t, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x: torch.Tensor, return_attention: bool = False):
        q, k, v = (
            self.split_heads(self.q(x)),
            self.split_heads(self.k(x)),
            self.split_heads(self.v(x)),
        )
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        probs = scores.softmax(dim=-1)
        out = self.dropout(probs) @ v
        out = self.proj(out.transpose(1, 2).reshape(x.shape))
        return (out, Attention(scores, probs)) if return_attention else out


class Block(nn.Module):
    """Pre-norm transformer block: x + Attn(Norm(x)), then x + MLP(Norm(x))."""

    def __init__(
        self,
        dim: int,
        heads: int,
        mlp_ratio: float = 4.0,
        linear: LinearFactory = default_linear,
        norm: Callable[[int], nn.Module] = nn.LayerNorm,
        attention: type[nn.Module] = MultiHeadSelfAttention,
        qkv_bias: bool = True,
        dropout: float = 0.0,
    ):
        super().__init__()
        hidden = int(dim * mlp_ratio)
        self.norm1 = norm(dim)
        self.attn = attention(dim, heads, linear=linear, qkv_bias=qkv_bias, dropout=dropout)
        self.norm2 = norm(dim)
        self.mlp = nn.Sequential(
            linear(dim, hidden, True),
            nn.GELU(),
            nn.Dropout(dropout),
            linear(hidden, dim, True),
            nn.Dropout(dropout),
        )

    def forward(self, x: torch.Tensor, return_attention: bool = False):
        a = self.attn(self.norm1(x), return_attention=return_attention)
        a, att = a if return_attention else (a, None)
        x = x + a
        x = x + self.mlp(self.norm2(x))
        return (x, att) if return_attention else x


class ViT(nn.Module):
    """Patch embedding (a strided convolution), a class token, learned positions, blocks, head."""

    def __init__(
        self,
        image_size: int = 32,
        patch_size: int = 4,
        in_channels: int = 3,
        num_classes: int = 10,
        dim: int = 192,
        depth: int = 12,
        heads: int = 3,
        mlp_ratio: float = 4.0,
        linear: LinearFactory = default_linear,
        norm: Callable[[int], nn.Module] = nn.LayerNorm,
        attention: type[nn.Module] = MultiHeadSelfAttention,
        qkv_bias: bool = True,
        dropout: float = 0.0,
        pool: str = "cls",
    ):
        super().__init__()
        if image_size % patch_size:
            raise ValueError(f"image_size {image_size} is not divisible by patch_size {patch_size}")
        if pool not in ("cls", "mean"):
            raise ValueError(f"unknown pool {pool!r}; valid: cls, mean")
        self.pool = pool
        self.num_patches = (image_size // patch_size) ** 2
        self.patch_embed = nn.Conv2d(in_channels, dim, patch_size, stride=patch_size)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, self.num_patches + 1, dim))
        self.blocks = nn.ModuleList(
            Block(dim, heads, mlp_ratio, linear, norm, attention, qkv_bias, dropout)
            for _ in range(depth)
        )
        self.norm = norm(dim)
        self.head = linear(dim, num_classes, True)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Truncated-normal(0.02) weights and zero biases, as in timm's ViT."""
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.trunc_normal_(self.cls_token, std=0.02)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def tokens(self, x: torch.Tensor) -> torch.Tensor:
        """Images ``[B, C, H, W]`` to tokens ``[B, 1 + patches, dim]`` with positions added."""
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        return torch.cat([cls, x], dim=1) + self.pos_embed

    def features(self, x: torch.Tensor, return_attention: bool = False):
        """The pooled representation (before the head)."""
        x = self.tokens(x)
        maps = []
        for block in self.blocks:
            if return_attention:
                x, att = block(x, return_attention=True)
                maps.append(att)
            else:
                x = block(x)
        x = self.norm(x)
        x = x[:, 0] if self.pool == "cls" else x[:, 1:].mean(dim=1)
        return (x, maps) if return_attention else x

    def forward(self, x: torch.Tensor, return_attention: bool = False):
        if return_attention:
            f, maps = self.features(x, return_attention=True)
            return self.head(f), maps
        return self.head(self.features(x))


def attention_blocks(model: nn.Module) -> list[MultiHeadSelfAttention]:
    """All self-attention modules of a model, in order."""
    return [m for m in model.modules() if isinstance(m, MultiHeadSelfAttention)]


def cross_entropy_step(model: nn.Module, batch) -> tuple[torch.Tensor, dict[str, float]]:
    """The classification step for :func:`companion.core.fit`: loss and batch accuracy."""
    x, y = batch
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    return loss, {"accuracy": (logits.argmax(-1) == y).float().mean().item()}
