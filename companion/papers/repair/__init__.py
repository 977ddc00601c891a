"""REPAIR: REnormalizing Permuted Activations for Interpolation Repair.

Keller Jordan, Hanie Sedghi, Olga Saukh, Rahim Entezari, Behnam Neyshabur. ICLR 2023.
Paper: https://openreview.net/forum?id=gU5sJ6ZggcX (arXiv:2211.08403)
Code: https://github.com/KellerJordan/REPAIR

Two networks A and B trained from different seeds are joined by the straight line
θ_α = (1 − α)θ_A + αθ_B. Along it the loss rises (the *barrier*: loss at α = ½ minus the
endpoints' mean). Permuting B's hidden units to match A's (by activation correlation) lowers
the barrier but does not remove it in deep networks, because of **variance collapse**: a unit of
the interpolated network mixes two units with correlation ρ < 1, so its std shrinks by about
sqrt((1 + ρ)/2) at α = ½, and the shrinkage compounds with depth. **REPAIR** rescales and shifts
every unit's pre-activation so that its mean and std are the interpolation of the endpoints',

    μ_α = (1 − α)μ_A + αμ_B,    σ_α = (1 − α)σ_A + ασ_B,

estimated with a temporary BatchNorm on training data and folded back into the weights.

* ``method``: correlation matching, permutation, interpolation, REPAIR, BatchNorm folding.
* ``experiment``: presets, ``run`` (train two nets, merge naive / permuted / permuted + REPAIR).
* ``plots`` and ``claims``: barrier curves, variance collapse per layer, the thesis measured.
"""

from companion.papers.repair.claims import check_claims
from companion.papers.repair.experiment import (
    PRESETS,
    RepairConfig,
    RepairResult,
    augment,
    build_model,
    evaluate,
    load_data,
    merge,
    run,
    std_ratios,
    train_endpoint,
)
from companion.papers.repair.method import (
    Moments,
    activation_stats,
    align,
    correlation_matrices,
    fold_batchnorm,
    forward_taps,
    hidden_layers,
    interpolate,
    match_permutation,
    permute_units,
    predicted_std,
    repair,
    repair_targets,
    weighted_layers,
)
from companion.papers.repair.plots import (
    figures,
    plot_alpha,
    plot_barriers,
    plot_correlation,
    plot_variance_collapse,
)

Config = RepairConfig
Result = RepairResult

__all__ = [
    "PRESETS",
    "Config",
    "Moments",
    "RepairConfig",
    "RepairResult",
    "Result",
    "activation_stats",
    "align",
    "augment",
    "build_model",
    "check_claims",
    "correlation_matrices",
    "evaluate",
    "figures",
    "fold_batchnorm",
    "forward_taps",
    "hidden_layers",
    "interpolate",
    "load_data",
    "match_permutation",
    "merge",
    "permute_units",
    "plot_alpha",
    "plot_barriers",
    "plot_correlation",
    "plot_variance_collapse",
    "predicted_std",
    "repair",
    "repair_targets",
    "run",
    "std_ratios",
    "train_endpoint",
    "weighted_layers",
]
