"""What Can We Learn From The Selective Prediction And Uncertainty Estimation Performance Of
523 ImageNet Classifiers?

Galil, Dabbah, El-Yaniv. ICLR 2023.
Paper: https://openreview.net/forum?id=p66AzKi6Xim · Code:
https://github.com/IdoGalil/benchmarking-uncertainty-estimation-performance

* ``method``: confidence κ (max softmax, float64), temperature scaling as the official code fits
  it, the paper's metrics on one model (AUROC, AURC, E-AURC, SAC, ECE from
  ``companion.core.metrics``), the zoo's training losses (label smoothing, distillation).
* ``experiment``: presets, ``run`` (a zoo trained on digits, or stored ImageNet outputs).
* ``plots`` and ``claims``: risk–coverage curves, the zoo's metrics against accuracy, and the
  paper's findings measured.
"""

from companion.papers.selective_prediction.claims import check_claims
from companion.papers.selective_prediction.experiment import (
    PRESETS,
    MemberResult,
    SelectivePredictionConfig,
    SelectivePredictionResult,
    build_model,
    build_teacher,
    ensemble_logits,
    hidden_widths,
    read_logits,
    run,
    shuffle_within_class,
    ts_split,
)
from companion.papers.selective_prediction.method import (
    distillation_loss,
    evaluate_with_temperature_scaling,
    fit_temperature,
    label_smoothing_loss,
    max_softmax,
    nll,
    risk_coverage_curve,
    sac_key,
    spearman,
    uncertainty_metrics,
)
from companion.papers.selective_prediction.plots import (
    figures,
    plot_distillation,
    plot_member,
    plot_near_accuracy_pairs,
    plot_risk_coverage,
    plot_temperature_effect,
    plot_zoo,
)

Config = SelectivePredictionConfig
Result = SelectivePredictionResult

__all__ = [
    "PRESETS",
    "Config",
    "MemberResult",
    "Result",
    "SelectivePredictionConfig",
    "SelectivePredictionResult",
    "build_model",
    "build_teacher",
    "check_claims",
    "distillation_loss",
    "ensemble_logits",
    "evaluate_with_temperature_scaling",
    "figures",
    "fit_temperature",
    "hidden_widths",
    "label_smoothing_loss",
    "max_softmax",
    "nll",
    "plot_distillation",
    "plot_member",
    "plot_near_accuracy_pairs",
    "plot_risk_coverage",
    "plot_temperature_effect",
    "plot_zoo",
    "read_logits",
    "risk_coverage_curve",
    "run",
    "sac_key",
    "shuffle_within_class",
    "spearman",
    "ts_split",
    "uncertainty_metrics",
]
