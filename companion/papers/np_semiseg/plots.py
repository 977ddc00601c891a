"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.np_semiseg.experiment import NPSemiSegResult

LABELS = {
    "supervised": "labelled only",
    "mean_teacher": "mean teacher, softmax head",
    "np_semiseg": "mean teacher, NP head",
}


def plot_training(result: NPSemiSegResult):
    """Test mIoU during training (left) and the share and accuracy of kept pseudo-labels
    (right) per arm."""
    fig, axes = subplots(1, 2, width=4.4, height=3.0)
    left, right = axes[0, 0], axes[0, 1]
    for i, arm in enumerate(result.arms.values()):
        colour = f"C{i}"
        left.plot(arm.eval_steps, arm.miou_curve, marker="o", color=colour, label=LABELS[arm.arm])
        if arm.pseudo_ratio:
            steps = arm.loss_steps[-len(arm.pseudo_ratio) :]
            right.plot(steps, arm.pseudo_ratio, color=colour, lw=0.8, ls="--")
            accuracy = np.array(arm.pseudo_accuracy, dtype=float)  # None (nothing kept) -> nan
            right.plot(steps, accuracy, color=colour, lw=0.8)
    left.set_xlabel("step")
    left.set_ylabel("test mIoU")
    right.set_xlabel("step")
    right.set_ylabel("kept share (dashed), accuracy (solid)")
    right.set_ylim(0, 1.02)
    fig.legend(
        *left.get_legend_handles_labels(),
        loc="upper center",
        ncol=3,
        fontsize="small",
        bbox_to_anchor=(0.5, 1.08),
    )
    return fig


def plot_examples(result: NPSemiSegResult, arm: str = "np_semiseg"):
    """Test images: input, truth, prediction, errors and the per-pixel uncertainty (the
    normalised predictive entropy) of one arm."""
    ex = result.arms[arm].examples
    n = len(ex["image"])
    k = result.config["shape_classes"] + 1
    fig, axes = subplots(n, 5, width=1.9, height=1.9)
    titles = ("image", "truth", "prediction", "errors", "uncertainty")
    for r in range(n):
        truth, pred = np.array(ex["truth"][r]), np.array(ex["prediction"][r])
        panels = (
            (np.array(ex["image"][r]), "gray", None),
            (truth, "tab10", (0, 9)),
            (pred, "tab10", (0, 9)),
            ((truth != pred).astype(float), "Reds", (0, 1)),
            (np.array(ex["uncertainty"][r]), "viridis", (0, 1)),
        )
        for c, (img, cmap, lim) in enumerate(panels):
            ax = axes[r, c]
            im = ax.imshow(
                img,
                cmap=cmap,
                vmin=None if lim is None else lim[0],
                vmax=None if lim is None else lim[1],
                interpolation="nearest",
            )
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(titles[c], fontsize="small")
        fig.colorbar(im, ax=axes[r, 4], fraction=0.046)
    fig.suptitle(f"{LABELS[arm]}: {k} pixel classes", fontsize="small")
    return fig


def figures(result: NPSemiSegResult) -> dict:
    return {"training": plot_training(result), "examples": plot_examples(result)}


def draw_examples(fig, result: NPSemiSegResult, arm: str) -> None:
    """Into ``fig``: the first test image's truth, one arm's prediction and its uncertainty (for
    the widget)."""
    ex = result.arms[arm].examples
    axes = fig.subplots(1, 3)
    truth, pred = np.array(ex["truth"][0]), np.array(ex["prediction"][0])
    for ax, img, cmap, title in (
        (axes[0], truth, "tab10", "truth"),
        (axes[1], pred, "tab10", f"{LABELS[arm]}: prediction"),
        (axes[2], np.array(ex["uncertainty"][0]), "viridis", "uncertainty (entropy)"),
    ):
        im = ax.imshow(
            img, cmap=cmap, vmin=0, vmax=9 if cmap == "tab10" else 1, interpolation="nearest"
        )
        ax.set_title(title, fontsize="small")
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(im, ax=axes[2], fraction=0.046)
