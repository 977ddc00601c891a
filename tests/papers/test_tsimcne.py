"""tsimcne against independent computations (loops over pairs, the official formula,
brute-force kNN, closed forms) and its contract (presets, run, resume, claims)."""

import math

import numpy as np
import pytest
import torch

from companion.errors import CompanionError
from companion.papers import tsimcne as paper


def loop_infonce(z: torch.Tensor, sim) -> float:
    """ℓ_i = −log q(z_i, z_i+) / Σ_{k≠i} q(z_i, z_k), one pair at a time."""
    n = len(z)
    b = n // 2
    total = 0.0
    for i in range(n):
        partner = (i + b) % n
        denom = sum(sim(z[i], z[k]) for k in range(n) if k != i)
        total += -math.log(sim(z[i], z[partner]) / denom)
    return total / n


def cauchy(x, y) -> float:
    return 1.0 / (1.0 + float(((x - y) ** 2).sum()))


def gauss(x, y) -> float:
    return math.exp(-float(((x - y) ** 2).sum()))


def official_infonce_cauchy(features: torch.Tensor) -> torch.Tensor:
    """berenslab/t-simcne ``InfoNCECauchy.forward`` (temperature 1, exaggeration 1), rewritten
    here with ``torch.cdist`` as the reference."""
    b = features.size(0) // 2
    a, bb = features[:b], features[b:]
    sim_aa = 1 / torch.cdist(a, a).square().add(1)
    sim_bb = 1 / torch.cdist(bb, bb).square().add(1)
    sim_ab = 1 / torch.cdist(a, bb).square().add(1)
    alignment = torch.diagonal(sim_ab).log().mean()
    eye = torch.eye(b, dtype=torch.bool)
    sim_aa = sim_aa.masked_fill(eye, 0.0)
    sim_bb = sim_bb.masked_fill(eye, 0.0)
    lse1 = torch.hstack((sim_ab.T, sim_bb)).sum(1).log().mean()
    lse2 = torch.hstack((sim_aa, sim_ab)).sum(1).log().mean()
    return -(alignment - (lse1 + lse2) / 2)


def test_cauchy_similarity_matches_a_loop():
    torch.manual_seed(0)
    a, b = torch.randn(5, 3, dtype=torch.float64), torch.randn(4, 3, dtype=torch.float64)
    q = paper.cauchy_similarity(a, b)
    for i in range(5):
        for j in range(4):
            assert q[i, j].item() == pytest.approx(cauchy(a[i], b[j]), rel=1e-12)
    assert torch.allclose(paper.cauchy_similarity(a, a).diagonal(), torch.ones(5, dtype=a.dtype))


@pytest.mark.parametrize("kernel,sim", [("cauchy", cauchy), ("gaussian", gauss)])
@pytest.mark.parametrize("dim", [2, 7])
def test_infonce_matches_a_loop_over_pairs(kernel, sim, dim):
    torch.manual_seed(dim)
    z = torch.randn(12, dim, dtype=torch.float64) * (1.0 if kernel == "cauchy" else 0.5)
    assert paper.infonce(z, kernel).item() == pytest.approx(loop_infonce(z, sim), rel=1e-10)


def test_infonce_matches_the_official_formula():
    torch.manual_seed(1)
    z = torch.randn(64, 2, dtype=torch.float64) * 3
    torch.testing.assert_close(paper.infonce(z), official_infonce_cauchy(z))


def test_infonce_invariances():
    torch.manual_seed(2)
    z = torch.randn(20, 2, dtype=torch.float64)
    base = paper.infonce(z)
    a, b = z[:10], z[10:]
    perm = torch.randperm(10)
    torch.testing.assert_close(paper.infonce(torch.cat([a[perm], b[perm]])), base)  # images
    torch.testing.assert_close(paper.infonce(torch.cat([b, a])), base)  # views swapped
    torch.testing.assert_close(paper.infonce(z + torch.tensor([5.0, -3.0])), base)  # shift
    rot = torch.tensor([[0.6, -0.8], [0.8, 0.6]], dtype=torch.float64)
    torch.testing.assert_close(paper.infonce(z @ rot), base)  # rotation


def test_infonce_gradient_pulls_partners_together_and_pushes_others_apart():
    z = torch.tensor([[0.0, 0.0], [3.0, 0.0], [0.5, 0.0], [3.0, 2.0]], requires_grad=True)
    paper.infonce(z).backward()
    moved = z.detach() - 0.1 * z.grad
    before = (z[0] - z[2]).norm().item()
    assert (moved[0] - moved[2]).norm().item() < before  # 0 and 2 are the two views of image 0
    assert (moved[0] - moved[1]).norm().item() > (z[0] - z[1]).norm().item()


def test_infonce_bad_input():
    with pytest.raises(CompanionError, match="2B rows"):
        paper.infonce(torch.randn(5, 2))
    with pytest.raises(CompanionError, match="laplace"):
        paper.infonce(torch.randn(6, 2), kernel="laplace")


