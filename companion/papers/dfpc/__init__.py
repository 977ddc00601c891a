"""DFPC: Data flow driven pruning of coupled channels without data.

Narshana, Murti, Bhattacharyya. ICLR 2023.
Paper: https://openreview.net/forum?id=mhnHqRqcjYU · Code: https://github.com/TanayNarshana/DFPC-Pruning

* ``method``: data flow couplings traced with torch.fx, the data-free saliency of a channel
  (sums of unrolled-convolution matrices, computed without forming them), global selection and
  structural pruning of coupled channels.
* ``experiment``: presets, ``run`` (train a bottleneck ResNet, prune by DFPC/L1/random with and
  without coupled channels, measure accuracy and single-thread CPU latency).
* ``plots`` and ``claims``: accuracy against measured speed-up, and the paper's thesis measured.
"""

from companion.papers.dfpc.claims import (
    check_claims,
    flop_speedup_at_drop,
    mean_accuracy,
    speedup_at_drop,
)
from companion.papers.dfpc.experiment import (
    PRESETS,
    Arm,
    DFPCConfig,
    DFPCResult,
    build_model,
    cpu_latency_seconds,
    evaluate,
    forward_flops,
    load_data,
    load_trained,
    run,
)
from companion.papers.dfpc.method import (
    DFC,
    BottleneckResNet,
    column_sums,
    conv_matrix,
    dfpc_saliency,
    l1_fanin_saliency,
    l1_saliency,
    prune,
    row_sums,
    saliencies,
    select_channels,
    select_matched,
    trace_dfcs,
)
from companion.papers.dfpc.plots import figures, plot_curves, plot_tradeoff

Config = DFPCConfig
Result = DFPCResult

__all__ = [
    "DFC",
    "PRESETS",
    "Arm",
    "BottleneckResNet",
    "Config",
    "DFPCConfig",
    "DFPCResult",
    "Result",
    "build_model",
    "check_claims",
    "column_sums",
    "conv_matrix",
    "cpu_latency_seconds",
    "dfpc_saliency",
    "evaluate",
    "forward_flops",
    "figures",
    "flop_speedup_at_drop",
    "l1_fanin_saliency",
    "l1_saliency",
    "load_data",
    "load_trained",
    "mean_accuracy",
    "plot_curves",
    "plot_tradeoff",
    "prune",
    "row_sums",
    "run",
    "saliencies",
    "select_channels",
    "select_matched",
    "speedup_at_drop",
    "trace_dfcs",
]
