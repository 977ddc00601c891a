"""SIE: Self-supervised learning of Split Invariant Equivariant representations.

Garrido, Najman, LeCun. ICML 2023.
Paper: https://arxiv.org/abs/2302.10283 · Code: https://github.com/facebookresearch/SIE

* ``method``: the split representation, the per-part projectors, the bias-free linear
  hypernetwork predictor W(z), the SIE and VICReg losses, and the evaluation measures (MRR among
  rotations, R² of the relative rotation, rotation share of a representation).
* ``experiment``: presets and ``run`` (SIE against VICReg on digits rotated by known angles).
* ``plots`` and ``claims``: the figures, and the paper's thesis measured.
"""

from companion.data.augment import rotate
from companion.papers.sie.claims import check_claims
from companion.papers.sie.experiment import (
    PRESETS,
    ArmResult,
    RotatedPairs,
    SIEConfig,
    SIEResult,
    build_model,
    measure,
    run,
)
from companion.papers.sie.method import (
    SIE,
    HyperNetPredictor,
    VICReg,
    apply_linear_hypernet,
    bilinear_ridge_r2,
    chance_mrr,
    covariance_loss,
    fit_linear_hypernet,
    grid_angles,
    mean_reciprocal_rank,
    projector,
    r2_score,
    relative_rotation,
    rotation_share,
    sie_loss,
    variance_loss,
    vicreg_loss,
    vicreg_regularizers,
)
from companion.papers.sie.plots import (
    figures,
    plot_losses,
    plot_part,
    plot_scores,
    plot_similarity,
    plot_views,
)

Config = SIEConfig
Result = SIEResult

__all__ = [
    "PRESETS",
    "SIE",
    "ArmResult",
    "Config",
    "HyperNetPredictor",
    "Result",
    "RotatedPairs",
    "SIEConfig",
    "SIEResult",
    "VICReg",
    "apply_linear_hypernet",
    "bilinear_ridge_r2",
    "build_model",
    "chance_mrr",
    "check_claims",
    "covariance_loss",
    "figures",
    "fit_linear_hypernet",
    "grid_angles",
    "mean_reciprocal_rank",
    "measure",
    "plot_losses",
    "plot_part",
    "plot_scores",
    "plot_similarity",
    "plot_views",
    "projector",
    "r2_score",
    "relative_rotation",
    "rotate",
    "rotation_share",
    "run",
    "sie_loss",
    "variance_loss",
    "vicreg_loss",
    "vicreg_regularizers",
]
