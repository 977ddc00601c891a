"""σReparam: Stabilizing Transformer Training by Preventing Attention Entropy Collapse.

Zhai, Likhomanenko, Littwin, Busbridge, Ramapuram, Zhang, Gu, Susskind. ICML 2023.
Paper: https://arxiv.org/abs/2303.06296 · Code: https://github.com/apple/ml-sigma-reparam

* ``method``: the σReparam layer Ŵ = γ/σ(W)·W (Eq. 3) with one power-iteration step per
  forward, the converter for a whole model, attention entropy and Theorem 3.1's lower bound.
* ``experiment``: presets, ``run`` (baseline vs σReparam ViT, entropy measured while training).
* ``plots`` and ``claims``: the paper's Fig. 1 at small scale, and its thesis measured.
"""

from companion.papers.sigma_reparam.claims import check_claims
from companion.papers.sigma_reparam.experiment import (
    PRESETS,
    ArmResult,
    SigmaReparamConfig,
    SigmaReparamResult,
    attention_stats,
    build_model,
    run,
)
from companion.papers.sigma_reparam.method import (
    SigmaReparam,
    attention_entropy,
    centered_logit_norm,
    convert_to_sigma_reparam,
    entropy_lower_bound,
    power_iteration_step,
    remove_normalization,
)
from companion.papers.sigma_reparam.plots import (
    figures,
    plot_bound,
    plot_entropy,
    plot_layer,
    plot_logit_norm,
)

Config = SigmaReparamConfig
Result = SigmaReparamResult

__all__ = [
    "PRESETS",
    "ArmResult",
    "Config",
    "Result",
    "SigmaReparam",
    "SigmaReparamConfig",
    "SigmaReparamResult",
    "attention_entropy",
    "attention_stats",
    "build_model",
    "centered_logit_norm",
    "check_claims",
    "convert_to_sigma_reparam",
    "entropy_lower_bound",
    "figures",
    "plot_bound",
    "plot_entropy",
    "plot_layer",
    "plot_logit_norm",
    "power_iteration_step",
    "remove_normalization",
    "run",
]
