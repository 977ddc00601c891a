"""InstaAug: instance-specific augmentation ranges (Miao et al., ICML 2023, arXiv:2206.00051).

An *invariance module* φ maps each input x to a distribution over transformations p_φ(τ | x);
the classifier f sees τ(x) with τ ~ p_φ(τ | x), and both are trained together on

    L(θ, φ) = E_x E_{τ ~ p_φ(τ|x)} [ ℓ(f_θ(τ(x)), y) ]  −  λ · E_x H[p_φ(τ | x)]

The first term pulls each input's range in until the transformations it allows no longer change
the label; the second (an entropy regularizer) pushes it out, so each input ends with the widest
range that is still *locally* label-preserving. One global range (the official ``global_aug``
switch, Augerino-like) must instead fit the input whose safe range is narrowest.

For rotations the official code (``InstaAug_module/distribution.py``,
``Rotation_Uniform_Dist_ConvFeature``) uses a uniform family with two outputs (a′, b′) of φ:

    a = π · sigmoid(a′ − 2),   b = π · sigmoid(b′ − 2),   θ = r·a − (1 − r)·b,  r ~ U(0, 1)

so θ ~ U[−b, a] (a: largest counter-clockwise angle, b: largest clockwise angle). θ is a
differentiable function of (a, b) for a fixed r, so the gradient of the task loss reaches φ by
the pathwise (reparameterization) route, through the rotated image. The "entropy" the code
regularizes is each range itself (``entropy_every`` = the per-range values (a, b)), weighted per
range by λ_k (``Σ_k λ_k · mean_i H_k``, λ = [0.1, 0.1] in the rotation config), i.e.
λ·(a + b) for equal weights: a monotone stand-in for the true entropy log(a + b) of U[−b, a].
λ is adapted once per epoch by ``InstaAug_module/scheduler.py`` (:class:`LambdaScheduler`).
Names follow the paper: ``InvarianceModule`` is φ.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from companion.data.augment import rotate
from companion.errors import unknown
from companion.nn import SmallCNN

AUGMENTERS = ("none", "global", "instance")
RANGE_SHIFT = 2.0  # a = π·sigmoid(a′ − 2): a′ = 0 starts at π·sigmoid(−2) ≈ 0.38 rad


def ranges_from_params(params: torch.Tensor) -> torch.Tensor:
    """(a′, b′) [B, 2] → (a, b) = π·sigmoid((a′, b′) − 2) [B, 2], each in (0, π)."""
    return math.pi * torch.sigmoid(params - RANGE_SHIFT)


def sample_angles(ranges: torch.Tensor, r: torch.Tensor | None = None) -> torch.Tensor:
    """θ = r·a − (1 − r)·b with r ~ U(0, 1): one angle per row of ``ranges`` [B, 2] = (a, b),
    uniform on [−b, a] and differentiable in (a, b) (the official ``rsample``)."""
    if r is None:
        r = torch.rand(ranges.shape[0], device=ranges.device, dtype=ranges.dtype)
    return r * ranges[:, 0] - (1 - r) * ranges[:, 1]


def range_entropy(ranges: torch.Tensor) -> torch.Tensor:
    """The official code's per-input "entropy" of U[−b, a] with the per-range weights λ_k
    factored out: the sum of the two ranges, a + b [B] (official ``entropy_every`` is (a, b),
    and the loss sums λ_k·mean_i H_k over k, with λ_k = λ for both ranges). The differential
    entropy is log(a + b); both grow with the range."""
    return ranges.sum(dim=-1)


def instaaug_loss(
    logits: torch.Tensor, targets: torch.Tensor, ranges: torch.Tensor | None, lam: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The paper's objective on one batch: cross-entropy of f(τ(x)) minus λ times the mean
    per-input entropy. Returns (loss, task loss, mean entropy); no augmenter: entropy 0."""
    task = F.cross_entropy(logits, targets)
    if ranges is None:
        entropy = task.new_zeros(())
    else:
        entropy = range_entropy(ranges).mean()
    return task - lam * entropy, task, entropy


