"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.cocoa.claims import LABELS
from companion.papers.cocoa.experiment import CocoaResult


def plot_curves(result: CocoaResult):
    """The paper's evaluation at small scale: mean insertion and deletion curves of the
    corpus-majority probability, pixels ordered by each target's attributions. Black dotted: the
    oracle reference (IG of the eval head's own logit), the score a method gets for explaining
    exactly what the evaluator measures."""
    fig, axes = subplots(1, 2, width=4.4, height=3.2, sharey=True)
    for ax, kind in zip(axes[0], ("insertion", "deletion")):
        for i, (name, t) in enumerate(result.targets.items()):
            curve = t.insertion_curve if kind == "insertion" else t.deletion_curve
            auc = t.insertion if kind == "insertion" else t.deletion
            ls = "--" if name == "random" else ":" if name == "oracle" else "-"
            color = "k" if name == "oracle" else f"C{i}"
            ax.plot(result.fraction, curve, ls, color=color, label=f"{LABELS[name]} ({auc:.3f})")
        ax.set_xlabel(f"fraction of pixels {'inserted' if kind == 'insertion' else 'deleted'}")
        ax.set_title(
            f"{kind} (AUC in brackets; {'higher' if kind == 'insertion' else 'lower'} is better)",
            fontsize="medium",
        )
        ax.legend(fontsize="x-small")
    axes[0, 0].set_ylabel("P(corpus-majority class)")
    axes[0, 0].set_ylim(0, 1.02)
    return fig


def plot_aucs(result: CocoaResult):
    """Per-explicand AUCs of every target (box plots): the spread behind the mean."""
    fig, axes = subplots(1, 2, width=4.4, height=3.0)
    names = list(result.targets)
    for ax, kind in zip(axes[0], ("insertion", "deletion")):
        data = [getattr(result.targets[n], f"{kind}_auc") for n in names]
        ax.boxplot(data, showmeans=True)
        ax.set_xticks(
            range(1, len(names) + 1),
            [LABELS[n].replace(" ", "\n", 1) for n in names],
            fontsize="x-small",
        )
        ax.set_ylabel(f"{kind} AUC per explicand")
        ax.set_title(
            f"{kind} ({'higher' if kind == 'insertion' else 'lower'} is better)", fontsize="medium"
        )
    return fig


MAP_LABEL = "attribution ÷ largest |attribution| of its map"
"""Colour-bar label of the maps: each target explains a different scalar, so each map is divided by
its own largest absolute value and all maps share one symmetric scale, −1 (blue) to 1 (red)."""


def _normalised(a) -> np.ndarray:
    """``a`` divided by its largest absolute value (zeros stay zeros): values in [−1, 1]."""
    a = np.asarray(a, dtype=float)
    lim = np.abs(a).max()
    return a / lim if lim > 0 else a


def draw_class(fig, result: CocoaResult, k: int) -> None:
    """The explicand shown for class ``k`` and each target's attribution map (red: raises the
    target, blue: lowers it; each map divided by its largest |value|, one shared colour bar),
    drawn into ``fig`` (the widget's view)."""
    names = list(result.targets)
    axes = fig.subplots(1, len(names) + 1)
    axes[0].imshow(np.asarray(result.examples[k]), cmap="gray_r")
    axes[0].set_title(f"explicand (class {k})", fontsize="small")
    for ax, name in zip(axes[1:], names):
        a = _normalised(result.targets[name].examples[k])
        image = ax.imshow(a, cmap="bwr", vmin=-1, vmax=1)
        ax.set_title(LABELS[name].replace(" ", "\n", 1), fontsize="small")
    for ax in axes:
        ax.set_xticks([])
        ax.set_yticks([])
    bar = fig.colorbar(image, ax=list(axes[1:]), shrink=0.8, ticks=[-1, 0, 1])
    bar.set_label("attribution ÷ max |attribution|", fontsize="x-small")
    bar.ax.tick_params(labelsize="x-small")


