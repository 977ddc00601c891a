"""Temperature Schedules for Self-Supervised Contrastive Methods on Long-Tail Data.

Kukleva, Böhle, Schiele, Kuehne, Rupprecht. ICLR 2023.
Paper: https://openreview.net/forum?id=ejHUr4nfHhD ·
Code: https://github.com/Annusha/temperature_schedules

* ``method``: the cosine schedule of τ, the repulsion weights of NT-Xent that τ reshapes, the
  long-tailed split, per-class kNN accuracy and uniformity.
* ``experiment``: presets, ``run`` (SimCLR with constant τ arms and the schedule, same steps).
* ``plots`` and ``claims``: the schedule, per-class accuracy, and the thesis measured.
"""

from companion.papers.temperature_schedules.claims import check_claims
from companion.papers.temperature_schedules.experiment import (
    PRESETS,
    ArmResult,
    SimCLR,
    TemperatureConfig,
    TemperatureResult,
    load_data,
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
    draw_per_class,
    figures,
    plot_per_class,
    plot_push,
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
    "check_claims",
    "cosine_temperature",
    "draw_per_class",
    "figures",
    "load_data",
    "long_tail_counts",
    "long_tail_split",
    "negative_weights",
    "nt_xent",
    "per_class_knn",
    "plot_per_class",
    "plot_push",
    "plot_schedule",
    "plot_summary",
    "run",
    "same_class_share",
    "temperature_at",
    "uniformity",
]