def test_cauchy_has_heavier_tails_than_gaussian():
    zero, far = torch.zeros(1, 2), torch.tensor([[3.0, 0.0]])
    assert paper.cauchy_similarity(zero, far).item() == pytest.approx(0.1)
    assert paper.gaussian_similarity(zero, far).item() == pytest.approx(math.exp(-9))


def test_resnet18_is_the_cifar_resnet18():
    model = paper.resnet18()
    n_params = sum(p.numel() for p in model.parameters())
    assert n_params == 11_168_832  # CIFAR ResNet18 without the classifier
    assert model.conv1.kernel_size == (3, 3) and model.conv1.stride == (1, 1)
    assert not any(isinstance(m, torch.nn.MaxPool2d) for m in model.modules())
    assert model(torch.rand(2, 3, 32, 32)).shape == (2, 512)


def test_small_resnet_and_head_shapes():
    net = paper.TSimCNE(paper.ResNet((1, 1), (8, 16), in_channels=1), hidden_dim=32)
    assert net(torch.rand(3, 1, 8, 8)).shape == (3, 128)
    assert net.features(torch.rand(3, 1, 8, 8)).shape == (3, 16)
    with pytest.raises(CompanionError, match="same"):
        paper.ResNet((1, 1), (8,))


def test_stages_freeze_and_swap_the_last_layer():
    torch.manual_seed(3)
    net = paper.TSimCNE(paper.ResNet((1,), (8,), in_channels=1), hidden_dim=1024)
    paper.start_stage(net, 1)
    assert all(p.requires_grad for p in net.parameters())
    paper.start_stage(net, 2)
    trainable = [n for n, p in net.named_parameters() if p.requires_grad]
    assert trainable == ["head.2.weight", "head.2.bias"] and net.out_dim == 2
    assert net.head[-1].weight.std().item() == pytest.approx(1.0, abs=0.05)  # N(0, 1)
    paper.start_stage(net, 3)
    assert all(p.requires_grad for p in net.parameters()) and net.out_dim == 2
    with pytest.raises(CompanionError, match="stage"):
        paper.start_stage(net, 4)


def test_learning_rate_rules():
    lr1, lr2, lr3 = paper.stage_learning_rates(1024)
    assert (lr1, lr2) == (0.12, 0.12) and lr3 == pytest.approx(1.2e-4)  # official ft_lr
    f = paper.cosine_with_warmup
    assert f(0, 100, 10) == 0.0 and f(5, 100, 10) == 0.5 and f(10, 100, 10) == 1.0
    assert f(55, 100, 10) == pytest.approx(0.5) and f(100, 100, 10) == pytest.approx(0.0)
    assert f(0, 50, 0) == 1.0


@pytest.mark.parametrize("channels", [1, 3])
def test_augmentation_draws_independent_views(channels):
    torch.manual_seed(4)
    aug = paper.simclr_augmentation(16, channels)
    x = torch.rand(1, channels, 16, 16).repeat(32, 1, 1, 1)
    v = aug(x)
    assert v.shape == x.shape and v.min() >= 0 and v.max() <= 1
    assert (v - v[:1]).abs().flatten(1).max(1).values[1:].min() > 0  # every image differs
    with pytest.raises(CompanionError, match="channels"):
        paper.simclr_augmentation(16, 2)


def test_knn_accuracy_matches_brute_force():
    rng = np.random.default_rng(0)
    xtr, ytr = rng.normal(size=(200, 2)), rng.integers(0, 4, 200)
    xte, yte = rng.normal(size=(50, 2)), rng.integers(0, 4, 50)
    ytr[:100] = (xtr[:100, 0] > 0).astype(int)  # some structure
    correct = 0
    for x, y in zip(xte, yte):
        nearest = np.argsort(((xtr - x) ** 2).sum(1))[:15]
        votes = np.bincount(ytr[nearest], minlength=4)
        correct += votes.argmax() == y
    assert paper.knn_accuracy(xtr, ytr, xte, yte, k=15) == pytest.approx(correct / 50)


def test_presets_and_validation():
    assert {"smoke", "notebook", "full"} <= set(paper.PRESETS)
    full = paper.PRESETS["full"]
    assert full.epochs == (1000, 50, 450) and full.warmup_epochs == (10, 0, 10)
    assert full.blocks == (2, 2, 2, 2) and full.widths == (64, 128, 256, 512)
    assert full.stage_lrs[0] == pytest.approx(0.12) and full.stage_lrs[2] == pytest.approx(1.2e-4)
    for bad, text in (
        ({"dataset": "imagenet"}, "imagenet"),
        ({"widths": (8, 16)}, "same"),
        ({"epochs": (0, 1, 1)}, "stage 1"),
        ({"warmup_epochs": (5, 0, 0)}, "warmup"),
        ({"flip": 2.0}, "flip"),
        ({"max_images": 10}, "max_images"),
        ({"epocs": 3}, "epocs"),
        ({"canvas": 6}, "canvas 6"),
    ):
        with pytest.raises(CompanionError, match=text):
            paper.PRESETS["smoke"].replace(**bad)


