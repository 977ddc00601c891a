"""E-CRF: Embedded Conditional Random Field for Boundary-caused Class Weights Confusion in
Semantic Segmentation.

Jie Zhu, Huabin Huang, Banghuai Li, Leye Wang. ICLR 2023.
Paper: https://openreview.net/forum?id=g1GnnCI1OrC · Code: https://github.com/JiePKU/E-CRF
(core module only; the training code is not released).

* ``method``: the E-CRF layer (kernel ⟨g_i, g_j⟩ of image and position embeddings,
  compatibility sigmoid(wᵀF_j), message Σ_j k_ij μ_j F_j, superpixel prior), as ``ecrf_sp.py``.
* ``experiment``: synthetic scenes whose classes touch in known pairs, presets, ``run``
  (baseline, E-CRF, the ablation without superpixels and the centre-only control).
* ``plots`` and ``claims``: the paper's Fig. 1a at small scale, and its thesis measured.
"""

from companion.papers.e_crf.claims import check_claims
from companion.papers.e_crf.experiment import (
    COLOURS,
    METHODS,
    PAIRS,
    PRESETS,
    ArmResult,
    ECRFConfig,
    ECRFResult,
    SegNet,
    boundary_band,
    build_model,
    make_scenes,
    mean_iou,
    run,
    weight_similarity,
)
from companion.papers.e_crf.method import (
    ECRF,
    MessagePass,
    class_weight_similarity,
    neighbours,
    position_encoding,
    superpixel_mean,
)
from companion.papers.e_crf.plots import (
    figures,
    plot_examples,
    plot_scene,
    plot_similarity,
    plot_similarity_curves,
)

Config = ECRFConfig
Result = ECRFResult

__all__ = [
    "COLOURS",
    "ECRF",
    "METHODS",
    "PAIRS",
    "PRESETS",
    "ArmResult",
    "Config",
    "ECRFConfig",
    "ECRFResult",
    "MessagePass",
    "Result",
    "SegNet",
    "boundary_band",
    "build_model",
    "check_claims",
    "class_weight_similarity",
    "figures",
    "make_scenes",
    "mean_iou",
    "neighbours",
    "plot_examples",
    "plot_scene",
    "plot_similarity",
    "plot_similarity_curves",
    "position_encoding",
    "run",
    "superpixel_mean",
    "weight_similarity",
]
