"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.cider.experiment import OOD_SETS, CiderResult

LABELS = {"cider": "CIDER", "supcon": "SupCon", "ce": "cross-entropy"}
OOD_LABELS = {"near": "held-out classes", "noise": "noise", "shuffled": "shuffled pixels"}


def plot_loss(result: CiderResult):
    """Training loss of each arm (each on its own scale: the losses are different functions)."""
    arms = list(result.arms.values())
    fig, axes = subplots(1, len(arms), width=3.2, height=2.6)
    for ax, arm in zip(axes[0], arms):
        ax.plot(arm.loss_steps, arm.loss, lw=1)
        ax.set(title=LABELS[arm.method], xlabel="step", ylabel="training loss")
    return fig


def plot_detection(result: CiderResult):
    """FPR95 (lower is better) and AUROC (higher is better) per OOD set and arm. CIDER and
    SupCon use the KNN score on h; cross-entropy its own scores, maximum softmax probability and
    energy (hatched: the paper's cross-entropy baselines), and KNN on h as a grey reference."""
    fig, axes = subplots(1, 2, width=4.6, height=3.0)
    names = [*OOD_SETS, "mean"]
    x = np.arange(len(names))
    bars = [
        (LABELS[m], a.fpr95, a.auroc, "", f"C{i}")
        for i, (m, a) in enumerate(result.arms.items())
        if m != "ce"
    ]
    ce = result.arms.get("ce")
    if ce is not None:
        if ce.msp_fpr95 is not None:
            bars.append(("cross-entropy (MSP)", ce.msp_fpr95, ce.msp_auroc, "//", "C2"))
        if ce.energy_fpr95 is not None:
            bars.append(("cross-entropy (energy)", ce.energy_fpr95, ce.energy_auroc, "..", "C2"))
        bars.append(("cross-entropy + KNN (reference)", ce.fpr95, ce.auroc, "", "0.6"))
    width = 0.8 / len(bars)
    for i, (label, fpr, roc, hatch, color) in enumerate(bars):
        face = "white" if hatch else color
        for ax, values in zip(axes[0], (fpr, roc)):
            ax.bar(
                x + (i - (len(bars) - 1) / 2) * width,
                [values[n] for n in names],
                width,
                label=label,
                color=face,
                edgecolor=color,
                hatch=hatch,
            )
    labels = [OOD_LABELS.get(n, n) for n in names]
    axes[0, 0].set(ylabel="FPR95 (lower is better)", xticks=x, xticklabels=labels)
    axes[0, 1].set(ylabel="AUROC (higher is better)", xticks=x, xticklabels=labels)
    axes[0, 1].set_ylim(bottom=min(0.5, axes[0, 1].get_ylim()[0]), top=1.0)
    for ax in axes[0]:
        ax.tick_params(axis="x", labelrotation=20)
    axes[0, 0].legend(fontsize="x-small")
    return fig


def plot_scores(result: CiderResult, method: str = "cider", ax=None):
    """Histogram of the KNN score (−squared distance to the k-th neighbour) of the ID test set
    and of each OOD set, for one arm; the dashed line accepts 95% of the ID samples."""
    if ax is None:
        fig, axes = subplots(1, 1, width=5.0, height=3.0)
        ax = axes[0, 0]
    else:
        fig = ax.figure
    scores = result.arms[method].scores
    everything = np.concatenate([np.asarray(v) for v in scores.values()])
    bins = np.linspace(everything.min(), everything.max(), 40)
    ax.hist(scores["id"], bins=bins, alpha=0.6, label="ID test", color="k")
    for name in OOD_SETS:
        ax.hist(scores[name], bins=bins, histtype="step", lw=1.5, label=OOD_LABELS[name])
    ax.axvline(np.quantile(scores["id"], 0.05), ls="--", color="grey", label="95% of ID accepted")
    ax.set(
        xlabel="KNN score (higher = more in-distribution)",
        ylabel="images",
        title=f"{LABELS[method]}",
    )
    ax.legend(fontsize="x-small")
    return fig


def plot_geometry(result: CiderResult):
    """Cosine between the class means of z, per arm (off-diagonal: how far apart the classes
    sit on the sphere; a perfectly dispersed set of C classes has −1/(C−1) everywhere)."""
    arms = [a for a in result.arms.values() if a.method != "ce"]
    fig, axes = subplots(1, len(arms), width=3.4, height=3.0)
    for ax, arm in zip(axes[0], arms):
        cos = np.asarray(arm.prototype_cos)
        im = ax.imshow(cos, vmin=-1, vmax=1, cmap="coolwarm")
        ax.set(
            title=f"{LABELS[arm.method]}: mean angle {arm.dispersion:.0f}°",
            xlabel="class",
            ylabel="class",
        )
    fig.colorbar(im, ax=list(axes[0]), label="cosine of class means")
    return fig


def figures(result: CiderResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    return {
        "loss": plot_loss(result),
        "detection": plot_detection(result),
        "scores": plot_scores(result),
        "geometry": plot_geometry(result),
    }
