"""companion.core.metrics against brute-force loops and scikit-learn."""

import math

import numpy as np
import pytest
import torch

from companion.core import metrics
from companion.errors import CompanionError


def detection_data(n=60, seed=0, ties=False):
    rng = np.random.default_rng(seed)
    positive = rng.random(n) < 0.4
    scores = rng.normal(size=n) + 1.2 * positive
    if ties:
        scores = np.round(scores, 0)
    return scores, positive


@pytest.mark.parametrize("ties", [False, True])
def test_auroc_is_the_fraction_of_correctly_ordered_pairs(ties):
    scores, positive = detection_data(ties=ties)
    pairs = [
        1.0 if p > q else 0.5 if p == q else 0.0
        for p in scores[positive]
        for q in scores[~positive]
    ]
    assert metrics.auroc(scores, positive) == pytest.approx(np.mean(pairs))
    assert metrics.auroc(torch.tensor(scores), torch.tensor(positive)) == pytest.approx(
        np.mean(pairs)
    )


def test_aupr_is_average_precision_over_the_ranked_list():
    scores, positive = detection_data(seed=1)  # continuous scores: no ties
    ranked = positive[np.argsort(-scores)]
    precision_at_hits = [ranked[: i + 1].mean() for i in range(len(ranked)) if ranked[i]]
    assert metrics.aupr(scores, positive) == pytest.approx(np.mean(precision_at_hits))


@pytest.mark.parametrize("tpr", [0.95, 0.8, 1.0])
def test_fpr_at_tpr_by_brute_force_over_thresholds(tpr):
    scores, positive = detection_data(n=80, seed=2)
    best = None
    for t in sorted(set(scores), reverse=True):  # highest threshold reaching the TPR
        if (scores[positive] >= t).mean() >= tpr - 1e-12:
            best = t
            break
    expected = (scores[~positive] >= best).mean()
    assert metrics.fpr_at_tpr(scores, positive, tpr) == pytest.approx(expected)


def test_detection_bad_input():
    with pytest.raises(CompanionError, match="both positive and negative"):
        metrics.auroc([0.1, 0.2], [True, True])
    with pytest.raises(CompanionError, match="one length"):
        metrics.fpr_at_tpr([0.1, 0.2, 0.3], [True, False])
    with pytest.raises(CompanionError, match="tpr must lie"):
        metrics.fpr_at_tpr([0.1, 0.2], [True, False], 0.0)


def selective_data(n=50, seed=3):
    rng = np.random.default_rng(seed)
    confidence = rng.random(n)
    correct = rng.random(n) < 0.3 + 0.6 * confidence  # confident samples are right more often
    return confidence, correct


def test_aurc_and_risk_coverage_by_a_loop():
    confidence, correct = selective_data()
    order = sorted(range(len(confidence)), key=lambda i: -confidence[i])
    risks = []
    for k in range(1, len(order) + 1):
        risks.append(sum(not correct[i] for i in order[:k]) / k)
    coverage, risk = metrics.risk_coverage(confidence, correct)
    np.testing.assert_allclose(risk, risks)
    np.testing.assert_allclose(coverage, np.arange(1, 51) / 50)
    assert metrics.aurc(confidence, correct) == pytest.approx(np.mean(risks))


def test_e_aurc_of_a_perfect_ranking_is_near_zero_and_a_bad_one_is_not():
    n, r = 20000, 0.2
    correct = np.arange(n) >= r * n
    perfect = correct.astype(float)  # every correct sample more confident than every error
    assert abs(metrics.e_aurc(perfect, correct)) < 1e-3
    assert metrics.e_aurc(1 - perfect, correct) > 0.3


def test_selective_coverage_by_a_loop():
    confidence, correct = selective_data(n=200, seed=4)
    order = np.argsort(-confidence)
    for target in (0.99, 0.9, 0.8):
        best = 0.0
        for k in range(1, 201):
            if correct[order[:k]].mean() >= target:
                best = k / 200
        assert metrics.selective_coverage(confidence, correct, target) == pytest.approx(best)
    assert metrics.selective_coverage([0.3, 0.2], [True, True], 0.99) == 1.0
    assert metrics.selective_coverage([0.3, 0.2], [False, True], 0.99) == 0.0


