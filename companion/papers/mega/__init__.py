"""Mega: Moving Average Equipped Gated Attention.

Ma, Zhou, Kong, He, Gui, Neubig, May, Zettlemoyer. ICLR 2023.
Paper: https://arxiv.org/abs/2209.10655 · Code: https://github.com/facebookresearch/mega

* ``method``: the multi-dimensional damped EMA (by FFT and by its recurrence), the
  laplace attention function, the relative position bias, the single-head gated attention layer
  with optional chunking (Mega-chunk), and a Mega classifier.
* ``experiment``: presets, the motif task, ``run`` (Mega vs Mega without EMA vs a softmax
  transformer of the same size; forward time of full vs chunked attention against length).
* ``plots`` and ``claims``: learned EMA kernels, time against length, the thesis measured.
"""

from companion.papers.mega.claims import check_claims, steps_to
from companion.papers.mega.experiment import (
    ARMS,
    PRESETS,
    ArmResult,
    MegaConfig,
    MegaResult,
    SoftmaxTransformer,
    build_model,
    loglog_slope,
    motif_task,
    n_params,
    run,
    time_layer,
)
from companion.papers.mega.method import (
    MegaClassifier,
    MegaLayer,
    MultiDimEMA,
    NormalizedFFN,
    RelativePositionBias,
    ema_recurrence,
    laplace,
)
from companion.papers.mega.plots import (
    figures,
    plot_accuracy,
    plot_kernel_channel,
    plot_kernels,
    plot_timing,
)

Config = MegaConfig
Result = MegaResult

__all__ = [
    "ARMS",
    "PRESETS",
    "ArmResult",
    "Config",
    "MegaClassifier",
    "MegaConfig",
    "MegaLayer",
    "MegaResult",
    "MultiDimEMA",
    "NormalizedFFN",
    "RelativePositionBias",
    "Result",
    "SoftmaxTransformer",
    "build_model",
    "check_claims",
    "steps_to",
    "ema_recurrence",
    "figures",
    "laplace",
    "loglog_slope",
    "motif_task",
    "n_params",
    "plot_accuracy",
    "plot_kernel_channel",
    "plot_kernels",
    "plot_timing",
    "run",
    "time_layer",
]
