"""CIDER: How to Exploit Hyperspherical Embeddings for Out-of-Distribution Detection?

Ming, Sun, Dia, Li. ICLR 2023.
Paper: https://openreview.net/forum?id=aEFaE0W5pAd · Code: https://github.com/deeplearning-wisc/cider

* ``method``: EMA class prototypes on the unit sphere, the dispersion and compactness losses,
  SupCon (the baseline), the KNN distance score, and the angles that measure dispersion and
  compactness.
* ``experiment``: presets, ``run`` (CIDER vs SupCon vs cross-entropy on one encoder, scored on
  held-out classes, noise and pixel-shuffled images).
* ``plots`` and ``claims``: the figures, and the paper's thesis measured at small scale.
"""

from companion.papers.cider.claims import check_claims
from companion.papers.cider.experiment import (
    PRESETS,
    ArmResult,
    CiderConfig,
    CiderResult,
    build_model,
    load_data,
    ood_sets,
    run,
)
from companion.papers.cider.method import (
    HypersphereNet,
    cider_loss,
    compactness_degrees,
    compactness_loss,
    dispersion_degrees,
    dispersion_loss,
    ema_update,
    energy_score,
    init_prototypes,
    knn_score,
    msp_score,
    supcon_loss,
)
from companion.papers.cider.plots import (
    figures,
    plot_detection,
    plot_geometry,
    plot_loss,
    plot_scores,
)

Config = CiderConfig
Result = CiderResult

__all__ = [
    "PRESETS",
    "ArmResult",
    "CiderConfig",
    "CiderResult",
    "Config",
    "HypersphereNet",
    "Result",
    "build_model",
    "check_claims",
    "cider_loss",
    "compactness_degrees",
    "compactness_loss",
    "dispersion_degrees",
    "dispersion_loss",
    "ema_update",
    "energy_score",
    "figures",
    "init_prototypes",
    "knn_score",
    "load_data",
    "msp_score",
    "ood_sets",
    "plot_detection",
    "plot_geometry",
    "plot_loss",
    "plot_scores",
    "run",
    "supcon_loss",
]
