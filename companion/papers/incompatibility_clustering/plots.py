"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.incompatibility_clustering.experiment import IncompatibilityResult

CLEAN, POISON = "tab:blue", "tab:red"


def plot_incompatibility(result: IncompatibilityResult):
    """Left: accuracy on their own labels of held-out clean examples and held-out poisons, for a
    network trained on half of the clean data, and on that half plus half of the poisons.
    Right: per-example loss of the clean-trained network on held-out clean examples and on the
    poisons (the signal ISPL ranks examples by), as each group's share per bin (losses below
    1e-4 are counted in the first bin)."""
    fig, axes = subplots(1, 2, width=4.4, height=3.0)
    ax = axes[0, 0]
    trained = list(result.compat)
    pos = np.arange(len(trained))
    for k, (part, color) in enumerate((("clean", CLEAN), ("poisons", POISON))):
        values = [result.compat[t][part] for t in trained]
        ax.bar(pos + (k - 0.5) * 0.38, values, 0.38, color=color, label=f"held-out {part}")
    ax.set_xticks(pos, [f"trained on\n{t}" for t in trained])
    ax.set_ylabel("accuracy on the training labels")
    ax.set_ylim(0, 1.3)
    ax.legend(fontsize="small", loc="upper left", ncol=2)
    ax = axes[0, 1]
    # each group's share of its examples per bin (not a density: with logarithmic bins a density
    # would hide the few, high-loss poisons); losses below the first edge fall in the first bin
    clean, poison = np.asarray(result.clean_losses), np.asarray(result.poison_losses)
    low = 1e-4
    high = max(clean.max(), poison.max() if len(poison) else 1.0) * 1.1
    bins = np.geomspace(low, high, 30)
    for values, color, label in ((clean, CLEAN, "held-out clean"), (poison, POISON, "poisons")):
        if len(values):
            ax.hist(np.clip(values, low, high), bins=bins, color=color, alpha=0.6,
                    weights=np.full(len(values), 1 / len(values)),
                    label=f"{label} ({len(values)})")  # fmt: skip
    ax.set_xscale("log")
    ax.set_xlabel("cross-entropy of the clean-trained network")
    ax.set_ylabel("share of the group")
    ax.legend(fontsize="small")
    return fig


def plot_learners(result: IncompatibilityResult):
    """Each weak learner's core set (clean examples and poisons), and the share of poisons in
    what it trained on at each ISPL iteration: a learner either shuns the poisons or
    collects them."""
    fig, axes = subplots(1, 2, width=4.4, height=3.0)
    ax = axes[0, 0]
    names = [f"bag {w['bag']}\nlearner {i}" for i, w in enumerate(result.learners)]
    pos = np.arange(len(names))
    clean = [w["core_size"] - w["core_poisons"] for w in result.learners]
    poisons = [w["core_poisons"] for w in result.learners]
    ax.bar(pos, clean, color=CLEAN, label="clean")
    ax.bar(pos, poisons, bottom=clean, color=POISON, label="poisons")
    ax.set_xticks(pos, names, fontsize="small")
    ax.set_ylabel("examples in the core set")
    # above the axes: the stacked bars fill the panel
    ax.legend(
        fontsize="small", loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False
    )
    ax = axes[0, 1]
    base = result.n_poisons / result.n_train
    for i, w in enumerate(result.learners):
        if w["train_sizes"]:
            share = [p / max(s, 1) for p, s in zip(w["train_poisons"], w["train_sizes"])]
            ax.plot(range(len(share)), share, marker="o", label=f"learner {i}")
    ax.axhline(base, color="grey", ls=":", lw=1, label="share in the data")
    ax.set_yscale("symlog", linthresh=1e-3)
    ax.set_xlabel("ISPL iteration")
    ax.set_ylabel("share of poisons in the training subset")
    ax.legend(fontsize="x-small")
    return fig


