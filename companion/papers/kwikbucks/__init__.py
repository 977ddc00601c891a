"""KwikBucks: Correlation Clustering with Cheap-Weak and Expensive-Strong Signals.

Sandeep Silwal, Sara Ahmadian, Andrew Nystrom, Andrew McCallum, Deepak Ramachandran, Mehran
Kazemi. ICLR 2023. Paper: https://openreview.net/forum?id=p0JSSa1AuV · Code:
https://github.com/google-research/google-research/tree/master/kwikbucks

Correlation clustering of N points when a free *weak* similarity W (embeddings) is often wrong
and an exact *strong* oracle S (a cross-attention model in the paper) is limited to a budget of
queries. KwikBucks keeps KwikCluster's pivots but lets W decide in which order to ask S, so a
point usually finds its pivot in one or two queries instead of one per cluster.

* ``method``: the algorithm and its baselines (KwikCluster on the strong oracle alone,
  KwikCluster on the weak k-NN graph re-weighted by the oracle), the correlation-clustering cost
  and pair precision/recall, and an oracle that counts every strong query against a budget.
* ``experiment``: presets, data (noisy embeddings around many centres of Zipf-like sizes;
  templated sentences with MiniLM for ``full``), ``run`` (every arm at every budget).
* ``plots`` and ``claims``: cost and recall against the budget; the claims with a control that
  replaces W by a random matrix.
"""

from companion.papers.kwikbucks.claims import check_claims, cost_ratios, recall_gaps
from companion.papers.kwikbucks.experiment import (
    ARMS,
    PRESETS,
    ArmScore,
    BudgetRun,
    KwikBucksConfig,
    KwikBucksResult,
    cluster_sizes,
    cosine_matrix,
    hashed_embeddings,
    make_blobs,
    make_data,
    make_sentences,
    minilm_embeddings,
    num_pivots,
    random_weak,
    run,
    run_arm,
    weak_auc,
)
from companion.papers.kwikbucks.method import (
    BudgetExhausted,
    StrongOracle,
    UnionFind,
    correlation_cost,
    kwikbucks,
    kwikcluster,
    kwikcluster_knn,
    merge_clusters,
    pair_precision_recall,
    weak_knn,
)
from companion.papers.kwikbucks.plots import figures, plot_budget, plot_quality, plot_weak_signal

Config = KwikBucksConfig
Result = KwikBucksResult

__all__ = [
    "ARMS",
    "PRESETS",
    "ArmScore",
    "BudgetExhausted",
    "BudgetRun",
    "Config",
    "KwikBucksConfig",
    "KwikBucksResult",
    "Result",
    "StrongOracle",
    "UnionFind",
    "check_claims",
    "cluster_sizes",
    "correlation_cost",
    "cosine_matrix",
    "cost_ratios",
    "figures",
    "hashed_embeddings",
    "kwikbucks",
    "kwikcluster",
    "kwikcluster_knn",
    "make_blobs",
    "make_data",
    "make_sentences",
    "merge_clusters",
    "minilm_embeddings",
    "num_pivots",
    "pair_precision_recall",
    "plot_budget",
    "plot_quality",
    "plot_weak_signal",
    "random_weak",
    "recall_gaps",
    "run",
    "run_arm",
    "weak_auc",
    "weak_knn",
]
