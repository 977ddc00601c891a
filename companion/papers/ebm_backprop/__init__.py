"""Backpropagation at the Infinitesimal Inference Limit of Energy-Based Models: Unifying
Predictive Coding, Equilibrium Propagation, and Contrastive Hebbian Learning.

Beren Millidge, Yuhang Song, Tommaso Salvatori, Thomas Lukasiewicz, Rafal Bogacz. ICLR 2023.
Paper: https://openreview.net/forum?id=nIMifqu2EO · Code:
https://github.com/BerenMillidge/infinitesimal_inference_limit

* ``method``: the energy (Eq. 1), inference, and the PC, EP and CHL weight updates;
* ``experiment``: presets, ``run`` (every method at every nudge β against autograd's gradient);
* ``plots`` and ``claims``: the log-log plot of the gap and the paper's thesis, measured.
"""

from companion.papers.ebm_backprop.claims import (
    check_claims,
    floor_beta,
    gaps_table,
    slope,
    worst_residual,
)
from companion.papers.ebm_backprop.experiment import (
    PRESETS,
    EBMConfig,
    EBMResult,
    Point,
    load_batches,
    measure_batch,
    run,
)
from companion.papers.ebm_backprop.method import (
    ACTIVATIONS,
    UPDATES,
    Net,
    bp_gradient,
    chl_update,
    cosine,
    energy,
    energy_param_grad,
    ep_update,
    forward,
    init_mlp,
    layer,
    loglog_slope,
    loss,
    pc_update,
    relative_error,
    relax,
)
from companion.papers.ebm_backprop.plots import figures, plot_gaps, plot_update_scatter

Config = EBMConfig
Result = EBMResult

__all__ = [
    "ACTIVATIONS",
    "PRESETS",
    "UPDATES",
    "Config",
    "EBMConfig",
    "EBMResult",
    "Net",
    "Point",
    "Result",
    "bp_gradient",
    "check_claims",
    "chl_update",
    "cosine",
    "energy",
    "energy_param_grad",
    "ep_update",
    "figures",
    "floor_beta",
    "forward",
    "gaps_table",
    "init_mlp",
    "layer",
    "load_batches",
    "loglog_slope",
    "loss",
    "measure_batch",
    "pc_update",
    "plot_gaps",
    "plot_update_scatter",
    "relative_error",
    "relax",
    "run",
    "slope",
    "worst_residual",
]
