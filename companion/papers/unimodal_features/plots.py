"""Figures: each takes a result and returns a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.unimodal_features.experiment import UniModalResult

LABELS = {
    "uni": "uni-modal training",
    "naive": "naive late fusion",
    "umt": "UMT",
    "control": "control (untrained teachers)",
}
COLORS = {"uni": "C0", "naive": "C3", "umt": "C2", "control": "C7"}
RECIPES = ("uni_a", "uni_b", "ume", "naive", "umt", "control")
RECIPE_LABELS = {
    "uni_a": "a alone",
    "uni_b": "b alone",
    "ume": "UME",
    "naive": "naive fusion",
    "umt": "UMT",
    "control": "control",
}


def plot_probe_curves(result: UniModalResult, dataset: str = "unimodal"):
    """Linear-probe accuracy of each modality's encoder along training (mean over seeds)."""
    fig, axes = subplots(1, 2, width=4.2, height=3.0)
    for ax, m in zip(axes[0], ("a", "b")):
        for arm, color in COLORS.items():
            curves = np.array([p.probe_curve[arm][m] for p in result.parts[dataset]])
            steps = result.parts[dataset][0].probe_steps
            ax.plot(steps, curves.mean(0), marker=".", color=color, label=LABELS[arm])
        ax.set(xlabel="step", ylabel="probe test accuracy", title=f"encoder of modality {m}")
    axes[0][1].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.suptitle(f"{dataset} data")
    return fig


def plot_recipes(result: UniModalResult):
    """Test accuracy of every recipe on both datasets (bars: mean over seeds, dots: seeds)."""
    datasets = list(result.parts)
    fig, axes = subplots(1, len(datasets), width=4.0, height=3.0)
    for ax, dataset in zip(axes[0], datasets):
        for i, recipe in enumerate(RECIPES):
            values = [p.test_accuracy[recipe] for p in result.parts[dataset]]
            ax.bar(i, np.mean(values), color=f"C{i}", alpha=0.7)
            ax.plot([i] * len(values), values, "k.", markersize=4)
        choices = sorted({p.choice for p in result.parts[dataset]})
        ax.set_xticks(
            range(len(RECIPES)), [RECIPE_LABELS[r] for r in RECIPES], rotation=45, ha="right"
        )
        ax.set(
            ylim=(0, 1),
            ylabel="test accuracy",
            title=f"{dataset} data (rule picks {'/'.join(choices)})",
        )
    return fig


def figures(result: UniModalResult) -> dict:
    out = {"recipes": plot_recipes(result)}
    for dataset in result.parts:
        out[f"probe_curves_{dataset}"] = plot_probe_curves(result, dataset)
    return out
