"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.sfat.experiment import LABELS, SFATResult

COLORS = {
    "fedavg": "C7",
    "fat": "C0",
    "sfat": "C3",
    "sfat_official": "C1",
    "fat_shrunk": "C9",
    "sfat_random": "C4",
    "fedavg_iid": "C7",
    "fat_iid": "C0",
}
# the official-normaliser arms dashed, the random control dash-dotted, the IID controls dotted
STYLES = {
    "sfat_official": "--",
    "fat_shrunk": "--",
    "sfat_random": "-.",
    "fedavg_iid": ":",
    "fat_iid": ":",
}


def plot_split(result: SFATResult):
    """The non-IID skew split: each client's samples per class."""
    counts = np.array(result.client_classes)
    fig, axes = subplots(1, 1, width=5.0, height=2.6)
    ax = axes[0, 0]
    im = ax.imshow(counts, cmap="Blues", aspect="auto")
    for (i, j), c in np.ndenumerate(counts):
        ax.text(
            j,
            i,
            str(c),
            ha="center",
            va="center",
            fontsize=7,
            color="white" if c > counts.max() / 2 else "black",
        )
    ax.set_xticks(range(counts.shape[1]))
    ax.set_yticks(range(counts.shape[0]))
    ax.set_xlabel("class")
    ax.set_ylabel("client")
    ax.grid(False)
    fig.colorbar(im, ax=ax, label="training samples")
    return fig


def plot_accuracy(result: SFATResult, methods: tuple[str, ...] | None = None):
    """Natural (left) and PGD (right) test accuracy of the global model over rounds (default:
    every arm on the non-IID clients; the IID controls are drawn by :func:`plot_heterogeneity`)."""
    fig, axes = subplots(1, 2, width=4.2, height=3.0, sharex=True)
    for method in methods or tuple(m for m in result.arms if not m.endswith("_iid")):
        arm = result.arms[method]
        for ax, values in zip(axes[0], (arm.natural, arm.robust)):
            ax.plot(
                arm.rounds,
                values,
                marker=".",
                ls=STYLES.get(method, "-"),
                color=COLORS[method],
                label=LABELS[method],
            )
    eps = result.config["eps"]
    axes[0, 0].set_ylabel("natural test accuracy")
    axes[0, 1].set_ylabel(f"accuracy under PGD-{result.config['eval_pgd_steps']} (ε = {eps:g})")
    for ax in axes[0]:
        ax.set_xlabel("round")
        ax.set_ylim(0, 1)
    rounds = result.arms[next(iter(result.arms))].rounds
    window = rounds[-max(1, len(rounds) // 4) :]  # the evaluations the claims average
    for ax in axes[0]:
        ax.axvspan(window[0] - 0.5, window[-1] + 0.5, color="grey", alpha=0.12, lw=0)
    axes[0, 0].legend(fontsize="small")
    return fig


def plot_heterogeneity(result: SFATResult):
    """Left: the share of the clients' update that survives averaging, ‖Δ̄‖² / mean ‖Δ_k‖²
    (= 1 − dissimilarity; lower: the clients pull further apart). Right: the spread (max − min)
    of the clients' training losses (adversarial for FAT and SFAT)."""
    fig, axes = subplots(1, 2, width=4.2, height=3.0, sharex=True)
    for method, arm in result.arms.items():
        rounds = np.arange(len(arm.dissimilarity))
        kept = 1 - np.asarray(arm.dissimilarity)
        style = dict(color=COLORS[method], ls=STYLES.get(method, "-"), label=LABELS[method])
        axes[0, 0].plot(rounds, kept, **style)
        axes[0, 1].plot(rounds, arm.loss_spread, **style)
    axes[0, 0].set_yscale("log")
    axes[0, 0].set_ylabel("‖mean update‖² / mean ‖client update‖²")
    axes[0, 1].set_ylabel("client training loss: max − min")
    for ax in axes[0]:
        ax.set_xlabel("round")
    axes[0, 0].legend(fontsize="small")
    return fig


def figures(result: SFATResult) -> dict:
    return {
        "split": plot_split(result),
        "accuracy": plot_accuracy(result),
        "heterogeneity": plot_heterogeneity(result),
    }
