"""Sequential Learning of Neural Networks for Prequential MDL.

Jorg Bornschein, Yazhe Li and Marcus Hutter. ICLR 2023.
Paper: https://openreview.net/forum?id=dMMPUvNSYJr · Code: none released by the authors.

The prequential description length of a labelled dataset is the number of bits needed to send
its labels one after the other, each coded with a model trained only on the labels already sent:
``L(D) = Σ_t −log₂ p(y_t | x_t, θ̂(D_<t))``. It measures how well a model family (with its
training procedure) generalises from little data to more, and a shorter code is better. The
paper estimates it with neural networks by *online* learning (encode a minibatch, then train on
it) with *rehearsal* of past examples, rather than by retraining from scratch on growing blocks,
and sharpens the code further with *forward calibration* (a temperature fitted on the past).

* ``method``: the code lengths (Eq. 1), the three estimators and forward calibration.
* ``experiment``: presets and ``run`` (every arm, at every learning rate of a grid, on several
  data orders, at equal gradient steps).
* ``plots`` and ``claims``: the figures and the paper's thesis measured at small scale.
"""

from companion.papers.prequential_mdl.claims import (
    calibration_gains_mistuned,
    check_claims,
    miscalibration,
    relative_gain,
)
from companion.papers.prequential_mdl.experiment import (
    ARMS,
    LABELS,
    PRESETS,
    OrderResult,
    PrequentialConfig,
    PrequentialResult,
    encode_order,
    load_data,
    run,
)
from companion.papers.prequential_mdl.method import (
    MLP,
    block_boundaries,
    blockwise_code_length,
    code_length_bits,
    encode,
    fit_inverse_temperature,
    forward_calibrated_bits,
    online_code_length,
    sgd_step,
    split_budget,
    uniform_code_bits,
)
from companion.papers.prequential_mdl.plots import (
    figures,
    plot_at_rate,
    plot_betas,
    plot_code_lengths,
    plot_learning_rates,
)

Config = PrequentialConfig
Result = PrequentialResult

__all__ = [
    "ARMS",
    "LABELS",
    "MLP",
    "PRESETS",
    "Config",
    "OrderResult",
    "PrequentialConfig",
    "PrequentialResult",
    "Result",
    "block_boundaries",
    "blockwise_code_length",
    "calibration_gains_mistuned",
    "check_claims",
    "code_length_bits",
    "encode",
    "encode_order",
    "figures",
    "fit_inverse_temperature",
    "forward_calibrated_bits",
    "load_data",
    "miscalibration",
    "online_code_length",
    "plot_at_rate",
    "plot_betas",
    "plot_code_lengths",
    "plot_learning_rates",
    "relative_gain",
    "run",
    "sgd_step",
    "split_budget",
    "uniform_code_bits",
]
