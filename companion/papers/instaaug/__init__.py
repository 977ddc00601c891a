"""InstaAug: Learning Instance-Specific Augmentations by Capturing Local Invariances.

Miao, Rainforth, Mathieu, Dubois, Teh, Foster, Kim. ICML 2023.
Paper: https://arxiv.org/abs/2206.00051 · Code: https://github.com/NingMiao/InstaAug

* ``method``: the invariance module φ (x → its own rotation range (a, b)), the uniform rotation
  family θ = r·a − (1 − r)·b, the entropy-regularized objective and the official λ schedule.
* ``experiment``: presets, ``run`` (no augmentation vs one global range vs InstaAug on
  rotated digits whose safe range depends on the input).
* ``plots`` and ``claims``: learned against ideal ranges, and the thesis measured.
"""

from companion.data.augment import rotate
from companion.papers.instaaug.claims import check_claims, range_correlations
from companion.papers.instaaug.experiment import (
    PRESETS,
    ArmResult,
    InstaAugConfig,
    InstaAugResult,
    build_model,
    load_data,
    make_rotated_digits,
    run,
)
from companion.papers.instaaug.method import (
    GlobalRange,
    InstaAug,
    InvarianceModule,
    LambdaScheduler,
    ideal_ranges,
    instaaug_loss,
    pearson,
    range_entropy,
    ranges_from_params,
    sample_angles,
)
from companion.papers.instaaug.plots import (
    figures,
    plot_accuracy,
    plot_examples,
    plot_input,
    plot_range_traces,
    plot_ranges,
    plot_training,
)

Config = InstaAugConfig
Result = InstaAugResult

__all__ = [
    "PRESETS",
    "ArmResult",
    "Config",
    "GlobalRange",
    "InstaAug",
    "InstaAugConfig",
    "InstaAugResult",
    "InvarianceModule",
    "LambdaScheduler",
    "Result",
    "build_model",
    "check_claims",
    "figures",
    "ideal_ranges",
    "instaaug_loss",
    "load_data",
    "make_rotated_digits",
    "pearson",
    "plot_accuracy",
    "plot_examples",
    "plot_input",
    "plot_range_traces",
    "plot_ranges",
    "plot_training",
    "range_correlations",
    "range_entropy",
    "ranges_from_params",
    "rotate",
    "run",
    "sample_angles",
]
