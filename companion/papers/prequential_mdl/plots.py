"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.prequential_mdl.experiment import ARMS, LABELS, PrequentialResult

COLORS = {
    "blockwise": "#1f77b4",
    "online": "#ff7f0e",
    "online_replay": "#2ca02c",
    "replay_calibrated": "#d62728",
}


def plot_code_lengths(result: PrequentialResult, smooth: int = 8):
    """Left: cumulative bits against examples transmitted (first order, each arm at its best
    rate), with the uniform code (off the top, cut to keep the arms apart). Right: bits per
    example, a running mean over ``smooth`` minibatches; block-wise's split points dashed."""
    fig, axes = subplots(1, 2, width=4.6, height=3.2)
    seed, top = result.seeds[0], 0.0
    for arm in ARMS:
        run = result.best(arm, seed)
        bits = np.asarray(run.batch_bits[arm])
        x = np.minimum(np.arange(1, len(bits) + 1) * run.batch_size, run.n)
        label = f"{LABELS[arm]} (lr {run.lr:g})"
        axes[0, 0].plot(x, np.cumsum(bits) / 1000, color=COLORS[arm], lw=1.4, label=label)
        kernel = np.ones(smooth)
        per = np.convolve(bits, kernel, "valid") / np.convolve(
            np.diff(np.concatenate([[0], x])), kernel, "valid"
        )
        axes[0, 1].plot(x[smooth - 1 :], per, color=COLORS[arm], lw=1.2)
        top = max(top, np.sum(bits) / 1000)
    run = result.orders[0]
    axes[0, 0].plot([0, run.n], [0, result.uniform_bits / 1000], "k:", lw=1.2, label="uniform code")
    for s in result.best("blockwise", seed).boundaries[:-1]:
        axes[0, 1].axvline(s, color=COLORS["blockwise"], ls="--", lw=0.6, alpha=0.6)
    axes[0, 0].set(xlabel="examples transmitted", ylabel="cumulative code length (kbits)")
    axes[0, 0].set_ylim(0, 1.6 * top)
    axes[0, 0].set_title("prequential description length")
    axes[0, 1].set(xlabel="examples transmitted", ylabel="bits per example", yscale="log")
    axes[0, 1].set_title(f"cost per example (mean of {smooth} minibatches)")
    fig.legend(
        *axes[0, 0].get_legend_handles_labels(),
        loc="upper center",
        ncol=3,
        fontsize="small",
        bbox_to_anchor=(0.5, -0.02),
    )
    return fig


def plot_learning_rates(result: PrequentialResult):
    """Description length of every arm at every learning rate of the grid (mean over orders):
    calibration helps most where the learner is badly tuned; the code picks each arm's best."""
    import matplotlib.ticker

    fig, axes = subplots(1, 1, width=6.0, height=3.2)
    ax = axes[0, 0]
    lrs = result.lrs
    for arm in ARMS:
        means = [np.mean(result.kbits_at(arm, lr)) for lr in lrs]
        ax.plot(lrs, means, "o-", color=COLORS[arm], label=LABELS[arm])
    ax.axhline(result.uniform_bits / 1000, color="k", ls=":", lw=1.0, label="uniform code")
    ax.set(xscale="log", yscale="log", xlabel="Adam learning rate", ylabel="code length (kbits)")
    ax.set_xticks(lrs, [f"{lr:g}" for lr in lrs])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_title("each arm at each rate (mean over orders)")
    ax.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.02, 0.5))
    return fig


def plot_betas(result: PrequentialResult):
    """Forward calibration's fitted inverse temperature β per minibatch, at each rate (first
    order): β < 1 softens over-confident predictions, β > 1 sharpens under-confident ones."""
    fig, axes = subplots(1, 1, width=5.0, height=3.0)
    ax = axes[0, 0]
    seed = result.seeds[0]
    colors = ["#440154", "#21918c", "#fde725", "#3b528b", "#5ec962"]
    for lr, color in zip(result.lrs, colors):
        run = result.at(seed, lr)
        ax.plot(
            np.arange(len(run.betas)) * run.batch_size,
            run.betas,
            color=color,
            lw=1.2,
            label=f"lr {lr:g}",
        )
    ax.axhline(1.0, color="k", ls=":", lw=1.0)
    ax.set(xlabel="examples transmitted", ylabel="fitted β", yscale="log")
    ax.set_title("forward calibration's inverse temperature")
    ax.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.02, 0.5))
    return fig


def figures(result: PrequentialResult) -> dict:
    return {
        "code_lengths": plot_code_lengths(result),
        "learning_rates": plot_learning_rates(result),
        "betas": plot_betas(result),
    }


def plot_at_rate(fig, result: PrequentialResult, lr: float):
    """For the explore widget: cumulative code length of every arm at one learning rate (first
    order), into ``fig``."""
    ax = fig.add_subplot(1, 1, 1)
    run = result.at(result.seeds[0], lr)
    for arm in ARMS:
        bits = np.asarray(run.batch_bits[arm])
        x = np.minimum(np.arange(1, len(bits) + 1) * run.batch_size, run.n)
        ax.plot(x, np.cumsum(bits) / 1000, color=COLORS[arm], lw=1.4, label=LABELS[arm])
    ax.plot([0, run.n], [0, result.uniform_bits / 1000], "k:", lw=1.2, label="uniform code")
    ax.set(xlabel="examples transmitted", ylabel="cumulative code length (kbits)")
    ax.set_title(f"learning rate {lr:g}, first order")
    ax.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.02, 0.5))
    return fig
