"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.optimal_commitment.claims import sweep_arms
from companion.papers.optimal_commitment.experiment import (
    LABELS,
    TYPES,
    OptimalCommitmentResult,
)

COLORS = {
    "rct": "tab:gray",
    "adaptive_enrichment": "tab:purple",
    "futility_stopping": "tab:orange",
    "greedy_bayes_ocp": "tab:red",
    "bayes_ocp": "tab:blue",
    "oracle_rct": "black",
}
METRIC_LABELS = {
    "utility": "expected utility",
    "fwer": "FWER (%)",
    "switches": "switches per trial",
    "success": "success rate (%)",
    "time": "patients enrolled",
}


def main_arms(result: OptimalCommitmentResult) -> list[str]:
    """The policies at the preset's threshold (the sweep's extra arms left out)."""
    return [a for a in result.arms if "@" not in a]


def _fold_sd(result: OptimalCommitmentResult, arm: str, metric: str, kind: str) -> float:
    """Spread over folds (as the paper's Table 3); 0 with one fold."""
    folds = np.asarray(result.fold)
    types = np.asarray(result.env_type)
    v = np.asarray(result.arms[arm][metric], dtype=float)
    means = [
        v[(folds == k) & ((types == TYPES.index(kind)) if kind != "all" else True)].mean()
        for k in np.unique(folds)
    ]
    return float(np.std(means)) if len(means) > 1 else 0.0


def plot_arms(fig, result: OptimalCommitmentResult, metric: str = "utility") -> None:
    """One metric of every policy by environment type (all, green, amber, red), drawn into
    ``fig`` (the widget's view); the Oracle-RCT's utility is the black tick."""
    ax = fig.subplots(1, 1)
    arms = main_arms(result)
    kinds = ("all", *TYPES)
    width = 0.8 / len(arms)
    scale = 100.0 if metric in ("fwer", "success") else 1.0
    for i, arm in enumerate(arms):
        x = np.arange(len(kinds)) + (i - (len(arms) - 1) / 2) * width
        y = [scale * result.mean(arm, metric, k) for k in kinds]
        err = [scale * _fold_sd(result, arm, metric, k) for k in kinds]
        ax.bar(x, y, width, yerr=err if any(err) else None, color=COLORS[arm], label=LABELS[arm])
    if metric in ("utility", "success"):
        for j, k in enumerate(kinds):
            y = scale * result.mean("oracle_rct", metric, k)
            ax.plot(
                [j - 0.42, j + 0.42],
                [y, y],
                color="k",
                lw=2,
                label="Oracle-RCT" if j == 0 else None,
            )
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(np.arange(len(kinds)))
    ax.set_xticklabels(
        [k if k == "all" else f"{k} ({100 * result.type_share(k):.0f}%)" for k in kinds]
    )
    ax.set_ylabel(METRIC_LABELS[metric])
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))


def plot_table(result: OptimalCommitmentResult):
    """The paper's Table 3 as bars: utility of every policy by environment type."""
    fig, _ = subplots(1, 1, width=8.0, height=3.2)
    fig.clear()
    plot_arms(fig, result, "utility")
    return fig


def plot_sweep(result: OptimalCommitmentResult):
    """Bayes-OCP across thresholds τ: utility, switches and success rate, with greedy
    Bayes-OCP and the RCT as reference lines."""
    sweep = sweep_arms(result)
    taus = [t for t, _ in sweep]
    fig, axes = subplots(1, 3, width=3.2, height=2.8)
    for ax, metric in zip(axes[0], ("utility", "switches", "success")):
        scale = 100.0 if metric == "success" else 1.0
        ax.plot(
            taus,
            [scale * result.mean(a, metric) for _, a in sweep],
            marker="o",
            color=COLORS["bayes_ocp"],
            label="Bayes-OCP",
        )
        for ref in ("greedy_bayes_ocp", "rct"):
            ax.axhline(
                scale * result.mean(ref, metric), color=COLORS[ref], ls="--", label=LABELS[ref]
            )
        ax.axvline(result.config["threshold"], color="grey", ls=":", lw=1)
        ax.set_xlabel("threshold τ")
        ax.set_ylabel(METRIC_LABELS[metric])
    axes[0, -1].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0))
    return fig


def figures(result: OptimalCommitmentResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    return {"table3": plot_table(result), "sweep": plot_sweep(result)}
