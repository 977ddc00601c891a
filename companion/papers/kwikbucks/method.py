"""KwikBucks: correlation clustering with a cheap-weak and an expensive-strong signal.

Sandeep Silwal, Sara Ahmadian, Andrew Nystrom, Andrew McCallum, Deepak Ramachandran, Mehran
Kazemi. ICLR 2023. Code: google-research/google-research, folder ``kwikbucks``
(``model_utils.py``: ``qwick_cluster_using_ordering``, ``merge_post_process``).

Correlation clustering of ``N`` points against a ground-truth graph of *positive* pairs: the
cost of a clustering counts the positive pairs it puts in different clusters and the negative
pairs it puts in one cluster (``eval_utils.py``)::

    cost(C) = #{(u, v) positive, C(u) ≠ C(v)} + #{(u, v) negative, C(u) = C(v)}.      (1)

Two signals tell whether a pair is positive:

* the **weak signal** ``W``: an N×N similarity (cosines of cheap embeddings) that costs nothing
  and is often wrong;
* the **strong oracle** ``S(u, v) ∈ {0, 1}``: the truth (a cross-attention model in the paper),
  limited to a budget of queries.

KwikCluster (Ailon, Charikar & Newman) picks a random pivot, puts every point the oracle says
is positive with it into its cluster, and recurses on the rest: a 3-approximation in
expectation, but it queries a pivot against *every* remaining point, ``O(N · #clusters)``
queries. KwikBucks keeps the pivot idea and spends the weak signal to query in a good order:

1. sample ``t`` pivot candidates; keep an *independent set* of them: each candidate is queried
   against the pivots kept so far, most weakly similar first, at most ``max_queries_per_point``
   of them; the first positive absorbs it, otherwise it becomes a pivot;
2. order the remaining points by their largest weak similarity to a candidate, highest first;
3. assign each point to the first pivot the oracle confirms, querying pivots in the order of
   ``W(v, p) + γ · #{v's 10 weak nearest neighbours already assigned to p}`` (γ = 0.1), at most
   ``max_queries_per_point`` queries; a point no pivot accepts stays a singleton;
4. **merge** clusters: pairs of clusters joined by an edge of the weak 20-NN graph are scored
   by the expected fall of (1) if merged, ``(2 p̄ − 1) |C₁| |C₂|`` with ``p̄ = (mean W + 1) / 2``
   (``W`` in [−1, 1]); in score order, 20 random cross pairs are queried and the two merge when
   at least half are positive.

Every oracle call goes through :class:`StrongOracle`, which counts it and refuses calls past
the budget. Two departures from the official code, both about counting (the brief's pitfalls):
the independent-set phase is capped by the budget (the code does not count it against the
cap), and a pair asked twice is answered from a cache without spending budget.
One departure in bookkeeping: the neighbour boost of step 3 is updated after every point here,
while the code refreshes it once per batch of 100 points (``assign_to_pivots_given_ordering``).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "BudgetExhausted",
    "StrongOracle",
    "UnionFind",
    "correlation_cost",
    "kwikbucks",
    "kwikcluster",
    "kwikcluster_knn",
    "merge_clusters",
    "pair_precision_recall",
    "weak_knn",
]

GAMMA = 0.1  # boost of a pivot per weak neighbour already assigned to it (the code's gamma)
NEIGHBOURS_FOR_BOOST = 10  # weak nearest neighbours counted for the boost (the code's 10)
MERGE_KNN = 20  # the weak k-NN graph whose edges propose cluster pairs to merge (the code's k)
MERGE_PAIRS = 20  # random cross pairs queried per proposed merge (config.gin)
MERGE_THRESHOLD = 0.5  # merge when at least this share of them is positive (config.gin)


class BudgetExhausted(Exception):
    """Raised by :class:`StrongOracle` when a new pair is asked for after the budget is spent."""


class StrongOracle:
    """The expensive signal ``S(u, v)``: the truth for a pair, counted against a budget.

    ``labels`` are the ground-truth cluster ids; ``S(u, v) = 1`` when they are equal. Distinct
    pairs are counted once (a repeated pair comes from the cache, free); a call past the budget
    raises :class:`BudgetExhausted`, so no algorithm can overspend.
    """

    def __init__(self, labels: np.ndarray, budget: float):
        self.labels = np.asarray(labels)
        self.budget = budget
        self.calls = 0
        self._cache: dict[tuple[int, int], bool] = {}

    @property
    def remaining(self) -> float:
        return self.budget - self.calls

    def __call__(self, u: int, v: int) -> bool:
        key = (u, v) if u < v else (v, u)
        if key in self._cache:
            return self._cache[key]
        if self.calls >= self.budget:
            raise BudgetExhausted
        self.calls += 1
        answer = bool(self.labels[u] == self.labels[v])
        self._cache[key] = answer
        return answer


class UnionFind:
    """Disjoint sets over ``0..n-1`` (the code's ``ClusterPairs``): ``add(u, v)`` joins the sets
    of ``u`` and ``v``; :meth:`labels` numbers the sets 0, 1, ... by their smallest member."""

    def __init__(self, n: int):
        self.parent = list(range(n))

    def find(self, u: int) -> int:
        root = u
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[u] != root:  # path compression
            self.parent[u], u = root, self.parent[u]
        return root

    def add(self, u: int, v: int) -> None:
        ru, rv = self.find(u), self.find(v)
        if ru != rv:
            self.parent[max(ru, rv)] = min(ru, rv)

    def labels(self) -> np.ndarray:
        roots = np.array([self.find(u) for u in range(len(self.parent))])
        _, labels = np.unique(roots, return_inverse=True)
        return labels


def _pair_counts(pred: np.ndarray, truth: np.ndarray) -> tuple[int, int, int]:
    """Pairs together in both, together in ``pred`` only, together in ``truth`` only."""
    _, pi = np.unique(pred, return_inverse=True)
    _, ti = np.unique(truth, return_inverse=True)
    table = np.zeros((pi.max() + 1, ti.max() + 1), dtype=np.int64)
    np.add.at(table, (pi, ti), 1)

    def pairs(x):
        return int((x * (x - 1) // 2).sum())

    both = pairs(table)
    return both, pairs(table.sum(1)) - both, pairs(table.sum(0)) - both


def correlation_cost(pred: np.ndarray, truth: np.ndarray) -> int:
    """Equation (1) for a complete ±graph given by the ``truth`` clusters: positive pairs split
    by ``pred`` plus negative pairs joined by it (counted from the contingency table)."""
    _, pred_only, truth_only = _pair_counts(np.asarray(pred), np.asarray(truth))
    return pred_only + truth_only


def pair_precision_recall(pred: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """Of the pairs ``pred`` puts together, the share that are positive (precision); of the
    positive pairs, the share ``pred`` puts together (recall). Precision of all-singletons is 1."""
    both, pred_only, truth_only = _pair_counts(np.asarray(pred), np.asarray(truth))
    precision = both / (both + pred_only) if both + pred_only else 1.0
    recall = both / (both + truth_only) if both + truth_only else 1.0
    return precision, recall


def weak_knn(weak: np.ndarray, k: int) -> np.ndarray:
    """Each point's ``k`` nearest neighbours by the weak signal (itself excluded), most similar
    first: an ``[N, k]`` index array."""
    w = np.array(weak, dtype=float, copy=True)
    np.fill_diagonal(w, -np.inf)
    k = min(k, len(w) - 1)
    part = np.argpartition(-w, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(w, part, 1), axis=1, kind="stable")
    return np.take_along_axis(part, order, 1)


def _independent_set(weak, oracle, candidates, max_queries, clusters):
    """Step 1: keep a candidate as a pivot unless the oracle joins it to an earlier pivot,
    asked in order of weak similarity (at most ``max_queries`` pivots asked)."""
    pivots = [int(candidates[0])]
    for c in candidates[1:]:
        c = int(c)
        order = np.argsort(-weak[c, pivots], kind="stable")[:max_queries]
        for j in order:
            if oracle(pivots[j], c):
                clusters.add(pivots[j], c)
                break
        else:
            pivots.append(c)
    return pivots


def _assign(weak, oracle, points, pivots, max_queries, clusters, boost, knn):
    """Step 3: each point joins the first pivot the oracle confirms, pivots asked in order of
    ``W(v, p) + γ · (v's weak neighbours already assigned to p)`` when ``boost``."""
    pivot_col = {p: j for j, p in enumerate(pivots)}
    assigned_to: dict[int, int] = {p: p for p in pivots}
    for v in points:
        v = int(v)
        score = weak[v, pivots].astype(float)
        if boost:
            for u in knn[v]:
                p = assigned_to.get(int(u))
                if p is not None and u != v:
                    score[pivot_col[p]] += GAMMA
        for j in np.argsort(-score, kind="stable")[:max_queries]:
            if oracle(v, pivots[j]):
                clusters.add(pivots[j], v)
                assigned_to[v] = pivots[j]
                break


def merge_clusters(weak, oracle, labels, rng, knn=None):
    """Step 4 (the code's ``merge_post_process``): score the cluster pairs that an edge of the
    weak ``MERGE_KNN``-NN graph joins by ``(2 p̄ − 1)|C₁||C₂|``, ``p̄ = (mean W + 1)/2``; in score
    order, query ``MERGE_PAIRS`` random cross pairs and merge when at least ``MERGE_THRESHOLD``
    of them are positive. Stops when the oracle's budget is spent. Returns new labels."""
    labels = np.asarray(labels)
    members = [np.flatnonzero(labels == c) for c in range(labels.max() + 1)]
    knn = weak_knn(weak, MERGE_KNN) if knn is None else knn
    proposed = set()
    for u in range(len(labels)):
        for v in knn[u]:
            a, b = sorted((int(labels[u]), int(labels[v])))
            if a != b:
                proposed.add((a, b))
    scored = []
    for a, b in sorted(proposed):
        p_bar = (weak[np.ix_(members[a], members[b])].mean() + 1) / 2
        scored.append(((2 * p_bar - 1) * len(members[a]) * len(members[b]), a, b))
    scored.sort(key=lambda s: -s[0])
    clusters = UnionFind(len(labels))
    for c in members:
        for u in c[1:]:
            clusters.add(int(c[0]), int(u))
    alive = np.ones(len(members), dtype=bool)
    try:
        for _, a, b in scored:
            if not (alive[a] and alive[b]):
                continue
            heads = rng.integers(0, len(members[a]), MERGE_PAIRS)
            tails = rng.integers(0, len(members[b]), MERGE_PAIRS)
            votes = [oracle(int(members[a][h]), int(members[b][t])) for h, t in zip(heads, tails)]
            if np.mean(votes) >= MERGE_THRESHOLD:
                clusters.add(int(members[a][0]), int(members[b][0]))
                alive[b] = False
    except BudgetExhausted:
        pass
    return clusters.labels()


def kwikbucks(
    weak: np.ndarray,
    oracle: StrongOracle,
    num_pivots: int,
    rng: np.random.Generator,
    *,
    max_queries_per_point: int = 100,
    order_points: bool = True,
    boost: bool = True,
    merge: bool = True,
    merge_budget: int = 0,
) -> np.ndarray:
    """KwikBucks (steps 1–4 above) under ``oracle``'s budget; returns cluster labels ``[N]``.

    ``merge_budget`` queries are held back from steps 1–3 for the merge, which also gets any
    that steps 1–3 leave unspent (as in the code). ``order_points=False`` and ``boost=False``
    are the code's switches that remove the weak signal's ordering of points and its
    neighbour boost.
    """
    n = len(weak)
    clusters = UnionFind(n)
    knn = weak_knn(weak, max(MERGE_KNN, NEIGHBOURS_FOR_BOOST))
    total = oracle.budget
    oracle.budget = total - merge_budget if merge else total
    candidates = rng.choice(n, size=min(num_pivots, n), replace=False)
    try:
        pivots = _independent_set(weak, oracle, candidates, max_queries_per_point, clusters)
        rest = np.setdiff1d(np.arange(n), candidates)
        if order_points:
            best = weak[np.ix_(rest, candidates)].max(1)
            rest = rest[np.argsort(-best, kind="stable")]
        else:
            rest = rng.permutation(rest)
        _assign(
            weak,
            oracle,
            rest,
            pivots,
            max_queries_per_point,
            clusters,
            boost,
            knn[:, :NEIGHBOURS_FOR_BOOST],
        )
    except BudgetExhausted:
        pass
    oracle.budget = total
    labels = clusters.labels()
    if merge:
        labels = merge_clusters(weak, oracle, labels, rng, knn[:, :MERGE_KNN])
    return labels


def kwikcluster(oracle: StrongOracle, n: int, rng: np.random.Generator) -> np.ndarray:
    """KwikCluster on the strong oracle alone (the code's ``qwick_cluster_original``): a random
    pivot takes every remaining point the oracle confirms; repeat on the rest. When the budget
    runs out, the pivot in progress keeps what it found and every other point stays single."""
    clusters = UnionFind(n)
    left = list(rng.permutation(n))
    try:
        while left:
            pivot, left = left[0], left[1:]
            keep = []
            for v in left:
                if oracle(int(pivot), int(v)):
                    clusters.add(int(pivot), int(v))
                else:
                    keep.append(v)
            left = keep
    except BudgetExhausted:
        pass
    return clusters.labels()


def kwikcluster_knn(weak: np.ndarray, oracle: StrongOracle, rng: np.random.Generator) -> np.ndarray:
    """The code's ``QwickClusterKnn``: query the oracle on the edges of the weak k-NN graph with
    ``k = budget // N`` (the budget's worth of pairs), keep the confirmed ones, and run
    KwikCluster on that graph at no further cost (absent pairs count as negative)."""
    n = len(weak)
    k = int(oracle.budget // n)
    positive = [set() for _ in range(n)]
    if k >= 1:
        try:
            for u, row in enumerate(weak_knn(weak, k)):
                for v in row:
                    if oracle(int(u), int(v)):
                        positive[u].add(int(v))
                        positive[int(v)].add(u)
        except BudgetExhausted:
            pass
    clusters = UnionFind(n)
    left = list(rng.permutation(n))
    while left:
        pivot, left = int(left[0]), left[1:]
        keep = []
        for v in left:
            if int(v) in positive[pivot]:
                clusters.add(pivot, int(v))
            else:
                keep.append(v)
        left = keep
    return clusters.labels()
