"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.soft_threshold_pruning.experiment import SoftThresholdResult
from companion.papers.soft_threshold_pruning.method import implied_l1

LABELS = {
    "lats": "LATS (λ constant)",
    "s_lats": "S-LATS (closed form)",
    "fixed": "fixed threshold",
    "linear": "linear ramp",
    "linear_early": "linear ramp, D reached at T/2",
    "gmp": "GMP, uniform per layer",
    "gmp_global": "GMP, global ranking",
}


COLORS = {name: f"C{i}" for i, name in enumerate(LABELS)}


def plot_ista(ista: dict):
    """Soft-threshold SGD against ISTA on a small lasso problem (``result.ista`` or
    :func:`ista_comparison`): the gap per step."""
    fig, axes = subplots(1, 2, width=4.2, height=3.0)
    for ax, name in zip(axes[0], ("stable", "sparse")):
        steps = np.arange(len(ista[f"{name}_gap"]))
        ax.semilogy(steps, np.maximum(ista[f"{name}_gap"], 1e-17), label="whole trajectory")
        ax.semilogy(
            steps[1:],
            np.maximum(ista[f"{name}_one_step_gap"], 1e-17),
            label="one step, active weights",
            ls="--",
        )
        ax.set_title(f"{name} solution")
        ax.set_xlabel("step")
        ax.set_ylabel("max |w_ISTA − w_reparam|")
    axes[0, 0].legend(fontsize="small")
    return fig


def plot_schedules(result: SoftThresholdResult):
    """Threshold D_t / D_T per schedule (left) and the L1 coefficient λ_t = ΔD/η it implies
    (right, per unit of D_T): constant for LATS only."""
    lrs = result.lrs
    fig, axes = subplots(1, 2, width=4.2, height=3.0)
    for name, curve in result.curves.items():
        if name in ("gmp", "gmp_global"):
            continue
        axes[0, 0].plot(np.arange(len(curve)), curve, label=LABELS[name], color=COLORS[name])
        if name != "fixed":
            lam = np.asarray(implied_l1(curve, lrs))
            keep = np.asarray(lrs) > 1e-3 * max(lrs)  # λ = ΔD/η blows up where η → 0
            axes[0, 1].plot(
                np.arange(len(lam))[keep], lam[keep], label=LABELS[name], color=COLORS[name]
            )
    axes[0, 0].set_xlabel("step")
    axes[0, 0].set_ylabel("D_t / D_T")
    axes[0, 1].set_xlabel("step")
    axes[0, 1].set_ylabel("implied λ_t (per unit D_T)")
    axes[0, 1].set_yscale("log")
    # one legend for both panels, outside the data (the fixed threshold is on the left only)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    axes[0, 1].legend(handles, labels, fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1))
    return fig


def plot_accuracy(result: SoftThresholdResult):
    """Test accuracy against final sparsity for every run of the threshold search."""
    fig, axes = subplots(1, 1, width=5.0, height=3.4)
    ax = axes[0, 0]
    for name, runs in result.search.items():
        pts = np.array(runs)
        ax.scatter(pts[:, 1], pts[:, 2], label=LABELS[name], s=18, color=COLORS[name])
    ax.axvline(result.config["target_sparsity"], color="grey", ls=":", lw=1)
    learned = [r[2] for runs in result.search.values() for r in runs if r[2] > 0.2]
    if learned:  # runs near chance (a network with a dead layer) would squash the rest
        low = min(learned) - 0.02
        ax.set_ylim(low, 1.0)
        ax.set_title(f"runs below {low:.2f} accuracy are off the chart", fontsize="small")
    ax.axhline(result.dense_accuracy, color="k", ls=":", lw=1, label="dense")
    ax.set_xlabel("final sparsity")
    ax.set_ylabel("test accuracy")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1))
    return fig


def figures(result: SoftThresholdResult) -> dict:
    return {
        "ista": plot_ista(result.ista),
        "schedules": plot_schedules(result),
        "accuracy": plot_accuracy(result),
    }
