"""A GNN-Guided Predict-and-Search Framework for Mixed-Integer Linear Programming.

Qingyu Han, Linxin Yang, Qian Chen, Xiang Zhou, Dong Zhang, Akang Wang, Ruoyu Sun, Xiaodong Luo.
ICLR 2023. Paper: https://openreview.net/forum?id=pHMpgT5xWaE · Code:
https://github.com/sribdcn/Predict-and-Search_MILP_method

A GNN on the variable–constraint bipartite graph predicts, for each binary variable, the
probability that it is 1 in a good solution; the solver then searches a trust region
``‖x_X − x̂_X‖₁ ≤ Δ`` around the most confident part ``x̂`` of the prediction instead of fixing it.

* ``method``: the graph, the GNN (plain torch, ``index_add_``), the energy-weighted loss, the
  partial assignment, the trust-region search and the primal gap (HiGHS via SciPy).
* ``mps``: a reader and writer of MPS files; ``bank``: the shipped labelled independent sets.
* ``experiment``: presets, ``run`` (label, train, choose (k, Δ) on validation, test every arm).
* ``plots`` and ``claims``.
"""

from companion.papers.predict_and_search.claims import check_claims, ratio
from companion.papers.predict_and_search.experiment import (
    ARMS,
    PRESETS,
    Arm,
    PredictAndSearchConfig,
    PredictAndSearchResult,
    from_bank,
    make_independent_set,
    make_instances,
    make_knapsack,
    random_scores,
    run,
)
from companion.papers.predict_and_search.method import (
    BipartiteGNN,
    HalfConvolution,
    Instance,
    bipartite_graph,
    brute_force,
    energy_weighted_bce,
    energy_weights,
    partial_assignment,
    predict_and_search,
    primal_gap,
    solution_pool,
    solve,
    trust_region_row,
)
from companion.papers.predict_and_search.mps import read_folder, read_mps, write_mps
from companion.papers.predict_and_search.plots import figures, plot_gaps, plot_loss

Config = PredictAndSearchConfig
Result = PredictAndSearchResult

__all__ = [
    "ARMS", "PRESETS", "Arm", "BipartiteGNN", "Config", "HalfConvolution", "Instance",
    "PredictAndSearchConfig", "PredictAndSearchResult", "Result", "bipartite_graph",
    "brute_force", "check_claims", "energy_weighted_bce", "energy_weights", "figures",
    "from_bank", "make_independent_set", "make_instances", "make_knapsack",
    "partial_assignment", "plot_gaps", "plot_loss", "predict_and_search", "primal_gap",
    "random_scores", "ratio", "read_folder", "read_mps", "run",
    "solution_pool", "solve", "trust_region_row", "write_mps",
]  # fmt: skip
