"""Figures: plots take a result (or, for the data, a config) and return a matplotlib figure."""

from __future__ import annotations

import numpy as np
import torch

from companion.core import subplots
from companion.papers.noisy_labels_causal.experiment import ARMS, NoisyCausalResult
from companion.papers.noisy_labels_causal.method import (
    anticausal_gaussian,
    causal_gaussian,
    flip_labels,
    transition_matrix,
)

LABELS = {
    "ce": "cross-entropy",
    "forward": "Forward (T̂)",
    "ssl": "semi-supervised",
    "labelled_only": "control: no entropy term",
}
TITLES = {"yx_gaussian": "Y → X Gaussians", "xy_gaussian": "X → Y Gaussians", "digits": "digits",
          "mnist": "MNIST"}  # fmt: skip


def plot_data(cfg, n: int = 600):
    """Both generative processes with the same label noise, projected on (𝟙/√d, a second
    axis): clean labels (left) and noisy labels (right) of each."""
    g = torch.Generator().manual_seed(cfg.seed)
    t = transition_matrix(cfg.noise_type, cfg.noise_rate, 2)
    sets = {
        "Y → X (anticausal)": anticausal_gaussian(n, cfg.dim, cfg.separation, g),
        "X → Y (causal)": causal_gaussian(n, cfg.dim, cfg.causal_noise, g),
    }
    fig, axes = subplots(2, 2, width=3.4, height=3.0, sharex=True, sharey=True)
    u = torch.ones(cfg.dim) / cfg.dim**0.5
    v = torch.zeros(cfg.dim)
    v[0], v[1:] = 1.0, -1.0 / max(1, cfg.dim - 1)
    v = v - (v @ u) * u
    v = v / v.norm()
    for row, (name, (x, y)) in enumerate(sets.items()):
        noisy = flip_labels(y, t, g)
        for col, (labels, what) in enumerate(((y, "clean"), (noisy, "noisy"))):
            ax = axes[row, col]
            ax.scatter(x @ u, x @ v, c=labels, cmap="coolwarm", s=5, alpha=0.6)
            ax.set_title(f"{name}: {what} labels", fontsize="small")
            ax.set_xlabel("x · 𝟙/√d (the label direction)")
            if col == 0:
                ax.set_ylabel("x · v (orthogonal)")
    return fig


def plot_accuracy(result: NoisyCausalResult):
    """Clean test accuracy of every arm on every dataset where the arms were trained, with the
    Bayes accuracy (the best possible) as a black line over each group."""
    sets = [d for d in result.datasets.values() if d.accuracy]
    fig, axes = subplots(1, 1, width=1.9 * len(sets) + 2.0, height=3.0)
    ax = axes[0, 0]
    width = 0.8 / len(ARMS)
    for k, arm in enumerate(ARMS):
        acc = [d.accuracy[arm] for d in sets]
        ax.bar(np.arange(len(sets)) + (k - 1.5) * width, acc, width, label=LABELS[arm])
    for i, d in enumerate(sets):
        if d.bayes_accuracy is not None:
            label = "Bayes accuracy" if i == 0 else None
            ax.hlines(d.bayes_accuracy, i - 0.45, i + 0.45, color="k", lw=1.5, label=label)
    ax.set_xticks(range(len(sets)), [f"{TITLES[d.dataset]}\n({d.direction})" for d in sets])
    ax.set_ylabel("clean test accuracy")
    low = min(min(d.accuracy.values()) for d in sets)
    ax.set_ylim(max(0.0, low - 0.1), 1.0)
    ax.legend(fontsize="small", ncol=2)
    return fig


def plot_test(result: NoisyCausalResult):
    """The test's score per dataset, relative to random clusters (err(T′, T̂*) divided by the
    err of clusters that say nothing about the labels, for the same number of classes), with
    the decision threshold."""
    sets = list(result.datasets.values())
    fig, axes = subplots(1, 1, width=1.6 * len(sets) + 1.5, height=2.8)
    ax = axes[0, 0]
    colors = ["tab:green" if d.direction == "anticausal" else "tab:red" for d in sets]
    ax.bar(range(len(sets)), [d.relative_error for d in sets], color=colors)
    ax.axhline(1.0, color="grey", ls=":", lw=1, label="random clusters")
    ax.axhline(result.config["threshold"], color="k", ls="--", lw=1, label="threshold")
    ax.set_xticks(range(len(sets)), [f"{TITLES[d.dataset]}\n({d.direction})" for d in sets])
    ax.set_ylabel("err(T′, T̂*) / err(random, T̂*)")
    ax.legend(fontsize="small")
    return fig


def plot_matrices(result: NoisyCausalResult, dataset: str, fig=None):
    """True T, T̂* (learned) and T′ (clusters) for one dataset, as heat maps (into ``fig`` when
    given: the explore widget redraws one figure)."""
    d = result.datasets[dataset]
    mats = {"true T": d.true_t, "T̂* (learned)": d.t_star, "T′ (clusters)": d.t_prime}
    if fig is None:
        fig, axes = subplots(1, 3, width=2.6, height=2.5)
        axes = axes[0]
    else:
        axes = fig.subplots(1, 3)
    for ax, (name, m) in zip(axes, mats.items()):
        m = np.asarray(m)
        ax.imshow(m, vmin=0, vmax=1, cmap="viridis")
        ax.set_title(name, fontsize="small")
        ax.set_xlabel("noisy label j")
        ax.set_ylabel("class i")
        ax.grid(False)
        ax.set_xticks(range(len(m)))
        ax.set_yticks(range(len(m)))
        if len(m) <= 3:
            for i in range(len(m)):
                for j in range(len(m)):
                    ax.text(j, i, f"{m[i, j]:.2f}", ha="center", va="center", color="w")
    fig.suptitle(
        f"{TITLES[dataset]} ({d.direction}): err {d.cdnl_error:.3f}, "
        f"{d.relative_error:.2f} × random clusters'"
    )
    return fig


def figures(result: NoisyCausalResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    out = {"accuracy": plot_accuracy(result), "test": plot_test(result)}
    for name in result.datasets:
        out[f"matrices_{name}"] = plot_matrices(result, name)
    return out
