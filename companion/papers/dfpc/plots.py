"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

from companion.core import subplots
from companion.errors import unknown
from companion.papers.dfpc.experiment import DROP, DFPCResult

COLORS = {"dfpc": "C0", "l1": "C1", "random": "C2"}
AXES = {
    "latency": "measured CPU latency of one batch (ms, 1 thread)",
    "flops": "FLOPs of one image's forward (millions)",
    "channels": "share of channels removed",
}


def _x(result: DFPCResult, arm, axis: str) -> list[float]:
    if axis == "latency":
        return [1e3 * t for t in (result.base_latency_seconds, *arm.latency_seconds)]
    if axis == "flops":
        return [f / 1e6 for f in (result.base_flops, *arm.flops)]
    return [0.0, *arm.fractions]


def plot_curves(ax, result: DFPCResult, axis: str = "latency") -> None:
    """Test accuracy of every arm against ``axis`` (latency, flops or channels) on ``ax``;
    solid: coupled channels allowed, dashed: uncoupled only; the dotted line is the accuracy
    drop at which arms are compared, the open circles DFPC's operating points."""
    if axis not in AXES:
        raise unknown("axis", axis, tuple(AXES))
    for arm in result.arms:
        style = "-" if arm.coupled else "--"
        label = f"{arm.scoring}, {'coupled allowed' if arm.coupled else 'uncoupled only'}"
        x, acc = _x(result, arm, axis), [result.base_accuracy, *arm.accuracy]
        ax.plot(x, acc, style, marker=".", color=COLORS[arm.scoring], label=label)
        if arm.scoring == "dfpc" and arm.operating_point >= 0:
            i = 1 + arm.operating_point
            ax.plot(x[i], acc[i], "o", mfc="none", ms=10, color=COLORS["dfpc"])
    ax.axhline(result.base_accuracy - DROP, ls=":", color="grey", lw=1)
    ax.set(xlabel=AXES[axis], ylabel="test accuracy (no fine-tuning)")
    if axis != "channels":
        ax.invert_xaxis()  # faster / cheaper to the right


def plot_tradeoff(result: DFPCResult):
    """Test accuracy against measured single-thread CPU latency (left) and against the share of
    channels removed (right)."""
    fig, axes = subplots(1, 2, width=4.4, height=3.2, sharey=True)
    plot_curves(axes[0, 0], result, "latency")
    plot_curves(axes[0, 1], result, "channels")
    axes[0, 1].set_ylabel("")
    axes[0, 0].legend(fontsize="x-small")
    return fig


def figures(result: DFPCResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    return {"tradeoff": plot_tradeoff(result)}