def plot_removal(result: IncompatibilityResult):
    """Share of the poisons and of the clean examples removed after the boosting vote and after
    each self-paced refinement round; dashed: what the one-epoch baseline filter removes."""
    fig, axes = subplots(1, 1, width=5.0, height=3.0)
    ax = axes[0, 0]
    stages = ["vote"] + [f"{i + 1}" for i in range(len(result.refine_removed_poisons))]
    p = [result.vote_removed_poisons, *result.refine_removed_poisons]
    c = [result.vote_removed_clean, *result.refine_removed_clean]
    ax.plot(stages, np.array(p) / max(result.n_poisons, 1), marker="o", color=POISON,
            label="poisons removed")  # fmt: skip
    ax.plot(stages, np.array(c) / max(result.n_clean, 1), marker="o", color=CLEAN,
            label="clean examples removed")  # fmt: skip
    ax.axhline(result.baseline_recall, color=POISON, ls="--", lw=1,
               label="baseline filter: poisons")  # fmt: skip
    ax.axhline(result.baseline_clean_share, color=CLEAN, ls="--", lw=1,
               label="baseline filter: clean")  # fmt: skip
    ax.set_xlabel("after the boosting vote, then refinement round")
    ax.set_ylabel("share removed")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize="small")
    return fig


def plot_defense(result: IncompatibilityResult):
    """Clean test accuracy and attack success of a network trained on everything, of one
    trained on what the defense kept, and of one trained on what the baseline filter kept."""
    fig, axes = subplots(1, 1, width=5.0, height=3.0)
    ax = axes[0, 0]
    arms = {
        "no defense": result.no_defense,
        "ISPL defense": result.defended,
        "baseline filter": result.baseline,
    }
    metrics = {
        "clean accuracy": "clean_accuracy",
        "attack success": "attack_success",
        "targeted misclass.": "targeted_misclassification",
    }
    pos = np.arange(len(metrics))
    width = 0.8 / len(arms)
    for k, (label, arm) in enumerate(arms.items()):
        values = [getattr(arm, m) for m in metrics.values()]
        ax.bar(pos + (k - (len(arms) - 1) / 2) * width, values, width, label=label)
    ax.set_xticks(pos, list(metrics))
    ax.set_ylabel("share of test images")
    ax.set_ylim(0, 1.3)
    ax.legend(fontsize="small", loc="upper center", ncol=3)
    return fig


def plot_keep_rule(fig, result: IncompatibilityResult, q: float) -> None:
    """ISPL's keep rule at quantile ``q`` on the clean-trained network's losses (held-out clean
    examples and poisons together), drawn into ``fig`` (the widget's view): the share of each
    group below the ``q``-quantile, i.e. kept."""
    clean, poison = np.asarray(result.clean_losses), np.asarray(result.poison_losses)
    both = np.r_[clean, poison]
    cut = np.quantile(both, q)
    ax1, ax2 = fig.subplots(1, 2)
    bins = np.geomspace(max(1e-4, both.min()), both.max() * 1.1, 30)
    ax1.hist(clean, bins=bins, color=CLEAN, alpha=0.6, label="held-out clean")
    ax1.hist(poison, bins=bins, color=POISON, alpha=0.6, label="poisons")
    ax1.axvline(cut, color="k", ls="--", label=f"{q:.2f}-quantile")
    ax1.set(xscale="log", xlabel="loss of the clean-trained network", ylabel="examples")
    # above the axes, level with the right panel's title: the histogram fills the panel
    ax1.legend(
        fontsize="small", loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, frameon=False
    )
    kept = [(clean <= cut).mean(), (poison <= cut).mean() if len(poison) else 0.0]
    ax2.bar(["clean", "poisons"], kept, color=[CLEAN, POISON])
    ax2.set(ylim=(0, 1.05), ylabel="share kept", title=f"keep if loss <= {q:.2f}-quantile")


def figures(result: IncompatibilityResult) -> dict:
    return {
        "incompatibility": plot_incompatibility(result),
        "learners": plot_learners(result),
        "removal": plot_removal(result),
        "defense": plot_defense(result),
    }
