"""repair against independent computations (brute force, numpy, direct evaluation)."""

import itertools

import numpy as np
import pytest
import torch
from torch import nn

from companion.errors import CompanionError
from companion.nn import MLP
from companion.papers import repair as paper


def tiny_vgg(seed: int = 0) -> nn.Sequential:
    """Conv-ReLU-Pool twice, then a Linear that sees a 2×2 map per channel after Flatten."""
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(3, 6, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(6, 5, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(5 * 2 * 2, 7),
        nn.ReLU(),
        nn.Linear(7, 4),
    )


def random_perms(model: nn.Sequential, seed: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    sizes = [model[i].weight.shape[0] for i, _ in paper.hidden_layers(model)]
    return [torch.randperm(n, generator=g) for n in sizes]


@pytest.mark.parametrize(
    "model, x",
    [
        (MLP(10, [8, 6, 5], 3), torch.randn(16, 10)),
        (tiny_vgg(), torch.randn(4, 3, 8, 8)),
    ],
)
def test_permuted_network_computes_the_same_function(model, x):
    torch.manual_seed(1)
    permuted = paper.permute_units(model, random_perms(model))
    first = paper.weighted_layers(model)[0]
    assert not torch.equal(permuted[first].weight, model[first].weight)  # weights did move
    torch.testing.assert_close(permuted(x), model(x), atol=1e-5, rtol=1e-5)


def test_permutation_moves_units_as_documented():
    model = MLP(4, [5], 2)
    perm = torch.tensor([3, 0, 4, 1, 2])
    permuted = paper.permute_units(model, [perm])
    x = torch.randn(6, 4)
    # outputs of module 2 (Flatten, Linear, ReLU); MLP subclasses Sequential, so no slicing
    hidden, hidden_p = (paper.forward_taps(m, x, [2])[2] for m in (model, permuted))
    torch.testing.assert_close(hidden_p, hidden[:, perm])


def test_assignment_maximizes_total_correlation_against_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(20):
        corr = torch.as_tensor(rng.uniform(-1, 1, size=(6, 6)))
        perm = paper.match_permutation(corr)
        best = max(
            sum(corr[i, p[i]].item() for i in range(6)) for p in itertools.permutations(range(6))
        )
        assert sum(corr[i, perm[i]].item() for i in range(6)) == pytest.approx(best)
        assert sorted(perm.tolist()) == list(range(6))


def test_correlation_matches_numpy_corrcoef():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(500, 4)) * [1, 2, 3, 4] + 5
    b = a @ rng.normal(size=(4, 3)) + rng.normal(size=(500, 3))
    m = paper.Moments()
    for chunk in range(0, 500, 100):  # several batches accumulate to the full-data value
        m.add(torch.as_tensor(a[chunk : chunk + 100]), torch.as_tensor(b[chunk : chunk + 100]))
    expected = np.corrcoef(a.T, b.T)[:4, 4:]
    np.testing.assert_allclose(m.correlation().numpy(), expected, atol=1e-3)


def test_alignment_recovers_a_hidden_permutation():
    """B = a permuted copy of A: matching must find exactly the inverse permutation."""
    model_a = MLP(12, [16, 16], 3)
    perms = random_perms(model_a, seed=3)
    model_b = paper.permute_units(model_a, perms)
    x = [torch.randn(400, 12)]
    model_bp, found, _ = paper.align(model_a, model_b, x)
    for w_a, w_bp in zip(model_a.state_dict().values(), model_bp.state_dict().values()):
        torch.testing.assert_close(w_bp, w_a)
    for p, q in zip(perms, found):
        assert torch.equal(p[q], torch.arange(len(p)))


def test_activation_stats_match_direct_computation():
    model = tiny_vgg()
    x = torch.randn(10, 3, 8, 8)
    stats = paper.activation_stats(model, [x[:4], x[4:]], [0, 3])
    for i in (0, 3):
        out = (
            paper.forward_taps(model, x, [i])[i]
            .permute(0, 2, 3, 1)
            .reshape(-1, model[i].out_channels)
            .double()
        )
        torch.testing.assert_close(stats[i][0], out.mean(0))
        torch.testing.assert_close(stats[i][1], out.std(0, unbiased=False))


def test_interpolation_endpoints_and_midpoint():
    a, b = MLP(5, [4], 2), MLP(5, [4], 2)
    for alpha, expected in ((0.0, a), (1.0, b)):
        mixed = paper.interpolate(a, b, alpha)
        for k, v in mixed.state_dict().items():
            torch.testing.assert_close(v, expected.state_dict()[k])
    mid = paper.interpolate(a, b, 0.5)
    for k, v in mid.state_dict().items():
        torch.testing.assert_close(v, (a.state_dict()[k] + b.state_dict()[k]) / 2)


@pytest.mark.parametrize("kind", ["linear", "conv"])
def test_fold_batchnorm_keeps_the_function(kind):
    torch.manual_seed(4)
    if kind == "linear":
        layer, bn, x = nn.Linear(6, 5), nn.BatchNorm1d(5), torch.randn(20, 6)
    else:
        layer, bn, x = nn.Conv2d(3, 5, 3), nn.BatchNorm2d(5), torch.randn(4, 3, 7, 7)
    bn.running_mean.normal_()
    bn.running_var.uniform_(0.5, 2)
    bn.weight.data.normal_()
    bn.bias.data.normal_()
    bn.eval()
    expected = bn(layer(x))
    paper.fold_batchnorm(layer, bn)
    torch.testing.assert_close(layer(x), expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("alpha", [0.3, 0.5])
def test_repaired_statistics_match_the_targets(alpha):
    """After REPAIR (one batch holding all data), every layer's pre-activations have exactly the
    interpolated endpoint mean and std (up to BatchNorm's ε and its unbiased variance)."""
    torch.manual_seed(5)
    a, b = tiny_vgg(0), tiny_vgg(1)
    x = [torch.randn(64, 3, 8, 8)]
    layers = paper.weighted_layers(a)
    targets = paper.repair_targets(
        paper.activation_stats(a, x, layers), paper.activation_stats(b, x, layers), alpha
    )
    merged = paper.interpolate(a, b, alpha)
    repaired = paper.repair(merged, targets, x)
    assert [type(m) for m in repaired] == [type(m) for m in merged]  # same architecture
    stats = paper.activation_stats(repaired, x, layers)
    for i in layers:
        torch.testing.assert_close(stats[i][0], targets[i][0], atol=2e-3, rtol=2e-3)
        torch.testing.assert_close(stats[i][1], targets[i][1], atol=2e-3, rtol=2e-3)
    before = paper.activation_stats(merged, x, layers)
    assert not torch.allclose(before[layers[-1]][1], targets[layers[-1]][1], rtol=0.05)


def test_predicted_std_is_exact_at_the_first_layer():
    """The first layer's pre-activation of θ_α is (1−α)z_A + αz_B: Sec. 3's formula is exact."""
    torch.manual_seed(6)
    a, b = nn.Linear(10, 4), nn.Linear(10, 4)
    x = torch.randn(5000, 10) @ torch.randn(10, 10)
    za, zb = a(x).detach().double(), b(x).detach().double()
    rho = torch.stack([torch.corrcoef(torch.stack([za[:, i], zb[:, i]]))[0, 1] for i in range(4)])
    alpha = 0.3
    merged = paper.interpolate(a, b, alpha)
    predicted = paper.predicted_std(za.std(0), zb.std(0), rho, alpha)
    torch.testing.assert_close(merged(x).detach().double().std(0), predicted, rtol=1e-4, atol=1e-5)


def test_augment_is_a_crop_and_flip():
    x = torch.arange(2 * 1 * 6 * 6, dtype=torch.float).reshape(2, 1, 6, 6)
    fill = torch.full((1, 1, 1, 1), -1.0)
    out = paper.augment(x, fill, torch.Generator().manual_seed(0), pad=2)
    assert out.shape == x.shape
    again = paper.augment(x, fill, torch.Generator().manual_seed(0), pad=2)
    assert torch.equal(out, again)
    # every output pixel is an input pixel of the same image or the padding value
    for n in range(2):
        assert set(out[n].flatten().tolist()) <= set(x[n].flatten().tolist()) | {-1.0}


def test_unsupported_layers_are_refused():
    with pytest.raises(CompanionError, match="BatchNorm1d"):
        paper.weighted_layers(nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3), nn.ReLU()))
    with pytest.raises(CompanionError, match="ReLU"):
        paper.hidden_layers(nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 2)))


