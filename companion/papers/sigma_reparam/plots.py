"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.sigma_reparam.experiment import SigmaReparamResult
from companion.papers.sigma_reparam.method import entropy_lower_bound

LABELS = {"baseline": "baseline", "sigma_reparam": "σReparam"}


def _layers_to_show(depth: int) -> list[int]:
    """Early, middle and late layer, as in the paper's Fig. 1."""
    return sorted({0, depth // 2, depth - 1})


def plot_entropy(result: SigmaReparamResult, layers: list[int] | None = None):
    """Paper Fig. 1: training loss (top) and attention entropy per layer (bottom), per arm."""
    arms = list(result.arms.values())
    depth = len(arms[0].entropy)
    layers = _layers_to_show(depth) if layers is None else layers
    fig, axes = subplots(2, len(arms), width=4.2, height=2.8, sharex=True, sharey="row")
    for col, arm in enumerate(arms):
        top, bottom = axes[0, col], axes[1, col]
        top.plot(arm.loss_steps, arm.loss, lw=0.8)
        top.set_title(f"{LABELS[arm.method]} (test acc {arm.test_accuracy:.2f})")
        top.set_ylabel("training loss")
        for layer in layers:
            bottom.plot(arm.measure_steps, arm.entropy[layer], marker=".", label=f"layer {layer}")
        bottom.axhline(result.log_T, color="grey", ls=":", lw=1, label="uniform (log T)")
        bottom.set_xlabel("step")
        bottom.set_ylabel("attention entropy (nats)")
        bottom.set_ylim(bottom=0)
    axes[1, -1].legend(fontsize="small")
    return fig


def plot_bound(result: SigmaReparamResult):
    """Measured per-row entropy against the row's logit norm σ, with Theorem 3.1's bound."""
    fig, axes = subplots(1, 1, width=5.0, height=3.4)
    ax = axes[0, 0]
    top = 0.0
    for arm in result.arms.values():
        pts = np.array([p for layer in arm.bound_points for p in layer])
        ax.scatter(pts[:, 0], pts[:, 1], s=6, alpha=0.5, label=LABELS[arm.method])
        top = max(top, pts[:, 0].max())
    sigma = np.concatenate([np.linspace(0, 1, 50), np.geomspace(1, top * 1.05, 150)])
    ax.plot(
        sigma,
        entropy_lower_bound(sigma, result.tokens).numpy(),
        color="k",
        lw=1.5,
        label="lower bound (Thm 3.1)",
    )
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlabel("σ = ‖z − mean z‖₂ of a row's attention logits (symlog)")
    ax.set_ylabel("entropy of that row (nats)")
    ax.legend(fontsize="small")
    return fig


def plot_logit_norm(result: SigmaReparamResult):
    """Mean logit norm per layer over training: what σReparam keeps in check."""
    fig, axes = subplots(1, 1, width=5.0, height=3.0)
    ax = axes[0, 0]
    for arm, style in zip(result.arms.values(), ("-", "--")):
        for layer, values in enumerate(arm.logit_norm):
            ax.plot(
                arm.measure_steps,
                values,
                style,
                color=f"C{layer}",
                label=f"{LABELS[arm.method]}, layer {layer}",
            )
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("mean ‖z − mean z‖₂")
    ax.legend(fontsize="x-small", ncol=2)
    return fig


def plot_layer(fig, result: SigmaReparamResult, layer: int) -> None:
    """Both arms' entropy and logit norm for one layer, drawn into ``fig`` (the widget's view)."""
    ax1, ax2 = fig.subplots(1, 2)
    for arm in result.arms.values():
        ax1.plot(arm.measure_steps, arm.entropy[layer], marker=".", label=LABELS[arm.method])
        ax2.plot(arm.measure_steps, arm.logit_norm[layer], marker=".", label=LABELS[arm.method])
    ax1.axhline(result.log_T, ls=":", color="grey", label="log T")
    ax1.set(
        xlabel="step",
        ylabel="entropy (nats)",
        title=f"layer {layer}: attention entropy",
        ylim=(0, result.log_T * 1.05),
    )
    ax2.set(
        xlabel="step", ylabel="mean ‖z − mean z‖₂", yscale="log", title=f"layer {layer}: logit norm"
    )
    ax1.legend(fontsize="small")


def figures(result: SigmaReparamResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    return {
        "entropy": plot_entropy(result),
        "bound": plot_bound(result),
        "logit_norm": plot_logit_norm(result),
    }
