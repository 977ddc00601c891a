"""UniMax: Fairer and More Effective Language Sampling for Large-Scale Multilingual Pretraining.

Chung, Constant, Garcia, Roberts, Tay, Narang, Firat. ICLR 2023.
Paper: https://openreview.net/forum?id=kXwdL1cWOAi · arXiv: https://arxiv.org/abs/2304.09151
No official code release for the sampler; the umT5 checkpoints were released with t5x.

A multilingual corpus is very unbalanced (English ≈ 9.7T characters in mC4, 92,000 times
Yoruba). With a budget of C characters, a sampling distribution p gives language l
U_l = p_l·C characters, i.e. p_l·C/c_l epochs of its corpus of c_l characters.

* Temperature sampling: p_l ∝ c_l^{1/τ}. Larger τ flattens p towards uniform, which helps tail
  languages but repeats their small corpora many times, and leaves head languages unequal.
* UniMax (Algorithm 1): U_l = min(N·c_l, λ), with the level λ set so that Σ U_l = C. Head
  languages share the budget uniformly; no language is seen for more than N epochs.

* ``method``: Algorithm 1, temperature sampling, epochs per language.
* ``corpus``: corpus sizes fitted to the paper's numbers, or read from a file.
* ``experiment``: presets, ``run`` (corpus analysis and a toy multilingual training run).
* ``plots`` and ``claims``: figures, and the paper's thesis measured.
"""

from companion.papers.unimax.claims import (
    check_claims,
    generalization_gap,
    head_spread,
    held_out_rise,
    mean_excess_loss,
    tail_languages,
)
from companion.papers.unimax.corpus import (
    PAPER_FACTS,
    geometric_sizes,
    load_counts,
    paper_fit,
    zipf_mandelbrot,
)
from companion.papers.unimax.experiment import (
    METHODS,
    PRESETS,
    ArmResult,
    CorpusResult,
    MixtureBatches,
    NextTokenModel,
    UniMaxConfig,
    UniMaxResult,
    allocate,
    analyse_corpus,
    arm_allocation,
    language_losses,
    make_languages,
    run,
    true_distributions,
)
from companion.papers.unimax.method import (
    epochs_per_language,
    max_budget,
    temperature_sampling,
    unimax,
    unimax_budgets,
)
from companion.papers.unimax.plots import (
    draw_curves,
    draw_distributions,
    figures,
    plot_corpus,
    plot_curves,
    plot_distributions,
    plot_toy_summary,
)

Config = UniMaxConfig
Result = UniMaxResult

__all__ = [
    "METHODS",
    "PAPER_FACTS",
    "PRESETS",
    "ArmResult",
    "Config",
    "CorpusResult",
    "MixtureBatches",
    "NextTokenModel",
    "Result",
    "UniMaxConfig",
    "UniMaxResult",
    "allocate",
    "analyse_corpus",
    "arm_allocation",
    "check_claims",
    "draw_curves",
    "draw_distributions",
    "epochs_per_language",
    "figures",
    "generalization_gap",
    "geometric_sizes",
    "head_spread",
    "held_out_rise",
    "language_losses",
    "load_counts",
    "make_languages",
    "max_budget",
    "mean_excess_loss",
    "paper_fit",
    "plot_corpus",
    "plot_curves",
    "plot_distributions",
    "plot_toy_summary",
    "run",
    "tail_languages",
    "temperature_sampling",
    "true_distributions",
    "unimax",
    "unimax_budgets",
    "zipf_mandelbrot",
]
