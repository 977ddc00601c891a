"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import NullFormatter

from companion.core import subplots
from companion.papers.hrrformer.experiment import HrrformerResult, loglog_slope

LABELS = {"hrr": "Hrrformer", "softmax": "softmax attention", "none": "no-mixing control"}


def _length_ticks(ax, lengths) -> None:
    """Tick the log x axis at the measured lengths only (no overlapping minor labels)."""
    ax.set_xticks(
        lengths, [f"{n // 1024}K" if n >= 1024 and n % 1024 == 0 else str(n) for n in lengths]
    )
    ax.xaxis.set_minor_formatter(NullFormatter())


def _reference(ax, lengths, values, power: float, label: str) -> None:
    """A dotted T^power line through the first point of ``values``."""
    x = np.asarray(lengths, dtype=float)
    ax.plot(x, values[0] * (x / x[0]) ** power, ":", color="grey", lw=1, label=label)


def plot_cost_view(fig, result: HrrformerResult, what: str = "time") -> None:
    """Forward time or peak memory against T on log-log axes, with slope-1 and slope-2
    reference lines, drawn into ``fig`` (the widget's view)."""
    ax = fig.subplots(1, 1)
    key, ylabel = (
        ("seconds", "forward time (s, median; CPU: thread time)")
        if what == "time"
        else ("peak_bytes", "peak allocated memory (MiB)")
    )
    fit_from = result.config["fit_from"]
    for kind, cost in result.costs.items():
        values = np.asarray(getattr(cost, key), dtype=float)
        if key == "peak_bytes":
            values = values / 2**20
        slope = loglog_slope(cost.lengths, values, fit_from)
        ax.plot(cost.lengths, values, marker="o", label=f"{LABELS[kind]} (slope {slope:.2f})")
    hrr = np.asarray(getattr(result.costs["hrr"], key), dtype=float)
    hrr = hrr / 2**20 if key == "peak_bytes" else hrr
    _reference(ax, result.costs["hrr"].lengths, hrr, 1.0, "∝ T")
    _reference(ax, result.costs["hrr"].lengths, hrr, 2.0, "∝ T²")
    ax.axvspan(fit_from, max(result.costs["hrr"].lengths), color="grey", alpha=0.08)
    ax.set(xscale="log", yscale="log", xlabel="sequence length T", ylabel=ylabel)
    _length_ticks(ax, result.costs["hrr"].lengths)
    ax.set_title(f"{what} of one attention layer (shaded: lengths the slope is fitted on)")
    ax.legend(fontsize="small")


def plot_cost(result: HrrformerResult):
    """Time (left) and memory (right) against T, log-log."""
    fig, axes = subplots(1, 2, width=4.6, height=3.4)
    fit_from = result.config["fit_from"]
    for ax, key, ylabel in (
        (axes[0, 0], "seconds", "forward time (s, median; CPU: thread time)"),
        (axes[0, 1], "peak_bytes", "peak allocated memory (MiB)"),
    ):
        for kind, cost in result.costs.items():
            values = np.asarray(getattr(cost, key), dtype=float)
            values = values / 2**20 if key == "peak_bytes" else values
            slope = loglog_slope(cost.lengths, values, fit_from)
            ax.plot(cost.lengths, values, marker="o", label=f"{LABELS[kind]} (slope {slope:.2f})")
        ax.axvspan(fit_from, max(result.costs["hrr"].lengths), color="grey", alpha=0.08)
        ax.set(xscale="log", yscale="log", xlabel="sequence length T", ylabel=ylabel)
        _length_ticks(ax, result.costs["hrr"].lengths)
        ax.legend(fontsize="small")
    mib = [b / 2**20 for b in result.score_matrix_bytes]
    axes[0, 1].plot(
        result.costs["softmax"].lengths, mib, "k:", lw=1, label="h·T² floats (analytic)"
    )
    axes[0, 1].legend(fontsize="small")
    return fig


# one colour per (attention, depth): the same arm has the same colour in every panel
COLOURS = {
    ("hrr", 1): "tab:blue",
    ("hrr", 2): "tab:cyan",
    ("hrr", 3): "tab:purple",
    ("softmax", 1): "tab:orange",
    ("softmax", 2): "tab:pink",
    ("softmax", 3): "tab:red",
    ("none", 1): "tab:green",
    ("none", 2): "tab:olive",
    ("none", 3): "tab:olive",
}


def _label(arm) -> str:
    name = LABELS[arm.attention]
    return name + (f", {arm.depth} layers" if arm.depth != 1 else "")


def plot_training(result: HrrformerResult):
    """Test accuracy against training step of every arm (the training loss where no curve was
    recorded): one panel per task, chance dotted."""
    tasks = list(dict.fromkeys(arm.task for arm in result.arms.values()))
    fig, axes = subplots(1, len(tasks), width=4.4, height=3.2)
    for ax, task in zip(axes[0], tasks):
        arms = [a for a in result.arms.values() if a.task == task]
        curves = all(a.eval_steps for a in arms)
        for arm in arms:
            label = f"{_label(arm)} (test acc {arm.test_accuracy:.2f})"
            style = ":" if arm.attention == "none" else "-"
            colour = COLOURS.get((arm.attention, arm.depth))
            if curves:
                ax.plot(
                    arm.eval_steps,
                    arm.eval_accuracy,
                    style,
                    marker=".",
                    lw=1,
                    color=colour,
                    label=label,
                )
            else:
                ax.plot(arm.loss_steps, arm.loss, style, lw=0.8, color=colour, label=label)
        if curves:
            ax.axhline(arms[0].chance, color="grey", lw=0.8, ls="--", label="chance")
            ax.set(ylim=(0, 1.02), ylabel="test accuracy (per position)")
        else:
            ax.set(ylabel="training loss")
        ax.set(xlabel="step", title=task)
        # below the panel, off the curves (the medium run has up to eight arms per task)
        ax.legend(fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.2))
    return fig


def figures(result: HrrformerResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    return {"cost": plot_cost(result), "training": plot_training(result)}