def test_vgg11_has_the_official_widths():
    cfg = paper.PRESETS["full"]
    model = paper.build_model(cfg, 3, 10)
    convs = [m.out_channels for m in model if isinstance(m, nn.Conv2d)]
    assert convs == [64, 128, 256, 256, 512, 512, 512, 512]
    assert model(torch.randn(2, 3, 32, 32)).shape == (2, 10)


def test_presets_and_validation():
    assert set(paper.PRESETS) == {"smoke", "notebook", "full"}
    for bad, text in (
        ({"widht": 3}, "widht"),
        ({"dataset": "imagenet"}, "imagenet"),
        ({"arch": "resnet50"}, "resnet50"),
        ({"num_alphas": 4}, "num_alphas"),
        ({"arch": "vgg11"}, "multiple of 32"),
        ({"lr": -1.0}, "lr"),
        ({"device": "tpu"}, "tpu"),
    ):
        with pytest.raises(CompanionError, match=text):
            paper.PRESETS["smoke"].replace(**bad)


def test_smoke_run_resume_and_claims(tmp_path):
    cfg = paper.PRESETS["smoke"]
    threads = torch.get_num_threads()
    result = paper.run(cfg, out_dir=tmp_path)
    assert torch.get_num_threads() == threads  # run's single-thread setting is restored
    assert result.alphas[result.mid] == 0.5
    assert result.layers == ["fc1", "fc2", "fc3", "logits"]
    for method in ("naive", "permuted", "repair"):
        assert len(result.curves[method]["test_loss"]) == cfg.num_alphas
        assert len(result.std_ratio[method][0]) == len(result.layers)
    # permuting B leaves its function unchanged; the interpolations start and end at A and B
    assert result.endpoints["b_permuted"]["test_acc"] == result.endpoints["b"]["test_acc"]
    assert result.curves["permuted"]["test_loss"][-1] == pytest.approx(
        result.endpoints["b"]["test_loss"], abs=1e-5
    )
    assert result.curves["naive"]["test_loss"][0] == pytest.approx(
        result.endpoints["a"]["test_loss"]
    )
    loaded = paper.Result.load(tmp_path / "result.json")
    assert loaded.curves == result.curves
    resumed = paper.run(cfg, out_dir=tmp_path, resume=True)  # trained nets are reused
    assert resumed.curves == result.curves
    report = paper.check_claims(result)
    assert str(report).endswith(f"claims hold: {report.n_hold}/{len(report.rows)}")
    assert all(inv.holds for inv in report.invariants), str(report)
    assert set(paper.figures(result)) == {"barriers", "variance_collapse", "correlation"}


