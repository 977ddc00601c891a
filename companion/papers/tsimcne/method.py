"""t-SimCNE (Böhm, Berens & Kobak, ICLR 2023): SimCLR with a Cauchy kernel in a 2-D output.

The pieces, each as berenslab/t-simcne defines it (package ``tsimcne``, branch ``iclr2023``):

* the **Cauchy similarity** q(z, z') = 1 / (1 + ‖z − z'‖²) (Eq. 2), the kernel of t-SNE;
* the **InfoNCE loss** of SimCLR with q in place of exp(cos/τ) (Eq. 1 with Eq. 2;
  ``losses/infonce.py: InfoNCECauchy``): for each of the 2B augmented images z_i of a batch,
  with z_{i+} its partner view,

      ℓ_i = −log [ q(z_i, z_{i+}) / Σ_{k ≠ i} q(z_i, z_k) ],   L = mean_i ℓ_i,

  the sum running over the partner and the 2B − 2 other images (the negatives);
* the **network** (``models/simclr_like.py``): a CIFAR ResNet (3×3 stride-1 stem, no max-pool,
  global average pooling) and a projection head Linear(512, 1024) → ReLU → Linear(1024, 128);
* the **three training stages** (``tsimcne.py``, ``models/mutate_model.py``): (1) the whole
  network with a 128-d output; (2) a new last layer Linear(1024, 2), weights ~ N(0, 1), trained
  alone with the rest frozen; (3) everything, at the learning rate divided by 1000;
* the **augmentations** (``imagedistortions.py``): random resized crop (scale 0.2–1), horizontal
  flip, colour jitter (0.4, 0.4, 0.4, 0.1) with p = 0.8, greyscale with p = 0.2, here with
  ``kornia.augmentation`` on whole batches (shared: ``companion.data.augment``);
* the **evaluation** (``eval/knn.py``): accuracy of a k = 15 nearest-neighbour classifier in the
  2-D output (shared: ``companion.core.probes.knn_accuracy``).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from companion.errors import CompanionError, unknown


def cauchy_similarity(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """q(a_i, b_j) = 1 / (1 + ‖a_i − b_j‖²) for every pair (Eq. 2); ``a`` [n, d], ``b`` [m, d].

    The squared distances are expanded as ‖a‖² + ‖b‖² − 2 a·b (one matrix product), clamped
    at 0 against round-off; the official code uses ``torch.cdist``, the same numbers.
    """
    sq = (a * a).sum(1, keepdim=True) + (b * b).sum(1) - 2 * a @ b.T
    return 1.0 / (1.0 + sq.clamp_min(0))


def gaussian_similarity(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """q(a_i, b_j) = exp(−‖a_i − b_j‖²): the Gaussian kernel of SNE, for comparison."""
    sq = (a * a).sum(1, keepdim=True) + (b * b).sum(1) - 2 * a @ b.T
    return torch.exp(-sq.clamp_min(0))


KERNELS = {"cauchy": cauchy_similarity, "gaussian": gaussian_similarity}


def infonce(z: torch.Tensor, kernel: str = "cauchy") -> torch.Tensor:
    """The InfoNCE loss of a batch of 2B outputs ``z`` [2B, d]: rows i and i + B are the two
    views of image i (Eq. 1 with the similarity q of ``kernel``).

    ℓ_i = −log q(z_i, z_{i+}) + log Σ_{k≠i} q(z_i, z_k), averaged over all 2B rows. The official
    ``InfoNCECauchy`` writes the same thing as −(alignment − uniformity / 2), averaging the B
    rows of each view separately.
    """
    if kernel not in KERNELS:
        raise unknown("kernel", kernel, KERNELS)
    n = z.shape[0]
    if n % 2 or n < 4:
        raise CompanionError(f"infonce needs 2B rows with B >= 2 (two views), got {n}")
    # in float32 even under mixed precision: bf16 distances would be far too coarse
    with torch.autocast(z.device.type, enabled=False):
        z = z if z.dtype == torch.float64 else z.float()
        q = KERNELS[kernel](z, z)
        q = q.masked_fill(torch.eye(n, dtype=torch.bool, device=z.device), 0.0)  # k ≠ i
        rows = torch.arange(n, device=z.device)
        positive = q[rows, rows.roll(n // 2)]  # the partner of row i is row i ± B
        return (q.sum(1).log() - positive.log()).mean()


# --------------------------------------------------------------------------------------------
# The network: CIFAR ResNet backbone and the SimCLR projection head
# --------------------------------------------------------------------------------------------


class BasicBlock(nn.Module):
    """Two 3×3 conv-BN layers with a shortcut (1×1 conv-BN when the shape changes)."""

    def __init__(self, in_planes: int, planes: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    """The CIFAR variant of a ResNet: a 3×3 stride-1 stem without max-pooling (small images keep
    their resolution), stages of :class:`BasicBlock` (the first at stride 1, the rest halving
    the resolution), global average pooling. ``ResNet((2, 2, 2, 2), (64, 128, 256, 512))`` is
    the ResNet18 of the paper (``resnet18()``); smaller ``blocks``/``widths`` give the laptop
    presets' backbones. Initialization as in the official code: Kaiming-normal (fan-out) convs,
    BN weight 1 and bias 0.
    """

    def __init__(
        self,
        blocks: tuple[int, ...] = (2, 2, 2, 2),
        widths: tuple[int, ...] = (64, 128, 256, 512),
        in_channels: int = 3,
    ):
        super().__init__()
        if len(blocks) != len(widths) or not blocks:
            raise CompanionError(
                f"blocks {blocks} and widths {widths} need the same (non-zero) length"
            )
        self.conv1 = nn.Conv2d(in_channels, widths[0], 3, 1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        layers, planes = [], widths[0]
        for stage, (n, width) in enumerate(zip(blocks, widths)):
            for i in range(n):
                stride = 2 if stage > 0 and i == 0 else 1
                layers.append(BasicBlock(planes, width, stride))
                planes = width
        self.layers = nn.Sequential(*layers)
        self.out_dim = planes
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.layers(F.relu(self.bn1(self.conv1(x))))
        return out.mean(dim=(2, 3))


def resnet18(in_channels: int = 3) -> ResNet:
    """The CIFAR ResNet18 (11.2M parameters, 512-d features) of SimCLR and t-SimCNE."""
    return ResNet((2, 2, 2, 2), (64, 128, 256, 512), in_channels)


class TSimCNE(nn.Module):
    """Backbone h = f(x) and projection head z = g(h): Linear → ReLU → Linear (``FCNetwork``).

    ``forward`` returns z; :meth:`features` returns h. The head's last layer is
    ``head[-1]``, swapped for a 2-d one between stage 1 and stage 2.
    """

    def __init__(self, backbone: ResNet, hidden_dim: int = 1024, out_dim: int = 128):
        super().__init__()
        self.backbone = backbone
        self.head = nn.Sequential(
            nn.Linear(backbone.out_dim, hidden_dim),
            nn.ReLU(),
            nn.Linear(hidden_dim, out_dim),
        )

    @property
    def out_dim(self) -> int:
        return self.head[-1].out_features

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.backbone(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(x))


def start_stage(model: TSimCNE, stage: int, out_dim: int = 2, last_layer_std: float = 1.0):
    """Prepare ``model`` for training stage 1, 2 or 3 (``mutate_model`` in the official code).

    Stage 1 trains everything. Stage 2 freezes the whole network and swaps the head's last
    layer for a new ``Linear(hidden, out_dim)`` with weights ~ N(0, ``last_layer_std``²) (bias:
    PyTorch's default), the only part that trains. Stage 3 unfreezes everything.
    """
    if stage == 1:
        model.requires_grad_(True)
    elif stage == 2:
        model.requires_grad_(False)
        hidden = model.head[-1].in_features
        last = nn.Linear(hidden, out_dim).to(model.head[-1].weight.device)
        nn.init.normal_(last.weight, std=last_layer_std)
        model.head[-1] = last
    elif stage == 3:
        model.requires_grad_(True)
    else:
        raise unknown("stage", stage, (1, 2, 3))
    return model


def lr_from_batch_size(batch_size: int) -> float:
    """The official linear scaling rule: lr = 0.03 · B / 256 (``lr_from_batchsize``)."""
    return 0.03 * batch_size / 256


def stage_learning_rates(batch_size: int) -> tuple[float, float, float]:
    """Base learning rates of the three stages: lr, lr, lr / 1000 (``TSimCNE`` "auto_batch")."""
    lr = lr_from_batch_size(batch_size)
    return lr, lr, lr / 1000


def cosine_with_warmup(step: int, total: int, warmup: int) -> float:
    """Learning-rate factor at ``step`` of ``total``: linear warm-up from 0 over ``warmup``
    steps, then cosine annealing to 0 (``CosineAnnealingSchedule``; the official code changes
    the rate once per epoch, here at every step along the same curve)."""
    if step < warmup:
        return step / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1 + math.cos(math.pi * progress))
