"""Figures: each takes a result (or a graph) and returns a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.graphmixer.experiment import ARMS, GraphMixerResult
from companion.papers.graphmixer.method import TemporalGraph, time_frequencies

LABELS = {
    "graphmixer": "GraphMixer (fixed ω)",
    "trainable_time": "GraphMixer, trained ω (control)",
    "node_only": "node encoder only",
    "no_order": "GraphMixer, Δt = 0, links shuffled",
    "attention": "attention (TGAT-style)",
    "gru": "GRU",
}
COLORS = {
    "graphmixer": "C0",
    "trainable_time": "C9",
    "node_only": "C7",
    "no_order": "C8",
    "attention": "C1",
    "gru": "C2",
}


SHORT = {
    "graphmixer": "GraphMixer",
    "trainable_time": "trained ω",
    "node_only": "node only",
    "no_order": "blind",
    "attention": "attention",
    "gru": "GRU",
}


def plot_curves(result: GraphMixerResult):
    """Validation AP after each epoch (left) and test AP after the last one (right), per arm;
    one legend under both panels."""
    fig, axes = subplots(1, 2, width=4.2, height=3.4)
    left, right = axes[0, 0], axes[0, 1]
    names = [a for a in ARMS if a in result.arms]
    for name in names:
        curve = result.arms[name].val_ap
        style = "-" if name in ("graphmixer", "attention", "gru") else "--"
        left.plot(
            range(1, len(curve) + 1),
            curve,
            style,
            marker="o",
            ms=3,
            color=COLORS[name],
            label=f"{SHORT[name]}: {LABELS[name]}" if SHORT[name] != LABELS[name] else LABELS[name],
        )
    left.set_xlabel("epoch")
    left.set_ylabel("validation AP")
    left.set_title("convergence")
    for j, name in enumerate(names):
        right.bar(j, result.arms[name].test_ap, color=COLORS[name])
    right.set_xticks(range(len(names)))
    right.set_xticklabels([SHORT[n] for n in names], rotation=35, ha="right", fontsize="small")
    lo = min(result.arms[n].test_ap for n in names)
    right.set_ylim(max(0.0, lo - 0.1), 1.0)
    right.set_ylabel("test AP")
    right.set_title("after the last epoch")
    fig.legend(
        *left.get_legend_handles_labels(),
        loc="upper center",
        ncol=2,
        fontsize="small",
        bbox_to_anchor=(0.5, 0.0),
    )
    return fig


def plot_time_encoding(dim: int = 16, horizon: float = 1e3):
    """cos(ω_i Δt) for the fixed ω_i = 10^{-9(i-1)/(d-1)}: fast frequencies tell recent gaps
    apart, slow ones stay near 1 for every gap (the encoding is a multi-scale clock)."""
    omega = time_frequencies(dim).numpy()
    dt = np.logspace(-1, np.log10(horizon), 300)
    fig, axes = subplots(1, 1, width=6.0, height=3.0)
    ax = axes[0, 0]
    im = ax.pcolormesh(
        dt,
        np.arange(1, dim + 1),
        np.cos(np.outer(omega, dt)),
        cmap="RdBu_r",
        vmin=-1,
        vmax=1,
        shading="auto",
    )
    ax.set_xscale("log")
    ax.set_xlabel("time gap Δt")
    ax.set_ylabel("channel i (ω_i decreasing)")
    fig.colorbar(im, ax=ax, label="cos(ω_i Δt)")
    return fig


def plot_stream(graph: TemporalGraph, user: int = 0, events: int = 400, clusters: int = 6):
    """One user's links in the first ``events`` events: the item it used against time, coloured
    by the item's cluster (item ``i`` is in cluster ``i % clusters`` in the synthetic stream)."""
    mask = graph.src[:events] == user
    idx = np.flatnonzero(mask)
    first_item = int(graph.dst.min())
    item = graph.dst[idx] - first_item
    fig, axes = subplots(1, 1, width=6.0, height=3.0)
    ax = axes[0, 0]
    ax.plot(graph.t[idx], item, "-", lw=0.6, color="0.6")
    for c in range(clusters):
        on = item % clusters == c
        ax.scatter(graph.t[idx][on], item[on], s=22, color=f"C{c}", label=f"cluster {c}", zorder=3)
    ax.set_xlabel("time")
    ax.set_ylabel("item")
    ax.set_title(f"user {user}: its items, in time order")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def figures(result: GraphMixerResult) -> dict:
    return {"curves": plot_curves(result), "time_encoding": plot_time_encoding()}
