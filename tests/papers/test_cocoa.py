"""cocoa against independent computations (pairwise loops, the official ablation loop, numpy's
trapezoid, brute-force counts) on tiny inputs."""

from collections import Counter

import numpy as np
import pytest
import torch
from torch import nn

from companion.errors import CompanionError
from companion.papers import cocoa as paper


def _encoder(seed: int = 0, d: int = 6) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Flatten(), nn.Linear(16, 12), nn.Tanh(), nn.Linear(12, d)).eval()


def _images(n: int, seed: int) -> torch.Tensor:
    return torch.rand(n, 1, 4, 4, generator=torch.Generator().manual_seed(seed))


def _cos(a, b) -> float:
    return float(a @ b / (a.norm() * b.norm()))


def test_contrastive_corpus_similarity_is_the_mean_of_pairwise_cosines():
    f = _encoder()
    corpus, foil, x = _images(5, 1), _images(7, 2), _images(3, 3)
    ccs = paper.ContrastiveCorpusSimilarity(f, corpus, foil)(x)
    cs = paper.CorpusSimilarity(f, corpus)(x)
    with torch.no_grad():
        fx, fc, fo = f(x).double(), f(corpus).double(), f(foil).double()
    for i in range(len(x)):  # the official "pairwise" implementation, as a loop
        to_corpus = np.mean([_cos(fx[i], c) for c in fc])
        to_foil = np.mean([_cos(fx[i], o) for o in fo])
        assert cs[i].item() == pytest.approx(to_corpus, abs=1e-5)
        assert ccs[i].item() == pytest.approx(to_corpus - to_foil, abs=1e-5)


