"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.fullbatch_gd_generalization.experiment import LABELS, FullBatchResult

COLORS = {
    "gap": "#0173b2",
    "bound": "#de8f05",
    "bound_measured": "#029e73",
    "lipschitz_bound": "#d55e00",
    "sgd": "#cc78bc",
}


def _n_ticks(ax, ns) -> None:
    """Label a log n-axis at the grid's sizes only (no overlapping minor labels)."""
    ax.set_xticks(list(ns), [str(n) for n in ns])
    ax.minorticks_off()


def plot_bounds(result: FullBatchResult, n: int | None = None):
    """Along the path at one n (default: the largest): the measured gap (± 2 s.e.), the
    path-dependent bound, the bound with the measured stability and the Lipschitz control, for
    the convex and the nonconvex problem."""
    n = n or max(result.ns)
    arms = [a for a in ("gd_linear", "gd_tanh") if f"{a}/{n}" in result.curves]
    fig, axes = subplots(1, len(arms), width=4.6, height=3.4)
    for ax, arm in zip(axes[0], arms):
        c = result.curve(arm, n)
        t = np.arange(1, len(c.gap))
        g, se = np.array(c.gap[1:]), np.array(c.gap_se[1:])
        ax.plot(t, g, color=COLORS["gap"], label="measured gap")
        ax.fill_between(
            t, np.maximum(g - 2 * se, 1e-7), g + 2 * se, color=COLORS["gap"], alpha=0.2, lw=0
        )
        ax.plot(t, c.bound[1:], color=COLORS["bound"], label="path-dependent bound")
        ax.plot(
            t,
            c.bound_measured[1:],
            color=COLORS["bound_measured"],
            ls="--",
            label="bound, measured stability",
        )
        ax.plot(
            t,
            c.lipschitz_bound[1:],
            color=COLORS["lipschitz_bound"],
            ls=":",
            label="Lipschitz bound (control)",
        )
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="iteration t",
            ylabel="E[R − R_S]",
            title=f"{LABELS[arm]}, n = {n}",
        )
    axes[0][-1].legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize="small")
    return fig


def plot_scaling(result: FullBatchResult):
    """At the last iteration, against n (log-log): the gaps of GD on both problems with their
    path-dependent bounds, and a 1/n guide through the convex gap's first point."""
    fig, axes = subplots(1, 1, width=5.2, height=3.6)
    ax = axes[0][0]
    ns = np.array(result.ns)
    for arm, marker in (("gd_linear", "o"), ("gd_tanh", "s")):
        if f"{arm}/{ns[0]}" not in result.curves:
            continue
        g, se = result.at(arm, "gap"), result.at(arm, "gap_se")
        ax.errorbar(
            ns,
            np.maximum(g, 1e-7),
            yerr=2 * se,
            marker=marker,
            color=COLORS["gap"],
            ls="-" if arm == "gd_linear" else "--",
            label=f"gap, {LABELS[arm]}",
        )
        ax.plot(
            ns,
            result.at(arm, "bound"),
            marker=marker,
            color=COLORS["bound"],
            ls="-" if arm == "gd_linear" else "--",
            label=f"bound, {LABELS[arm]}",
        )
    g0 = result.at("gd_linear", "gap")[0]
    ax.plot(ns, g0 * ns[0] / ns, color="gray", lw=1, ls=":", label="∝ 1/n")
    ax.set(xscale="log", yscale="log", xlabel="training points n", ylabel="E[R − R_S] at T")
    _n_ticks(ax, ns)
    ax.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize="small")
    return fig


def plot_gd_vs_sgd(result: FullBatchResult):
    """GD against SGD at the same η and the same gradient evaluations (``sgd_epochs`` passes):
    replace-one distance² and measured gap, against n."""
    e = result.config["sgd_epochs"]
    ns = np.array(result.ns)
    fig, axes = subplots(1, 2, width=4.0, height=3.2)
    gd_stab = [result.curve("gd_linear", n).stability[e] for n in ns]
    gd_gap = [result.curve("gd_linear", n).gap[e] for n in ns]
    ax = axes[0][0]
    ax.plot(ns, gd_stab, "o-", color=COLORS["gap"], label=f"GD, {e} steps")
    ax.plot(
        ns,
        result.at("sgd_linear", "stability"),
        "s-",
        color=COLORS["sgd"],
        label=f"SGD, {e} passes",
    )
    ax.set(
        xscale="log", yscale="log", xlabel="n", ylabel="E‖w − w⁽ⁱ⁾‖²", title="replace-one distance²"
    )
    ax = axes[0][1]
    ax.plot(ns, np.maximum(gd_gap, 1e-7), "o-", color=COLORS["gap"], label=f"GD, {e} steps")
    ax.plot(
        ns,
        np.maximum(result.at("sgd_linear", "gap"), 1e-7),
        "s-",
        color=COLORS["sgd"],
        label=f"SGD, {e} passes",
    )
    ax.set(xscale="log", yscale="log", xlabel="n", ylabel="E[R − R_S]", title="measured gap")
    for ax in axes[0]:
        _n_ticks(ax, ns)
    ax.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize="small")
    return fig


def figures(result: FullBatchResult) -> dict:
    out = {"bounds": plot_bounds(result), "scaling": plot_scaling(result)}
    if f"sgd_linear/{result.ns[0]}" in result.curves:
        out["gd_vs_sgd"] = plot_gd_vs_sgd(result)
    return out
