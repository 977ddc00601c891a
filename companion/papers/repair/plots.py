"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np
from matplotlib import ticker

from companion.core import subplots
from companion.papers.repair.experiment import RepairResult

LABELS = {
    "naive": "naive interpolation",
    "permuted": "permuted interpolation",
    "repair": "permuted + REPAIR",
}
MARKERS = {"naive": "o", "permuted": "s", "repair": "^"}


def _draw_curves(ax, result: RepairResult, metric: str, alpha: float | None = None) -> None:
    scale = 100 if metric == "test_acc" else 1
    for method, curve in result.curves.items():
        ax.plot(
            result.alphas,
            np.asarray(curve[metric]) * scale,
            marker=MARKERS[method],
            ms=4,
            label=LABELS[method],
        )
    ends = [result.endpoints["a"][metric] * scale, result.endpoints["b"][metric] * scale]
    ax.plot([0, 1], ends, ls=":", color="grey", label="straight line between A and B")
    if alpha is not None:
        ax.axvline(alpha, color="k", lw=0.8)
    ax.set_xlabel("interpolation α  (0 = network A, 1 = network B)")
    if metric == "test_loss":
        _log_axis(ax)
        ax.set_ylabel("test loss (cross-entropy, log scale)")
    else:
        ax.set_ylabel("test accuracy (%)")


def _log_axis(ax) -> None:
    """Log-scale y with plain tick labels at 1, 2, 5 × 10^k."""
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1, 2, 5)))
    ax.yaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(ticker.NullFormatter())


def plot_barriers(result: RepairResult):
    """Test loss and accuracy along the line from A to B, for the three merges (paper Fig. 1)."""
    fig, axes = subplots(1, 2, width=4.6, height=3.6)
    _draw_curves(axes[0, 0], result, "test_loss")
    _draw_curves(axes[0, 1], result, "test_acc")
    axes[0, 0].set_title("barrier in test loss (lower is better)")
    axes[0, 1].set_title("barrier in test accuracy (higher is better)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=4, fontsize="small")
    return fig


def _draw_ratios(ax, result: RepairResult, index: int) -> None:
    x = np.arange(len(result.layers))
    for method, ratios in result.std_ratio.items():
        ax.plot(x, ratios[index], marker=MARKERS[method], label=LABELS[method])
    ax.axhline(1.0, color="grey", ls=":", lw=1)
    _log_axis(ax)
    # the same range at every α, so that the widget's views compare
    lowest = min(min(r) for ratios in result.std_ratio.values() for r in ratios)
    ax.set_ylim(min(lowest, 0.5) * 0.8, 1.25)
    ax.set_xticks(x, result.layers)
    ax.set_xlabel("layer (pre-activations, input side → output side)")
    ax.set_ylabel("std of merged net / endpoints' std (log)")
    ax.set_title(f"variance collapse at α = {result.alphas[index]:.2f}")


def plot_variance_collapse(result: RepairResult, index: int | None = None):
    """Per layer, the mean std of the merged network's units over the mean of the endpoints'
    interpolated std (log scale; 1 = no collapse), at α = ½ unless ``index`` picks another α."""
    fig, axes = subplots(1, 1, width=5.4, height=3.4)
    _draw_ratios(axes[0, 0], result, result.mid if index is None else index)
    axes[0, 0].legend(fontsize="small", loc="lower left")
    return fig


def plot_correlation(result: RepairResult):
    """Mean correlation of paired units per hidden layer: B's units in their own order
    (identity pairing) vs after matching; and, as a heuristic, the std ratio sqrt((1 + ρ)/2)
    each would give. The formula is exact for two units with equal stds and correlation ρ, but ρ
    here is measured after the ReLU (what the matching uses) while the collapse concerns the
    next layer's pre-activations, so the right panel indicates the trend, not a prediction."""
    fig, axes = subplots(1, 2, width=4.2, height=3.0)
    n = len(result.correlation["matched"])
    x = np.arange(n)
    ax = axes[0, 0]
    ax.bar(x - 0.2, result.correlation["identity"], 0.4, label="unit i with unit i")
    ax.bar(x + 0.2, result.correlation["matched"], 0.4, label="unit i with its match")
    ax.set_xticks(x, result.layers[:n])
    ax.set_ylabel("mean correlation ρ (post-ReLU)")
    ax.set_title("alignment by activation correlation")
    ax.legend(fontsize="small")
    ax = axes[0, 1]
    for key, label in (("identity", "unit i with unit i"), ("matched", "unit i with its match")):
        rho = np.asarray(result.correlation[key])
        ax.plot(x, np.sqrt((1 + rho) / 2), marker="o", label=label)
    ax.set_xticks(x, result.layers[:n])
    ax.set_ylim(0.5, 1.02)
    ax.set_ylabel("sqrt((1 + ρ) / 2), ρ post-ReLU")
    ax.set_title("heuristic: one layer's std shrinkage at α = ½")
    return fig


def plot_alpha(fig, result: RepairResult, index: int) -> None:
    """The widget's view: loss curves with the chosen α marked, and the std ratios at that α."""
    ax1, ax2 = fig.subplots(1, 2)
    _draw_curves(ax1, result, "test_loss", alpha=result.alphas[index])
    ax1.set_title("test loss along the line")
    _draw_ratios(ax2, result, index)
    ax2.legend(fontsize="x-small", loc="lower left")


def figures(result: RepairResult) -> dict:
    return {
        "barriers": plot_barriers(result),
        "variance_collapse": plot_variance_collapse(result),
        "correlation": plot_correlation(result),
    }
