"""Towards Inferential Reproducibility of Machine Learning Research.

Michael Hagmann, Philipp Meier, Stefan Riezler. ICLR 2023.
Paper: https://openreview.net/forum?id=li4GQCQWkv · arXiv: https://arxiv.org/abs/2302.04054 ·
Code (the authors' companion code, ``inferential_reproducibility/``):
https://github.com/StatNLP/empirical_methods

Training runs differ by seed, meta-parameters and hardware nondeterminism. Instead of removing
that noise, the paper models it: one score per (run, test item) goes into a linear mixed
effects model (LMEM)

    y = X β + b_item + Σ_f b_f + ε,   b_item ~ N(0, σ²_item),  b_f ~ N(0, σ²_f),  ε ~ N(0, σ²),

where the fixed effects X β hold the systems (and data properties) being compared and the
random intercepts model the noise. The official significance tests use the test item as the only
random effect, ``metric ~ system + (1 | input_id)``, fitted to every run of the meta-parameter
grid; seeds and meta-parameters get random intercepts of their own (facets f) in the variance
component analysis.

* Significance: a generalized likelihood ratio test of nested ML fits,
  ``χ² = 2 (ℓ₁ − ℓ₀)`` with ``df`` = the number of extra fixed effects.
* Conditional comparisons: add a data property d and the interaction system × d.
* Variance component analysis (REML): σ²_item, σ²_f, σ² as shares of the total.
* Reliability coefficient: the substantial (between-item) variance over the total variance,
  ``R = σ²_item / (σ²_item + Σ_f σ²_f + σ²)``.

Modules: ``method`` (the LMEM fits via statsmodels, GLRT, VCA, reliability), ``experiment``
(presets, the training grid, the analyses, ``run``), ``plots``, ``claims``.
"""

from companion.papers.inferential_reproducibility.claims import check_claims, fmt_p
from companion.papers.inferential_reproducibility.experiment import (
    CACHED,
    DATA_COMMAND,
    PRESETS,
    GLRTSummary,
    InferentialReproducibilityConfig,
    InferentialReproducibilityResult,
    analyse,
    build_model,
    correct_class_probability,
    get_scores,
    load_items,
    read_scores,
    resolve_scores_file,
    run,
    select_best_settings,
    summarize,
    swap_in,
    train_one,
    write_scores,
)
from companion.papers.inferential_reproducibility.method import (
    GLRT,
    Comparison,
    LMEMFit,
    compare,
    fit_lmem,
    glrt,
    reliability,
    shares,
    variance_components,
)
from companion.papers.inferential_reproducibility.plots import (
    figures,
    plot_comparisons,
    plot_fresh,
    plot_grid,
    plot_interaction,
    plot_seed,
    plot_vca,
)

Config = InferentialReproducibilityConfig
Result = InferentialReproducibilityResult

__all__ = [
    "CACHED",
    "DATA_COMMAND",
    "GLRT",
    "PRESETS",
    "Comparison",
    "Config",
    "InferentialReproducibilityConfig",
    "InferentialReproducibilityResult",
    "LMEMFit",
    "Result",
    "GLRTSummary",
    "analyse",
    "build_model",
    "check_claims",
    "compare",
    "correct_class_probability",
    "figures",
    "fit_lmem",
    "fmt_p",
    "get_scores",
    "glrt",
    "load_items",
    "plot_comparisons",
    "plot_fresh",
    "plot_grid",
    "plot_interaction",
    "plot_seed",
    "plot_vca",
    "read_scores",
    "reliability",
    "resolve_scores_file",
    "run",
    "select_best_settings",
    "shares",
    "summarize",
    "swap_in",
    "train_one",
    "variance_components",
    "write_scores",
]
