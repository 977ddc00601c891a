"""Information Plane Analysis for Dropout Neural Networks.

Linara Adilova, Bernhard C. Geiger, Asja Fischer. ICLR 2023.
Paper: https://openreview.net/forum?id=bQB6qozaBw · arXiv: https://arxiv.org/abs/2303.00596 ·
Code: https://github.com/link-er/IP_dropout

An information plane plots, for a hidden representation Z, the mutual information I(X;Z) with
the input against I(Z;Y) with the label, over training. For a deterministic network and a
continuous input, Z = f(X) is a function of X and I(X;Z) is infinite (Amjad & Geiger, 2020);
what binning estimators report instead depends on the bin size. The paper shows that dropout
with continuous noise, ``Z = f(X) ⊙ D`` with ``D_i ~ N(1, σ²)`` (Gaussian dropout), makes
I(X;Z) finite, and estimates it as (all in nats)

    I(X;Z) = h(Z) − h(Z|X),
    h(Z|X) = E_X Σ_i log(√(2πe) σ |f_i(X)|)                     (exact),
    h(Z)   ≈ −(1/S) Σ_s log p(z_s),  p(z) = (1/N) Σ_n N(z; f(x_n), σ² diag f(x_n)²)
                                                                (Monte Carlo, z_s ~ p),

with X uniform over the N inputs of a dataset.

* ``method``: Gaussian dropout, the network with a dropout representation, the estimators
  (dropout I(X;Z), mixture and cross-entropy-bound I(Z;Y), binning).
* ``experiment``: presets, ``run`` (dropout vs deterministic network, information planes
  measured while training; the estimator's settings, mixture components M and data size N,
  swept at the end).
* ``plots`` and ``claims``: the information planes and the paper's thesis, measured.
* ``backbones`` and ``data_sources``: ResNet-18 and the full-MNIST reader for the full presets.
"""

from companion.papers.information_plane.claims import binning_sweep, check_claims
from companion.papers.information_plane.experiment import (
    PRESETS,
    ArmResult,
    InformationPlaneConfig,
    InformationPlaneResult,
    build_model,
    leave_one_out_information,
    load_data,
    log_n,
    measure,
    run,
)
from companion.papers.information_plane.method import (
    DropoutNetwork,
    GaussianDropout,
    MIEstimate,
    bin_representation,
    binned_mutual_information,
    conditional_entropy,
    cross_entropy_bound,
    diagonal_mixture_log_density,
    discrete_entropy,
    dropout_mutual_information,
    gaussian_dropout_std,
    label_entropy,
    mixture_label_information,
    pick_components,
    row_ids,
    sample_dropout_representation,
    softplus_mlp,
)
from companion.papers.information_plane.plots import (
    draw_bins,
    figures,
    plot_binning_plane,
    plot_data_size,
    plot_estimator_settings,
    plot_information_plane,
)

Config = InformationPlaneConfig
Result = InformationPlaneResult

__all__ = [
    "PRESETS",
    "ArmResult",
    "Config",
    "DropoutNetwork",
    "GaussianDropout",
    "InformationPlaneConfig",
    "InformationPlaneResult",
    "MIEstimate",
    "Result",
    "bin_representation",
    "binned_mutual_information",
    "binning_sweep",
    "build_model",
    "check_claims",
    "conditional_entropy",
    "cross_entropy_bound",
    "diagonal_mixture_log_density",
    "discrete_entropy",
    "draw_bins",
    "dropout_mutual_information",
    "figures",
    "gaussian_dropout_std",
    "label_entropy",
    "leave_one_out_information",
    "load_data",
    "log_n",
    "measure",
    "mixture_label_information",
    "pick_components",
    "plot_binning_plane",
    "plot_data_size",
    "plot_estimator_settings",
    "plot_information_plane",
    "row_ids",
    "run",
    "sample_dropout_representation",
    "softplus_mlp",
]
