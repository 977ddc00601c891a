"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

from companion.core import subplots
from companion.errors import unknown
from companion.papers.dfpc.experiment import DROP, DFPCResult

COLORS = {
    "dfpc": "C0",
    "l1": "C7",
    "l1_fanin": "C1",
    "random": "C2",
    "matched_l1": "C4",
    "matched_random": "C3",
    "matched_reversed_dfpc": "k",
}
LABELS = {
    "l1": "official global L1 (reference)",
    "l1_fanin": "fan-in-normalised L1",
    "matched_l1": "DFPC's counts, L1 ranking",
    "matched_random": "DFPC's counts, random ranking",
    "matched_reversed_dfpc": "DFPC's counts, DFPC's ranking reversed",
}
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


def plot_curves(ax, result: DFPCResult, axis: str = "latency", matched: bool = True) -> None:
    """Test accuracy of every arm against ``axis`` (latency, flops or channels) on ``ax``;
    solid: coupled channels allowed, dashed: uncoupled only, dotted with crosses: the
    allocation-matched controls (``matched``; their networks have DFPC's shapes, hence its
    latency and FLOPs); the grey dotted line is the accuracy drop at which arms are compared, the
    open circles DFPC's operating points."""
    if axis not in AXES:
        raise unknown("axis", axis, tuple(AXES))
    for arm in result.arms:
        is_matched = arm.scoring.startswith("matched_")
        if is_matched and not matched:
            continue
        style = ":" if is_matched else "-" if arm.coupled else "--"
        name = LABELS.get(arm.scoring, arm.scoring)
        label = (
            name
            if is_matched
            else f"{name}, {'coupled allowed' if arm.coupled else 'uncoupled only'}"
        )
        x, acc = _x(result, arm, axis), [result.base_accuracy, *arm.accuracy]
        marker = "x" if is_matched else "."
        ax.plot(x, acc, style, marker=marker, color=COLORS.get(arm.scoring, "k"), label=label)
        if arm.scoring == "dfpc" and arm.operating_point >= 0:
            i = 1 + arm.operating_point
            ax.plot(x[i], acc[i], "o", mfc="none", ms=10, color=COLORS["dfpc"])
    ax.axhline(result.base_accuracy - DROP, ls=":", color="grey", lw=1)
    ax.set(xlabel=AXES[axis], ylabel="test accuracy (no fine-tuning)")
    if axis != "channels":
        ax.invert_xaxis()  # faster / cheaper to the right


def plot_tradeoff(result: DFPCResult):
    """Test accuracy against measured single-thread CPU latency (median of interleaved rounds),
    against FLOPs counted from shapes (no timing noise) and against the share of channels
    removed (with the allocation-matched controls)."""
    fig, axes = subplots(1, 3, width=4.6, height=3.4, sharey=True)
    plot_curves(axes[0, 0], result, "latency", matched=False)
    plot_curves(axes[0, 1], result, "flops", matched=False)
    plot_curves(axes[0, 2], result, "channels")
    for ax in axes[0, 1:]:
        ax.set_ylabel("")
    # the legend beside the data, not over it
    axes[0, 2].legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.02, 1))
    return fig


def figures(result: DFPCResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    return {"tradeoff": plot_tradeoff(result)}
