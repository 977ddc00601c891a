"""Figures: each takes a result (or the stored votes) and returns a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots

ARM_STYLE = {
    "best_single": ("best single (dev-picked)", "C2", "--"),
    "fewshot": ("few-shot baseline", "C4", ":"),
    "majority_vote": ("majority vote", "C1", "-."),
    "pooled_dawid_skene": ("control: pooled label model", "k", ":"),
    "dawid_skene": ("label model (Dawid–Skene)", "C0", "-"),
}


def plot_accuracies(result):
    """Per task: each chain's test accuracy (bars) and a line per aggregation arm."""
    tasks = result.tasks
    fig, axes = subplots(1, len(tasks), width=3.2, height=3.0, sharey=True)
    for ax, t in zip(axes[0], tasks):
        x = np.arange(len(t.chains))
        ax.bar(x, t.chain_test, color="C7", alpha=0.6, label="single chain")
        for arm, (label, color, style) in ARM_STYLE.items():
            ax.axhline(t.arms[arm], color=color, linestyle=style, linewidth=1.6, label=label)
        ax.axhline(1 / t.k, color="C7", linewidth=0.8, label="chance")
        ax.set(title=f"{t.task} (K = {t.k})", xticks=x, xticklabels=t.chains, ylim=(0, 1.02))
        ax.set_xlabel("prompt chain")
    axes[0][0].set_ylabel("test accuracy")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", fontsize="small")
    return fig


def plot_phi(result):
    """Per task: the φ correlation of the chains' errors (1 = always wrong together)."""
    tasks = result.tasks
    fig, axes = subplots(1, len(tasks), width=3.0, height=2.8)
    for ax, t in zip(axes[0], tasks):
        image = ax.imshow(np.asarray(t.phi), cmap="RdBu_r", vmin=-1, vmax=1)
        ax.set(
            title=f"{t.task}: mean φ {t.mean_phi:.2f}",
            xticks=range(len(t.chains)),
            yticks=range(len(t.chains)),
            xticklabels=t.chains,
            yticklabels=t.chains,
        )
        ax.grid(False)
    fig.colorbar(image, ax=axes[0].tolist(), label="φ of error indicators", shrink=0.9)
    return fig


def plot_estimated(result):
    """The label model's estimated accuracy of each chain against its measured accuracy, fitted
    on the real votes and on votes shuffled across items within each chain."""
    fig, axes = subplots(1, 1, width=4.4, height=3.6)
    ax = axes[0][0]
    markers = {"claim": "o", "sentiment": "s", "topic": "^"}
    for t in result.tasks:
        ax.scatter(
            t.measured_accuracy,
            t.ds_accuracy_est,
            color="C0",
            marker=markers.get(t.task, "o"),
            label=f"{t.task}, real votes",
        )
        ax.scatter(
            t.measured_accuracy,
            t.ds_shuffled_est,
            facecolors="none",
            edgecolors="C3",
            marker=markers.get(t.task, "o"),
            label=f"{t.task}, shuffled votes",
        )
    ax.plot([0, 1], [0, 1], color="C7", linewidth=0.8, label="estimate = measured")
    ax.set(
        xlabel="measured accuracy (where the chain votes)",
        ylabel="estimated by the label model",
        xlim=(0, 1.02),
        ylim=(0, 1.02),
    )
    fig.legend(loc="outside right center", fontsize="small")
    return fig


def plot_cost(votes: dict):
    """LM cost from the cache: milliseconds per call against prompt tokens, per task."""
    fig, axes = subplots(1, 1, width=4.6, height=3.2)
    ax = axes[0][0]
    for i, (task, tv) in enumerate(votes.items()):
        if len(tv.ms):
            ax.scatter(tv.prompt_tokens, tv.ms, s=6, alpha=0.5, color=f"C{i}", label=task)
    ax.set(
        xlabel="prompt tokens (instruction + demos + item)",
        ylabel="ms per call (batched, shared CPU)",
        yscale="log",
    )
    fig.legend(loc="outside right center", fontsize="small", markerscale=2)
    return fig


def figures(result) -> dict:
    return dict(
        accuracies=plot_accuracies(result), phi=plot_phi(result), estimated=plot_estimated(result)
    )


def plot_chain_subset(fig, votes: dict, selected, alpha: float = 1.0):
    """Explore: majority vote and the label model on the chosen chains (``"task/chain"`` labels),
    fitted and scored on every stored item of each task (no resampling)."""
    from companion.papers.ama_prompting.items import NUM_CLASSES
    from companion.papers.ama_prompting.method import accuracy, dawid_skene, majority_vote
    from companion.papers.ama_prompting.prompts import CHAINS

    axes = fig.subplots(1, len(votes), sharey=True, squeeze=False)[0]
    for ax, (task, tv) in zip(axes, votes.items()):
        cols = [j for j, c in enumerate(CHAINS[task]) if f"{task}/{c}" in selected]
        k = NUM_CLASSES[task]
        names, values, colors = [], [], []
        if cols:
            V = tv.votes[:, cols]
            prior = np.bincount(tv.gold, minlength=k) / len(tv.gold)
            names += ["majority vote", "label model"]
            values += [
                accuracy(majority_vote(V, k, prior), tv.gold),
                accuracy(dawid_skene(V, k, alpha, class_balance=prior).predict(), tv.gold),
            ]
            colors += ["C1", "C0"]
        names.append("few-shot")
        values.append(accuracy(tv.baseline, tv.gold))
        colors.append("C4")
        ax.bar(range(len(values)), values, color=colors)
        ax.axhline(1 / k, color="C7", linewidth=0.8)
        ax.set(title=f"{task}: {len(cols)} chains", xticks=range(len(values)), ylim=(0, 1.02))
        ax.set_xticklabels(names, rotation=20, fontsize="small")
    axes[0].set_ylabel("accuracy, all stored items")
