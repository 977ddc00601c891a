"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

from companion.core import subplots
from companion.papers.gated_prompt_tuning.experiment import GatedPromptResult


def plot_insertion(result: GatedPromptResult, min_span: float = 0.10):
    """Paper Fig. 1 in miniature: VPT's test accuracy against the block where prompts enter,
    with gated prompt tuning, its control without gates and the linear probe (same optimizer
    and steps) as horizontal lines. The y axis spans at least ``min_span`` (10 points), so that
    a gap of a few test images does not fill the panel."""
    fig, axes = subplots(1, 1, width=5.0, height=3.2)
    ax = axes[0, 0]
    acc = result.vpt_accuracies()
    values = list(acc)
    ax.plot(range(len(acc)), acc, marker="o", label="VPT inserted at block k")
    if "gated" in result.arms:
        values.append(result.arms["gated"].test_accuracy)
        ax.axhline(values[-1], color="C1", ls="--", label="gated prompts (input, learned gates)")
    if "tempered" in result.arms:
        values.append(result.arms["tempered"].test_accuracy)
        ax.axhline(values[-1], color="C2", ls="-.", label="control: gated minus its gates")
    if "linear" in result.arms:
        values.append(result.arms["linear"].test_accuracy)
        ax.axhline(values[-1], color="grey", ls=":", label="linear probe (no prompts)")
    lo, hi = min(values), max(values)
    pad = max(0.02, (min_span - (hi - lo)) / 2)
    ax.set_ylim(lo - pad, hi + pad)
    ax.set_xticks(range(len(acc)))
    ax.set_xlabel("insertion block k (0 = the input)")
    ax.set_ylabel("test accuracy")
    ax.legend(fontsize="small")
    return fig


def plot_probes(result: GatedPromptResult):
    """The premises: converged logistic-regression probes on raw pixels, on the random-init ViT
    and on the pre-trained backbone, beside the tuned arms (linear head, the VPT block best on
    validation, gated)."""
    fig, axes = subplots(1, 1, width=5.6, height=3.0)
    ax = axes[0, 0]
    probes = result.probes
    names = ["pixels", "random-init ViT", "MAE backbone"]
    values = [probes["pixels"], probes["random_backbone"], probes["backbone"]]
    colors = ["C7", "C7", "C0"]
    acc = result.vpt_accuracies()
    for name, key in (("linear head", "linear"), ("gated", "gated")):
        if key in result.arms:
            names.append(name)
            values.append(result.arms[key].test_accuracy)
            colors.append("C2" if key == "linear" else "C1")
    if acc:
        names.insert(len(names) - 1, f"VPT@{result.best_block()}")
        values.insert(len(values) - 1, acc[result.best_block()])
        colors.insert(len(colors) - 1, "C3")
    ax.bar(range(len(names)), values, color=colors)
    for i, v in enumerate(values):
        ax.text(i, v + 0.01, f"{v:.2f}", ha="center", fontsize="small")
    ax.set_xticks(range(len(names)), names, rotation=20, fontsize="small")
    ax.set(ylabel="test accuracy", ylim=(0, 1), title="probes (left) and tuned arms (right)")
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
    if result.probes:
        figs["probes"] = plot_probes(result)
    if "gated" in result.arms:
        figs["gates"] = plot_gates(result)
    return figs
