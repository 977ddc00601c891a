"""Beyond Lipschitz: Sharp Generalization and Excess Risk Bounds for Full-Batch GD.

Konstantinos E. Nikolakakis, Farzin Haddadpour, Amin Karbasi, Dionysios S. Kalogerias.
ICLR 2023. Paper: https://openreview.net/forum?id=pOyi9KqE56b (arXiv:2204.12446) · no official
code (a theory paper).

Full-batch GD on a β-smooth, nonnegative loss generalizes because it is *stable along its path*:
the replace-one distance of its iterates is bounded by the losses the optimisation path visits,
and the generalization error by that distance and the training loss, with no Lipschitz constant.

* ``method``: the problems (a convex linear model with squared loss, a nonconvex tanh neuron),
  GD, the step sizes, Bound 1 (generalization from average output stability), Bound 2 (GD's
  stability from its path), the Lipschitz control, the log-log slope.
* ``experiment``: presets, ``run`` (GD and SGD over n and iterations, resampled training sets).
* ``plots`` and ``claims``: gaps against bounds, scaling in n and T, and the thesis measured.
"""

from companion.papers.fullbatch_gd_generalization.claims import check_claims  # noqa
from companion.papers.fullbatch_gd_generalization.experiment import (
    ARMS,
    LABELS,
    PRESETS,
    Curve,
    FullBatchConfig,
    FullBatchResult,
    draw,
    run,
    run_curve,
)
from companion.papers.fullbatch_gd_generalization.method import (
    Problem,
    gd_step,
    generalization_bound,
    lipschitz_bound,
    loglog_slope,
    stability_bound,
    stability_weights,
    step_sizes,
)
from companion.papers.fullbatch_gd_generalization.plots import (
    figures,
    plot_bounds,
    plot_gd_vs_sgd,
    plot_scaling,
)

Config = FullBatchConfig
Result = FullBatchResult

__all__ = [
    "ARMS",
    "LABELS",
    "PRESETS",
    "Config",
    "Curve",
    "FullBatchConfig",
    "FullBatchResult",
    "Problem",
    "Result",
    "check_claims",
    "draw",
    "figures",
    "gd_step",
    "generalization_bound",
    "lipschitz_bound",
    "loglog_slope",
    "plot_bounds",
    "plot_gd_vs_sgd",
    "plot_scaling",
    "run",
    "run_curve",
    "stability_bound",
    "stability_weights",
    "step_sizes",
]
