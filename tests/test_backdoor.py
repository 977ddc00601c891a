"""Trigger backdoors: stamped pixels, poisoned counts and the attack test set."""

import pytest
import torch

from companion.data.backdoor import poison, stamp_trigger, triggered_test_set
from companion.errors import CompanionError


def test_stamp_sets_exactly_the_corner_patch():
    images = torch.rand(2, 3, 6, 5)
    out = stamp_trigger(images, size=2, value=0.5, corner="top_right")
    for n, c, i, j in torch.cartesian_prod(*(torch.arange(s) for s in images.shape)).tolist():
        in_patch = i < 2 and j >= 3
        assert out[n, c, i, j] == (0.5 if in_patch else images[n, c, i, j])
    with pytest.raises(CompanionError, match="unknown corner 'middle'"):
        stamp_trigger(images, corner="middle")


def test_poison_relabels_a_fraction_of_the_source_class():
    labels = torch.arange(10).repeat(10)
    images = torch.zeros(100, 1, 4, 4)
    x, y, mask = poison(
        images,
        labels,
        target=7,
        fraction=0.3,
        source=2,
        generator=torch.Generator().manual_seed(0),
        size=2,
    )
    assert mask.sum() == 3 and (labels[mask] == 2).all() and (y[mask] == 7).all()
    assert torch.equal(y[~mask], labels[~mask]) and torch.equal(x[~mask], images[~mask])
    assert (x[mask][..., 2:, 2:] == 1).all() and (x[mask][..., :2, :] == 0).all()
    _, y_all, mask_all = poison(
        images, labels, target=7, fraction=0.5, generator=torch.Generator().manual_seed(0)
    )
    assert mask_all.sum() == 45 and not (labels[mask_all] == 7).any()


def test_triggered_test_set_leaves_out_the_target_class():
    labels = torch.tensor([0, 7, 2, 7, 2])
    images = torch.zeros(5, 1, 3, 3)
    x, y = triggered_test_set(images, labels, target=7)
    assert y.tolist() == [0, 2, 2] and (x[:, :, 2, 2] == 1).all()
    x, y = triggered_test_set(images, labels, target=7, source=2)
    assert y.tolist() == [2, 2]
