"""Sparse Bayesian multiple shooting for latent neural ODEs.

Iakovlev, Yildiz, Heinonen, Lähdesmäki. "Latent Neural ODEs with Sparse Bayesian Multiple
Shooting", ICLR 2023.
Paper: https://openreview.net/forum?id=moIlFZfj_1b · Code: https://github.com/yakovlev31/msvi

* ``method``: the latent ODE (decoder g, second-order dynamics F), the recognition network with
  temporal attention, blocks solved in parallel, the ELBO with the continuity prior, the forecast.
* ``experiment``: presets, ``run`` (single vs multiple shooting on long pendulum trajectories,
  with a loose-prior control arm), ``lr_sweep`` (single shooting's learning rate on validation
  trajectories).
* ``plots`` and ``claims``: loss, test-error and gradient-norm curves, and the paper's claim
  measured against single shooting and against the loose-prior control.
"""

from companion.papers.multiple_shooting.claims import check_claims
from companion.papers.multiple_shooting.experiment import (
    PRESETS,
    ArmResult,
    MultipleShootingConfig,
    MultipleShootingResult,
    build_model,
    lr_sweep,
    make_pendulum,
    run,
)
from companion.papers.multiple_shooting.method import (
    LatentODE,
    RecognitionNet,
    SecondOrderDynamics,
    block_starts,
    elbo,
    forecast,
    kl_norm_norm,
    solve_blocks,
)
from companion.papers.multiple_shooting.plots import (
    figures,
    plot_curves,
    plot_example,
    plot_grad_norm,
    plot_step,
)

Config = MultipleShootingConfig
Result = MultipleShootingResult

__all__ = [
    "PRESETS",
    "ArmResult",
    "Config",
    "LatentODE",
    "MultipleShootingConfig",
    "MultipleShootingResult",
    "RecognitionNet",
    "Result",
    "SecondOrderDynamics",
    "block_starts",
    "build_model",
    "check_claims",
    "elbo",
    "figures",
    "forecast",
    "kl_norm_norm",
    "lr_sweep",
    "make_pendulum",
    "plot_curves",
    "plot_example",
    "plot_grad_norm",
    "plot_step",
    "run",
    "solve_blocks",
]
