"""Supervised Metric Learning to Rank for Retrieval via Contextual Similarity Optimization.

Liao, Tsiligkaridis, Kulis. ICML 2023.
Paper: https://arxiv.org/abs/2210.01908 ·
Code: https://github.com/Chris210634/metric-learning-using-contextual-similarity

* ``method``: contextual similarity (neighbourhood overlap with the heuristic Heaviside
  gradient), the contextual, contrastive and regularizer losses, and the hybrid loss.
* ``experiment``: presets, ``run`` (the contrastive baseline, the hybrid loss and the control
  without the contextual term, at several label-noise rates, measured by retrieval: Recall@K
  and MAP@R, with the raw pixels as the floor training must beat).
* ``plots`` and ``claims``: retrieval against noise, and the robustness claim measured.
"""

from companion.papers.contextual_similarity.claims import check_claims
from companion.papers.contextual_similarity.experiment import (
    PRESETS,
    ArmResult,
    ClassBatches,
    ContextualSimilarityConfig,
    ContextualSimilarityResult,
    build_model,
    load_data,
    lr_milestones,
    run,
    shifted,
    symmetric_noise,
)
from companion.papers.contextual_similarity.method import (
    LOSSES,
    Embedder,
    GreaterThan,
    contextual_loss,
    contextual_similarity,
    margin_contrastive,
    neighbourhood_mask,
    retrieval_loss,
    similarity_regularizer,
)
from companion.papers.contextual_similarity.plots import (
    figures,
    plot_gallery,
    plot_recall_vs_noise,
    plot_similarities,
    plot_training,
)

Config = ContextualSimilarityConfig
Result = ContextualSimilarityResult

__all__ = [
    "LOSSES",
    "PRESETS",
    "ArmResult",
    "ClassBatches",
    "Config",
    "ContextualSimilarityConfig",
    "ContextualSimilarityResult",
    "Embedder",
    "GreaterThan",
    "Result",
    "build_model",
    "check_claims",
    "contextual_loss",
    "contextual_similarity",
    "figures",
    "load_data",
    "lr_milestones",
    "margin_contrastive",
    "neighbourhood_mask",
    "plot_gallery",
    "plot_recall_vs_noise",
    "plot_similarities",
    "plot_training",
    "retrieval_loss",
    "run",
    "shifted",
    "similarity_regularizer",
    "symmetric_noise",
]