def test_check_claims_fail_when_the_effect_is_absent():
    """Claims are computed: swapping naive and REPAIR curves must break the ordering claims,
    flat std ratios the collapse claim, and unrepaired stds the REPAIR invariant."""
    result = paper.run(paper.PRESETS["smoke"])
    result.curves["naive"], result.curves["repair"] = (
        result.curves["repair"],
        result.curves["naive"],
    )
    result.std_ratio["repair"], result.std_ratio["permuted"] = (
        result.std_ratio["permuted"],
        result.std_ratio["repair"],
    )
    report = paper.check_claims(result)
    assert [row.holds for row in report.rows] == [False, False, False, False]
    assert not report.invariants[0].holds and "VIOLATED" in str(report)


def test_full_pipeline_on_a_cifar_fixture(tmp_path):
    """The full preset's path (CIFAR-10 reader, VGG, augmentation) on a tiny fixture."""
    from companion.data import write_cifar_fixture

    write_cifar_fixture(tmp_path, n_train=40, n_test=20)
    cfg = paper.PRESETS["full"].replace(
        data_root=str(tmp_path),
        width=2,
        steps=3,
        batch_size=20,
        stats_batch_size=20,
        num_alphas=3,
        checkpoint_every=2,
        device="cpu",
        precision="32-true",
    )
    result = paper.run(cfg, out_dir=tmp_path / "run")
    assert result.layers == [f"conv{k}" for k in range(1, 9)]
    assert (tmp_path / "run" / "model_a" / "checkpoint.ckpt").exists()
    # (no exactness check here: a barely trained VGG's deep pre-activations have variances
    # near BatchNorm's ε, which REPAIR's BatchNorm, like the official one, does not undo)
    assert np.isfinite(result.curves["repair"]["test_loss"]).all()
    assert result.std_ratio["repair"][1][0] == pytest.approx(1.0, abs=0.01)
