"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

from companion.core import subplots
from companion.papers.lambda_darts.experiment import LambdaDartsResult

LABELS = {"darts": "DARTS", "lambda_darts": "Λ-DARTS"}


def plot_alignment(result: LambdaDartsResult):
    """Per epoch: the layer alignment Λ (left) of the training batch's per-cell gradients (solid:
    the Λ the regulariser raises, ``train_corr``) and of the validation batch's (dashed: the
    cells' votes that move α, ``valid_corr``); right: the softmax mass of the skip connection,
    mean over edges (epoch 0 is before the search), per search."""
    fig, axes = subplots(1, 2, width=4.2, height=3.0)
    for k, arm in enumerate(result.arms.values()):
        colour = f"C{k}"
        epochs = range(1, arm.epochs + 1)
        name = LABELS[arm.method]
        axes[0, 0].plot(epochs, arm.alignment, marker=".", color=colour, label=f"{name}, Λ train")
        axes[0, 0].plot(
            epochs, arm.alignment_valid, ls="--", color=colour, label=f"{name}, Λ validation"
        )
        axes[0, 1].plot(
            range(arm.epochs + 1),
            [arm.skip_mass_start, *arm.skip_mass],
            marker=".",
            color=colour,
            label=name,
        )
    axes[0, 0].set_ylabel("Λ: mean cosine of the cells' gradients")
    axes[0, 1].set_ylabel("softmax mass of skip_connect")
    for ax in axes[0]:
        ax.set_xlabel("search epoch")
    axes[0, 0].legend(fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
    axes[0, 1].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1))
    return fig


def plot_skip_pull(result: LambdaDartsResult):
    """Per epoch and per cell: the cell's share of the push on α toward skip connections, from
    its gradient of the validation loss in the architecture step (positive: the cell asks for
    more skip). The skip softmax mass itself is shared by all
    cells (α is shared), so it is drawn once, dashed."""
    arms = [a for a in result.arms.values() if a.skip_pull]
    fig, axes = subplots(1, len(arms), width=4.2, height=3.0, sharey=True)
    for col, arm in enumerate(arms):
        ax = axes[0, col]
        epochs = range(1, arm.epochs + 1)
        for cell, pull in enumerate(arm.skip_pull):
            ax.plot(epochs, pull, marker=".", label=f"cell {cell + 1}")
        ax.plot(epochs, arm.skip_mass, color="k", ls="--", label="skip mass (shared)")
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_title(f"{LABELS[arm.method]} (retrained acc {arm.retrain_accuracy:.3f})")
        ax.set_xlabel("search epoch")
    axes[0, 0].set_ylabel("share of the push toward skip\n(validation-batch votes)")
    axes[0, -1].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1))
    return fig


def figures(result: LambdaDartsResult) -> dict:
    return {"alignment": plot_alignment(result), "skip_pull": plot_skip_pull(result)}
