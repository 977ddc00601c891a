"""The portable initialization: the same weights whatever torch's generator says."""

import math

import numpy as np
import torch
from torch import nn

from companion.nn import portable_init


def test_draws_are_numpy_only_in_module_order_weight_then_bias():
    model = nn.Sequential(nn.Conv2d(2, 3, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4, 5))
    torch.manual_seed(0)
    portable_init(model, np.random.default_rng(7))
    rng = np.random.default_rng(7)  # the same law, written out layer by layer
    for layer, fan_in in ((model[0], 2 * 3 * 3), (model[3], 4)):
        b = 1 / math.sqrt(fan_in)
        w = rng.uniform(-b, b, tuple(layer.weight.shape))
        bias = rng.uniform(-b, b, tuple(layer.bias.shape))
        np.testing.assert_array_equal(layer.weight.detach().numpy(), w.astype(np.float32))
        np.testing.assert_array_equal(layer.bias.detach().numpy(), bias.astype(np.float32))


def test_other_torch_seeds_give_the_same_weights_and_kinds_select_layers():
    a, b = nn.Linear(6, 2, bias=False).double(), nn.Linear(6, 2, bias=False).double()
    torch.manual_seed(1)
    portable_init(a, np.random.default_rng(3))
    torch.manual_seed(2)
    portable_init(b, np.random.default_rng(3))
    assert torch.equal(a.weight, b.weight) and a.weight.abs().max() <= 1 / math.sqrt(6)
    conv = nn.Conv2d(1, 1, 2)
    before = conv.weight.detach().clone()
    portable_init(conv, np.random.default_rng(3), kinds=(nn.Linear,))
    assert torch.equal(conv.weight, before)
