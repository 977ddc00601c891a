"""Mimetic Initialization of Self-Attention Layers.

Asher Trockman and J. Zico Kolter. ICML 2023.
Paper: https://proceedings.mlr.press/v202/trockman23a.html · arXiv: https://arxiv.org/abs/2305.09828
· Code: none released by the authors.

Pretrained ViTs show a simple structure in their attention weights: per head, the product
``W_q W_kᵀ`` has a positive diagonal and, per layer, ``W_v W_proj`` a negative one. Mimetic
initialization builds that structure in closed form, with no data and no training:

    W_q^h (W_k^h)ᵀ ≈ α₁ Z₁ + β₁ I,      W_v W_proj ≈ α₂ Z₂ − β₂ I,      Z_i ~ N(0, I/d),

factored by an SVD: ``α₁Z₁ + β₁I = U Σ Vᵀ`` gives ``W_q^h = U_{:, :k} Σ_{:k}^{1/2}`` and
``W_k^h = V_{:, :k} Σ_{:k}^{1/2}`` (``k = d / heads``); ``α₂Z₂ − β₂I = U₂ Σ₂ V₂ᵀ`` gives
``W_v = U₂ Σ₂^{1/2}`` and ``W_proj = Σ₂^{1/2} V₂ᵀ``. Defaults α₁ = β₁ = 0.7, α₂ = β₂ = 0.4.
With ``W_q W_kᵀ ≈ I`` a token's query matches keys that resemble it (itself first), and
through the added position embeddings (``(X + P) W_q W_kᵀ (X + P)ᵀ ⊃ P Pᵀ``) the attention
maps at initialization can lean towards nearby tokens, like a convolution, when the position
embeddings of nearby patches are alike (sine-cosine ones are; the tiny random ones a ViT
starts from are not).

* ``method``: the initialization for any model built from
  :class:`companion.nn.MultiHeadSelfAttention`, the weight products read back in the paper's
  orientation, and the measurements (attention mass near the diagonal, diagonal score).
* ``experiment``: presets and ``run`` (default vs mimetic init, several seeds).
* ``plots`` and ``claims``: the paper's figures at small scale, and its thesis measured.
"""

from companion.papers.mimetic_init.claims import check_claims
from companion.papers.mimetic_init.experiment import (
    PRESETS,
    ArmResult,
    MimeticConfig,
    MimeticResult,
    attention_at_init,
    build_model,
    random_crop_flip,
    run,
    sincos_position_embedding,
    weight_products,
)
from companion.papers.mimetic_init.method import (
    ALPHA1,
    ALPHA2,
    BETA1,
    BETA2,
    diagonal_score,
    factorize,
    local_attention_mass,
    mimetic_init,
    mimetic_init_,
    mimetic_target,
    patch_grid_distance,
    query_key_product,
    self_attention_mass,
    value_proj_product,
)
from companion.papers.mimetic_init.plots import (
    alpha_beta_control,
    draw_alpha_beta,
    figures,
    plot_curves,
    plot_init_attention,
    plot_local_mass,
    plot_weight_pattern,
    plot_weight_products,
    uniform_local_mass,
    uniform_self_mass,
)

Config = MimeticConfig
Result = MimeticResult

__all__ = [
    "ALPHA1",
    "ALPHA2",
    "BETA1",
    "BETA2",
    "PRESETS",
    "ArmResult",
    "Config",
    "MimeticConfig",
    "MimeticResult",
    "Result",
    "alpha_beta_control",
    "attention_at_init",
    "build_model",
    "check_claims",
    "diagonal_score",
    "draw_alpha_beta",
    "factorize",
    "figures",
    "local_attention_mass",
    "mimetic_init",
    "mimetic_init_",
    "mimetic_target",
    "patch_grid_distance",
    "plot_curves",
    "plot_init_attention",
    "plot_local_mass",
    "plot_weight_pattern",
    "plot_weight_products",
    "query_key_product",
    "random_crop_flip",
    "run",
    "self_attention_mass",
    "sincos_position_embedding",
    "uniform_local_mass",
    "uniform_self_mass",
    "value_proj_product",
    "weight_products",
]
