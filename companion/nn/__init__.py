"""Shared building blocks: MLP, small CNN, a ViT with pluggable attention and linear layers, and
an initialization that is the same on every CPU."""

from companion.nn.init import portable_init
from companion.nn.mlp import MLP, SmallCNN
from companion.nn.vit import (
    Attention,
    Block,
    MultiHeadSelfAttention,
    ViT,
    attention_blocks,
    cross_entropy_step,
    default_linear,
)

__all__ = [
    "MLP",
    "Attention",
    "Block",
    "MultiHeadSelfAttention",
    "SmallCNN",
    "ViT",
    "attention_blocks",
    "cross_entropy_step",
    "default_linear",
    "portable_init",
]
