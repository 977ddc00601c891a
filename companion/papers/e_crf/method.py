"""E-CRF: the embedded CRF layer inserted before a segmentation network's 1×1 classifier.

Written from the paper (Zhu, Huang, Li, Wang, ICLR 2023) and its released core module
(JiePKU/E-CRF, ``ecrf_sp.py``: ``PositionEncode``, ``ECRF``, ``SupAux``, ``MessagePass``).
The training code is not released; everything outside this file is the companion's own.

For a feature map F (B×C×H×W) of the backbone and the image I at the same resolution,

* the pairwise **kernel** k_ij = ⟨g_i, g_j⟩ (unnormalized), with the embedding
  g = concat[conv1×1(I), conv1×1(PE)] of the image and a 2-D sinusoidal position encoding PE,
  for the neighbours j of i in a 3×3 window with dilation 2 (the centre included);
* the **compatibility** μ_j = sigmoid(wᵀ F_j) (a 1×1 convolution to one channel, no bias);
* the **message** m_i = Σ_j k_ij μ_j F_j (the code's ``weighted_fea``);
* the **superpixel prior** F_i ← F_i + 0.1 · mean_{l ∈ S(i)} F_l, S(i) the superpixel of i;
* the **output** F′ = F_sp + 0.2 · m, with m computed from the original F.

Since j = i is in the window, m_i contains the centre term k_ii μ_i F_i = ‖g_i‖² μ_i F_i: the
module also rescales every feature, besides passing messages between pixels.

The classifier then sees F′, so a boundary pixel's feature is pulled towards the features of
the pixels that look like it (the kernel) and of its own superpixel (the prior); the paper's
argument is that this changes the gradients reaching the class weights, so that classes which
share long boundaries stop being pushed towards the same weight vector (BCWC).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

MESSAGE_WEIGHT = 0.2  # F' = F_sp + 0.2 · m  (MessagePass.forward)
SUPERPIXEL_WEIGHT = 0.1  # F_sp = F + 0.1 · superpixel mean  (SupAux(weight=0.1))


def position_encoding(d_model: int, height: int, width: int) -> torch.Tensor:
    """The code's ``PositionEncode``: a (2·d_model)×H×W map, the first d_model channels a
    sinusoid of the column x, the last d_model of the row y (transformer-style frequencies
    10000^(−2i/d_model); even channels sin, odd channels cos)."""
    div_term = torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))
    x = torch.arange(width).float()[None, :] * div_term[:, None]  # d/2 × W
    y = torch.arange(height).float()[None, :] * div_term[:, None]  # d/2 × H
    pe_x = torch.zeros(d_model, height, width)
    pe_y = torch.zeros(d_model, height, width)
    pe_x[0::2] = torch.sin(x)[:, None, :]
    pe_x[1::2] = torch.cos(x)[:, None, :]
    pe_y[0::2] = torch.sin(y)[:, :, None]
    pe_y[1::2] = torch.cos(y)[:, :, None]
    return torch.cat([pe_x, pe_y])


def neighbours(x: torch.Tensor, kernel_size: int = 3, dilation: int = 2) -> torch.Tensor:
    """B×C×H×W → B×C×K²×H×W: each pixel's K×K dilated window (zeros outside the image), in the
    order of ``F.unfold`` (row-major offsets). The padding keeps the size, (K−1)·dilation/2
    (the code hard-codes 2 for K=3, d=2). Built from K² shifted slices of the zero-padded map,
    which is the same tensor as ``F.unfold``'s but several times faster to differentiate."""
    h, w = x.shape[-2:]
    pad = (kernel_size - 1) * dilation // 2
    padded = F.pad(x, (pad, pad, pad, pad))
    offsets = [dilation * i for i in range(kernel_size)]
    return torch.stack(
        [padded[..., dy : dy + h, dx : dx + w] for dy in offsets for dx in offsets], dim=2
    )


