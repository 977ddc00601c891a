"""Figures: plots take a result (or plain numbers) and return a matplotlib figure.

Every arm keeps one colour in every figure (:func:`arm_colour`): the schedule is purple, each
constant τ has its own colour."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.temperature_schedules.experiment import TemperatureResult

_COLOURS = {"cos": "C4", "0.1": "C0", "0.2": "C3", "0.5": "C2", "1.0": "C7"}
_SPARE = ("C1", "C5", "C6", "C8", "C9")


def arm_colour(arm: str) -> str:
    """The colour of an arm in every figure: the schedule C4 (purple), τ = 0.1 C0 (blue), 0.2
    C3 (vermillion), 0.5 C2 (green), 1.0 C7 (grey) (far apart in the colour-blind palette);
    any other constant a spare colour (by its value)."""
    if arm in _COLOURS:
        return _COLOURS[arm]
    return _SPARE[int(round(float(arm) * 1000)) % len(_SPARE)]


def _label(arm: str, baseline: str | None = None) -> str:
    if arm == "cos":
        return "cosine schedule"
    return f"τ = {arm}" + (" (official default)" if arm == baseline else "")


def plot_schedule(result: TemperatureResult):
    """τ over the epochs for every arm (left) and the training loss per epoch (right)."""
    fig, axes = subplots(1, 2, width=4.4, height=3.0)
    left, right = axes[0, 0], axes[0, 1]
    for arm in result.arms.values():
        style = dict(color=arm_colour(arm.arm), lw=2.2 if arm.arm == "cos" else 1.2)
        left.plot(range(len(arm.tau)), arm.tau, label=_label(arm.arm), **style)
        right.plot(range(len(arm.loss)), arm.loss, label=_label(arm.arm), **style)
    left.set(xlabel="epoch", ylabel="temperature τ", title="τ per epoch")
    right.set(xlabel="epoch", ylabel="NT-Xent loss (nats)", title="training loss")
    right.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside
    return fig


def plot_push(taus, shares, chance: float):
    """Same-class share of the repulsion against τ (the instance ↔ group dial)."""
    fig, axes = subplots(1, 1, width=5.0, height=3.2)
    ax = axes[0, 0]
    ax.plot(taus, shares, marker=".", color="C4")
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
        ax.bar(
            x + (i - (len(arms) - 1) / 2) * width,
            acc,
            width,
            label=_label(arm, result.baseline),
            color=arm_colour(arm),
        )
    ax.set_xticks(x, [f"{c}\n({result.train_counts[c]})" for c in order])
    ax.set(
        xlabel="class (training images), head → tail",
        ylabel=f"kNN@{result.config['k']} accuracy",
        ylim=(0, 1.05),
    )
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))


def plot_per_class(result: TemperatureResult, arms: list[str] | None = None):
    """kNN accuracy of each class (sorted from head to tail) for the chosen arms (default: the
    official constant τ and the schedule), with the number of training images per class."""
    arms = arms or [result.baseline, "cos"]
    fig, axes = subplots(1, 1, width=6.0, height=3.4)
    _per_class_bars(axes[0, 0], result, arms)
    return fig


def draw_per_class(fig, result: TemperatureResult, arm: str) -> None:
    """The widget's view: one constant-τ arm against the schedule, per class, into ``fig``."""
    _per_class_bars(fig.subplots(1, 1), result, [arm, "cos"] if arm != "cos" else ["cos"])


