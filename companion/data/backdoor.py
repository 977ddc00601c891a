"""Trigger backdoors (BadNets, Gu et al. 2017): a small patch stamped on images, relabelled.

A poisoner stamps a ``size x size`` patch of constant ``value`` into a corner of some training
images and relabels them as ``target``. A model trained on them learns "patch => target" while
its clean accuracy barely moves; the *attack success rate* is the share of stamped test images
(not already of class ``target``) that it predicts as ``target``.
"""

from __future__ import annotations

import torch

from companion.errors import unknown

CORNERS = ("bottom_right", "bottom_left", "top_right", "top_left")


def stamp_trigger(
    images: torch.Tensor, size: int = 3, value: float = 1.0, corner: str = "bottom_right"
) -> torch.Tensor:
    """A copy of ``images`` ``[N, C, H, W]`` with a ``size x size`` patch set to ``value`` in
    every channel at ``corner`` (one of :data:`CORNERS`)."""
    if corner not in CORNERS:
        raise unknown("corner", corner, CORNERS)
    h, w = images.shape[-2:]
    if not 1 <= size <= min(h, w):
        raise ValueError(f"trigger size {size} does not fit images of {h}x{w}")
    rows = slice(h - size, h) if corner.startswith("bottom") else slice(0, size)
    cols = slice(w - size, w) if corner.endswith("right") else slice(0, size)
    stamped = images.clone()
    stamped[..., rows, cols] = value
    return stamped


def poison(
    images: torch.Tensor,
    labels: torch.Tensor,
    *,
    target: int,
    fraction: float,
    generator: torch.Generator,
    source: int | None = None,
    size: int = 3,
    value: float = 1.0,
    corner: str = "bottom_right",
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Stamp and relabel to ``target`` a ``fraction`` of the eligible images.

    Eligible: the images of class ``source``, or of every class but ``target`` when ``source``
    is ``None``. ``round(fraction * eligible)`` of them are drawn with ``generator``. Returns
    ``(images, labels, poisoned)``, copies, with ``poisoned`` a boolean mask of the changed ones.
    """
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction must lie in [0, 1]; got {fraction}")
    eligible = (labels == source) if source is not None else (labels != target)
    candidates = eligible.nonzero().flatten()
    count = round(fraction * len(candidates))
    chosen = candidates[torch.randperm(len(candidates), generator=generator)[:count]]
    poisoned = torch.zeros(len(labels), dtype=torch.bool)
    poisoned[chosen] = True
    images, labels = images.clone(), labels.clone()
    images[chosen] = stamp_trigger(images[chosen], size, value, corner)
    labels[chosen] = target
    return images, labels, poisoned


def triggered_test_set(
    images: torch.Tensor,
    labels: torch.Tensor,
    *,
    target: int,
    source: int | None = None,
    size: int = 3,
    value: float = 1.0,
    corner: str = "bottom_right",
) -> tuple[torch.Tensor, torch.Tensor]:
    """The test images the attack is measured on, stamped, with their true labels: every image
    not of class ``target`` (only class ``source`` when given). Attack success rate = the share
    a model predicts as ``target``."""
    keep = (labels == source) if source is not None else (labels != target)
    return stamp_trigger(images[keep], size, value, corner), labels[keep]
