"""Initialization that gives the same weights on every CPU."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn


def portable_init(
    model: nn.Module,
    rng: np.random.Generator,
    kinds: tuple[type[nn.Module], ...] = (nn.Linear, nn.Conv2d),
) -> None:
    """Redraw PyTorch's default initialization of every layer of ``kinds`` in ``model``:
    U(±1/√fan_in) for the weight and the bias, drawn from NumPy's ``rng`` in module order
    (weight, then bias).

    Torch's CPU samplers are vectorized per instruction set, so the same seed gives other last
    bits on another CPU (or under ``ATEN_CPU_CAPABILITY=default``); a chaotic run turns them into
    another result. NumPy's draws are the same everywhere. Values are drawn in float64 and cast
    to each parameter's dtype and device."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, kinds):
                bound = 1 / math.sqrt(m.weight[0].numel())
                for p in (m.weight, m.bias):
                    if p is not None:
                        p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape))))
