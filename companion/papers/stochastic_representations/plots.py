"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.stochastic_representations.experiment import StochasticResult
from companion.papers.stochastic_representations.method import ECE_BINS

LABELS = {
    "joint": "joint (no re-training)",
    "crt_sgd": "re-train, SGD features",
    "crt_swa": "re-train, SWA mean",
    "stochastic": "stochastic, no distillation",
    "stochastic_sd": "stochastic + self-distillation",
}
COLORS = {
    "joint": "#949494",
    "crt_sgd": "#0173b2",
    "crt_swa": "#029e73",
    "stochastic": "#de8f05",
    "stochastic_sd": "#d55e00",
}


def plot_long_tail(result: StochasticResult, arms=("joint", "crt_sgd", "stochastic_sd")):
    """Left: training images per class (log scale), shaded by shot group. Right: test accuracy
    per class (mean over seeds) for ``arms``: the long tail costs the rare classes."""
    seed0 = result.seeds[0]
    counts = np.array(seed0.counts)
    classes = np.arange(len(counts))
    fig, axes = subplots(1, 2, width=4.4, height=3.0)
    left, right = axes[0]
    shade = {"many": "#0173b2", "medium": "#949494", "few": "#d55e00"}
    for name, members in seed0.groups.items():
        left.bar(members, counts[members], color=shade[name], label=f"{name}-shot")
    left.set(yscale="log", xlabel="class", ylabel="training images", xticks=classes)
    left.set_title("the long-tailed training set")
    left.legend(fontsize="small", loc="upper right")
    width = 0.8 / len(arms)
    for i, arm in enumerate(arms):
        per_class = np.array([a.per_class for a in result.arm(arm)]).mean(0)
        right.bar(
            classes + (i - (len(arms) - 1) / 2) * width,
            per_class,
            width,
            color=COLORS[arm],
            label=LABELS[arm],
        )
    right.set(xlabel="class", ylabel="test accuracy", xticks=classes, ylim=(0, 1.25))
    right.set_title(f"balanced test set, mean of {len(result.seeds)} seed(s)")
    right.legend(fontsize="small", loc="upper right", ncol=1)
    return fig


def plot_shot_accuracy(result: StochasticResult):
    """Per arm: accuracy on many-, medium- and few-shot classes and ECE (bars: mean over seeds,
    dots: each seed)."""
    arms = result.arm_names
    fig, axes = subplots(1, 4, width=2.6, height=3.0, sharey=False)
    panels = (("many", "many-shot acc."), ("medium", "medium-shot acc."), ("few", "few-shot acc."))
    panels += (("ece", f"ECE ({ECE_BINS} bins)"),)
    for ax, (field, title) in zip(axes[0], panels):
        for i, arm in enumerate(arms):
            v = result.values(arm, field)
            ax.bar(i, v.mean(), color=COLORS[arm], label=LABELS[arm])
            ax.plot(np.full(len(v), i), v, "k.", ms=4)
        ax.set_xticks([])
        ax.set_title(title)
        if field != "ece":
            lo = min(result.values(a, field).min() for a in arms)
            ax.set_ylim(max(0.0, lo - 0.1), 1.0)
    axes[0, 0].set_ylabel("test accuracy (per-class mean)")
    axes[0, 3].set_ylabel("expected calibration error")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=3, fontsize="small")
    return fig


def draw_reliability(ax, result: StochasticResult, arm: str) -> None:
    """One reliability diagram: accuracy against confidence per bin, summed over seeds."""
    bins = np.array([a.reliability for a in result.arm(arm)])  # [seed, bin, (n, conf, acc)]
    n = bins[:, :, 0].sum(0)
    conf = (bins[:, :, 0] * bins[:, :, 1]).sum(0) / np.maximum(n, 1)
    acc = (bins[:, :, 0] * bins[:, :, 2]).sum(0) / np.maximum(n, 1)
    edges = np.linspace(0, 1, len(n) + 1)
    keep = n > 0
    centers = (edges[:-1] + edges[1:]) / 2
    ax.bar(
        centers[keep],
        acc[keep],
        width=1 / len(n),
        color=COLORS[arm],
        alpha=0.8,
        edgecolor="white",
        label="accuracy",
    )
    ax.plot(conf[keep], acc[keep], "k.", ms=5, label="(confidence, accuracy)")
    ax.plot([0, 1], [0, 1], ls="--", color="grey", label="perfect calibration")
    ece = result.values(arm, "ece").mean()
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="confidence (top class)", ylabel="accuracy")
    ax.set_title(f"{LABELS[arm]}\nECE {ece:.3f}", fontsize="small")


def plot_reliability(result: StochasticResult, arms=("crt_sgd", "crt_swa", "stochastic_sd")):
    """Reliability diagrams: a bar under the diagonal is overconfidence."""
    fig, axes = subplots(1, len(arms), width=3.0, height=3.0)
    for ax, arm in zip(axes[0], arms):
        draw_reliability(ax, result, arm)
    axes[0, -1].legend(fontsize="x-small", loc="center left", bbox_to_anchor=(1.02, 0.5))
    return fig


def plot_feature_cloud(result: StochasticResult):
    """Stochastic representations in the plane of the SWA features' top two principal axes:
    grey dots are training images' SWA features; for a few images of the head class (blue)
    and of the tail class (red) a large marker is the SWA feature and small ones its SWAG
    draws."""
    cloud = result.seeds[0].cloud
    if not cloud:
        raise ValueError("this result stored no feature cloud")
    fig, axes = subplots(1, 1, width=5.0, height=3.6)
    ax = axes[0, 0]
    bg = np.array(cloud["background"])
    ax.scatter(bg[:, 0], bg[:, 1], s=4, color="#cccccc", label="SWA features (training)")
    tail = max(img["label"] for img in cloud["images"])
    seen = set()
    for img in cloud["images"]:
        color = "#0173b2" if img["label"] != tail else "#d55e00"
        draws = np.array(img["draws"])
        kind = "head" if img["label"] != tail else "tail"
        ax.scatter(
            draws[:, 0],
            draws[:, 1],
            s=8,
            color=color,
            alpha=0.5,
            label=None if kind in seen else f"SWAG draws, {kind} class {img['label']}",
        )
        ax.scatter(
            *img["mean"],
            s=80,
            marker="*",
            color=color,
            edgecolor="black",
            label=None if kind in seen else f"SWA feature, {kind} class",
        )
        seen.add(kind)
    ax.set(xlabel="principal axis 1", ylabel="principal axis 2")
    ax.set_title("stochastic representations of six training images")
    ax.legend(fontsize="x-small", loc="center left", bbox_to_anchor=(1.02, 0.5))
    return fig


def figures(result: StochasticResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    figs = {
        "long_tail": plot_long_tail(result),
        "shot_accuracy": plot_shot_accuracy(result),
        "reliability": plot_reliability(result),
    }
    if result.seeds[0].cloud:
        figs["feature_cloud"] = plot_feature_cloud(result)
    return figs
