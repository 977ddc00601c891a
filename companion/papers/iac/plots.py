"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.iac.experiment import IACResult

LABELS = {
    "naive": "naive (a' ~ π)",
    "iac": "IAC (SIR)",
    "sarsa": "SARSA (dataset a')",
    "is_sarsa": "IS-weighted SARSA",
}
COLORS = {"naive": "tab:red", "iac": "tab:blue", "sarsa": "tab:grey", "is_sarsa": "tab:green"}
STYLES = {"naive": "-", "iac": "-", "sarsa": "-", "is_sarsa": "--"}  # IS-SARSA runs on IAC's curve


def plot_evaluation(result: IACResult):
    """Left: each critic's mean error Q̂ − Q^π over training (dataset pairs, exact Q^π of the
    current policy). Right: Q̂ against the exact Q^π at every dataset pair at the end."""
    fig, axes = subplots(1, 2, width=4.6, height=3.3)
    left, right = axes[0, 0], axes[0, 1]
    for name, arm in result.arms.items():
        left.plot(arm.steps, arm.bias, color=COLORS[name], ls=STYLES[name], label=LABELS[name])
    left.axhline(0, color="black", lw=0.8, ls=":")
    left.set_xlabel("step")
    left.set_ylabel("mean Q̂ − Q^π (dataset pairs)")
    left.set_title("critic error while training")
    left.set_ylim(-2.5, 2.5)  # every entry starts at q_init, far above: the first steps are cut
    lo, hi = np.inf, -np.inf
    for name in ("naive", "iac", "sarsa"):
        if name not in result.arms:
            continue
        pts = np.array(result.arms[name].pairs)
        right.scatter(pts[:, 0], pts[:, 1], s=10, alpha=0.6, color=COLORS[name], label=LABELS[name])
        lo, hi = min(lo, pts.min()), max(hi, pts.max())
    right.plot([lo, hi], [lo, hi], color="black", lw=0.8, ls=":", label="Q̂ = Q^π")
    right.set_xlabel("exact Q^π(s, a)")
    right.set_ylabel("critic Q̂(s, a)")
    right.set_title("at the end of training")
    fig.legend(
        *left.get_legend_handles_labels(),
        loc="upper center",
        ncol=4,
        fontsize="small",
        bbox_to_anchor=(0.5, 1.08),
    )
    return fig


def plot_returns(result: IACResult):
    """Left: the exact return of each actor-critic's current policy over training, between the
    behaviour policy's and the optimal policy's. Right: the variance of a one-sample critic
    update with importance weights over that with resampling (IAC's run; above 1: resampling
    is the less noisy)."""
    fig, axes = subplots(1, 2, width=4.6, height=3.3)
    left, right = axes[0, 0], axes[0, 1]
    for name, arm in result.arms.items():
        left.plot(arm.steps, arm.ret, color=COLORS[name], ls=STYLES[name], label=LABELS[name])
    left.axhline(result.behaviour_return, color="black", ls="--", lw=0.8, label="behaviour μ")
    left.axhline(result.optimal_return, color="black", ls=":", lw=0.8, label="optimal")
    left.set_xlabel("step")
    left.set_ylabel("exact return of π")
    fig.legend(
        *left.get_legend_handles_labels(),
        loc="upper center",
        ncol=3,
        fontsize="small",
        bbox_to_anchor=(0.5, 1.14),
    )
    iac = result.arms["iac"]
    # from the second measurement: at step 0 every entry is q_init and SIR's variance is 0
    ratio = np.asarray(iac.var_is[1:]) / np.maximum(np.asarray(iac.var_sir[1:]), 1e-300)
    right.plot(iac.steps[1:], ratio, color=COLORS["is_sarsa"], label="importance weights / SIR")
    right.axhline(1.0, color="black", lw=0.8, ls=":", label="equal variance")
    right.set_xlabel("step")
    right.set_ylabel("update variance ratio, IS / SIR")
    right.set_ylim(bottom=0)
    right.legend(fontsize="small", loc="lower right")
    return fig


def plot_pendulum(result: IACResult):
    """Pendulum: left, each critic's Q̂ against the Monte Carlo Q^π at the evaluation pairs
    (end of training); right, each critic's mean error Q̂ − Q^π over training."""
    cont = result.continuous
    fig, axes = subplots(1, 2, width=4.6, height=3.3)
    left, right = axes[0, 0], axes[0, 1]
    mc = np.asarray(cont.mc_q)
    for name in cont.final_q:
        left.scatter(mc, cont.final_q[name], s=8, alpha=0.5, color=COLORS[name])
        right.plot(cont.steps, cont.bias[name], color=COLORS[name], label=LABELS[name])
    lo, hi = mc.min(), mc.max()
    left.plot([lo, hi], [lo, hi], color="black", lw=0.8, ls=":")
    left.set_xlabel("Monte Carlo Q^π(s, a)")
    left.set_ylabel("critic Q̂(s, a)")
    left.set_title("dataset pairs, end of training")
    right.axhline(0, color="black", lw=0.8, ls=":", label="Q̂ = Q^π")
    right.set_xlabel("step")
    right.set_ylabel("mean Q̂ − Q^π")
    right.set_title("critic error while training")
    fig.legend(
        *right.get_legend_handles_labels(),
        loc="upper center",
        ncol=4,
        fontsize="small",
        bbox_to_anchor=(0.5, 1.08),
    )
    return fig


def figures(result: IACResult) -> dict:
    figs = {"evaluation": plot_evaluation(result), "returns": plot_returns(result)}
    if result.continuous is not None:
        figs["pendulum"] = plot_pendulum(result)
    return figs


def plot_critic(fig, result: IACResult, critic: str):
    """For the widget: one critic's Q̂ against the exact Q^π at the dataset's pairs (left) and
    its mean error over training next to IAC's (right)."""
    left, right = fig.subplots(1, 2)
    arm = result.arms[critic]
    pts = np.array(arm.pairs)
    left.scatter(pts[:, 0], pts[:, 1], s=12, alpha=0.7, color=COLORS[critic])
    lo, hi = pts.min(), pts.max()
    left.plot([lo, hi], [lo, hi], color="black", lw=0.8, ls=":")
    left.set_xlabel("exact Q^π(s, a)")
    left.set_ylabel("critic Q̂(s, a)")
    left.set_title(LABELS[critic])
    for name in dict.fromkeys((critic, "iac")):
        right.plot(
            result.arms[name].steps, result.arms[name].bias, color=COLORS[name], label=LABELS[name]
        )
    right.axhline(0, color="black", lw=0.8, ls=":")
    right.set_xlabel("step")
    right.set_ylabel("mean Q̂ − Q^π")
    right.legend(fontsize="small")
