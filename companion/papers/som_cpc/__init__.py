"""SOM-CPC: Unsupervised Contrastive Learning with Self-Organizing Maps for Structured
Representations of High-Rate Time Series.

Huijben, Nijdam, Overeem, van Gilst, van Sloun. ICML 2023.
Paper: https://proceedings.mlr.press/v202/huijben23a.html · Code: https://github.com/IamHuijben/SOM-CPC

* ``method``: the synthetic regime-switching signals, the 1-D CNN encoder, CPC scores and
  InfoNCE (Sec. 3.1), the SOM with its Gaussian neighbourhood, commitment and SOM losses
  (Sec. 3.2–3.3), and the map metrics (purity, NMI, smoothness, node-label frequency error,
  topographic error).
* ``experiment``: presets, ``run`` (SOM-CPC vs CPC followed by a SOM vs an autoencoder + SOM).
* ``plots`` and ``claims``: the maps coloured by regime, and the paper's thesis measured.
"""

from companion.papers.som_cpc.claims import check_claims
from companion.papers.som_cpc.experiment import (
    BETA_GRID,
    LABELS,
    METHODS,
    PRESETS,
    SOM_SHARE,
    ArmResult,
    SOMCPCConfig,
    SOMCPCModel,
    SOMCPCResult,
    beta_sweep,
    build_model,
    load_data,
    make_step,
    measure_map,
    run,
    select_beta,
)
from companion.papers.som_cpc.method import (
    SOM,
    ConvEncoder1D,
    commitment_loss,
    contingency,
    cpc_loss,
    cpc_scores,
    label_error,
    make_regime_signals,
    nmi,
    node_labels,
    purity,
    sigma_schedule,
    smoothness,
    som_loss,
    topographic_error,
)
from companion.papers.som_cpc.plots import (
    figures,
    plot_arm_map,
    plot_beta_sweep,
    plot_curves,
    plot_maps,
    plot_signal,
)

Config = SOMCPCConfig
Result = SOMCPCResult

__all__ = [
    "BETA_GRID",
    "SOM_SHARE",
    "select_beta",
    "LABELS",
    "METHODS",
    "PRESETS",
    "SOM",
    "ArmResult",
    "Config",
    "ConvEncoder1D",
    "Result",
    "SOMCPCConfig",
    "SOMCPCModel",
    "SOMCPCResult",
    "beta_sweep",
    "build_model",
    "check_claims",
    "commitment_loss",
    "contingency",
    "cpc_loss",
    "cpc_scores",
    "label_error",
    "figures",
    "load_data",
    "make_regime_signals",
    "make_step",
    "measure_map",
    "nmi",
    "node_labels",
    "plot_arm_map",
    "plot_beta_sweep",
    "plot_curves",
    "plot_maps",
    "plot_signal",
    "purity",
    "run",
    "sigma_schedule",
    "smoothness",
    "som_loss",
    "topographic_error",
]