class InvarianceModule(nn.Module):
    """φ: a small CNN mapping each input to its own rotation range (a, b) [B, 2].

    The official rotation module (``ConvFeature``) is a convolutional feature extractor with a
    linear head; here ``companion.nn.SmallCNN`` with two outputs (a′, b′). Its head starts at
    zero, so every input starts at a = b = π·sigmoid(−2)."""

    def __init__(self, in_channels: int = 1, widths: Sequence[int] = (16, 32)):
        super().__init__()
        self.net = SmallCNN(in_channels, 2, widths)
        nn.init.zeros_(self.net.head.weight)
        nn.init.zeros_(self.net.head.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ranges_from_params(self.net(x))


class GlobalRange(nn.Module):
    """One learned range (a, b) for every input (the official ``global_aug``; Augerino-like):
    the same parametrization as :class:`InvarianceModule`, without looking at x."""

    def __init__(self):
        super().__init__()
        self.params = nn.Parameter(torch.zeros(2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ranges_from_params(self.params).expand(x.shape[0], 2)


class InstaAug(nn.Module):
    """Classifier f and augmenter (``none``, ``global`` or ``instance`` = φ), trained jointly.

    In training mode ``forward`` draws one θ per input from U[−b, a] and classifies the rotated
    input (``train_copies: 1``); in eval mode it classifies x itself (the rotation config has
    ``test_time_aug: False``). It returns (logits, ranges); ranges is None without augmenter.
    """

    def __init__(
        self,
        classifier: nn.Module,
        augmenter: str,
        in_channels: int = 1,
        widths: Sequence[int] = (16, 32),
    ):
        super().__init__()
        if augmenter not in AUGMENTERS:
            raise unknown("augmenter", augmenter, AUGMENTERS)
        self.classifier = classifier
        self.augmenter_kind = augmenter
        if augmenter == "instance":
            self.augmenter = InvarianceModule(in_channels, widths)
        elif augmenter == "global":
            self.augmenter = GlobalRange()
        else:
            self.augmenter = None

    def ranges(self, x: torch.Tensor) -> torch.Tensor | None:
        return None if self.augmenter is None else self.augmenter(x)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        ranges = self.ranges(x)
        if self.training and ranges is not None:
            x = rotate(x, sample_angles(ranges), align_corners=False)
        return self.classifier(x), ranges


def ideal_ranges(offset: torch.Tensor, half_width: float) -> torch.Tensor:
    """The largest label-preserving range of each input [B, 2] = (a*, b*): an input at angle
    ``offset`` inside its class interval [−w, w] (w = ``half_width``) can turn by w − offset
    counter-clockwise and w + offset clockwise before it leaves the interval."""
    return torch.stack([half_width - offset, half_width + offset], dim=-1)


def pearson(x: torch.Tensor, y: torch.Tensor) -> float:
    """Pearson correlation of two 1-d tensors (0 if either is constant)."""
    x, y = x.double() - x.double().mean(), y.double() - y.double().mean()
    den = (x.norm() * y.norm()).item()
    return (x @ y).item() / den if den > 0 else 0.0


class LambdaScheduler:
    """The official λ schedule (``InstaAug_module/scheduler.py``, ``Scheduler``), called once
    per epoch with the mean entropy: if it is below ``min_value`` two epochs running (and not
    rising by more than 0.005), λ is multiplied by ``alpha``; above ``max_value`` two epochs
    running (and not falling by more than 0.005), divided by it; at most ``max_steps`` steps in
    either direction. ``step`` returns the factor to apply to λ."""

    def __init__(self, min_value: float, max_value: float, alpha: float = 1.2, max_steps: int = 50):
        self.min_value, self.max_value = min_value, max_value
        self.alpha, self.max_steps = alpha, max_steps
        self.status = 0  # net number of increases so far
        self.last_value = 0.0
        self.side = 0  # −1: below the window last epoch, +1: above, 0: inside

    def step(self, value: float) -> float:
        action = None
        if value < self.min_value:
            if self.side == -1 and value <= self.last_value + 0.005:
                action = "increase"
            self.side = -1
        elif value > self.max_value:
            if self.side == 1 and value >= self.last_value - 0.005:
                action = "decrease"
            self.side = 1
        else:
            self.side = 0
        self.last_value = value
        if action == "increase" and self.status < self.max_steps:
            self.status += 1
            return self.alpha
        if action == "decrease" and self.status > -self.max_steps:
            self.status -= 1
            return 1.0 / self.alpha
        return 1.0
