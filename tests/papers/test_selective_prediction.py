"""selective_prediction against independent computations (the official code's formulas on tiny
inputs, a grid search, brute-force pair counts, scipy)."""

import math

import numpy as np
import pytest
import torch

from companion.errors import CompanionError
from companion.papers import selective_prediction as paper


def official_auroc(kappa, correct):
    """The official ``AUROC`` of uncertainty_metrics.py: concordant over all (correct, incorrect)
    pairs, written as a double loop."""
    n_s = n_d = 0
    for i in range(len(kappa)):
        for j in range(len(kappa)):
            if correct[i] and not correct[j]:
                if kappa[i] > kappa[j]:
                    n_s += 1
                elif kappa[i] < kappa[j]:
                    n_d += 1
                else:
                    n_s += 0.5
                    n_d += 0.5
    return n_s / (n_s + n_d)


def official_aurc(kappa, correct):
    """The official ``AURC_calc`` loop."""
    order = np.argsort(-kappa, kind="stable")
    errors, total = 0, 0.0
    for i, k in enumerate(order):
        errors += 1 - int(correct[k])
        total += errors / (i + 1)
    return total / len(kappa)


def test_metrics_match_the_official_formulas():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(60, 5)) * 3
    labels = rng.integers(0, 5, 60)
    out = paper.uncertainty_metrics(logits, labels)
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    kappa, correct = p.max(1), p.argmax(1) == labels
    assert out["accuracy"] == pytest.approx(correct.mean())
    assert out["auroc"] == pytest.approx(official_auroc(kappa, correct), abs=1e-12)
    assert out["aurc"] == pytest.approx(official_aurc(kappa, correct), abs=1e-12)
    r = 1 - correct.mean()
    assert out["e_aurc"] == pytest.approx(out["aurc"] - (r + (1 - r) * math.log(1 - r)))
    nll = -np.log(p[np.arange(60), labels]).mean()
    assert out["nll"] == pytest.approx(nll, rel=1e-9)


def test_sac_is_the_largest_coverage_reaching_the_target():
    # κ sorted: correct, correct, wrong, correct, wrong -> selective accuracy 1, 1, 2/3, 3/4, 3/5
    logits = np.array([[5.0, 0], [4, 0], [3, 0], [2, 0], [1, 0]])
    labels = np.array([0, 0, 1, 0, 1])
    out = paper.uncertainty_metrics(logits, labels, sac_targets=(0.99, 0.75, 0.6))
    assert out["sac_99"] == pytest.approx(2 / 5)
    assert out["sac_75"] == pytest.approx(4 / 5)
    assert out["sac_60"] == pytest.approx(1.0)


def test_temperature_minimizes_the_nll_on_a_grid():
    torch.manual_seed(0)
    labels = torch.randint(0, 4, (300,))
    logits = torch.randn(300, 4) * 4 + 3 * torch.nn.functional.one_hot(labels, 4)
    t = paper.fit_temperature(logits, labels)
    grid = np.linspace(0.3, 8, 3000)
    best = grid[np.argmin([paper.nll(logits, labels, g) for g in grid])]
    assert t == pytest.approx(best, abs=0.01)
    assert paper.nll(logits, labels, t) <= paper.nll(logits, labels, 1.0)


def test_temperature_changes_the_order_of_confidences_across_samples():
    # a large margin over three rivals vs a small margin over one (κ written out by hand)
    logits = torch.tensor([[5.0, 0.0, 0.0, 0.0], [2.0, 0.0, -20.0, -20.0]])
    k1, _ = paper.max_softmax(logits, 1.0)
    k4, _ = paper.max_softmax(logits, 4.0)
    e = math.exp
    by_hand = [
        e(5) / (e(5) + 3),
        e(2) / (e(2) + 1 + 2 * e(-20)),
        e(1.25) / (e(1.25) + 3),
        e(0.5) / (e(0.5) + 1 + 2 * e(-5)),
    ]
    np.testing.assert_allclose([*k1, *k4], by_hand, rtol=1e-12)
    assert k1[0] > k1[1] and k4[0] < k4[1]
    # ... so AUROC can change, while accuracy cannot
    labels = np.array([1, 0])  # the first is wrong, the second right
    a1 = paper.uncertainty_metrics(logits, labels, 1.0)
    a4 = paper.uncertainty_metrics(logits, labels, 4.0)
    assert (a1["auroc"], a4["auroc"]) == (0.0, 1.0)
    assert a1["accuracy"] == a4["accuracy"] == 0.5


