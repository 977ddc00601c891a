"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np
from matplotlib.colors import ListedColormap

from companion.core import subplots
from companion.papers.e_crf.claims import LATE_FRACTION
from companion.papers.e_crf.experiment import COLOURS, NUM_CLASSES, ECRFResult, touching

LABELS = {
    "baseline": "baseline",
    "ecrf": "E-CRF",
    "ecrf_nosp": "E-CRF, no superpixels",
    "centre_only": "centre-only module",
}
# one colour per arm, fixed by name (the palette's C1 and C3 are both orange-red, so the
# centre-only control takes C4) and a dashed line for the control in line plots
ARM_COLOURS = {"baseline": "C0", "ecrf": "C1", "ecrf_nosp": "C2", "centre_only": "C4"}
ARM_STYLES = {"centre_only": "--"}
CLASS_CMAP = ListedColormap(np.clip(COLOURS.numpy() * 0.8 + 0.1, 0, 1))


def _image(result: ECRFResult, i: int) -> np.ndarray:
    return np.clip(np.asarray(result.examples[i]), 0, 1)


def _edges(ids: np.ndarray) -> np.ndarray:
    """Pixels whose right or lower neighbour has another id (region outlines)."""
    e = np.zeros(ids.shape, dtype=bool)
    e[:, :-1] |= ids[:, 1:] != ids[:, :-1]
    e[:-1, :] |= ids[1:, :] != ids[:-1, :]
    return e


def plot_scene(result: ECRFResult, n: int = 3):
    """Test scenes: the noisy image, its labels, and each SLIC superpixel painted with its mean
    colour (outlined), which is what the superpixel prior averages."""
    n = min(n, len(result.examples))
    fig, axes = subplots(n, 3, width=2.2, height=2.2)
    for i in range(n):
        img = _image(result, i)
        sp = np.asarray(result.example_superpixels[i])
        outlined = img.copy()
        for s in np.unique(sp):
            outlined[sp == s] = img[sp == s].mean(axis=0)
        outlined = np.clip(outlined, 0, 1)
        outlined[_edges(sp)] = 0.5 * outlined[_edges(sp)] + (0.5, 0.15, 0.0)
        axes[i, 0].imshow(img)
        axes[i, 1].imshow(result.example_labels[i], cmap=CLASS_CMAP, vmin=0, vmax=NUM_CLASSES - 1)
        axes[i, 2].imshow(outlined)
        for ax in axes[i]:
            ax.set_xticks([])
            ax.set_yticks([])
    axes[0, 0].set_title("image")
    axes[0, 1].set_title("classes")
    axes[0, 2].set_title("superpixel means")
    return fig


def plot_similarity(result: ECRFResult):
    """Paper Fig. 1a at small scale: cosine similarity of every pair of class weights, pairs
    that share boundaries (filled) and pairs that never touch (hollow), per arm."""
    fig, axes = subplots(1, 1, width=6.0, height=3.2)
    ax = axes[0, 0]
    pairs = [(a, b) for a in range(NUM_CLASSES) for b in range(a + 1, NUM_CLASSES)]
    order = sorted(pairs, key=lambda p: not touching(*p))
    x = np.arange(len(order))
    width = 0.8 / len(result.arms)
    for k, (name, arm) in enumerate(result.arms.items()):
        colour = ARM_COLOURS.get(name, f"C{k}")
        sim = np.asarray(arm.similarity)
        values = [sim[a, b] for a, b in order]
        for j, ((a, b), v) in enumerate(zip(order, values)):
            ax.bar(
                x[j] + (k - (len(result.arms) - 1) / 2) * width,
                v,
                width,
                color=colour,
                fill=touching(a, b),
                edgecolor=colour,
                label=LABELS[name] if j == 0 else None,
            )
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(x, [f"{a}–{b}" + (" (touch)" if touching(a, b) else "") for a, b in order])
    ax.tick_params(axis="x", labelrotation=30)
    ax.set_ylabel("cosine similarity of class weights")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    return fig


def plot_similarity_curves(result: ECRFResult):
    """The confusion gap (touching minus non-touching mean weight similarity) over training,
    with the window the claims average over (steps ≥ LATE_FRACTION × steps) shaded; the
    training loss beside it."""
    fig, axes = subplots(1, 2, width=4.2, height=3.0)
    total = int(result.config["steps"])
    axes[0, 0].axvspan(
        LATE_FRACTION * total, total, color="grey", alpha=0.15, lw=0, label="averaged by the claims"
    )
    for k, (name, arm) in enumerate(result.arms.items()):
        style = dict(color=ARM_COLOURS.get(name, f"C{k}"), ls=ARM_STYLES.get(name, "-"))
        gap = np.asarray(arm.sim_touching) - np.asarray(arm.sim_apart)
        axes[0, 0].plot(arm.measure_steps, gap, marker=".", label=LABELS[name], **style)
        axes[0, 1].plot(arm.loss_steps, arm.loss, lw=0.7, label=LABELS[name], **style)
    axes[0, 0].axhline(0, color="grey", lw=0.8, ls=":")
    axes[0, 0].set(xlabel="step", ylabel="touching − apart similarity", title="confusion gap")
    axes[0, 1].set(xlabel="step", ylabel="cross-entropy", yscale="log", title="training loss")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    axes[0, 1].legend(handles, labels, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    return fig


def plot_examples(fig, result: ECRFResult, index: int = 0) -> None:
    """One test scene: image, labels and each arm's prediction, with its errors in red (the
    widget's view), drawn into ``fig``."""
    arms = list(result.arms.values())
    axes = fig.subplots(1, 2 + len(arms))
    labels = np.asarray(result.example_labels[index])
    axes[0].imshow(_image(result, index))
    axes[0].set_title("image")
    axes[1].imshow(labels, cmap=CLASS_CMAP, vmin=0, vmax=NUM_CLASSES - 1)
    axes[1].set_title("classes")
    for ax, arm in zip(axes[2:], arms):
        pred = np.asarray(arm.examples[index])
        shown = CLASS_CMAP(pred / (NUM_CLASSES - 1))
        shown[pred != labels] = (1.0, 0.0, 0.0, 1.0)
        ax.imshow(shown)
        ax.set_title(f"{LABELS[arm.method]}\n{int((pred != labels).sum())} wrong px", fontsize=9)
    for ax in axes:
        ax.set_xticks([])
        ax.set_yticks([])


def figures(result: ECRFResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(2.2 * (2 + len(result.arms)), 2.6), layout="constrained")
    plot_examples(fig, result, 0)
    return {
        "scenes": plot_scene(result),
        "similarity": plot_similarity(result),
        "gap": plot_similarity_curves(result),
        "examples": fig,
    }
