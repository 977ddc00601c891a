"""Λ-DARTS: Mitigating Performance Collapse by Harmonizing Operation Selection among Cells.

Movahedi, Adabinejad, Imani, Keshavarz, Dehghani, Shakery, Araabi. ICLR 2023.
Paper: https://openreview.net/forum?id=oztkQizr3kk · Code: https://github.com/dr-faustus/Lambda-DARTS

* ``method``: the DARTS search network (mixed operations, α shared by the cells, per-cell
  copies of the mixing weights), the layer alignment Λ, its gradient, the finite-difference
  Λ-DARTS regulariser and the discretisation of a cell.
* ``experiment``: presets, ``run`` (DARTS vs Λ-DARTS search, then retraining of each derived cell).
* ``plots`` and ``claims``: Λ and the skip-connection pull per cell over the search epochs.
"""

from companion.papers.lambda_darts.claims import check_claims
from companion.papers.lambda_darts.experiment import (
    PRESETS,
    ArmResult,
    DartsOptimizer,
    LambdaDartsConfig,
    LambdaDartsResult,
    run,
    skip_pull,
)
from companion.papers.lambda_darts.method import (
    PRIMITIVES,
    MixedOp,
    SearchNetwork,
    alignment_direction,
    derive_genotype,
    genotype_weights,
    lambda_darts_gradients,
    layer_alignment,
    parameter_free_mass,
    validation_gradients,
)
from companion.papers.lambda_darts.plots import figures, plot_alignment, plot_skip_pull

Config = LambdaDartsConfig
Result = LambdaDartsResult

__all__ = [
    "PRESETS",
    "PRIMITIVES",
    "ArmResult",
    "Config",
    "DartsOptimizer",
    "LambdaDartsConfig",
    "LambdaDartsResult",
    "MixedOp",
    "Result",
    "SearchNetwork",
    "alignment_direction",
    "check_claims",
    "derive_genotype",
    "figures",
    "genotype_weights",
    "lambda_darts_gradients",
    "layer_alignment",
    "parameter_free_mass",
    "plot_alignment",
    "plot_skip_pull",
    "run",
    "skip_pull",
    "validation_gradients",
]
