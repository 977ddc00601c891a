"""Hrrformer: Recasting Self-Attention with Holographic Reduced Representations.

Alam, Raff, Biderman, Oates, Holt. ICML 2023.
Paper: https://proceedings.mlr.press/v202/alam23a.html · Code: https://github.com/FutureComputing4AI/Hrrformer

* ``method``: HRR binding (circular convolution by FFT), its approximate inverse and
  unbinding, Hrrformer's attention (β = Σ k ⊛ v per head, cosine scores, softmax over the
  sequence) beside softmax attention, and the official encoder network.
* ``experiment``: presets, ``run`` (time and memory against T; accuracy at equal steps; a
  token-mixing task), the allocation counter ``PeakMemory``.
* ``plots`` and ``claims``: the cost on log-log axes, training curves, the thesis measured.
"""

from companion.papers.hrrformer.claims import check_claims, slopes
from companion.papers.hrrformer.experiment import (
    PRESETS,
    ArmResult,
    CostResult,
    HrrformerConfig,
    HrrformerResult,
    PeakMemory,
    build_model,
    grey_pixels,
    loglog_slope,
    measure_cost,
    run,
)
from companion.papers.hrrformer.method import (
    ATTENTIONS,
    EncoderLayer,
    SelfAttention,
    SequenceModel,
    approx_inverse,
    binding,
    cosine_similarity,
    hrr_attention,
    no_mixing,
    sinusoidal_positions,
    softmax_attention,
    unbinding,
)
from companion.papers.hrrformer.plots import figures, plot_cost, plot_cost_view, plot_training

Config = HrrformerConfig
Result = HrrformerResult

__all__ = [
    "ATTENTIONS",
    "PRESETS",
    "ArmResult",
    "Config",
    "CostResult",
    "EncoderLayer",
    "HrrformerConfig",
    "HrrformerResult",
    "PeakMemory",
    "Result",
    "SelfAttention",
    "SequenceModel",
    "approx_inverse",
    "binding",
    "build_model",
    "check_claims",
    "cosine_similarity",
    "figures",
    "grey_pixels",
    "hrr_attention",
    "no_mixing",
    "loglog_slope",
    "measure_cost",
    "plot_cost",
    "plot_cost_view",
    "plot_training",
    "run",
    "sinusoidal_positions",
    "slopes",
    "softmax_attention",
    "unbinding",
]
