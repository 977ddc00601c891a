"""t-SimCNE: Unsupervised visualization of image datasets using contrastive learning.

Jan Niklas Böhm, Philipp Berens, Dmitry Kobak. ICLR 2023.
Paper: https://openreview.net/forum?id=nI2HmVA0hvt (arXiv:2210.09879) ·
Code: https://github.com/berenslab/t-simcne

t-SimCNE trains a network f: images → ℝ² with SimCLR's contrastive loss, measuring similarity in
the output space with t-SNE's Cauchy kernel instead of SimCLR's cosine:

    q(z_i, z_j) = 1 / (1 + ‖z_i − z_j‖²)                                            (Eq. 2)

    ℓ_i = −log [ q(z_i, z_{i+}) / Σ_{k≠i} q(z_i, z_k) ]                             (Eq. 1)

over the 2B augmented images of a batch (z_{i+}: the other view of the same image). Neighbours
are defined by data augmentation, not by pixel distances, so the 2-D map groups images by what
they show. Training is staged (dimensionality annealing): (1) 1000 epochs with a 128-d output;
(2) 50 epochs training only a new 2-d last layer; (3) 450 epochs fine-tuning everything at the
learning rate / 1000. Quality is measured by kNN accuracy (k = 15) in the 2-D output.

* ``method``: Cauchy similarity, InfoNCE, the CIFAR ResNet (``resnet18``) and projection head,
  the stage switch, the learning-rate rules, kornia augmentations, kNN accuracy.
* ``experiment``: presets, ``run`` (the three stages and the t-SNE-of-pixels baseline).
* ``plots`` and ``claims``: embeddings side by side, the stages, and the thesis measured.
"""

from companion.core.probes import knn_accuracy
from companion.data.augment import simclr_augmentation
from companion.papers.tsimcne.claims import check_claims
from companion.papers.tsimcne.experiment import (
    PRESETS,
    StageResult,
    TSimCNEConfig,
    TSimCNEResult,
    TSNEResult,
    build_model,
    embed,
    load_images,
    run,
    run_tsne,
    score,
    shift_onto_canvas,
    train_stages,
)
from companion.papers.tsimcne.method import (
    BasicBlock,
    ResNet,
    TSimCNE,
    cauchy_similarity,
    cosine_with_warmup,
    gaussian_similarity,
    infonce,
    lr_from_batch_size,
    resnet18,
    stage_learning_rates,
    start_stage,
)
from companion.papers.tsimcne.plots import (
    clusters,
    figures,
    knn_table,
    plot_cluster,
    plot_embeddings,
    plot_stages,
)

Config = TSimCNEConfig
Result = TSimCNEResult

__all__ = [
    "PRESETS",
    "BasicBlock",
    "Config",
    "ResNet",
    "Result",
    "StageResult",
    "TSNEResult",
    "TSimCNE",
    "TSimCNEConfig",
    "TSimCNEResult",
    "build_model",
    "cauchy_similarity",
    "check_claims",
    "clusters",
    "cosine_with_warmup",
    "embed",
    "figures",
    "gaussian_similarity",
    "infonce",
    "knn_accuracy",
    "knn_table",
    "load_images",
    "lr_from_batch_size",
    "simclr_augmentation",
    "plot_cluster",
    "plot_embeddings",
    "plot_stages",
    "resnet18",
    "run",
    "run_tsne",
    "score",
    "shift_onto_canvas",
    "stage_learning_rates",
    "start_stage",
    "train_stages",
]
