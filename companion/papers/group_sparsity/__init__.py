"""Implicit Regularization for Group Sparsity.

Jiangyuan Li, Thanh V. Nguyen, Chinmay Hegde, Raymond K. W. Wong. ICLR 2023.
Paper: https://openreview.net/forum?id=d7Q0vVfJ0wO · Code:
https://github.com/jiangyuan-li/Implicit-Group-Sparsity

* ``method``: the diagonally grouped linear network w_l = u_l^D v_l, Algorithms 1 and 2 (as
  functions and as an optimizer for the core loop), and the ungrouped baselines.
* ``experiment``: presets, ``run`` (four estimators over a sample-size grid; all data sets
  train as one batch).
* ``claims``: the thesis measured (sample size to recover w*, error, groups as blocks).
"""

from companion.papers.group_sparsity.claims import check_claims, switch_on_summary
from companion.papers.group_sparsity.experiment import (
    PRESETS,
    ArmResult,
    GroupSparsityConfig,
    GroupSparsityResult,
    make_data,
    run,
)
from companion.papers.group_sparsity.method import (
    DiagonalLinear,
    GroupedGD,
    GroupedLinear,
    PlainLinear,
    alg1_step,
    alg2_step,
    batched_risk,
    diagonal_step,
    estimation_error,
    group_norms,
    group_weights,
    linear_step,
    mse,
    normalize_rows,
    relative_change,
    risk_gradient,
    support_margin,
    train_diagonal,
    train_grouped,
    train_linear,
)
from companion.papers.group_sparsity.plots import (
    figures,
    plot_entries,
    plot_error_curves,
    plot_error_vs_m,
    plot_switch_on,
)

Config = GroupSparsityConfig
Result = GroupSparsityResult

__all__ = [
    "PRESETS",
    "ArmResult",
    "Config",
    "DiagonalLinear",
    "GroupSparsityConfig",
    "GroupSparsityResult",
    "GroupedGD",
    "GroupedLinear",
    "PlainLinear",
    "Result",
    "alg1_step",
    "batched_risk",
    "check_claims",
    "alg2_step",
    "diagonal_step",
    "estimation_error",
    "figures",
    "group_norms",
    "group_weights",
    "linear_step",
    "make_data",
    "mse",
    "normalize_rows",
    "plot_entries",
    "plot_error_curves",
    "plot_error_vs_m",
    "plot_switch_on",
    "relative_change",
    "risk_gradient",
    "run",
    "support_margin",
    "switch_on_summary",
    "train_diagonal",
    "train_grouped",
    "train_linear",
]