def test_distillation_loss_closed_form():
    torch.manual_seed(1)
    s, t = torch.randn(8, 5), torch.randn(8, 5)
    y = torch.randint(0, 5, (8,))
    T, alpha = 3.0, 0.7
    ps, pt = torch.softmax(s / T, -1), torch.softmax(t / T, -1)
    kl = (pt * (pt.log() - ps.log())).sum(-1).mean()
    ce = -torch.log_softmax(s, -1)[torch.arange(8), y].mean()
    expected = alpha * T * T * kl + (1 - alpha) * ce
    torch.testing.assert_close(paper.distillation_loss(s, t, y, T, alpha), expected)


def test_label_smoothing_loss_against_soft_targets():
    torch.manual_seed(2)
    z, y = torch.randn(6, 4), torch.randint(0, 4, (6,))
    target = torch.full((6, 4), 0.1 / 4)
    target[torch.arange(6), y] += 0.9
    expected = -(target * torch.log_softmax(z, -1)).sum(-1).mean()
    torch.testing.assert_close(paper.label_smoothing_loss(z, y, 0.1), expected)


def test_ensemble_logits_is_log_mean_softmax():
    torch.manual_seed(3)
    parts = [torch.randn(4, 3) for _ in range(3)]
    mean = torch.stack([p.softmax(-1) for p in parts]).mean(0)
    torch.testing.assert_close(paper.ensemble_logits(parts).exp(), mean)


def test_spearman_is_pearson_of_average_ranks_by_a_loop():
    rng = np.random.default_rng(4)
    a, b = rng.integers(0, 5, 30).astype(float), rng.normal(size=30)

    def ranks(x):  # 1 + number below + half the number of ties (its own excluded)
        return np.array([1 + (x < v).sum() + ((x == v).sum() - 1) / 2 for v in x])

    expected = np.corrcoef(ranks(a), ranks(b))[0, 1]
    assert paper.spearman(a, b) == pytest.approx(expected, abs=1e-12)
    with pytest.raises(CompanionError, match="1-D arrays"):
        paper.spearman(a[:2], b[:2])


def test_ts_split_is_stratified_and_disjoint():
    labels = np.repeat(np.arange(5), 40)
    val, test = paper.ts_split(labels, 50, seed=0)
    assert len(val) == 50 and len(set(val) & set(test)) == 0 and len(val) + len(test) == 200
    assert np.bincount(labels[val]).tolist() == [10] * 5


def test_read_logits_refuses_a_file_without_labels(tmp_path):
    np.savez(tmp_path / "m.npz", logits=np.zeros((3, 2)))
    with pytest.raises(CompanionError, match="labels"):
        paper.read_logits(tmp_path / "m.npz")


def test_bad_options_name_the_choices():
    cfg = paper.PRESETS["smoke"]
    with pytest.raises(CompanionError, match="valid: vanilla"):
        cfg.replace(regimes=("vanilla", "mixup"))
    with pytest.raises(CompanionError, match="unknown architecture"):
        cfg.replace(architectures=("wide",))
    with pytest.raises(CompanionError, match="valid: zoo, logits_folder"):
        cfg.replace(source="timm")
    assert paper.hidden_widths("64x32") == [64, 32] and paper.hidden_widths("linear") == []


def test_twins_share_initial_weights_and_training_is_reproducible():
    cfg = paper.PRESETS["smoke"].replace(
        architectures=("16",),
        regimes=("vanilla", "distilled"),
        teachers=1,
        epochs=2,
        device="cpu",
    )
    a, b = paper.run(cfg), paper.run(cfg)
    assert a.members["16/vanilla"].before == b.members["16/vanilla"].before
    assert set(a.members) == {"16/vanilla", "16/distilled"} and a.teacher is not None
    assert len(a.twins("distilled")) == 1
    report = paper.check_claims(a)
    assert str(report).splitlines()[-1].startswith("claims hold: ")
    assert all(inv.holds for inv in report.invariants)