def plot_attributions(result: CocoaResult, classes: list[int] | None = None):
    """Explicands (left) and the attribution maps of each target, one row per class. Each map is
    divided by its largest absolute value (the targets explain different scalars), so all maps
    share one symmetric colour scale, drawn once on the right."""
    classes = list(range(min(4, len(result.examples)))) if classes is None else classes
    names = list(result.targets)
    fig, axes = subplots(len(classes), len(names) + 1, width=1.6, height=1.6)
    for row, k in enumerate(classes):
        axes[row, 0].imshow(np.asarray(result.examples[k]), cmap="gray_r")
        axes[row, 0].set_ylabel(f"class {k}")
        for col, name in enumerate(names, start=1):
            a = _normalised(result.targets[name].examples[k])
            image = axes[row, col].imshow(a, cmap="bwr", vmin=-1, vmax=1)
            if row == 0:
                axes[row, col].set_title(LABELS[name].replace(" ", "\n", 1), fontsize="small")
    axes[0, 0].set_title("explicand", fontsize="small")
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    ticks = [-1, -0.5, 0, 0.5, 1]
    bar = fig.colorbar(image, ax=axes[:, 1:].ravel().tolist(), shrink=0.6, ticks=ticks)
    bar.set_label(MAP_LABEL, fontsize="small")
    return fig


def plot_sanity(result: CocoaResult):
    """The sanity checks. Left: insertion curves of COCOA (trained encoder), of COCOA computed on
    a randomly re-initialised encoder (scored by the trained one), and of random attributions;
    the grey line is the mean insertion AUC of ranking pixels by x − blur(x) alone (no network).
    Right: per explicand, the rank correlation of COCOA's map with the map from a fresh corpus
    of the same class and from a corpus of another class."""
    fig, axes = subplots(1, 2, width=4.4, height=3.2)
    ax = axes[0, 0]
    curves = {
        "COCOA": (result.targets["cocoa"], "C0", "-"),
        "COCOA, randomised encoder": (result.randomized, "C4", "-"),
    }
    if "random" in result.targets:
        curves["random attributions"] = (result.targets["random"], "C3", "--")
    for label, (t, color, ls) in curves.items():
        ax.plot(result.fraction, t.insertion_curve, ls, color=color,
                label=f"{label} ({t.insertion:.3f})")  # fmt: skip
    if result.input_only_insertion:
        plain = float(np.mean(result.input_only_insertion))
        ax.axhline(plain, color="grey", ls=":", label=f"AUC of x − blur(x) alone ({plain:.3f})")
    ax.set(xlabel="fraction of pixels inserted", ylabel="P(corpus-majority class)", ylim=(0, 1.02))
    ax.set_title("insertion (AUC in brackets)", fontsize="medium")
    ax.legend(fontsize="x-small")
    ax = axes[0, 1]
    data = [result.same_class_corr, result.other_class_corr]
    ax.boxplot(data, showmeans=True)
    ax.set_xticks([1, 2], ["fresh corpus,\nsame class", "corpus of\nanother class"])
    ax.axhline(0, color="grey", lw=0.8)
    ax.set(ylabel="rank correlation with COCOA's map", ylim=(-1.05, 1.05))
    ax.set_title("does the explanation follow the corpus?", fontsize="medium")
    return fig


def plot_loss(result: CocoaResult):
    """SimCLR's NT-Xent loss while the encoder trains."""
    fig, axes = subplots(1, 1, width=4.5, height=2.6)
    axes[0, 0].plot(result.loss, lw=0.8)
    axes[0, 0].set(xlabel="step", ylabel="NT-Xent loss")
    return fig


def figures(result: CocoaResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    return {
        "curves": plot_curves(result),
        "aucs": plot_aucs(result),
        "attributions": plot_attributions(result),
        **({"sanity": plot_sanity(result)} if result.randomized is not None else {}),
        "loss": plot_loss(result),
    }
