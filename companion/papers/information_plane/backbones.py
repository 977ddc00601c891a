"""ResNet-18 for the CIFAR-10 setting of the official code (``cifar10_dropout/dropout_netw.py``).

The official network is the usual CIFAR ResNet-18 (3×3 stem, no max-pooling, four stages of two
basic blocks, 4×4 average pooling) followed by ``Linear(512, 128)``, Gaussian dropout on those
128 units (no activation in between), and ``Linear(128, 10)``. Here :func:`resnet18_body`
returns everything up to and including ``Linear(512, 128)``: the representation ``f(x)`` whose
noisy version ``Z`` the information plane measures. (Kept in this package because no other
paper needs a ResNet yet; it belongs in ``companion.nn`` once one does.)
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import nn


class BasicBlock(nn.Module):
    """Two 3×3 conv-BN layers with a residual connection (1×1 conv-BN when the shape changes)."""

    def __init__(self, in_planes: int, planes: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes, 1, stride=stride, bias=False), nn.BatchNorm2d(planes)
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


def resnet18_body(in_channels: int = 3, width: int = 128) -> nn.Sequential:
    """CIFAR ResNet-18 features, 4×4 average pooling, then ``Linear(512, width)``."""
    layers: list[nn.Module] = [
        nn.Conv2d(in_channels, 64, 3, stride=1, padding=1, bias=False),
        nn.BatchNorm2d(64),
        nn.ReLU(),
    ]
    in_planes = 64
    for planes, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [BasicBlock(in_planes, planes, stride), BasicBlock(planes, planes, 1)]
        in_planes = planes
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, width)]
    return nn.Sequential(*layers)