def test_self_similarity_ig_compares_each_row_with_its_own_explicand():
    """Captum expands the explicand representations with the batch: a batch of explicands gets
    the same attributions as each explicand alone."""
    f = _encoder(1)
    x, base = _images(3, 4), _images(3, 5) * 0.1
    together, _ = paper.attribute("self", f, x, base, n_steps=8)
    for i in range(3):
        alone, _ = paper.attribute("self", f, x[i : i + 1], base[i : i + 1], n_steps=8)
        torch.testing.assert_close(together[i : i + 1], alone, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("target", ["cocoa", "corpus", "self"])
def test_integrated_gradients_are_complete(target):
    """Σ attributions = y(x) − y(baseline) (IG's completeness), up to the quadrature error."""
    f = _encoder(2)
    corpus, foil, x = _images(4, 6), _images(6, 7), _images(2, 8)
    base = torch.zeros_like(x)
    attr, delta = paper.attribute(target, f, x, base, corpus, foil, n_steps=64)
    assert attr.shape == x.shape
    assert delta.abs().max().item() < 1e-4


def test_random_attributions_are_seeded_noise():
    x = _images(2, 9)
    a1, d1 = paper.attribute("random", None, x, x, generator=torch.Generator().manual_seed(0))
    a2, _ = paper.attribute("random", None, x, x, generator=torch.Generator().manual_seed(0))
    assert torch.equal(a1, a2) and a1.shape == x.shape and d1.abs().sum() == 0


def test_unknown_target_and_kind_name_the_choices():
    x = _images(1, 0)
    with pytest.raises(CompanionError, match="'saliency'.*cocoa, corpus, self, random"):
        paper.attribute("saliency", None, x, x)
    with pytest.raises(CompanionError, match="'both'.*insertion, deletion"):
        paper.ablation_inputs(x, x, x, 4, "both")


def test_step_sizes_match_the_official_split():
    assert paper.step_sizes(10, 4) == [0, 3, 3, 2, 2]
    assert sum(paper.step_sizes(64, 20)) == 64


@pytest.mark.parametrize("kind", ["insertion", "deletion"])
def test_ablation_inputs_match_the_official_loop(kind):
    """``ImageAblation.evaluate``: argsort, then a mask filled step by step, image by image."""
    g = torch.Generator().manual_seed(3)
    x, base = torch.rand(3, 2, 3, 4, generator=g), torch.rand(3, 2, 3, 4, generator=g)
    attr = torch.randn(3, 2, 3, 4, generator=g)
    images, counts = paper.ablation_inputs(x, base, attr, 5, kind)
    flat_attr = attr.sum(1).view(3, -1)  # channels combined
    order = flat_attr.argsort(descending=True, dim=-1)
    mask = torch.zeros(3, 12) if kind == "insertion" else torch.ones(3, 12)
    fill, n = (1.0 if kind == "insertion" else 0.0), 0
    for step, size in enumerate(paper.step_sizes(12, 5)):
        n += size
        for i in range(3):
            mask[i, order[i, :n]] = fill
        m = mask.view(3, 1, 3, 4)
        torch.testing.assert_close(images[:, step], x * m + base * (1 - m))
        assert counts[step].item() == n


def test_auc_is_the_trapezoid_over_the_fraction_of_features():
    curves = torch.tensor([[0.1, 0.5, 0.9, 1.0], [1.0, 0.2, 0.1, 0.0]])
    counts = torch.tensor([0, 5, 10, 16])
    x = counts.numpy() / 16
    for i in range(2):
        y = curves[i].numpy()
        expected = sum((x[j + 1] - x[j]) * (y[j] + y[j + 1]) / 2 for j in range(3))
        assert paper.auc(curves, counts)[i].item() == pytest.approx(expected, abs=1e-6)


def test_corpus_and_foil_are_sampled_as_the_official_script_does():
    labels = torch.arange(10).repeat(30)  # 30 images per class
    corpus, foil = paper.split_corpus_foil(labels, 3, 10, 150, torch.Generator().manual_seed(0))
    assert len(corpus) == 10 and (labels[corpus] == 3).all()
    assert len(foil) == 150 and not set(corpus.tolist()) & set(foil.tolist())
    assert len(set(foil.tolist())) == 150
    # leftover: 270 * (1 - 10/30) = 180 non-target + 20 target images; the foil keeps 10 %
    assert 5 <= (labels[foil] == 3).sum().item() <= 25
    with pytest.raises(CompanionError, match="corpus_size 31"):
        paper.split_corpus_foil(labels, 3, 31, 10, torch.Generator())


def test_blur_baseline_keeps_a_constant_image_and_mean():
    x = torch.full((2, 1, 8, 8), 0.3)
    torch.testing.assert_close(paper.blur_baseline(x, 2.0), x)
    y = torch.rand(1, 1, 8, 8, generator=torch.Generator().manual_seed(1))
    blurred = paper.blur_baseline(y, 5.0)
    assert blurred.std() < 0.5 * y.std()  # strong blur: close to flat


def test_corpus_majority_is_the_most_predicted_class():
    f = _encoder(4, d=3)
    head = nn.Linear(3, 4)
    corpus = _images(25, 10)
    score = paper.CorpusMajorityProbability(f, head, corpus)
    with torch.no_grad():
        preds = head(f(corpus)).argmax(1).tolist()
    counts = Counter(preds)
    assert counts[score.majority] == max(counts.values())
    with torch.no_grad():
        p = head(f(corpus[:2])).softmax(1)[:, score.majority]
        torch.testing.assert_close(score(corpus[:2]), p)


def test_config_rejects_unknown_options():
    with pytest.raises(CompanionError, match="'svhn'.*digits, mnist_subset, cifar10"):
        paper.PRESETS["smoke"].replace(dataset="svhn")
    with pytest.raises(CompanionError, match="'lime'"):
        paper.PRESETS["smoke"].replace(targets=("cocoa", "lime"))
    for cfg in paper.PRESETS.values():
        cfg.validate()


def test_oracle_explains_the_eval_heads_logit():
    """The oracle reference: IG of the head's class-k logit on f(x), complete like the others."""
    f = _encoder(3)
    head = nn.Linear(6, 3)
    x, base = _images(2, 10), torch.zeros(2, 1, 4, 4)
    attr, delta = paper.attribute("oracle", f, x, base, n_steps=64, head=head, k=1)
    with torch.no_grad():
        change = head(f(x))[:, 1] - head(f(base))[:, 1]
    torch.testing.assert_close(attr.flatten(1).sum(1), change, atol=1e-4, rtol=1e-4)
    assert delta.abs().max().item() < 1e-4
    with pytest.raises(CompanionError, match="head"):
        paper.attribute("oracle", f, x, base)


def test_rank_correlation_is_spearman():
    from scipy.stats import spearmanr

    a, b = torch.randn(3, 2, 4, 4), torch.randn(3, 2, 4, 4)
    got = paper.rank_correlation(a, b)
    for i in range(3):
        expected = spearmanr(a[i].sum(0).flatten(), b[i].sum(0).flatten()).statistic
        assert got[i].item() == pytest.approx(expected, abs=1e-5)
    assert paper.rank_correlation(a, 2 * a).min().item() == pytest.approx(1.0)
    assert paper.rank_correlation(a, -a).max().item() == pytest.approx(-1.0)


def test_randomized_encoder_reinitializes_every_layer():
    from companion.papers.cocoa.experiment import SimCLRModel, randomized_encoder

    enc = SimCLRModel(1, (4, 8), 4).encoder.eval()
    with torch.no_grad():
        for p in enc.parameters():
            p.add_(1.0)  # "trained"
    rand = randomized_encoder(enc, 0)
    for (name, p), q in zip(enc.named_parameters(), rand.parameters()):
        assert not torch.equal(p, q), name
    again = randomized_encoder(enc, 0)
    for p, q in zip(rand.parameters(), again.parameters()):
        assert torch.equal(p, q)  # seeded
    assert not rand.training
