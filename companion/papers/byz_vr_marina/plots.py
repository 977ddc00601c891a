"""Figures: plots take a result and return a matplotlib figure (paper Fig. 1 at small scale)."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.errors import unknown
from companion.papers.byz_vr_marina.claims import FLOOR
from companion.papers.byz_vr_marina.experiment import ATTACK_LABELS, LABELS, ByzVrMarinaResult

STYLE = {
    "sgd": dict(color="C0", ls="-"),
    "sgdm": dict(color="C1", ls="-"),
    "marina": dict(color="C2", ls="-"),
    "sgd+randk": dict(color="C0", ls="--"),
    "sgdm+randk": dict(color="C1", ls="--"),
    "marina+randk": dict(color="C2", ls="--"),
}


AXES = {
    "rounds": ("round", lambda arm: np.asarray(arm.rounds)),
    "bits": ("Mbit sent per good worker", lambda arm: np.asarray(arm.bits) / 1e6),
    "gradients": (
        "sample gradients per worker (×1000)",
        lambda arm: np.asarray(arm.gradients) / 1e3,
    ),
}


def _draw(ax, result: ByzVrMarinaResult, attack: str, x: str) -> None:
    label, values = AXES[x]
    for method in result.config["methods"]:
        arm = result.arm(attack, method)
        ax.plot(
            values(arm), np.maximum(arm.gap, FLOOR), lw=1.2, label=LABELS[method], **STYLE[method]
        )
    ax.set_yscale("log")
    ax.set_xlabel(label)
    ax.set_title(ATTACK_LABELS[attack])


def plot_gap(result: ByzVrMarinaResult, x: str = "rounds"):
    """f(x) − f* (log scale) against rounds (``x="rounds"``), bits sent (``x="bits"``) or sample
    gradients computed (``x="gradients"``: the work), one panel per attack, every method."""
    if x not in AXES:
        raise unknown("x", x, tuple(AXES))
    attacks = result.config["attacks"]
    fig, axes = subplots(1, len(attacks), width=3.2, height=2.8, sharey=True)
    for col, attack in enumerate(attacks):
        _draw(axes[0, col], result, attack, x)
    axes[0, 0].set_ylabel("optimality gap f(x) − f*")
    axes[0, -1].legend(fontsize="x-small")
    return fig


def plot_attack(fig, result: ByzVrMarinaResult, attack: str) -> None:
    """One attack against rounds and against bits, drawn into ``fig`` (the widget's view)."""
    ax1, ax2 = fig.subplots(1, 2, sharey=True)
    _draw(ax1, result, attack, "rounds")
    _draw(ax2, result, attack, "bits")
    ax1.set_ylabel("optimality gap f(x) − f*")
    ax2.legend(fontsize="x-small")


def figures(result: ByzVrMarinaResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    return {f"gap_{x}": plot_gap(result, x) for x in AXES}
