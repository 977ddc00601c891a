"""NP-SemiSeg: When Neural Processes meet Semi-Supervised Semantic Segmentation.

Wang, Massiceti, Hu, Pavlovic, Lukasiewicz. ICML 2023.
Code: https://github.com/Jianf-Wang/NP-SemiSeg

* ``method``: the NP head (embedding φ, per-class memories, per-channel aggregator, latent
  Gaussian, decoder of T samples), the KL term, uncertainty scores and mIoU.
* ``experiment``: presets, ``run`` (labelled-only, mean teacher with a softmax head, and the NP
  head in the same mean teacher) on synthetic shape scenes with few labelled masks.
* ``plots`` and ``claims``: the figures and the paper's claims measured.
"""

from companion.papers.np_semiseg.claims import check_claims
from companion.papers.np_semiseg.experiment import (
    ARMS,
    PRESETS,
    ArmResult,
    NPSemiSegConfig,
    NPSemiSegResult,
    build_model,
    load_data,
    make_scenes,
    run,
)
from companion.papers.np_semiseg.method import (
    ClassMemory,
    NPHead,
    aggregate,
    confusion,
    gaussian_kl,
    max_prob_uncertainty,
    mean_iou,
    predictive,
    predictive_entropy,
    sample_spread,
    threshold_pseudo_labels,
)
from companion.papers.np_semiseg.plots import draw_examples, figures, plot_examples, plot_training

Config = NPSemiSegConfig
Result = NPSemiSegResult

__all__ = [
    "ARMS",
    "PRESETS",
    "ArmResult",
    "ClassMemory",
    "Config",
    "NPHead",
    "NPSemiSegConfig",
    "NPSemiSegResult",
    "Result",
    "aggregate",
    "build_model",
    "check_claims",
    "confusion",
    "draw_examples",
    "figures",
    "gaussian_kl",
    "load_data",
    "make_scenes",
    "max_prob_uncertainty",
    "mean_iou",
    "plot_examples",
    "plot_training",
    "predictive",
    "predictive_entropy",
    "run",
    "sample_spread",
    "threshold_pseudo_labels",
]
