"""On Uni-Modal Feature Learning in Supervised Multi-Modal Learning.

Chenzhuang Du, Jiaye Teng, Tingle Li, Yichen Liu, Tianyuan Yuan, Yue Wang, Yang Yuan, Hang Zhao.
ICML 2023. Paper: https://proceedings.mlr.press/v202/du23e.html · arXiv:
https://arxiv.org/abs/2305.01233 · Code: none found.

Multi-modal data carry uni-modal features (learnable from one modality) and paired features
(learnable only from both). Late-fusion joint training under-learns the uni-modal features of a
modality ("modality laziness"). The Uni-Modal Ensemble (UME) trains one model per modality and
averages them; the Uni-Modal Teacher (UMT) trains the fused model while distilling the uni-modal
models' features into its encoders; a rule picks UME when paired features add little, UMT when
they matter.

Reconstructed here (the paper's body and code were not reachable, only its abstract): the
synthetic two-modality data, UME's combination (mean of probabilities), the distillation layer
(the encoder output) with α chosen on validation from a small grid, and the rule's form (UME if
its validation accuracy is at least naive fusion's, else UMT).

* ``method``: data model, encoders, late fusion, UMT's loss, UME's prediction, the rule, probe.
* ``experiment``: presets and ``run`` (both datasets, every recipe, several seeds).
* ``plots`` and ``claims``: figures and the thesis measured.
"""

from companion.papers.unimodal_features.claims import check_claims
from companion.papers.unimodal_features.experiment import (
    DATASETS,
    PRESETS,
    Part,
    UniModalConfig,
    UniModalResult,
    make_splits,
    run,
    run_part,
)
from companion.papers.unimodal_features.method import (
    LateFusion,
    UniModalModel,
    distillation_loss,
    draw_world,
    guiding_rule,
    probe_accuracy,
    sample,
    ume_probabilities,
    umt_loss,
)
from companion.papers.unimodal_features.plots import figures, plot_probe_curves, plot_recipes

Config = UniModalConfig
Result = UniModalResult

__all__ = [
    "DATASETS",
    "PRESETS",
    "Config",
    "LateFusion",
    "Part",
    "Result",
    "UniModalConfig",
    "UniModalModel",
    "UniModalResult",
    "check_claims",
    "distillation_loss",
    "draw_world",
    "figures",
    "guiding_rule",
    "make_splits",
    "plot_probe_curves",
    "plot_recipes",
    "probe_accuracy",
    "run",
    "run_part",
    "sample",
    "ume_probabilities",
    "umt_loss",
]