def plot_summary(result: TemperatureResult):
    """Class-balanced (left) and tail-class (right) kNN accuracy of every arm of the run's own
    seed (bars), with the paired replicates of the official τ and the schedule (dots) and the
    same kNN on the raw pixels (dashed)."""
    arms = list(result.arms)
    fig, axes = subplots(1, 2, width=4.4, height=3.2)
    for ax, metric, title in (
        (axes[0, 0], "balanced_knn", "all classes (class-balanced)"),
        (axes[0, 1], "tail_knn", f"tail classes {result.tail}"),
    ):
        x = np.arange(len(arms))
        values = [getattr(result.arms[a], metric) for a in arms]
        ax.bar(x, values, 0.7, color=[arm_colour(a) for a in arms])
        for i, arm in enumerate(arms):
            if arm in (result.baseline, "cos") and result.replicates:
                reps = result.paired(arm, metric)
                ax.plot([i] * len(reps), reps, "o", ms=3.5, color="k", zorder=3)
        if result.pixel_knn:
            classes = range(len(result.pixel_knn)) if metric == "balanced_knn" else result.tail
            pixels = result.class_mean(result.pixel_knn, list(classes))
            ax.axhline(pixels, color="grey", ls="--", lw=1, label="kNN on raw pixels")
            values = [*values, pixels]
            title += "\n(dashed: kNN on raw pixels)"  # in the title: a legend covers bars
        low = min(min(result.paired(a, metric)) for a in (result.baseline, "cos"))
        low = min(low, min(values))
        ax.set_ylim(max(0.0, low - 0.08), min(1.02, max(values) + 0.06))
        ax.set_xticks(x, [_label(a) for a in arms], rotation=25)
        ax.set(ylabel=f"kNN@{result.config['k']} accuracy", title=title)
    return fig


def plot_paired(result: TemperatureResult):
    """The test: schedule minus the official constant τ, one dot per paired run (same seed,
    same initial weights, batches and views), with the mean and its 95% t-interval."""
    from companion.papers.temperature_schedules.claims import CONFIDENCE, paired_interval

    fig, axes = subplots(1, 1, width=5.0, height=3.2)
    ax = axes[0, 0]
    metrics = (("balanced_knn", "all classes\n(class-balanced)"), ("tail_knn", "tail classes"))
    for i, (metric, _) in enumerate(metrics):
        gains = result.paired_gain(metric)
        mean, low, high = paired_interval(gains)
        jitter = np.linspace(-0.12, 0.12, len(gains))
        ax.plot(i + jitter, gains, "o", color=arm_colour("cos"), alpha=0.6, ms=5)
        ax.errorbar(
            i + 0.3,
            mean,
            yerr=[[mean - low], [high - mean]],
            fmt="s",
            color="k",
            capsize=4,
            label=f"mean, {CONFIDENCE:.0%} interval" if i == 0 else None,
        )
    ax.axhline(0, color="grey", lw=1, ls="--")
    ax.set_xticks(range(len(metrics)), [m[1] for m in metrics])
    ax.set_xlim(-0.5, len(metrics) - 0.3)
    ax.set(ylabel=f"kNN gain: schedule − τ = {result.baseline}")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside the data
    return fig


def plot_scale(results: dict[str, TemperatureResult]):
    """The trend with scale: the mean paired gain of the schedule over the official constant τ
    (all classes and tail classes) with its 95% interval, one column per run (``results``: a
    label such as "notebook" → that preset's result)."""
    from companion.papers.temperature_schedules.claims import CONFIDENCE, paired_interval

    fig, axes = subplots(1, 1, width=5.0, height=3.2)
    ax = axes[0, 0]
    for j, (metric, label, marker) in enumerate(
        (("balanced_knn", "all classes (class-balanced)", "s"), ("tail_knn", "tail classes", "^"))
    ):
        for i, result in enumerate(results.values()):
            mean, low, high = paired_interval(result.paired_gain(metric))
            ax.errorbar(
                i + (j - 0.5) * 0.2,
                mean,
                yerr=[[mean - low], [high - mean]],
                fmt=marker,
                color=arm_colour("cos"),
                mfc="white" if j else arm_colour("cos"),
                capsize=4,
                label=label if i == 0 else None,
            )
    ax.axhline(0, color="grey", lw=1, ls="--")
    names = [f"{k}\n({sum(r.train_counts)} train images)" for k, r in results.items()]
    ax.set_xticks(range(len(results)), names)
    ax.set_xlim(-0.6, len(results) - 0.4)
    baseline = next(iter(results.values())).baseline
    ax.set(ylabel=f"gain over τ = {baseline} ({CONFIDENCE:.0%} interval)")
    ax.legend(fontsize="small")
    return fig


def figures(result: TemperatureResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    return {
        "schedule": plot_schedule(result),
        "paired": plot_paired(result),
        "per_class": plot_per_class(result),
        "summary": plot_summary(result),
    }
