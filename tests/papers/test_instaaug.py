"""instaaug against independent computations (pixel moves, closed forms, the official formulas)."""

import math

import pytest
import torch

from companion.errors import CompanionError
from companion.papers import instaaug as paper


def test_rotation_turns_counter_clockwise_and_composes():
    x = torch.zeros(1, 1, 9, 9)
    x[0, 0, 4, 7] = 1.0  # three pixels right of the centre
    up = paper.rotate(x, torch.tensor([math.pi / 2]))
    assert up[0, 0].argmax().item() == 1 * 9 + 4  # now three pixels above the centre
    i = torch.arange(15.0)
    blob = torch.exp(-((i.view(-1, 1) - 10) ** 2 + (i.view(1, -1) - 6) ** 2) / 3)
    img = blob.expand(3, 1, 15, 15)  # smooth and off-centre: resampling barely blurs it
    a, b = torch.tensor([0.3, -0.5, 1.0]), torch.tensor([0.4, 0.2, -0.7])

    def centre(z):  # centre of mass (row, column) of each image
        w = z[:, 0] / z[:, 0].sum((1, 2), keepdim=True)
        return torch.stack([(w.sum(2) * i).sum(1), (w.sum(1) * i).sum(1)], -1)

    twice = centre(paper.rotate(paper.rotate(img, a), b))
    assert (twice - centre(paper.rotate(img, a + b))).abs().max() < 0.2  # pixels
    assert (twice - centre(paper.rotate(img, a - b))).abs().max() > 1.0
    torch.testing.assert_close(paper.rotate(img, torch.zeros(3)), img, atol=1e-5, rtol=0)


def test_uniform_rotation_family_matches_the_official_formula():
    params = torch.tensor([[0.0, 1.0], [-3.0, 4.0]])
    ranges = paper.ranges_from_params(params)
    expected = torch.tensor(
        [
            [math.pi / (1 + math.exp(2)), math.pi / (1 + math.exp(1))],
            [math.pi / (1 + math.exp(5)), math.pi / (1 + math.exp(-2))],
        ]
    )
    torch.testing.assert_close(ranges, expected)
    r = torch.tensor([0.25, 1.0])
    theta = paper.sample_angles(ranges, r)
    torch.testing.assert_close(
        theta, torch.stack([0.25 * ranges[0, 0] - 0.75 * ranges[0, 1], ranges[1, 0]])
    )
    # many draws fill [−b, a] uniformly
    many = paper.sample_angles(ranges[:1].expand(20_000, 2))
    assert many.min() >= -ranges[0, 1] - 1e-6 and many.max() <= ranges[0, 0] + 1e-6
    assert many.mean().item() == pytest.approx((ranges[0, 0] - ranges[0, 1]).item() / 2, abs=0.01)


def test_gradient_of_the_task_loss_reaches_phi_through_the_rotation():
    torch.manual_seed(0)
    model = paper.InstaAug(
        torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(144, 4)), "instance", 1, (4, 4)
    )
    x, y = torch.rand(8, 1, 12, 12), torch.randint(0, 4, (8,))
    logits, ranges = model(x)
    loss, task, entropy = paper.instaaug_loss(logits, y, ranges, lam=0.0)
    loss.backward()
    grad = model.augmenter.net.head.weight.grad
    assert grad is not None and grad.abs().sum() > 0


def test_loss_is_task_minus_lambda_times_each_range():
    logits, y = torch.randn(5, 4), torch.tensor([0, 1, 2, 3, 0])
    ranges = torch.rand(5, 2)
    loss, task, entropy = paper.instaaug_loss(logits, y, ranges, lam=0.3)
    ce = -torch.log_softmax(logits, -1)[torch.arange(5), y].mean()
    torch.testing.assert_close(task, ce)
    # official: Σ_k λ_k · mean_i H_k with H = (a, b) and λ_k = λ for both ranges
    torch.testing.assert_close(entropy, ranges[:, 0].mean() + ranges[:, 1].mean())
    torch.testing.assert_close(loss, ce - 0.3 * entropy)
    none, _, zero = paper.instaaug_loss(logits, y, None, lam=0.3)
    torch.testing.assert_close(none, ce) and torch.testing.assert_close(zero, torch.tensor(0.0))


