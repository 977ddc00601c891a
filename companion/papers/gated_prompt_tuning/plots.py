"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

from companion.core import subplots
from companion.papers.gated_prompt_tuning.experiment import GatedPromptResult


def plot_insertion(result: GatedPromptResult):
    """Paper Fig. 1 in miniature: VPT's test accuracy against the block where prompts enter,
    with gated prompt tuning and the linear probe as horizontal lines."""
    fig, axes = subplots(1, 1, width=5.0, height=3.2)
    ax = axes[0, 0]
    acc = result.vpt_accuracies()
    ax.plot(range(len(acc)), acc, marker="o", label="VPT inserted at block k")
    if "gated" in result.arms:
        ax.axhline(result.arms["gated"].test_accuracy, color="C1", ls="--", label="gated prompts")
    if "linear" in result.arms:
        ax.axhline(result.arms["linear"].test_accuracy, color="grey", ls=":", label="linear probe")
    ax.set_xticks(range(len(acc)))
    ax.set_xlabel("insertion block k (0 = the input)")
    ax.set_ylabel("test accuracy")
    ax.legend(fontsize="small")
    return fig


def plot_gates(result: GatedPromptResult):
    """The gated arm: each block's gate g_i during training (left), the learned temperatures
    τ_i at the end (right)."""
    arm = result.arms["gated"]
    fig, axes = subplots(1, 2, width=4.2, height=3.0)
    left, right = axes[0, 0], axes[0, 1]
    for i, curve in enumerate(arm.gate_curves):
        left.plot(arm.measure_steps, curve, marker=".", label=f"block {i}")
    left.set(xlabel="step", ylabel="gate g_i = σ(ℓ_i)", yscale="log", title="learned gates")
    left.legend(fontsize="small")
    right.bar(range(len(arm.temperatures)), arm.temperatures, color="C2")
    right.axhline(1.0, color="grey", ls=":", lw=1)
    right.set(xlabel="block i", ylabel="temperature τ_i", title="learned temperatures")
    right.set_xticks(range(len(arm.temperatures)))
    return fig


def plot_pretraining(result: GatedPromptResult):
    """MAE pre-training: the reconstruction loss on masked patches."""
    fig, axes = subplots(1, 1, width=5.0, height=2.8)
    ax = axes[0, 0]
    ax.plot(result.pretrain.loss_steps, result.pretrain.loss, lw=0.8)
    ax.set(xlabel="step", ylabel="MSE on masked patches", title="MAE pre-training")
    return fig


def plot_arm(fig, result: GatedPromptResult, name: str) -> None:
    """One arm's training loss, beside every arm's test accuracy (the widget's view)."""
    ax1, ax2 = fig.subplots(1, 2)
    arm = result.arms[name]
    ax1.plot(arm.loss_steps, arm.loss, lw=0.8)
    ax1.set(xlabel="step", ylabel="training loss", title=f"{name}: training loss")
    names = list(result.arms)
    colors = ["C1" if n == name else "C0" for n in names]
    ax2.bar(range(len(names)), [result.arms[n].test_accuracy for n in names], color=colors)
    ax2.set_xticks(range(len(names)), names, rotation=30, fontsize="small")
    ax2.set(ylabel="test accuracy", title="all arms")


def figures(result: GatedPromptResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    figs = {"insertion": plot_insertion(result), "pretraining": plot_pretraining(result)}
    if "gated" in result.arms:
        figs["gates"] = plot_gates(result)
    return figs
