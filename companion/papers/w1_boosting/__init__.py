"""A Higher Precision Algorithm for Computing the 1-Wasserstein Distance.

Pankaj K. Agarwal, Sharath Raghvendra, Pouyan Shirzadian, Rachita Sowle. ICLR 2023.
Paper: https://openreview.net/forum?id=aMXD8gqsIiC · Code: none published.

An algorithm that estimates W₁(μ, ν) within an additive ε is useless when W ≪ ε. The paper
boosts any such black box: over a randomly shifted hierarchy of grid cells, it calls the black
box at accuracy ε/d on small, rescaled problems, so that the expected error becomes
min{ε, d·log_{√d/ε}n·W}: proportional to W itself.

Only the abstract and introduction were available: the hierarchy's concrete steps are a
**reconstruction** (see :mod:`~companion.papers.w1_boosting.method`).

* ``method``: the exact W₁ (POT), an additive-ε black box (snap to a grid, solve, lift blindly),
  the boosting over the shifted hierarchy (and its one-level collapse, the control).
* ``experiment``: presets, data (blobs in the unit square, ν = μ + σ·noise), ``run``.
* ``plots`` and ``claims``: estimates and relative errors against the exact W; work counts.
"""

from companion.papers.w1_boosting.claims import check_claims, log_k_n, theory_bound
from companion.papers.w1_boosting.experiment import (
    PRESETS,
    SigmaRun,
    W1BoostingConfig,
    W1BoostingResult,
    make_mu,
    make_nu,
    run,
    run_sigma,
)
from companion.papers.w1_boosting.method import (
    Estimate,
    additive_w1,
    boosted_w1,
    children_per_side,
    cost_matrix,
    exact_w1,
    grid_cells,
    leaf_level,
    merge_points,
    relative_error,
    snapped_w1,
    solve_cell,
    worst_case_w1,
)
from companion.papers.w1_boosting.plots import (
    figures,
    plot_errors,
    plot_points,
    plot_sigma,
    plot_work,
)

Config = W1BoostingConfig
Result = W1BoostingResult

__all__ = [
    "PRESETS",
    "Config",
    "Estimate",
    "Result",
    "SigmaRun",
    "W1BoostingConfig",
    "W1BoostingResult",
    "additive_w1",
    "boosted_w1",
    "check_claims",
    "children_per_side",
    "cost_matrix",
    "exact_w1",
    "figures",
    "grid_cells",
    "leaf_level",
    "make_mu",
    "make_nu",
    "merge_points",
    "plot_errors",
    "plot_points",
    "plot_sigma",
    "plot_work",
    "relative_error",
    "run",
    "run_sigma",
    "snapped_w1",
    "solve_cell",
    "worst_case_w1",
    "log_k_n",
    "theory_bound",
]
