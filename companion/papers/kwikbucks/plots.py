"""Figures: plots take a result (or the weak matrix and labels) and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.kwikbucks.experiment import KwikBucksResult

LABELS = {
    "kwikbucks": "KwikBucks",
    "no_merge": "KwikBucks without merge",
    "random_weak": "control: KwikBucks, random W",
    "kwikcluster": "KwikCluster (S only)",
    "weak_knn": "weak-kNN + S (KwikClusterKnn)",
}
COLORS = {
    "kwikbucks": "C0",
    "no_merge": "C4",
    "random_weak": "k",
    "kwikcluster": "C1",
    "weak_knn": "C2",
}
STYLES = {"no_merge": "--", "random_weak": ":"}


def plot_weak_signal(weak: np.ndarray, labels: np.ndarray, show: int = 300):
    """Left: ``W`` for the first ``show`` points, sorted by true cluster (largest first), with a
    colour bar; right: histograms of ``W`` over positive and negative pairs (all points)."""
    fig, axes = subplots(1, 2, width=4.2, height=3.3)
    ax, hist = axes[0]
    sub = np.arange(min(show, len(labels)))
    sizes = np.bincount(labels)
    order = sub[np.lexsort((sub, -sizes[labels[sub]], labels[sub]))]
    order = order[np.argsort(-sizes[labels[order]], kind="stable")]
    image = ax.imshow(weak[np.ix_(order, order)], cmap="viridis", vmin=-1, vmax=1)
    fig.colorbar(image, ax=ax, label="weak similarity W(u, v)")
    ax.set(
        title=f"W, {len(sub)} points sorted by true cluster",
        xlabel="point (sorted)",
        ylabel="point (sorted)",
    )
    ax.grid(False)
    iu = np.triu_indices(len(labels), 1)
    same = labels[iu[0]] == labels[iu[1]]
    bins = np.linspace(-1, 1, 41)
    hist.hist(weak[iu][~same], bins=bins, density=True, alpha=0.6, color="C1", label="negative")
    hist.hist(weak[iu][same], bins=bins, density=True, alpha=0.6, color="C0", label="positive")
    hist.set(xlabel="weak similarity W(u, v)", ylabel="density", title="pairs by the truth")
    hist.legend(title="pair", fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0))
    return fig


def plot_quality(result: KwikBucksResult, arms=None):
    """Cost (Eq. 1, log scale) and pair recall against the strong-query budget, one line per
    arm; the dashed grey line is the cost of leaving every point alone (all positive pairs)."""
    arms = [a for a in (arms or LABELS) if a in result.budgets[0].arms]
    fig, axes = subplots(1, 2, width=3.9, height=3.2)
    cost_ax, recall_ax = axes[0]
    x = result.multiples
    for arm in arms:
        style = dict(color=COLORS[arm], ls=STYLES.get(arm, "-"), marker="o", label=LABELS[arm])
        cost_ax.plot(x, np.maximum(result.series(arm, "cost"), 1), **style)
        recall_ax.plot(x, result.series(arm, "recall"), **style)
    cost_ax.axhline(result.positive_pairs, color="grey", ls="--", lw=1, label="all singletons")
    cost_ax.set(
        xscale="log", yscale="log", xlabel="strong-query budget (× N)", ylabel="cost, Eq. (1)",
        title="correlation-clustering cost (lower is better)",
    )  # fmt: skip
    recall_ax.set(
        xscale="log", xlabel="strong-query budget (× N)", ylabel="pair recall", ylim=(-0.02, 1.02),
        title="pair recall (precision is 1 for every arm)",
    )  # fmt: skip
    for ax in (cost_ax, recall_ax):
        ax.set_xticks(x, [f"{m:g}" for m in x])
        ax.minorticks_off() if ax is recall_ax else None
    handles, names = cost_ax.get_legend_handles_labels()
    fig.legend(handles, names, loc="outside lower center", ncol=3, fontsize="small")
    return fig


def plot_budget(fig, result: KwikBucksResult, multiple: float) -> None:
    """Every arm at one budget: cost as a share of all-singletons' cost, and recall (bars),
    drawn into ``fig`` (the widget's view)."""
    run = next(b for b in result.budgets if b.multiple == multiple)
    arms = list(run.arms)
    cost_ax, recall_ax = fig.subplots(1, 2)
    y = np.arange(len(arms))
    colors = [COLORS[a] for a in arms]
    cost_ax.barh(y, [run.arms[a].cost / result.positive_pairs for a in arms], color=colors)
    recall_ax.barh(y, [run.arms[a].recall for a in arms], color=colors)
    cost_ax.set_yticks(y, [LABELS[a] for a in arms])
    recall_ax.set_yticks(y, [""] * len(arms))
    cost_ax.invert_yaxis()
    recall_ax.invert_yaxis()
    cost_ax.set(
        xlabel="cost / cost of all singletons",
        title=f"budget {run.budget:,} queries ({multiple:g}N)",
    )
    recall_ax.set(xlabel="pair recall", xlim=(0, 1), title="recall")


def figures(result: KwikBucksResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    return {"quality": plot_quality(result)}
