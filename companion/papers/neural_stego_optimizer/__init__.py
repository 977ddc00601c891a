"""LISO: Learning Iterative Neural Optimizers for Image Steganography.

Xiangyu Chen, Varsha Kishore, Kilian Q. Weinberger. ICLR 2023.
Paper: https://openreview.net/forum?id=gLPkzWjdhBN · Code: https://github.com/cxy1997/LISO

* ``method``: the decoder, LISO's learned iterative encoder (context net, motion encoder,
  ConvGRU, step head, unrolled over T steps that each read ∇ₓ BCE(D(x), m)), the sequence loss
  Σ_t γ^{T−t}(MSE + BCE), 8-bit quantization, the sender's best-iterate rule, and the
  pixel-space optimizers (gradient descent, Adam) on a fixed decoder.
* ``experiment``: presets, ``run`` (LISO and a one-step encoder trained with their decoders;
  baselines on LISO's decoder at a grid of step sizes).
* ``plots`` and ``claims``: the paper's Fig. 1 at small scale, and its thesis measured.
"""

from companion.papers.neural_stego_optimizer.claims import check_claims
from companion.papers.neural_stego_optimizer.experiment import (
    PRESETS,
    ArmResult,
    BaselineResult,
    MessageBatches,
    Stego,
    StegoConfig,
    StegoResult,
    best_curves,
    eval_set,
    load_images,
    run,
    score_iterates,
)
from companion.papers.neural_stego_optimizer.method import (
    ContextEncoder,
    ConvGRU,
    Decoder,
    LISOEncoder,
    MotionEncoder,
    UpdateBlock,
    bit_error,
    message_gradient,
    optimize_image,
    psnr,
    quantize,
    select_best_iterate,
    sequence_loss,
)
from companion.papers.neural_stego_optimizer.plots import (
    draw_tradeoff,
    figures,
    plot_error_vs_steps,
    plot_example,
    plot_tradeoff,
    plot_training,
)

Config = StegoConfig
Result = StegoResult

__all__ = [
    "PRESETS",
    "ArmResult",
    "BaselineResult",
    "Config",
    "ContextEncoder",
    "ConvGRU",
    "Decoder",
    "LISOEncoder",
    "MessageBatches",
    "MotionEncoder",
    "Result",
    "Stego",
    "StegoConfig",
    "StegoResult",
    "UpdateBlock",
    "best_curves",
    "bit_error",
    "check_claims",
    "draw_tradeoff",
    "eval_set",
    "figures",
    "load_images",
    "message_gradient",
    "optimize_image",
    "plot_error_vs_steps",
    "plot_example",
    "plot_training",
    "plot_tradeoff",
    "psnr",
    "quantize",
    "run",
    "score_iterates",
    "select_best_iterate",
    "sequence_loss",
]
