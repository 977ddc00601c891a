"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import matplotlib.ticker
import numpy as np

from companion.core import subplots
from companion.papers.mega.experiment import MegaResult

LABELS = {"mega": "Mega", "mega_no_ema": "Mega without EMA", "transformer": "softmax transformer"}


def plot_kernels(result: MegaResult, channels: int = 8, arm: str = "mega", lags: int = 24):
    """The EMA kernels K_d[l] of the first Mega layer, at initialization and after training,
    for the first ``channels`` channels and ``lags`` lags (each line: how much token t−l
    contributes at t)."""
    a = result.arms[arm]
    fig, axes = subplots(1, 2, width=4.4, height=3.0, sharey=True)
    axes = axes[0]
    for ax, kernels, title in (
        (axes[0], a.kernels_init, "at initialization"),
        (axes[1], a.kernels, "after training"),
    ):
        k = np.asarray(kernels)[:channels, :lags]
        for d, row in enumerate(k):
            ax.plot(np.arange(len(row)), row, lw=1, label=f"channel {d}")
        ax.axhline(0, color="grey", lw=0.6)
        ax.set_title(f"EMA kernels, layer 0, {title}")
        ax.set_xlabel("lag l (tokens back)")
    axes[0].set_ylabel("kernel value K_d[l]")
    return fig


def plot_accuracy(result: MegaResult):
    """Test accuracy during training (left; dashed: the target accuracy, a marker where each arm
    first reaches it) and training loss (right), one line per arm."""
    from companion.papers.mega.claims import TARGET, steps_to

    fig, axes = subplots(1, 2, width=4.4, height=3.0)
    axes = axes[0]
    for a in result.arms.values():
        (line,) = axes[0].plot(
            a.eval_steps, a.test_accuracy_curve, marker=".", ms=3, label=LABELS[a.arm]
        )
        reached = steps_to(a)
        if reached is not None:
            axes[0].plot(reached - 1, TARGET, "v", ms=9, color=line.get_color())
        loss = np.asarray(a.loss)
        w = max(1, len(loss) // 15)
        smooth = np.convolve(loss, np.ones(w) / w, mode="valid")
        axes[1].plot(a.loss_steps[w - 1 :], smooth, label=LABELS[a.arm])
    axes[0].axhline(0.5, color="grey", ls=":", lw=1, label="chance")
    axes[0].axhline(TARGET, color="grey", ls="--", lw=0.8, label=f"target {TARGET:g}")
    axes[0].set_xlabel("step")
    axes[0].set_ylabel("test accuracy")
    handles, labels = axes[0].get_legend_handles_labels()  # one legend, outside the data
    fig.legend(handles, labels, loc="outside lower center", ncol=5, fontsize="small")
    axes[1].set_xlabel("step")
    axes[1].set_ylabel("training loss (smoothed)")
    return fig


def plot_timing(result: MegaResult):
    """Forward time of one Mega layer against sequence length, log-log, full vs chunked."""
    fig, axes = subplots(1, 1, width=6.8, height=3.2)
    ax = axes[0, 0]
    lengths = np.asarray(result.timing_lengths)
    chunk = result.config["timing_chunk"]
    for secs, slope, label in (
        (result.full_seconds, result.full_slope, "full attention"),
        (result.chunk_seconds, result.chunk_slope, f"chunked, c = {chunk}"),
    ):
        n = len(secs)
        ax.loglog(
            lengths[:n], 1e3 * np.asarray(secs), marker="o", label=f"{label} (slope {slope:.2f})"
        )
    ref = 1e3 * result.chunk_seconds[0] * lengths / lengths[0]
    ax.loglog(lengths, ref, color="grey", ls=":", lw=1, label="linear reference")
    ax.set_xticks(lengths, [str(n) for n in lengths])  # the timed lengths, no minor tick labels
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xlabel("sequence length L (tokens)")
    ax.set_ylabel("forward time (ms)")
    fig.legend(loc="outside right upper", fontsize="small")  # outside the data
    return fig


def plot_kernel_channel(fig, result: MegaResult, channel: int, arm: str = "mega"):
    """One channel's EMA kernel, at initialization and after training, on ``fig`` (for the
    explore widget)."""
    a = result.arms[arm]
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(a.kernels_init[channel], label="at initialization", color="grey", ls="--")
    ax.plot(a.kernels[channel], label="after training")
    ax.axhline(0, color="grey", lw=0.6)
    ax.set_xlabel("lag l (tokens back)")
    ax.set_ylabel("kernel value K_d[l]")
    ax.set_title(f"EMA kernel of channel {channel}, layer 0")
    ax.legend(fontsize="small")
    return fig


def figures(result: MegaResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    return {
        "kernels": plot_kernels(result),
        "accuracy": plot_accuracy(result),
        "timing": plot_timing(result),
    }
