"""companion.data.augment against kornia, torch.rot90 and its own composition law."""

import math

import pytest
import torch

from companion.data.augment import rotate, simclr_augmentation
from companion.errors import CompanionError


def test_rotate_matches_kornia_and_rot90():
    kornia = pytest.importorskip("kornia")
    g = torch.Generator().manual_seed(0)
    x = torch.rand(6, 1, 9, 9, generator=g)
    theta = (torch.rand(6, generator=g) * 2 - 1) * math.pi
    ref = kornia.geometry.transform.rotate(x, torch.rad2deg(theta))
    torch.testing.assert_close(rotate(x, theta), ref, atol=1e-5, rtol=0)
    # a quarter turn counter-clockwise moves pixels exactly: torch.rot90 (k=1), both conventions
    for align in (True, False):
        quarter = rotate(x, torch.full((6,), math.pi / 2), align_corners=align)
        torch.testing.assert_close(quarter, torch.rot90(x, 1, dims=(2, 3)), atol=1e-5, rtol=0)


def test_rotations_compose_and_carry_gradients_to_the_angle():
    y, x = torch.meshgrid(torch.arange(15.0), torch.arange(15.0), indexing="ij")
    blob = torch.exp(-((x - 10) ** 2 + (y - 7) ** 2) / 4).expand(3, 1, 15, 15)

    def centre(img):  # centre of mass (column, row)
        w = img.sum(dim=(1, 2, 3))
        return torch.stack([(img[:, 0] * x).sum((1, 2)) / w, (img[:, 0] * y).sum((1, 2)) / w], 1)

    a, b = torch.tensor([0.3, 1.0, -0.7]), torch.tensor([0.5, -0.4, 1.1])
    twice = centre(rotate(rotate(blob, a), b))
    assert (twice - centre(rotate(blob, a + b))).abs().max() < 0.2  # pixels
    theta = torch.tensor([0.4, 0.4, 0.4], requires_grad=True)
    rotate(blob, theta).mul(blob).sum().backward()
    assert theta.grad.abs().sum() > 0


def test_simclr_augmentation_draws_per_image_and_refuses_bad_channels():
    torch.manual_seed(0)
    x = torch.rand(1, 1, 16, 16).expand(4, 1, 16, 16)
    out = simclr_augmentation(16, 1)(x)
    assert out.shape == (4, 1, 16, 16)
    assert not torch.allclose(out[0], out[1])  # each image its own draw
    with pytest.raises(CompanionError, match="1 or 3 channels"):
        simclr_augmentation(16, 2)
