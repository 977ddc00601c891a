"""data2vec 2.0: Efficient Self-supervised Learning with Contextualized Target Representations
for Vision, Speech and Language.

Baevski, Babu, Hsu, Auli. ICML 2023.
Paper: https://arxiv.org/abs/2212.07525 · Code: https://github.com/facebookresearch/fairseq
(``examples/data2vec``: ``models/data2vec2.py``, ``models/modalities/images.py``, ``base.py``,
``modules.py``; masking in ``fairseq/data/data_utils.py``)

* ``method``: inverse block masking, the encoder that drops masked tokens, the EMA teacher,
  contextualized targets, the convolutional decoder, the loss, and the whole step with
  M masked clones per teacher pass (:class:`Data2Vec2`).
* ``experiment``: presets and ``run``: multi-mask against M = 1 and an MAE-style pixel target at
  equal training FLOPs, a linear probe of each encoder, FLOPs and time per effective sample.
* ``plots`` and ``claims``: the figures and the paper's thesis measured at this scale.
"""

from companion.papers.data2vec2.claims import check_claims, describe_gain, paired_gain
from companion.papers.data2vec2.experiment import (
    ARMS,
    PRESETS,
    ArmResult,
    Data2Vec2Config,
    Data2Vec2Result,
    arm_schedule,
    build_model,
    encoder_flop_share,
    load_data,
    run,
    step_flops,
    time_per_sample,
)
from companion.papers.data2vec2.method import (
    Data2Vec2,
    Decoder2d,
    Encoder,
    block_forward,
    block_squares,
    d2v_loss,
    decoder_input,
    ema_decay,
    ema_update,
    instance_norm_tokens,
    inverse_block_mask,
    make_targets,
    pixel_targets,
    sincos_positions_2d,
    visible_indices,
)
from companion.papers.data2vec2.plots import (
    draw_clones,
    draw_mask_ratio,
    figures,
    plot_clones,
    plot_costs,
    plot_probe,
    plot_training,
)

Config = Data2Vec2Config
Result = Data2Vec2Result

__all__ = [
    "ARMS",
    "PRESETS",
    "ArmResult",
    "Config",
    "Data2Vec2",
    "Data2Vec2Config",
    "Data2Vec2Result",
    "Decoder2d",
    "Encoder",
    "Result",
    "arm_schedule",
    "block_forward",
    "block_squares",
    "build_model",
    "check_claims",
    "describe_gain",
    "paired_gain",
    "d2v_loss",
    "decoder_input",
    "draw_clones",
    "draw_mask_ratio",
    "ema_decay",
    "ema_update",
    "encoder_flop_share",
    "figures",
    "instance_norm_tokens",
    "inverse_block_mask",
    "load_data",
    "make_targets",
    "pixel_targets",
    "plot_clones",
    "plot_costs",
    "plot_probe",
    "plot_training",
    "run",
    "sincos_positions_2d",
    "step_flops",
    "time_per_sample",
    "visible_indices",
]
