"""Augmentations on batches, with kornia: each image of a batch gets its own random draw.

Self-supervised papers build two views of every image with the same SimCLR recipe;
:func:`simclr_augmentation` is that recipe, shared so that every notebook means the same thing by
"SimCLR augmentations". :func:`rotate` turns each image of a batch by its own angle, for papers
whose transformations are rotations with known (or learned, differentiable) angles.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from companion.errors import CompanionError


def simclr_augmentation(
    image_size: int,
    channels: int,
    crop_scale: tuple[float, float] = (0.2, 1.0),
    flip: float = 0.5,
    jitter: tuple[float, float, float, float] = (0.4, 0.4, 0.4, 0.1),
    jitter_p: float = 0.8,
    grayscale_p: float = 0.2,
) -> nn.Module:
    """SimCLR's augmentations (Chen et al., 2020), as t-SimCNE's ``get_transforms_unnormalized``
    writes them, drawn independently for every image of a batch: RandomResizedCrop(scale
    0.2–1) → horizontal flip (p = ``flip``) → ColorJitter(brightness, contrast, saturation,
    hue) with p = 0.8 → RandomGrayscale(p = 0.2). Greyscale images (``channels == 1``) have no
    saturation or hue and are already grey, so only brightness and contrast jitter apply.
    """
    import kornia.augmentation as K

    brightness, contrast, saturation, hue = jitter
    steps: list[nn.Module] = [
        K.RandomResizedCrop((image_size, image_size), scale=crop_scale),
    ]
    if flip > 0:
        steps.append(K.RandomHorizontalFlip(p=flip))
    if channels == 3:
        steps.append(K.ColorJitter(brightness, contrast, saturation, hue, p=jitter_p))
        steps.append(K.RandomGrayscale(p=grayscale_p))
    elif channels == 1:
        steps.append(K.ColorJitter(brightness, contrast, 0.0, 0.0, p=jitter_p))
    else:
        raise CompanionError(f"images need 1 or 3 channels, got {channels}")
    return nn.Sequential(*steps)


def rotate(images: torch.Tensor, theta: torch.Tensor, align_corners: bool = True) -> torch.Tensor:
    """Rotate each image of ``images`` [B, C, H, W] counter-clockwise (as displayed, row 0 at
    the top) by its own angle ``theta`` [B] in radians about the centre; bilinear, zeros outside,
    differentiable in both the images and the angles.

    With ``align_corners=True`` this is the sampling of ``kornia.geometry.transform.rotate``,
    written with ``F.affine_grid`` / ``F.grid_sample`` directly: kornia's wrapper costs tens of
    milliseconds per call on a CPU, the sampling itself one or two. ``align_corners=False`` is
    PyTorch's default convention (pixel centres at the half-steps), used by some official codes.
    Rotations compose: rotate(rotate(x, α), θ) ≈ rotate(x, α + θ) up to interpolation.
    """
    c, s = theta.cos().to(images.dtype), theta.sin().to(images.dtype)
    zero = torch.zeros_like(c)
    # output pixel (u, v) (v pointing down) samples the input at [[c, −s], [s, c]]·(u, v)
    affine = torch.stack([torch.stack([c, -s, zero], -1), torch.stack([s, c, zero], -1)], 1)
    grid = F.affine_grid(affine, list(images.shape), align_corners=align_corners)
    return F.grid_sample(
        images, grid, mode="bilinear", padding_mode="zeros", align_corners=align_corners
    )