class ECRF(nn.Module):
    """The message m_i = Σ_j k_ij μ_j F_j of the code's ``ECRF`` module.

    ``img_conv`` (3 → channel) and ``pos_conv`` (2·channel → channel) embed the image and the
    position; ``comp_conv`` (feature_channels → 1) scores the compatibility. All 1×1, no bias.
    """

    def __init__(
        self,
        feature_channels: int,
        kernel_size: int = 3,
        dilation: int = 2,
        channel: int = 32,
        centre_only: bool = False,
    ):
        super().__init__()
        if kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be odd, got {kernel_size}")
        self.kernel_size, self.dilation, self.channel = kernel_size, dilation, channel
        self.centre_only = centre_only  # the companion's control: keep only j = i
        self.pos_conv = nn.Conv2d(2 * channel, channel, 1, bias=False)
        self.img_conv = nn.Conv2d(3, channel, 1, bias=False)
        self.comp_conv = nn.Conv2d(feature_channels, 1, 1, bias=False)

    def embedding(self, feat: torch.Tensor, img: torch.Tensor) -> torch.Tensor:
        """g = concat[conv1×1(I resized to H×W), conv1×1(PE)]: B×(2·channel)×H×W."""
        b, _, h, w = feat.shape
        pe = position_encoding(self.channel, h, w).to(feat)
        pos = self.pos_conv(pe[None]).expand(b, -1, -1, -1)
        if img.shape[-2:] != (h, w):
            img = F.interpolate(img, size=(h, w), mode="bilinear")
        return torch.cat([self.img_conv(img), pos], dim=1)

    def kernel(self, feat: torch.Tensor, img: torch.Tensor) -> torch.Tensor:
        """k_ij = ⟨g_i, g_j⟩ for the K² neighbours j of every pixel i: B×K²×H×W."""
        g = self.embedding(feat, img)
        return (neighbours(g, self.kernel_size, self.dilation) * g[:, :, None]).sum(dim=1)

    def compatibility(self, feat: torch.Tensor) -> torch.Tensor:
        """μ_j = sigmoid(wᵀ F_j): B×1×H×W."""
        return torch.sigmoid(self.comp_conv(feat))

    def forward(self, feat: torch.Tensor, img: torch.Tensor) -> torch.Tensor:
        k = self.kernel(feat, img)  # B × K² × H × W
        if self.centre_only:  # control arm: k_ij = 0 for j ≠ i, so m_i = k_ii μ_i F_i
            centre = torch.zeros_like(k)
            centre[:, self.kernel_size**2 // 2] = 1.0
            k = k * centre
        weighted = self.compatibility(feat) * feat  # μ_j F_j
        return (neighbours(weighted, self.kernel_size, self.dilation) * k[:, None]).sum(dim=2)


def superpixel_mean(feat: torch.Tensor, superpixels: torch.Tensor) -> torch.Tensor:
    """Each pixel's superpixel mean of ``feat``: (1/|S(i)|) Σ_{l∈S(i)} F_l, B×C×H×W.

    ``superpixels``: B×H×W integer ids (any non-negative ids, per image). A scatter-mean over
    every id: the code's ``SupAux`` loops ``for i in range(max_ele)``, which skips the largest
    id (its pixels get no prior), and is slow in Python.
    """
    b, c, h, w = feat.shape
    if superpixels.shape[-2:] != (h, w):
        superpixels = F.interpolate(superpixels[:, None].float(), size=(h, w), mode="nearest")
        superpixels = superpixels[:, 0]
    ids = superpixels.long().reshape(b, 1, h * w)
    n_ids = int(ids.max()) + 1
    flat = feat.reshape(b, c, h * w)
    sums = flat.new_zeros(b, c, n_ids).scatter_add_(2, ids.expand(b, c, -1), flat)
    counts = flat.new_zeros(b, 1, n_ids).scatter_add_(2, ids, torch.ones_like(flat[:, :1]))
    means = sums / counts.clamp(min=1)
    return means.gather(2, ids.expand(b, c, -1)).reshape(b, c, h, w)


class MessagePass(nn.Module):
    """The code's ``MessagePass``: F′ = F + 0.1 · superpixel mean (if ``use_superpixels``)
    + 0.2 · ECRF(F, I). Goes right before the final 1×1 classifier.

    ``centre_only=True`` is the companion's control, not the paper's: the kernel keeps only
    j = i, so the module still rescales every feature by 1 + 0.2 · k_ii μ_i but passes no
    kernel messages between neighbouring pixels (the superpixel prior is kept)."""

    def __init__(
        self,
        feature_channels: int,
        use_superpixels: bool = True,
        channel: int = 32,
        centre_only: bool = False,
    ):
        super().__init__()
        self.ecrf = ECRF(feature_channels, channel=channel, centre_only=centre_only)
        self.use_superpixels = use_superpixels

    def forward(
        self, feat: torch.Tensor, img: torch.Tensor, superpixels: torch.Tensor | None = None
    ) -> torch.Tensor:
        message = self.ecrf(feat, img)  # from the original F
        if self.use_superpixels:
            if superpixels is None:
                raise ValueError("MessagePass(use_superpixels=True) needs the superpixel ids")
            feat = feat + SUPERPIXEL_WEIGHT * superpixel_mean(feat, superpixels)
        return feat + MESSAGE_WEIGHT * message


def class_weight_similarity(weight: torch.Tensor) -> torch.Tensor:
    """Cosine similarity of every pair of class weight vectors (rows of the 1×1 classifier's
    K×C weight): the paper's Fig. 1a measure of class-weight confusion. K×K."""
    w = F.normalize(weight.detach().reshape(weight.shape[0], -1).float(), dim=1)
    return w @ w.T
