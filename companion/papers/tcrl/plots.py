"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.core.plotting import COLORBLIND
from companion.papers.tcrl.experiment import ARMS, TCRLResult

LABELS = {
    "simulator": "true equations",
    "random": "random actions",
    "untrained": "untrained model",
    "tcrl": "TCRL (EMA target)",
    "online_target": "online target (control)",
    "reconstruction": "reconstruction",
    "ensemble": "ensemble (K models)",
    "reward_only": "reward only (control)",
}
COLORS = dict(
    zip(ARMS, [COLORBLIND[7], COLORBLIND[5], COLORBLIND[8], *COLORBLIND[:4], COLORBLIND[6]])
)


def plot_prediction(result: TCRLResult, arms: tuple[str, ...] | None = None):
    """Open-loop prediction on held-out episodes: the k-step reward error of every learned
    model (left, log scale) and the latent consistency error 2 − 2cos (right)."""
    arms = arms or tuple(a for a in result.arms if result.arms[a].reward_error)
    fig, axes = subplots(1, 2, width=4.3, height=3.0)
    left, right = axes[0]
    for arm in arms:
        res = result.arms[arm]
        k = np.arange(1, len(res.reward_error) + 1)
        left.plot(k, res.reward_error, marker=".", color=COLORS[arm], label=LABELS[arm])
        if res.latent_error and arm != "untrained":
            right.plot(k, res.latent_error, marker=".", color=COLORS[arm], label=LABELS[arm])
    left.set_yscale("log")
    left.set_xlabel("steps ahead k (no re-encoding)")
    left.set_ylabel("reward error  MSE / Var(r)")
    right.set_xlabel("steps ahead k")
    right.set_ylabel("latent error  2 − 2cos(ẑ_k, target)")
    right.set_title("each model against its own target", fontsize="small")
    left.legend(fontsize="small", loc="upper left", bbox_to_anchor=(0.0, -0.2), ncol=2)
    return fig


def plot_returns(result: TCRLResult):
    """MPPI's episode returns with each model (dots: episodes, bar: mean), same start states."""
    arms = [a for a in result.arms if result.arms[a].returns]
    fig, axes = subplots(1, 1, width=6.5, height=3.0)
    ax = axes[0, 0]
    for i, arm in enumerate(arms):
        r = result.arms[arm].returns
        ax.bar(i, np.mean(r), color=COLORS[arm], alpha=0.6)
        ax.scatter(np.full(len(r), i), r, color="k", s=10, zorder=3)
    ax.set_xticks(range(len(arms)), [LABELS[a] for a in arms], rotation=25, ha="right")
    ax.set_ylabel("episode return (200 steps)")
    ax.set_title("MPPI with each model, scored in the real Pendulum-v1", fontsize="medium")
    return fig


def plot_loss(result: TCRLResult):
    """Training loss of every trained model (each its own loss, so only the shapes compare)."""
    fig, axes = subplots(1, 1, width=5.0, height=2.8)
    ax = axes[0, 0]
    for arm, res in result.arms.items():
        if res.loss:
            ax.plot(res.loss_steps, res.loss, color=COLORS[arm], label=LABELS[arm])
    ax.set_yscale("log")
    ax.set_xlabel("update")
    ax.set_ylabel("training loss")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0))
    return fig


def figures(result: TCRLResult) -> dict:
    return {
        "prediction": plot_prediction(result),
        "returns": plot_returns(result),
        "loss": plot_loss(result),
    }


def plot_arm(fig, result: TCRLResult, arm: str):
    """For the widget: one model's k-step reward error next to TCRL's (left) and its episode
    returns next to the simulator's and random actions' (right)."""
    left, right = fig.subplots(1, 2)
    for name in dict.fromkeys(("tcrl", arm)):
        res = result.arms[name]
        if res.reward_error:
            k = np.arange(1, len(res.reward_error) + 1)
            left.plot(k, res.reward_error, marker=".", color=COLORS[name], label=LABELS[name])
    left.set_yscale("log")
    left.set_xlabel("steps ahead k")
    left.set_ylabel("reward error  MSE / Var(r)")
    left.legend(fontsize="small")
    names = [a for a in dict.fromkeys(("random", arm, "simulator")) if result.arms[a].returns]
    for i, name in enumerate(names):
        r = result.arms[name].returns
        right.bar(i, np.mean(r), color=COLORS[name], alpha=0.6)
        right.scatter(np.full(len(r), i), r, color="k", s=10, zorder=3)
    right.set_xticks(range(len(names)), [LABELS[a] for a in names], fontsize="small")
    right.set_ylabel("episode return")
    return fig
