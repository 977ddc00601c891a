"""CounTS: Self-Interpretable Time Series Prediction with Counterfactual Explanations.

Yan and Wang. ICML 2023. Paper: https://proceedings.mlr.press/v202/yan23d.html · Code: none
found (announced at github.com/Wang-ML-Lab/self-interpretable-time-series, never available here).

* ``method``: the dosing simulator (the ground truth), the CounTS variational model, its
  counterfactual inference (abduction, action, prediction) and Wachter's gradient baseline.
* ``experiment``: presets, ``run`` (CounTS and a black-box classifier, explanations judged by
  the simulator).
* ``plots`` and ``claims``: the paper's thesis measured at small scale.
"""

from companion.papers.counts.claims import check_claims
from companion.papers.counts.experiment import (
    ARMS,
    PRESETS,
    ArmResult,
    CountsConfig,
    CountsResult,
    ExplainerResult,
    action_mask,
    build_model,
    fit_model,
    make_data,
    run,
)
from companion.papers.counts.method import (
    Counterfactual,
    CounTS,
    Simulator,
    abduction,
    counts_counterfactual,
    evaluate_counterfactual,
    negative_elbo,
    prediction,
    search_action,
    wachter_counterfactual,
)
from companion.papers.counts.plots import (
    figures,
    plot_dose_change,
    plot_examples,
    plot_patient,
    plot_validity,
)

Config = CountsConfig
Result = CountsResult

__all__ = [
    "ARMS",
    "PRESETS",
    "ArmResult",
    "Config",
    "CounTS",
    "Counterfactual",
    "CountsConfig",
    "CountsResult",
    "ExplainerResult",
    "Result",
    "Simulator",
    "abduction",
    "action_mask",
    "build_model",
    "check_claims",
    "counts_counterfactual",
    "evaluate_counterfactual",
    "figures",
    "fit_model",
    "make_data",
    "negative_elbo",
    "plot_dose_change",
    "plot_examples",
    "plot_patient",
    "plot_validity",
    "prediction",
    "run",
    "search_action",
    "wachter_counterfactual",
]
