"""A plain multi-layer perceptron and a small convolutional network."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn


class MLP(nn.Sequential):
    """``in -> hidden[0] -> ... -> out`` with an activation (and optional dropout) between."""

    def __init__(
        self,
        in_features: int,
        hidden: Sequence[int],
        out_features: int,
        activation: type[nn.Module] = nn.ReLU,
        dropout: float = 0.0,
    ):
        layers: list[nn.Module] = [nn.Flatten()]
        width = in_features
        for h in hidden:
            layers += [nn.Linear(width, h), activation()]
            if dropout:
                layers.append(nn.Dropout(dropout))
            width = h
        layers.append(nn.Linear(width, out_features))
        super().__init__(*layers)

    def __getitem__(self, index):
        """``mlp[:k]`` is a plain ``nn.Sequential`` of the first k layers (sharing parameters)."""
        if isinstance(index, slice):
            return nn.Sequential(*list(self)[index])
        return super().__getitem__(index)


class SmallCNN(nn.Module):
    """Conv-BN-ReLU blocks with max-pooling, global average pooling and a linear head."""

    def __init__(
        self,
        in_channels: int = 1,
        num_classes: int = 10,
        widths: Sequence[int] = (32, 64),
        batch_norm: bool = True,
    ):
        super().__init__()
        blocks: list[nn.Module] = []
        c = in_channels
        for i, w in enumerate(widths):
            blocks += [nn.Conv2d(c, w, 3, padding=1, bias=not batch_norm)]
            if batch_norm:
                blocks.append(nn.BatchNorm2d(w))
            blocks.append(nn.ReLU())
            if i < len(widths) - 1:
                blocks.append(nn.MaxPool2d(2))
            c = w
        self.features = nn.Sequential(*blocks)
        self.head = nn.Linear(c, num_classes)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return self.features(x).mean(dim=(2, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(x))
