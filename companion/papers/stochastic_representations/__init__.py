"""Decoupled Training for Long-Tailed Classification With Stochastic Representations.

Giung Nam, Sunguk Jang and Juho Lee. ICLR 2023.
Paper: https://openreview.net/forum?id=bcYZwYo-0t · arXiv: https://arxiv.org/abs/2304.09426
· Code: none found.

Decoupled long-tail learning trains the representation first and re-trains the classifier on
frozen features with class-balanced sampling. The paper trains the feature extractor with
stochastic weight averaging (SWA), then re-trains the classifier on *stochastic
representations*, the features of extractors drawn from SWA-Gaussian (SWAG), and distils the
predictions averaged over those draws into the classifier on the SWA features:

    L = (1/S) Σ_s CE(g(φ(x; θ̃_s)), y) + λ T² KL(p̄_T(x) ‖ softmax(g(φ(x; θ̄)) / T)),
    θ̃_s ~ N(θ̄, ½ Σ_diag + D Dᵀ / (2(K−1))),   p̄_T(x) = (1/S) Σ_s softmax(g(φ(x; θ̃_s)) / T).

The loss is reconstructed from the paper's abstract and figure captions (its Section 4 text and
code were not available): see ``method.retraining_loss``.

* ``method``: long-tail counts and class-balanced batches, SWAG moments and draws, stochastic
  representations, the re-training loss, per-shot accuracy and ECE.
* ``experiment``: presets and ``run`` (two stage-1 runs, five classifiers, several seeds).
* ``plots`` and ``claims``: the figures and the thesis measured at small scale.
"""

from companion.papers.stochastic_representations.claims import check_claims
from companion.papers.stochastic_representations.experiment import (
    ARMS,
    PRESETS,
    ArmResult,
    SeedResult,
    StochasticConfig,
    StochasticResult,
    build_extractor,
    load_data,
    retrain_classifier,
    run,
    run_seed,
    train_stage1,
)
from companion.papers.stochastic_representations.method import (
    ECE_BINS,
    SGD,
    SWAGMoments,
    class_balanced_batches,
    distillation_target,
    expected_calibration_error,
    features,
    flat_parameters,
    group_accuracy,
    load_flat_parameters,
    long_tail_counts,
    long_tail_subset,
    retraining_loss,
    shot_groups,
    stochastic_representations,
)
from companion.papers.stochastic_representations.plots import (
    figures,
    plot_feature_cloud,
    plot_long_tail,
    plot_reliability,
    plot_shot_accuracy,
)

Config = StochasticConfig
Result = StochasticResult

__all__ = [
    "ARMS",
    "ECE_BINS",
    "PRESETS",
    "ArmResult",
    "Config",
    "Result",
    "SGD",
    "SWAGMoments",
    "SeedResult",
    "StochasticConfig",
    "StochasticResult",
    "build_extractor",
    "check_claims",
    "class_balanced_batches",
    "distillation_target",
    "expected_calibration_error",
    "features",
    "figures",
    "flat_parameters",
    "group_accuracy",
    "load_data",
    "load_flat_parameters",
    "long_tail_counts",
    "long_tail_subset",
    "plot_feature_cloud",
    "plot_long_tail",
    "plot_reliability",
    "plot_shot_accuracy",
    "retrain_classifier",
    "retraining_loss",
    "run",
    "run_seed",
    "shot_groups",
    "stochastic_representations",
    "train_stage1",
]
