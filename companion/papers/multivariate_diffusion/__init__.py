"""Where to Diffuse, How to Diffuse, and How to Get Back: Automated Learning for Multivariate
Diffusions (MDM).

Singhal, Goldstein, Ranganath. ICLR 2023. Paper: https://openreview.net/forum?id=osei3IzUia ·
Code: https://github.com/rajesh-lab/MultivariateDiffusionModels

* ``method``: linear multivariate diffusions with auxiliary variables (Q skew-symmetric, D PSD),
  their transition kernel by a matrix exponential, the DSM ELBO for any of them; VPSDE and CLD
  as fixed instances, (Q, D) learned.
* ``experiment``: presets, ``run`` (VPSDE, CLD, learned MDM and its frozen control on 2-D data).
* ``plots`` and ``claims``: training curves, test bits per dimension, kernels; the thesis measured.
"""

from companion.papers.multivariate_diffusion.claims import check_claims
from companion.papers.multivariate_diffusion.experiment import (
    PRESETS,
    ArmResult,
    MDMConfig,
    MDMModel,
    MDMResult,
    make_data,
    run,
)
from companion.papers.multivariate_diffusion.method import (
    Diffusion,
    ScoreNet,
    beta_fn,
    bits_per_dim,
    elbo,
    exact_gaussian_eps_model,
    gaussian_elbo_closed_form,
    int_beta_fn,
    make_diffusion,
    moments_by_ode,
    sample_time,
)
from companion.papers.multivariate_diffusion.plots import (
    figures,
    plot_kernels,
    plot_noised,
    plot_training,
)

Config = MDMConfig
Result = MDMResult

__all__ = [
    "PRESETS",
    "ArmResult",
    "Config",
    "Diffusion",
    "MDMConfig",
    "MDMModel",
    "MDMResult",
    "Result",
    "ScoreNet",
    "beta_fn",
    "bits_per_dim",
    "check_claims",
    "elbo",
    "exact_gaussian_eps_model",
    "figures",
    "gaussian_elbo_closed_form",
    "int_beta_fn",
    "make_data",
    "make_diffusion",
    "moments_by_ode",
    "plot_kernels",
    "plot_noised",
    "plot_training",
    "run",
    "sample_time",
]
