"""Which is Better for Learning with Noisy Labels: The Semi-supervised Method or Modeling Label
Noise?

Yao, Gong, Du, Yu, Han, Zhang, Liu. ICML 2023 (PMLR v202, yao23a).
Paper: https://proceedings.mlr.press/v202/yao23a.html ·
Code: https://github.com/tmllab/2023_ICML_Which-is-Better-for-Learning-with-Noisy-Labels

* ``method``: causal and anticausal data, class-conditional label noise, Forward correction
  with anchor-point T̂, small-loss selection with entropy minimisation, and the paper's test of
  the causal direction (T′ from clusters, T̂* from a learned transition, their error, read
  relative to random clusters).
* ``experiment``: presets, ``run`` (every arm and the test on each dataset).
* ``plots`` and ``claims``: the comparison and the test at small scale, and the thesis measured.
"""

from companion.papers.noisy_labels_causal.claims import check_claims
from companion.papers.noisy_labels_causal.experiment import (
    ARMS,
    DATASETS,
    DIRECTION,
    PRESETS,
    DatasetResult,
    NoisyCausalConfig,
    NoisyCausalResult,
    NoisyPosterior,
    bayes_accuracy,
    build_model,
    load_dataset,
    load_mnist_idx,
    read_idx,
    run,
    train_dataset,
)
from companion.papers.noisy_labels_causal.method import (
    NOISE_TYPES,
    SigmoidTransition,
    anchor_transition,
    anticausal_gaussian,
    causal_gaussian,
    cdnl_loss,
    cdnl_probs,
    cluster_transition,
    count_transition,
    flip_labels,
    forward_loss,
    hungarian_match,
    relative_error,
    small_loss_selection,
    ssl_loss,
    transition_error,
    transition_matrix,
    uninformative_transition,
)
from companion.papers.noisy_labels_causal.plots import (
    figures,
    plot_accuracy,
    plot_data,
    plot_matrices,
    plot_test,
)

Config = NoisyCausalConfig
Result = NoisyCausalResult

__all__ = [
    "ARMS",
    "DATASETS",
    "DIRECTION",
    "NOISE_TYPES",
    "PRESETS",
    "Config",
    "DatasetResult",
    "NoisyCausalConfig",
    "NoisyCausalResult",
    "NoisyPosterior",
    "Result",
    "SigmoidTransition",
    "anchor_transition",
    "anticausal_gaussian",
    "bayes_accuracy",
    "build_model",
    "causal_gaussian",
    "cdnl_loss",
    "cdnl_probs",
    "check_claims",
    "cluster_transition",
    "count_transition",
    "figures",
    "flip_labels",
    "forward_loss",
    "hungarian_match",
    "load_dataset",
    "load_mnist_idx",
    "plot_accuracy",
    "plot_data",
    "plot_matrices",
    "plot_test",
    "read_idx",
    "relative_error",
    "run",
    "small_loss_selection",
    "ssl_loss",
    "train_dataset",
    "transition_error",
    "transition_matrix",
    "uninformative_transition",
]
