"""COCOA: Contrastive Corpus Attribution for Explaining Representations.

Lin, Chen, Kim, Lee. ICLR 2023.
Paper: https://arxiv.org/abs/2210.00107 · Code: https://github.com/suinleelab/cl-explainability

* ``method``: the scalar explanation targets (contrastive corpus similarity, corpus similarity,
  explicand self-similarity), corpus and foil sampling, Integrated Gradients through Captum, and
  the insertion/deletion curves of the corpus-majority probability with their AUC.
* ``experiment``: presets, ``run`` (a SimCLR encoder on digits, a linear eval head, every target
  attributed and scored).
* ``plots`` and ``claims``: the paper's insertion/deletion evaluation at small scale, and its
  thesis measured.
"""

from companion.papers.cocoa.claims import check_claims
from companion.papers.cocoa.experiment import (
    PRESETS,
    ClassEvaluation,
    CocoaConfig,
    CocoaResult,
    SimCLRModel,
    TargetResult,
    Trained,
    evaluate_class,
    load_data,
    randomized_encoder,
    run,
    sanity_checks,
    train_eval_head,
)
from companion.papers.cocoa.method import (
    KINDS,
    TARGETS,
    ClassLogit,
    ContrastiveCorpusSimilarity,
    CorpusMajorityProbability,
    CorpusSimilarity,
    SelfSimilarity,
    ablation_curves,
    ablation_inputs,
    attribute,
    auc,
    blur_baseline,
    encode,
    normalized_mean,
    rank_correlation,
    split_corpus_foil,
    step_sizes,
)
from companion.papers.cocoa.plots import (
    draw_class,
    figures,
    plot_attributions,
    plot_aucs,
    plot_curves,
    plot_loss,
    plot_sanity,
)

Config = CocoaConfig
Result = CocoaResult

__all__ = [
    "KINDS",
    "PRESETS",
    "TARGETS",
    "ClassEvaluation",
    "ClassLogit",
    "CocoaConfig",
    "CocoaResult",
    "Config",
    "ContrastiveCorpusSimilarity",
    "CorpusMajorityProbability",
    "CorpusSimilarity",
    "Result",
    "SelfSimilarity",
    "SimCLRModel",
    "TargetResult",
    "Trained",
    "ablation_curves",
    "ablation_inputs",
    "attribute",
    "auc",
    "blur_baseline",
    "check_claims",
    "draw_class",
    "encode",
    "evaluate_class",
    "figures",
    "load_data",
    "normalized_mean",
    "plot_attributions",
    "plot_aucs",
    "plot_curves",
    "plot_loss",
    "plot_sanity",
    "randomized_encoder",
    "rank_correlation",
    "run",
    "sanity_checks",
    "split_corpus_foil",
    "step_sizes",
    "train_eval_head",
]
