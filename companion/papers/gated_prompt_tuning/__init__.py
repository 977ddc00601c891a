"""Improving Visual Prompt Tuning for Self-supervised Vision Transformers (gated prompt tuning).

Seungryong Yoo, Eunji Kim, Dahuin Jung, Jungbeom Lee, Sungroh Yoon. ICML 2023.
Paper: https://proceedings.mlr.press/v202/yoo23a.html · arXiv: https://arxiv.org/abs/2306.05067 ·
Code: https://github.com/ryongithub/GatedPromptTuning

* ``method``: prompts inserted at a block (VPT), learned per-block gates
  g_i = σ(ℓ_i) mixing each block's prompt output with its input, learnable attention
  temperatures, and the masked autoencoder that pre-trains the frozen backbone.
* ``experiment``: presets, ``run`` (the shipped MAE backbone, or MAE pre-training in the run;
  linear probes; then a linear head, VPT at every insertion block, and gated prompt tuning on
  the frozen backbone).
* ``pretrain``: ``python -m companion.papers.gated_prompt_tuning.pretrain`` writes the shipped
  backbone (``data/gated_prompt_tuning/backbone.pt``) that the notebook preset loads.
* ``plots`` and ``claims``: accuracy against the insertion block, the learned gates, the thesis.
"""

from companion.papers.gated_prompt_tuning.claims import check_claims
from companion.papers.gated_prompt_tuning.experiment import (
    PRESETS,
    ArmResult,
    GatedPromptConfig,
    GatedPromptResult,
    PretrainResult,
    build_backbone,
    build_prompted,
    linear_probes,
    load_backbone_file,
    load_data,
    run,
)
from companion.papers.gated_prompt_tuning.method import (
    MAE,
    PromptedViT,
    attention_with_temperature,
    block_forward,
    patchify,
    prompt_init_bound,
    random_masking,
)
from companion.papers.gated_prompt_tuning.plots import (
    figures,
    plot_arm,
    plot_gates,
    plot_insertion,
    plot_pretraining,
    plot_probes,
)

Config = GatedPromptConfig
Result = GatedPromptResult

__all__ = [
    "MAE",
    "PRESETS",
    "ArmResult",
    "Config",
    "GatedPromptConfig",
    "GatedPromptResult",
    "PretrainResult",
    "PromptedViT",
    "Result",
    "attention_with_temperature",
    "block_forward",
    "build_backbone",
    "build_prompted",
    "linear_probes",
    "load_backbone_file",
    "check_claims",
    "figures",
    "plot_arm",
    "load_data",
    "patchify",
    "plot_gates",
    "plot_insertion",
    "plot_pretraining",
    "plot_probes",
    "prompt_init_bound",
    "random_masking",
    "run",
]
