"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.predict_and_search.experiment import PredictAndSearchResult

LABELS = {
    "plain": "plain HiGHS",
    "fixing": "hard fixing (Δ = 0)",
    "search": "Predict-and-Search",
    "random": "control: random feasible ones",
}
COLORS = {"plain": "C1", "fixing": "C2", "search": "C0", "random": "k"}


def plot_gaps(result: PredictAndSearchResult):
    """Left: mean primal gap per arm with each test instance as a dot; right: the validation
    table (mean gap of the search for each ``k`` and ``Δ``; ``Δ = 0`` is hard fixing)."""
    fig, axes = subplots(1, 2, width=4.4, height=3.3)
    ax, val = axes[0]
    rng = np.random.default_rng(0)
    for i, arm in enumerate(result.arms):
        gaps = np.array(result.arms[arm].gaps)
        ax.bar(i, gaps.mean(), color=COLORS[arm], alpha=0.6, label=LABELS[arm])
        ax.scatter(i + rng.uniform(-0.2, 0.2, len(gaps)), gaps, s=10, color=COLORS[arm])
    ax.set_xticks(range(len(result.arms)), [a for a in result.arms])
    nodes = result.config["node_limit"]
    ax.set(ylabel="primal gap (test)", title=f"same budget: {nodes} B&B node(s)")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0))
    ks = sorted({int(key.split(",")[0]) for key in result.val_table})
    ds = sorted({int(key.split(",")[1]) for key in result.val_table})
    grid = np.array([[result.val_table.get(f"{k},{d}", np.nan) for d in ds] for k in ks])
    image = val.imshow(grid, cmap="viridis", aspect="auto")
    fig.colorbar(image, ax=val, label="mean primal gap (validation)")
    val.set_xticks(range(len(ds)), [str(d) for d in ds])
    val.set_yticks(range(len(ks)), [str(k) for k in ks])
    val.set(xlabel="Δ (0: hard fixing)", ylabel="k0 = k1", title="choice on validation")
    val.grid(False)
    return fig


def plot_loss(result: PredictAndSearchResult):
    """The energy-weighted cross-entropy (Eq. 6) per epoch, averaged over training instances."""
    fig, axes = subplots(1, 1, width=4.4, height=3.0)
    ax = axes[0][0]
    ax.plot(np.arange(1, len(result.train_loss) + 1), result.train_loss, color="C0")
    ax.set(xlabel="epoch", ylabel="loss, Eq. (6)", title="training the GNN")
    return fig


def figures(result: PredictAndSearchResult) -> dict:
    return {"gaps": plot_gaps(result), "loss": plot_loss(result)}
