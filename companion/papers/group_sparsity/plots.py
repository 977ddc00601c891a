"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.group_sparsity.experiment import GroupSparsityResult, switch_size

LABELS = {
    "grouped": "grouped network (Alg. 2)",
    "grouped1": "Alg. 2, groups of size 1",
    "diagonal": "diagonal network",
    "linear": "plain linear (GD)",
    "group_lasso": "group lasso (CV)",
    "lasso": "lasso (CV, no groups)",
}


def plot_switch_on(result: GroupSparsityResult):
    """At ``switch_m`` (draw 0): the epoch at which each support entry first reaches half of
    its true value, one row per entry, one colour per true group, one panel per network
    (grouped, the size-1 control, diagonal); an entry that never switches on is marked at the
    right edge with an x."""
    from companion.papers.group_sparsity.claims import activation_epochs

    c = result.config
    methods = [k for k in ("grouped", "grouped1", "diagonal") if k in result.arms]
    fig, axes = subplots(1, len(methods), width=3.0, height=2.8, sharey=True, sharex=True)
    last = max(result.arms[methods[0]].record_epochs)
    for ax, method in zip(axes[0], methods):
        first = activation_epochs(result, method, "support_entries_switch_m")
        for g, group in enumerate(first):
            rows = g * c["group_size"] + np.arange(c["group_size"])
            on = np.isfinite(group)
            label = f"group {g + 1}"
            ax.scatter(group[on], rows[on], color=f"C{g}", s=22, label=label)
            ax.scatter(np.full((~on).sum(), last), rows[~on], color=f"C{g}", marker="x", s=28)
        ax.set_title(f"{LABELS[method]}, m={switch_size(c)}", fontsize="small")
        ax.set_xlabel("epoch the entry reaches w*/2")
    axes[0, 0].set_ylabel("support entry")
    axes[0, -1].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1))
    return fig


def plot_entries(result: GroupSparsityResult):
    """The official group_vs_sparse figure: support entries (one colour per true group) and the
    largest off-support entry over training, grouped network left, diagonal network right, and
    between them (when it ran) the control: Algorithm 2 with groups of size 1."""
    c = result.config
    methods = [k for k in ("grouped", "grouped1", "diagonal") if k in result.arms]
    fig, axes = subplots(1, len(methods), width=4.0, height=3.2, sharey=True)
    for ax, method in zip(axes[0], methods):
        arm = result.arms[method]
        epochs = arm.record_epochs
        for i, entry in enumerate(arm.trace["support_entries"]):
            group = i // c["group_size"]
            label = f"group {group + 1}" if i % c["group_size"] == 0 else None
            ax.plot(epochs, entry, color=f"C{group}", lw=1, label=label)
        ax.plot(
            epochs,
            arm.trace["max_off_support"][0],
            color="k",
            ls="--",
            lw=1.2,
            label="max |w_i| off support",
        )
        switch = arm.switch_epoch[result.trace_index]
        if switch >= 0:
            ax.axvline(switch + 1, color="grey", ls=":", lw=1, label="Alg. 2 switches")
        ax.set_title(f"{LABELS[method]}, m={c['trace_m']}")
        ax.set_xlabel("epoch")
    axes[0, 0].set_ylabel("w_i")
    axes[0, 0].legend(fontsize="small")
    return fig


def plot_error_vs_m(result: GroupSparsityResult, log: bool = True):
    """‖ŵ − w*‖² at the end of training against the sample size m, mean and range over draws."""
    fig, axes = subplots(1, 1, width=5.0, height=3.4)
    ax = axes[0, 0]
    for method in result.arms:
        by_m = result.by_m(method)
        ms = sorted(by_m)
        values = [np.asarray(by_m[m]) for m in ms]
        ax.plot(ms, [v.mean() for v in values], marker="o", label=LABELS[method])
        ax.fill_between(ms, [v.min() for v in values], [v.max() for v in values], alpha=0.15)
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("samples m")
    ax.set_ylabel("‖ŵ − w*‖²")
    ax.legend(fontsize="small")
    return fig


def plot_error_curves(result: GroupSparsityResult, m: int | None = None):
    """‖w(t) − w*‖² during training for the networks at sample size ``m`` (draw 0)."""
    m = result.config["trace_m"] if m is None else m
    index = result.data_sets.index([m, 0])
    fig, axes = subplots(1, 1, width=5.0, height=3.4)
    ax = axes[0, 0]
    for method, arm in result.arms.items():
        if arm.error_curves:
            ax.plot(arm.record_epochs, arm.error_curves[index], label=LABELS[method])
    ax.set_yscale("log")
    ax.set_xlabel("epoch")
    ax.set_ylabel("‖w(t) − w*‖²")
    ax.set_title(f"m={m}, draw 0")
    ax.legend(fontsize="small")
    return fig


def figures(result: GroupSparsityResult) -> dict:
    return {
        "entries": plot_entries(result),
        "error_vs_m": plot_error_vs_m(result),
        "error_curves": plot_error_curves(result),
        "switch_on": plot_switch_on(result),
    }
