"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.random_teachers.experiment import RandomTeachersResult

PROBES = {"linear": "linear probe", "knn": "kNN (k = 20)"}


def _colors(n: int):
    import matplotlib

    return [matplotlib.colormaps["viridis"](x) for x in np.linspace(0.0, 0.85, n)]


def _baselines(ax, result: RandomTeachersResult, probe: str) -> None:
    ax.axhline(result.teacher[probe], color="k", ls="--", lw=1.2, label="random teacher")
    ax.axhline(result.inputs[probe], color="grey", ls=":", lw=1.2, label="input pixels")


def plot_training(result: RandomTeachersResult):
    """Eq. 1's KL part, KL(p_T ‖ p_S), and how far each student moved from its start, per α."""
    fig, axes = subplots(1, 2, width=4.4, height=3.0)
    alphas = result.alphas
    for alpha, color in zip(alphas, _colors(len(alphas))):
        arm = result.arm(alpha)
        axes[0, 0].plot(arm.loss_steps, arm.kl, color=color, lw=0.9, label=f"α = {alpha:g}")
        axes[0, 1].plot(arm.probe_steps, arm.distance_to_start, "o-", color=color, ms=3)
    axes[0, 0].set(xlabel="step", ylabel="KL(teacher ‖ student)", yscale="log")
    axes[0, 0].set_title("distillation loss (Eq. 1 minus H(p_T))")
    axes[0, 1].set(xlabel="step", ylabel="‖θ_S − θ_S(0)‖₂", title="distance from the start")
    axes[0, 0].legend(fontsize="small")
    return fig


def plot_probes(result: RandomTeachersResult):
    """Probe accuracy of each student's encoder over training, against teacher and inputs."""
    fig, axes = subplots(1, 2, width=4.4, height=3.2, sharey=True)
    alphas = result.alphas
    for col, (probe, title) in enumerate(PROBES.items()):
        ax = axes[0, col]
        for alpha, color in zip(alphas, _colors(len(alphas))):
            arm = result.arm(alpha)
            values = arm.linear if probe == "linear" else arm.knn
            ax.plot(
                arm.probe_steps, values, "o-", color=color, ms=3, label=f"student α = {alpha:g}"
            )
        _baselines(ax, result, probe)
        ax.set(xlabel="distillation step", title=title)
    axes[0, 0].set_ylabel("test accuracy")
    axes[0, -1].legend(fontsize="small", loc="center left", bbox_to_anchor=(1.02, 0.5))
    return fig


def plot_locality(result: RandomTeachersResult):
    """The paper's locality experiment: final probe accuracy against the start α."""
    fig, axes = subplots(1, 1, width=5.0, height=3.2)
    ax = axes[0, 0]
    alphas = result.alphas
    for probe, marker in (("linear", "o"), ("knn", "s")):
        values = [getattr(result.arm(a), f"final_{probe}") for a in alphas]
        line = ax.plot(alphas, values, marker=marker, label=f"student, {PROBES[probe]}")[0]
        ax.axhline(result.teacher[probe], color=line.get_color(), ls="--", lw=1, alpha=0.8)
    ax.plot([], [], color="k", ls="--", lw=1, label="random teacher (same colour)")
    ax.set(
        xlabel="α (0: student starts as the teacher, 1: independent start)",
        ylabel="test accuracy after distillation",
    )
    ax.legend(fontsize="small", loc="lower left", bbox_to_anchor=(0.0, 1.02), ncol=2)
    return fig


def plot_arm(fig, result: RandomTeachersResult, alpha: float) -> None:
    """One student (start α): its probes and its loss, drawn into ``fig`` (the widget's view)."""
    arm = result.arm(alpha)
    ax1, ax2 = fig.subplots(1, 2)
    ax1.plot(arm.probe_steps, arm.linear, "o-", label="student, linear probe")
    ax1.plot(arm.probe_steps, arm.knn, "s-", label="student, kNN")
    ax1.axhline(result.teacher["linear"], color="C0", ls="--", lw=1, label="teacher, linear")
    ax1.axhline(result.teacher["knn"], color="C1", ls="--", lw=1, label="teacher, kNN")
    lo = min(min(arm.linear), min(arm.knn), result.teacher["linear"], result.teacher["knn"])
    hi = max(max(arm.linear), max(arm.knn), result.teacher["linear"], result.teacher["knn"])
    ax1.set(xlabel="step", ylabel="test accuracy", title=f"α = {alpha:g}: probes")
    ax1.set_ylim(lo - 0.03, min(1.0, hi + 0.03))
    ax1.legend(fontsize="x-small")
    ax2.plot(arm.loss_steps, arm.kl, lw=0.9)
    ax2.set(xlabel="step", ylabel="KL(teacher ‖ student)", yscale="log", title="loss")


def figures(result: RandomTeachersResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    return {
        "probes": plot_probes(result),
        "locality": plot_locality(result),
        "training": plot_training(result),
    }