def test_shift_onto_canvas_moves_every_image_whole():
    torch.manual_seed(0)
    images = torch.rand(50, 1, 8, 8) + 0.01  # no zero pixel: the pasted block is findable
    out = paper.shift_onto_canvas(images, 14, seed=3)
    assert out.shape == (50, 1, 14, 14)
    corners = set()
    for img, placed in zip(images, out):
        rows = placed[0].abs().sum(1).nonzero().flatten()
        cols = placed[0].abs().sum(0).nonzero().flatten()
        top, left = int(rows[0]), int(cols[0])
        assert len(rows) == len(cols) == 8  # the whole image, nothing cut off
        assert torch.equal(placed[:, top : top + 8, left : left + 8], img)
        assert placed.sum() == pytest.approx(img.sum().item(), rel=1e-6)  # black elsewhere
        corners.add((top, left))
    assert len(corners) > 20  # positions vary (49 possible)
    assert torch.equal(out, paper.shift_onto_canvas(images, 14, seed=3))  # seeded
    assert torch.equal(paper.shift_onto_canvas(images, 8), images)  # no room: unchanged
    with pytest.raises(CompanionError, match="canvas 6"):
        paper.shift_onto_canvas(images, 6)


def test_shifted_digits_are_the_digits_moved():
    cfg = paper.PRESETS["smoke"].replace(max_images=0)
    shifted, labels, is_test, _ = paper.load_images(cfg)
    plain, labels2, is_test2, _ = paper.load_images(cfg.replace(dataset="digits"))
    assert shifted.shape == (1797, 1, 14, 14) and plain.shape == (1797, 1, 8, 8)
    assert torch.equal(labels, labels2) and torch.equal(is_test, is_test2)
    assert torch.allclose(shifted.sum((1, 2, 3)), plain.sum((1, 2, 3)), atol=1e-4)


def test_smoke_run_resume_and_claims(tmp_path):
    cfg = paper.PRESETS["smoke"]
    result = paper.run(cfg, out_dir=tmp_path)
    assert [s.stage for s in result.stages] == [1, 2, 3]
    assert [s.out_dim for s in result.stages] == [128, 2, 2]
    n = len(result.labels)
    assert len(result.final.embedding) == n and len(result.tsne.embedding) == n
    assert all(0 <= s.knn <= 1 for s in result.stages)
    assert len(result.stages[0].loss) == cfg.epochs[0]
    loaded = paper.Result.load(tmp_path / "result.json")
    assert loaded.final.embedding == result.final.embedding
    resumed = paper.run(cfg, out_dir=tmp_path, resume=True)  # every stage already finished
    assert resumed.final.embedding == result.final.embedding
    assert resumed.tsne.embedding == result.tsne.embedding
    report = paper.check_claims(result)
    assert len(report.rows) == 3 and str(report).endswith(f"claims hold: {report.n_hold}/3")
    assert {"embeddings", "stages"} == set(paper.figures(result))
    assert list(paper.knn_table(result)["dimensions"]) == ["input", "2", "128", "2", "2"]


def test_claims_are_computed_not_typed():
    result = paper.run(paper.PRESETS["smoke"].replace(tsne=False))
    assert result.tsne is None and len(paper.check_claims(result).rows) == 2
    result.stages[0].knn, result.stages[1].knn, result.stages[2].knn = 0.9, 0.6, 0.88
    assert paper.check_claims(result).all_hold
    result.stages[2].knn = 0.5  # worse than stage 2 and far below 128-d: both claims fail
    report = paper.check_claims(result)
    assert report.n_hold == 0 and "no" in str(report)
    # a tie is not a gain: stage 3 must beat stage 2 by the margin, not by a few images
    result.stages[0].knn, result.stages[1].knn = 0.6, 0.6
    result.stages[2].knn = 0.6 + paper.claims.FINETUNE_GAIN / 2
    assert [r.holds for r in paper.check_claims(result).rows] == [False, True]
    result.stages[2].knn = 0.6 + paper.claims.FINETUNE_GAIN + 1e-9
    assert paper.check_claims(result).all_hold
    result.tsne = paper.TSNEResult(embedding=[], knn=0.6 - paper.claims.CLEAR_MARGIN / 2, seconds=0)
    assert not paper.check_claims(result).rows[0].holds  # ahead of t-SNE, but not far ahead


def test_cifar_layout_runs_on_a_fixture(tmp_path):
    from companion.data import write_cifar_fixture

    root = write_cifar_fixture(tmp_path, "cifar10", n_train=60, n_test=20)
    cfg = paper.PRESETS["smoke"].replace(
        dataset="cifar10", data_root=str(root), image_size=32, tsne=False, batch_size=32
    )
    images, labels, is_test, classes = paper.load_images(cfg)
    assert images.shape == (80, 3, 32, 32) and int(is_test.sum()) == 20 and len(classes) == 10
    result = paper.run(cfg)
    assert len(result.final.embedding) == 80
