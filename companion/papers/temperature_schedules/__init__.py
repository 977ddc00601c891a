"""Temperature Schedules for Self-Supervised Contrastive Methods on Long-Tail Data.

Kukleva, Böhle, Schiele, Kuehne, Rupprecht. ICLR 2023.
Paper: https://openreview.net/forum?id=ejHUr4nfHhD ·
Code: https://github.com/Annusha/temperature_schedules

* ``method``: the cosine schedule of τ, the repulsion weights of NT-Xent that τ reshapes, the
  long-tailed split, per-class kNN accuracy and uniformity.
* ``experiment``: presets, ``run`` (SimCLR with constant τ arms and the schedule, same steps,
  and paired replicates of the official constant τ = 0.2 and the schedule from other seeds).
* ``plots`` and ``claims``: the schedule, the paired gain with its interval, per-class
  accuracy, and the thesis measured.
"""

from companion.papers.temperature_schedules.claims import check_claims, paired_interval
from companion.papers.temperature_schedules.experiment import (
    PRESETS,
    ArmResult,
    SimCLR,
    TemperatureConfig,
    TemperatureResult,
    load_data,
    replicate_seed,
    run,
)
from companion.papers.temperature_schedules.method import (
    cosine_temperature,
    long_tail_counts,
    long_tail_split,
    negative_weights,
    nt_xent,
    per_class_knn,
    same_class_share,
    temperature_at,
    uniformity,
)
from companion.papers.temperature_schedules.plots import (
    arm_colour,
    draw_per_class,
    figures,
    plot_paired,
    plot_per_class,
    plot_push,
    plot_scale,
    plot_schedule,
    plot_summary,
)

Config = TemperatureConfig
Result = TemperatureResult

__all__ = [
    "PRESETS",
    "ArmResult",
    "Config",
    "Result",
    "SimCLR",
    "TemperatureConfig",
    "TemperatureResult",
    "arm_colour",
    "check_claims",
    "cosine_temperature",
    "draw_per_class",
    "figures",
    "load_data",
    "long_tail_counts",
    "long_tail_split",
    "negative_weights",
    "nt_xent",
    "paired_interval",
    "per_class_knn",
    "plot_paired",
    "plot_per_class",
    "plot_push",
    "plot_scale",
    "plot_schedule",
    "plot_summary",
    "replicate_seed",
    "run",
    "same_class_share",
    "temperature_at",
    "uniformity",
]
