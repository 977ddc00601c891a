"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.ligo.claims import targets
from companion.papers.ligo.experiment import LiGOResult

LABELS = {
    "scratch": "scratch",
    "copy": "copy growth (bert2BERT AKI + stack)",
    "ligo_init": "LiGO's operator, untrained (control)",
    "ligo": "LiGO",
}
COLORS = {"scratch": "C0", "copy": "C1", "ligo_init": "C7", "ligo": "C2"}


def plot_compute(result: LiGOResult, log: bool = True):
    """Training loss (left) and held-out loss (right) against compute, as a fraction of the
    scratch run's FLOPs; LiGO's curve starts after its operator steps (shaded); the dotted lines
    are the loss targets the saving is averaged over."""
    fig, axes = subplots(1, 2, width=4.6, height=3.2, sharex=True)
    total = result.compute("scratch")[0][-1]
    for arm in LABELS:
        if arm not in result.phases:
            continue
        flops, _ = result.compute(arm)
        x = np.asarray(flops) / total
        phase = result.phases[arm]
        for ax, y in zip(axes[0], (phase.train_loss, phase.eval_loss)):
            ax.plot(x, y, marker=".", color=COLORS[arm], label=LABELS[arm])
    if "ligo" in result.phases:
        start = result.compute("ligo")[0][0] / total
        for ax in axes[0]:
            ax.axvspan(0, start, color=COLORS["ligo"], alpha=0.12, lw=0)
    for i, target in enumerate(targets(result)):
        label = "loss targets (scratch's loss along its run)" if i == 0 else None
        axes[0, 0].axhline(target, color="grey", ls=":", lw=0.8, label=label)
    axes[0, 0].set_ylabel("training loss (probe of training images)")
    axes[0, 1].set_ylabel("held-out loss")
    for ax in axes[0]:
        ax.set_xlabel("compute (fraction of the scratch run's FLOPs)")
        if log:
            ax.set_yscale("log")
    handles, labels = axes[0, 0].get_legend_handles_labels()  # the legend below the data
    fig.legend(handles, labels, loc="outside lower center", ncols=3, fontsize="small")
    return fig


def plot_depth(result: LiGOResult):
    """L_depth: each large layer's coefficients over the small layers, at initialization
    (StackBERT plus noise) and after LiGO's operator steps."""
    op = result.phases["ligo_operator"]
    fig, axes = subplots(1, 2, width=3.4, height=3.0)
    init, learned = np.asarray(op.depth_init), np.asarray(op.depth_learned)
    lim = max(abs(init).max(), abs(learned).max())
    for ax, mat, title in zip(axes[0], (init, learned), ("initialization", "learned")):
        im = ax.imshow(mat, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
        ax.set_title(title)
        ax.set_xlabel("small layer j")
        ax.set_ylabel("large layer l")
        ax.set_xticks(range(mat.shape[1]))
        ax.set_yticks(range(mat.shape[0]))
        ax.grid(False)
    fig.colorbar(im, ax=axes[0, 1], label="mean coefficient w_lj")
    return fig


def plot_operator(result: LiGOResult):
    """LiGO's operator phase: training loss over its steps, against the small model's."""
    op, small = result.phases["ligo_operator"], result.phases["small"]
    fig, axes = subplots(1, 1, width=4.2, height=3.0)
    ax = axes[0, 0]
    ax.plot(op.eval_steps, op.train_loss, marker=".", color=COLORS["ligo"], label="grown by LiGO")
    ax.axhline(small.train_loss[-1], color="grey", ls=":", label="small model (trained)")
    ax.set_xlabel("LiGO operator step")
    ax.set_ylabel("training loss")
    ax.set_yscale("log")
    ax.legend(fontsize="small")
    return fig


def figures(result: LiGOResult) -> dict:
    """Every figure of the run, by name (for ``companion run``)."""
    return {
        "compute": plot_compute(result),
        "depth": plot_depth(result),
        "operator": plot_operator(result),
    }


def plot_layer(fig, result: LiGOResult, layer: int) -> None:
    """Into ``fig``: large layer ``layer``'s depth coefficients over the small layers, at
    initialization and learned (for the notebook's slider)."""
    op = result.phases["ligo_operator"]
    ax = fig.add_subplot(1, 1, 1)
    init, learned = np.asarray(op.depth_init[layer]), np.asarray(op.depth_learned[layer])
    j = np.arange(len(init))
    ax.bar(j - 0.2, init, width=0.4, label="initialization", color="grey")
    ax.bar(j + 0.2, learned, width=0.4, label="learned", color=COLORS["ligo"])
    ax.set_xticks(j)
    ax.set_xlabel("small layer j")
    ax.set_ylabel(f"coefficient w_{layer}j (mean over modules)")
    ax.set_title(f"large layer {layer}")
    ax.legend(fontsize="small")
