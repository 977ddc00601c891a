"""Small helpers for image tensors shaped ``[N, C, H, W]`` with values in [0, 1]."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from companion.errors import CompanionError


def check_image_size(image_size: int, minimum: int) -> None:
    """Raise :class:`CompanionError` unless ``image_size`` is an integer ``>= minimum``."""
    if isinstance(image_size, bool) or not isinstance(image_size, int) or image_size < minimum:
        raise CompanionError(
            f"image_size {image_size!r} is not valid; valid: an integer >= {minimum}"
        )


def resize(images: torch.Tensor, image_size: int) -> torch.Tensor:
    """Resize square images ``[N, C, H, W]`` to ``[N, C, image_size, image_size]``.

    Bilinear interpolation with ``align_corners=False``; when shrinking, antialiased so that
    thin strokes are averaged rather than skipped. Every output pixel is a weighted average of
    input pixels with non-negative weights, so values stay in [0, 1].
    """
    if images.shape[-1] == image_size and images.shape[-2] == image_size:
        return images
    return F.interpolate(
        images,
        size=(image_size, image_size),
        mode="bilinear",
        align_corners=False,
        antialias=image_size < images.shape[-1],
    )