def test_global_range_is_shared_and_phi_starts_at_the_same_range():
    x = torch.rand(6, 1, 12, 12)
    g = paper.GlobalRange()(x)
    start = math.pi / (1 + math.exp(2))
    torch.testing.assert_close(g, torch.full((6, 2), start))
    phi = paper.InvarianceModule(1, (4, 4)).eval()
    torch.testing.assert_close(phi(x), torch.full((6, 2), start))


def test_ideal_ranges_keep_the_angle_inside_the_class_interval():
    w = math.pi / 4
    alpha = torch.linspace(-w, w, 11)
    ideal = paper.ideal_ranges(alpha, w)
    torch.testing.assert_close(alpha + ideal[:, 0], torch.full((11,), w))  # up to +w
    torch.testing.assert_close(alpha - ideal[:, 1], torch.full((11,), -w))  # down to −w


def test_pearson_matches_numpy():
    import numpy as np

    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(50, generator=g), torch.randn(50, generator=g)
    b = a + 0.5 * b
    assert paper.pearson(a, b) == pytest.approx(np.corrcoef(a.numpy(), b.numpy())[0, 1], abs=1e-6)
    assert paper.pearson(a, torch.ones(50)) == 0.0


def test_lambda_scheduler_follows_the_official_rules():
    s = paper.LambdaScheduler(1.0, 2.0, alpha=1.2, max_steps=2)
    assert s.step(0.5) == 1.0  # first epoch below: only noted
    assert s.step(0.5) == 1.2  # second epoch below and not rising: increase
    assert s.step(0.6) == 1.0  # rising by more than 0.005: wait
    assert s.step(0.6) == 1.2
    assert s.step(0.6) == 1.0  # at most max_steps increases
    assert s.step(1.5) == 1.0  # inside the window
    assert s.step(3.0) == 1.0 and s.step(3.0) == pytest.approx(1 / 1.2)


def test_digit_iggy_classes_and_angles():
    images = torch.zeros(4, 1, 8, 8)
    images[:, 0, 1:4, 3:5] = 1.0  # a bar in the upper half
    labels = torch.tensor([2, 7, 5, 2])
    g = torch.Generator().manual_seed(0)
    x, y, offset = paper.make_rotated_digits(images, labels, (2, 7), 50, math.pi / 4, 2, g)
    assert x.shape == (150, 1, 12, 12) and set(y.tolist()) <= {0, 1, 2, 3}
    assert offset.abs().max() <= math.pi / 4
    assert (y[:3] // 2).tolist() == [0, 1, 0]  # digit index of 2, 7, 2 (copies tile the set)
    top = x[:, 0, :6].sum((1, 2)) > x[:, 0, 6:].sum((1, 2))
    assert torch.equal(top, y % 2 == 0)  # upside-down moves the bar to the lower half


def test_bad_settings_name_the_choices():
    with pytest.raises(CompanionError, match="valid: none, global, instance"):
        paper.PRESETS["smoke"].replace(methods=("none", "local"))
    with pytest.raises(CompanionError, match="max_angle_deg"):
        paper.PRESETS["smoke"].replace(max_angle_deg=120.0)


def test_result_round_trip(tmp_path):
    cfg = paper.PRESETS["smoke"].replace(
        device="cpu",
        dataset="digits",  # 8x8: no MNIST to parse
        image_size=8,
        steps=2,
        measure_every=1,
        methods=("global", "instance"),
    )
    result = paper.run(cfg)
    path = result.save(tmp_path / "r.json")
    back = paper.Result.load(path)
    assert back.arms["instance"].ranges == result.arms["instance"].ranges
    assert len(back.test_offsets) == len(back.arms["instance"].ranges)
