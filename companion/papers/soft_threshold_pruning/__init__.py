"""A Unified Framework for Soft Threshold Pruning.

Chen, Ma, Fang, Zheng, Yu, Tian. ICLR 2023.
Paper: https://arxiv.org/abs/2302.13019 · Code: https://github.com/Yanqi-Chen/LATS

* ``method``: the soft-threshold reparameterisation w = sign(θ)·ReLU(|θ| − D) with identity
  backward, ISTA (proximal gradient on an L1 objective), the threshold schedules (LATS, S-LATS,
  fixed, linear) and gradual magnitude pruning.
* ``experiment``: presets, ``run`` (an MLP pruned to equal final sparsity under each schedule;
  the step-by-step ISTA comparison on a small lasso problem).
* ``plots`` and ``claims``: the figures, and the paper's claim measured.
"""

from companion.papers.soft_threshold_pruning.claims import check_claims, paired_summary
from companion.papers.soft_threshold_pruning.experiment import (
    PRESETS,
    ArmResult,
    PrunableMLP,
    SoftThresholdConfig,
    SoftThresholdResult,
    build_model,
    fixed_threshold,
    ista_comparison,
    lr_at,
    run,
    schedule_value,
)
from companion.papers.soft_threshold_pruning.method import (
    SCHEDULES,
    MagnitudeLinear,
    PseudoReLU,
    SoftThresholdLinear,
    gmp_sparsity,
    implied_l1,
    ista,
    lats_thresholds,
    magnitude_mask,
    prox_l1,
    reparam_sgd,
    s_lats,
    soft_threshold,
    soft_threshold_inverse,
    sparsity,
    threshold_fraction,
)
from companion.papers.soft_threshold_pruning.plots import (
    figures,
    plot_accuracy,
    plot_ista,
    plot_schedules,
)

Config = SoftThresholdConfig
Result = SoftThresholdResult

__all__ = [
    "PRESETS",
    "SCHEDULES",
    "ArmResult",
    "Config",
    "MagnitudeLinear",
    "PrunableMLP",
    "PseudoReLU",
    "Result",
    "SoftThresholdConfig",
    "SoftThresholdLinear",
    "SoftThresholdResult",
    "build_model",
    "check_claims",
    "figures",
    "fixed_threshold",
    "gmp_sparsity",
    "implied_l1",
    "ista",
    "ista_comparison",
    "lats_thresholds",
    "lr_at",
    "paired_summary",
    "magnitude_mask",
    "plot_accuracy",
    "plot_ista",
    "plot_schedules",
    "prox_l1",
    "reparam_sgd",
    "run",
    "s_lats",
    "schedule_value",
    "soft_threshold",
    "soft_threshold_inverse",
    "sparsity",
    "threshold_fraction",
]
