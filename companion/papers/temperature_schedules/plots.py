"""Figures: plots take a result (or plain numbers) and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.temperature_schedules.experiment import TemperatureResult


def _label(arm: str) -> str:
    return "cosine schedule" if arm == "cos" else f"τ = {arm}"


def plot_schedule(result: TemperatureResult):
    """τ over the epochs for every arm (left) and the training loss per epoch (right)."""
    fig, axes = subplots(1, 2, width=4.4, height=3.0)
    left, right = axes[0, 0], axes[0, 1]
    for i, arm in enumerate(result.arms.values()):
        style = dict(color="k", lw=2) if arm.arm == "cos" else dict(color=f"C{i}", lw=1)
        left.plot(range(len(arm.tau)), arm.tau, label=_label(arm.arm), **style)
        right.plot(range(len(arm.loss)), arm.loss, label=_label(arm.arm), **style)
    left.set(xlabel="epoch", ylabel="temperature τ", title="τ per epoch")
    right.set(xlabel="epoch", ylabel="NT-Xent loss (nats)", title="training loss")
    right.legend(fontsize="small")
    return fig


def plot_push(taus, shares, chance: float):
    """Same-class share of the repulsion against τ (the instance ↔ group dial)."""
    fig, axes = subplots(1, 1, width=5.0, height=3.2)
    ax = axes[0, 0]
    ax.plot(taus, shares, marker=".")
    ax.axhline(chance, color="grey", ls=":", label="share of same-class images among negatives")
    ax.set_xscale("log")
    ax.set(
        xlabel="temperature τ (log scale)",
        ylabel="share of the push on same-class negatives",
        ylim=(0, 1),
    )
    ax.legend(fontsize="small")
    return fig


def _per_class_bars(ax, result: TemperatureResult, arms: list[str]) -> None:
    order = np.argsort(result.train_counts, kind="stable")[::-1]
    width = 0.8 / len(arms)
    x = np.arange(len(order))
    for i, arm in enumerate(arms):
        acc = np.asarray(result.arms[arm].per_class_knn)[order]
        ax.bar(x + (i - (len(arms) - 1) / 2) * width, acc, width, label=_label(arm))
    ax.set_xticks(x, [f"{c}\n({result.train_counts[c]})" for c in order])
    ax.set(
        xlabel="class (training images), head → tail",
        ylabel=f"kNN@{result.config['k']} accuracy",
        ylim=(0, 1.05),
    )
    ax.legend(fontsize="small", loc="lower left")


def plot_per_class(result: TemperatureResult, arms: list[str] | None = None):
    """kNN accuracy of each class (sorted from head to tail) for the chosen arms (default: the
    best constant τ and the schedule), with the number of training images per class."""
    arms = arms or [result.best_constant("tail_knn"), "cos"]
    fig, axes = subplots(1, 1, width=6.0, height=3.4)
    _per_class_bars(axes[0, 0], result, arms)
    return fig


def draw_per_class(fig, result: TemperatureResult, arm: str) -> None:
    """The widget's view: one constant-τ arm against the schedule, per class, into ``fig``."""
    _per_class_bars(fig.subplots(1, 1), result, [arm, "cos"] if arm != "cos" else ["cos"])


def plot_summary(result: TemperatureResult):
    """Tail-class and class-balanced kNN accuracy of every arm."""
    arms = list(result.arms.values())
    fig, axes = subplots(1, 1, width=5.0, height=3.0)
    ax = axes[0, 0]
    x = np.arange(len(arms))
    ax.bar(x - 0.2, [a.balanced_knn for a in arms], 0.4, label="all classes (balanced)")
    ax.bar(x + 0.2, [a.tail_knn for a in arms], 0.4, label=f"tail classes {result.tail}")
    ax.set_xticks(x, [_label(a.arm) for a in arms], rotation=15)
    ax.set(ylabel=f"kNN@{result.config['k']} accuracy", ylim=(0, 1.05))
    ax.legend(fontsize="small", loc="lower left")
    return fig


def figures(result: TemperatureResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    return {
        "schedule": plot_schedule(result),
        "per_class": plot_per_class(result),
        "summary": plot_summary(result),
    }
