"""Feature change against the energy at FT start: one colour per run, the HP arms joined by a
solid line (τ grows to the left, where the energy is low), the fixed-head ladder (the longest-
probed head with 0, 2, …, 5 class rows cycled) by a dashed line with crosses, the scaled fresh
head as a triangle."""

from __future__ import annotations

from matplotlib.lines import Line2D

from companion.core.plotting import COLORBLIND, subplots
from companion.papers.task_head_energy.experiment import EnergyResult, by_seed

FIELDS = ("euclidean", "cosine", "dot", "norm")
LABELS = {
    "euclidean": "‖z_FT − z₀‖",
    "cosine": "cosine distance",
    "dot": "z_FT · z₀",
    "norm": "‖z_FT‖",
}
MARKERS = {"permuted": "X", "head_scale": "^"}
ARM_NAMES = {
    "permuted": "τ_max head, 2–5 classes cycled (fixed head)",
    "head_scale": "τ = 0, head scaled",
}


def draw_field(ax, result: EnergyResult, field: str) -> None:
    """One panel: ``field`` against the AIE at FT start, every run and arm."""
    hp = by_seed(result, "hp")
    for i, (seed, g) in enumerate(hp.items()):
        colour = COLORBLIND[i % len(COLORBLIND)]
        ax.plot([a.energy for a in g], [getattr(a, field) for a in g], "o-", color=colour, ms=4)
        ladder = sorted(by_seed(result, "permuted").get(seed, []), key=lambda a: a.permuted)
        if ladder:
            line = [g[-1], *ladder]
            ax.plot([a.energy for a in line], [getattr(a, field) for a in line], "--", color=colour)
        for arm, marker in MARKERS.items():
            for a in by_seed(result, arm).get(seed, []):
                ax.plot(a.energy, getattr(a, field), marker, color=colour, ms=8, mec="black")
    ax.set_xlabel("AIE at FT start")
    ax.set_ylabel(LABELS[field])


def legend_handles(result: EnergyResult) -> list:
    hp = by_seed(result, "hp")
    handles = [
        Line2D([], [], color=COLORBLIND[i % len(COLORBLIND)], marker="o", label=f"run {s}: HP arms")
        for i, s in enumerate(hp)
    ]
    for arm, marker in MARKERS.items():
        if by_seed(result, arm):
            handles.append(
                Line2D(
                    [], [], ls="", marker=marker, color="grey", mec="black", label=ARM_NAMES[arm]
                )
            )
    return handles


def plot_feature_change(result: EnergyResult, fields=FIELDS):
    fig, axes = subplots(1, len(fields), width=3.3, height=3.0)
    for ax, field in zip(axes[0], fields):
        draw_field(ax, result, field)
    fig.legend(handles=legend_handles(result), loc="outside right upper", fontsize="small")
    return fig
