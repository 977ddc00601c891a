"""KwikBucks: Correlation Clustering with Cheap-Weak and Expensive-Strong Signals.

Sandeep Silwal, Sara Ahmadian, Andrew Nystrom, Andrew McCallum, Deepak Ramachandran, Mehran
Kazemi. ICLR 2023. Code: https://github.com/google-research/google-research/tree/master/kwikbucks

* ``method``: the algorithm and its baselines (KwikCluster on the strong oracle alone,
  KwikCluster on the weak k-NN graph re-weighted by the oracle), the correlation-clustering cost
  and pair precision/recall, and an oracle that counts every strong query against a budget.

The notebook, its experiment and its claims are not written yet (the paper is planned).
"""

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
