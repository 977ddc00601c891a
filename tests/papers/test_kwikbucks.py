"""kwikbucks.method against independent computations: the correlation-clustering cost and pair
precision/recall by a loop over all pairs, k-NN by a full sort, the budget by counting, and
KwikCluster's exactness on a perfect oracle with no budget limit."""

import itertools

import numpy as np
import pytest

from companion.papers.kwikbucks import method as kb


def _pairs_by_loop(pred, truth):
    split = joined = both = pos = 0
    for u, v in itertools.combinations(range(len(truth)), 2):
        same_t, same_p = truth[u] == truth[v], pred[u] == pred[v]
        split += same_t and not same_p
        joined += same_p and not same_t
        both += same_t and same_p
        pos += same_t
    return split, joined, both, pos


def _blobs(n=120, clusters=12, sigma=0.3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, clusters, n)
    centres = rng.standard_normal((clusters, 8))
    e = centres[y] + sigma * rng.standard_normal((n, 8))
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    return e @ e.T, y


@pytest.mark.parametrize("seed", range(3))
def test_cost_and_precision_recall_match_a_loop_over_pairs(seed):
    rng = np.random.default_rng(seed)
    truth, pred = rng.integers(0, 5, 40), rng.integers(0, 7, 40)
    split, joined, both, pos = _pairs_by_loop(pred, truth)
    assert kb.correlation_cost(pred, truth) == split + joined
    precision, recall = kb.pair_precision_recall(pred, truth)
    assert precision == pytest.approx(both / (both + joined))
    assert recall == pytest.approx(both / pos)
    assert kb.correlation_cost(truth, truth) == 0


def test_weak_knn_matches_a_full_sort():
    w, _ = _blobs()
    knn = kb.weak_knn(w, 5)
    for u in range(len(w)):
        order = [v for v in np.argsort(-w[u], kind="stable") if v != u][:5]
        assert set(knn[u]) == set(order)
        assert np.all(np.diff(w[u, knn[u]]) <= 1e-12)  # most similar first


def test_oracle_counts_distinct_pairs_and_refuses_past_the_budget():
    y = np.array([0, 0, 1, 1])
    oracle = kb.StrongOracle(y, budget=2)
    assert oracle(0, 1) is True and oracle(1, 0) is True  # the repeat is free
    assert oracle(0, 2) is False
    assert oracle.calls == 2
    with pytest.raises(kb.BudgetExhausted):
        oracle(2, 3)


def test_union_find_labels_are_the_connected_components():
    uf = kb.UnionFind(6)
    for u, v in [(0, 3), (3, 5), (1, 4)]:
        uf.add(u, v)
    labels = uf.labels()
    assert labels[0] == labels[3] == labels[5] != labels[1] == labels[4] != labels[2]


def test_kwikcluster_recovers_the_truth_with_an_unlimited_budget():
    _, y = _blobs(seed=1)
    labels = kb.kwikcluster(kb.StrongOracle(y, np.inf), len(y), np.random.default_rng(0))
    assert kb.correlation_cost(labels, y) == 0


@pytest.mark.parametrize("budget", [30, 150, 600])
@pytest.mark.parametrize("merge", [True, False])
def test_no_algorithm_spends_more_than_its_budget(budget, merge):
    w, y = _blobs(seed=2)
    rng = np.random.default_rng(0)
    for run in (
        lambda o: kb.kwikbucks(w, o, 20, rng, merge=merge, merge_budget=budget // 5),
        lambda o: kb.kwikcluster(o, len(y), rng),
        lambda o: kb.kwikcluster_knn(w, o, rng),
    ):
        oracle = kb.StrongOracle(y, budget)
        labels = run(oracle)
        assert oracle.calls <= budget and labels.shape == y.shape


def test_kwikbucks_is_exact_with_a_large_budget_and_its_clusters_are_pure():
    w, y = _blobs(seed=3)
    labels = kb.kwikbucks(w, kb.StrongOracle(y, 10**6), 40, np.random.default_rng(0))
    assert kb.correlation_cost(labels, y) == 0
    # under a small budget every cluster it forms is still pure (joins only confirmed pairs)
    labels = kb.kwikbucks(w, kb.StrongOracle(y, 60), 20, np.random.default_rng(0), merge=False)
    precision, _ = kb.pair_precision_recall(labels, y)
    assert precision == 1.0


def test_merge_joins_clusters_that_the_oracle_confirms():
    w, y = _blobs(seed=4)
    split = y * 2 + (np.arange(len(y)) % 2)  # every true cluster cut in two halves
    merged = kb.merge_clusters(w, kb.StrongOracle(y, 10**6), split, np.random.default_rng(0))
    assert kb.correlation_cost(merged, y) < kb.correlation_cost(split, y)
    precision, _ = kb.pair_precision_recall(merged, y)
    assert precision == 1.0  # a merge of two pure halves is only made when the oracle agrees
