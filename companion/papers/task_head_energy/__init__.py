"""How to prepare your task head for finetuning (Ren, Guo, Bae & Sutherland, ICLR 2023).

Paper: https://openreview.net/forum?id=gVOXZproe-e · Code: none found (reconstructed).
"""

from companion.papers.task_head_energy.claims import check_claims
from companion.papers.task_head_energy.experiment import (
    PRESETS,
    ArmResult,
    EnergyConfig,
    EnergyResult,
    by_seed,
    mean_over_seeds,
    pretrain,
    run,
    summary,
)
from companion.papers.task_head_energy.method import (
    average_initial_energy,
    feature_change,
    spearman,
)
from companion.papers.task_head_energy.plots import draw_field, legend_handles, plot_feature_change

Config = EnergyConfig
Result = EnergyResult

__all__ = [
    "PRESETS",
    "ArmResult",
    "Config",
    "EnergyConfig",
    "EnergyResult",
    "Result",
    "average_initial_energy",
    "by_seed",
    "check_claims",
    "draw_field",
    "legend_handles",
    "feature_change",
    "mean_over_seeds",
    "plot_feature_change",
    "pretrain",
    "summary",
    "run",
    "spearman",
]