def test_ece_by_a_loop_over_bins():
    rng = np.random.default_rng(5)
    logits = rng.normal(size=(300, 4)) * 2
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    labels = rng.integers(0, 4, 300)
    for bins in (1, 5, 15):
        total = 0.0
        for b in range(bins):
            lo, hi = b / bins, (b + 1) / bins
            rows = [
                i
                for i in range(300)
                if lo < probs[i].max() <= hi or (b == 0 and probs[i].max() == 0)
            ]
            if rows:
                acc = np.mean([probs[i].argmax() == labels[i] for i in rows])
                conf = np.mean([probs[i].max() for i in rows])
                total += len(rows) / 300 * abs(acc - conf)
        assert metrics.ece(probs, labels, bins) == pytest.approx(total)
    one_hot = np.eye(4)[labels]  # confident and always right: perfectly calibrated
    assert metrics.ece(one_hot, labels) == pytest.approx(0.0)


def retrieval_data(seed=6):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 4, 40)
    x = rng.normal(size=(40, 5)) + 1.5 * np.eye(5)[labels]
    return x, labels


def brute_neighbours(x, i):
    u = x / np.linalg.norm(x, axis=1, keepdims=True)
    others = [j for j in range(len(x)) if j != i]
    return sorted(others, key=lambda j: -float(u[i] @ u[j]))


def test_recall_at_k_by_brute_force():
    x, labels = retrieval_data()
    got = metrics.recall_at_k(x, labels, ks=(1, 2, 4, 8))
    for k in (1, 2, 4, 8):
        hits = [any(labels[j] == labels[i] for j in brute_neighbours(x, i)[:k]) for i in range(40)]
        assert got[k] == pytest.approx(np.mean(hits))


def test_map_at_r_by_brute_force():
    x, labels = retrieval_data(seed=7)
    per_query = []
    for i in range(40):
        r = int((labels == labels[i]).sum()) - 1
        if r == 0:
            continue
        near = brute_neighbours(x, i)[:r]
        total, hits = 0.0, 0
        for rank, j in enumerate(near, start=1):
            if labels[j] == labels[i]:
                hits += 1
                total += hits / rank
        per_query.append(total / r)
    assert metrics.map_at_r(x, labels) == pytest.approx(np.mean(per_query))
    perfect = np.eye(4)[labels] + 1e-3 * np.random.default_rng(0).normal(size=(40, 4))
    assert metrics.map_at_r(perfect, labels) == pytest.approx(1.0)
    assert math.isclose(metrics.recall_at_k(perfect, labels)[1], 1.0)


def _tie_averaged_risks(confidence, correct):
    """The tie-averaged risk curve by brute force: the mean of the curve over every order of
    the tied samples (itertools.permutations inside each tie group)."""
    import itertools

    confidence, correct = np.asarray(confidence), np.asarray(correct, bool)
    groups = [np.flatnonzero(confidence == v) for v in sorted(set(confidence), reverse=True)]
    curves = []
    for orders in itertools.product(*(itertools.permutations(g) for g in groups)):
        ranked = correct[np.concatenate(orders)]
        curves.append(np.cumsum(~ranked) / np.arange(1, len(ranked) + 1))
    return np.mean(curves, axis=0)


def test_ties_are_averaged_and_the_input_order_does_not_matter():
    confidence = np.array([0.9, 0.9, 0.9, 0.5, 0.5, 0.2, 0.9])
    correct = np.array([True, False, True, False, True, False, True])
    risks = _tie_averaged_risks(confidence, correct)
    assert metrics.aurc(confidence, correct) == pytest.approx(risks.mean())
    np.testing.assert_allclose(metrics.risk_coverage(confidence, correct)[1], risks)
    values = set()
    for seed in range(6):  # any input order gives the same AURC and coverage
        p = np.random.default_rng(seed).permutation(len(confidence))
        values.add(
            (
                round(metrics.aurc(confidence[p], correct[p]), 12),
                metrics.selective_coverage(confidence[p], correct[p], 0.7),
            )
        )
    assert len(values) == 1
    # one tie group of all samples: the risk at every coverage is the error rate
    flat = metrics.risk_coverage(np.ones(4), [True, False, True, True])[1]
    np.testing.assert_allclose(flat, 0.25)
    best = max(k / 7 for k in range(1, 8) if 1 - risks[k - 1] >= 0.7 - 1e-12)
    assert metrics.selective_coverage(confidence, correct, 0.7) == pytest.approx(best)
