"""Figures: plots take a result (or tensors) and return a matplotlib figure."""

from __future__ import annotations

import torch

from companion.core import subplots
from companion.papers.contextual_similarity.experiment import ContextualSimilarityResult

LABELS = {
    "contrastive": "contrastive (m+ = 0.9)",
    "no_context": "hybrid without L_context",
    "hybrid": "hybrid (contextual)",
}


def plot_recall_vs_noise(result: ContextualSimilarityResult, metric: str = "recall"):
    """Recall@1 (or MAP@R) of each loss against the label-noise rate, with the raw pixels' value
    as a reference line (what training must beat): the paper's robustness-to-noise comparison,
    with the control that removes only the contextual term."""
    noise = result.config["noise_levels"]
    fig, axes = subplots(1, 1, width=4.6, height=3.2)
    ax = axes[0, 0]
    for loss in result.config["losses"]:
        if metric == "recall":
            values = result.recall_at_1(loss)
        else:
            values = [result.arm(loss, p).map_at_r for p in noise]
        ax.plot(noise, values, marker="o", label=LABELS[loss])
    pixels = result.baseline_recall if metric == "recall" else result.baseline_map
    if pixels is not None:
        ax.axhline(pixels, color="grey", ls=":", lw=1.5, label="raw pixels (no training)")
    ax.set_xlabel("label-noise rate p")
    ax.set_ylabel("Recall@1" if metric == "recall" else "MAP@R")
    ax.legend(fontsize="small")
    return fig


def plot_training(result: ContextualSimilarityResult):
    """Training loss of every arm (one panel per loss; the two losses have different scales)."""
    losses = list(result.config["losses"])
    fig, axes = subplots(1, len(losses), width=4.0, height=2.8)
    for col, loss in enumerate(losses):
        ax = axes[0, col]
        for p in result.config["noise_levels"]:
            arm = result.arm(loss, p)
            ax.plot(arm.loss_steps, arm.loss_values, lw=0.8, label=f"p={p:g}")
        ax.set_title(LABELS[loss])
        ax.set_xlabel("step")
        ax.set_ylabel("training loss")
        ax.legend(fontsize="small")
    return fig


def plot_similarities(scores: torch.Tensor, contextual: torch.Tensor, labels: torch.Tensor):
    """Cosine similarity S next to contextual similarity J for one batch, rows sorted by label:
    J is near 1 only where two samples share their neighbourhoods."""
    order = torch.argsort(labels, stable=True)
    fig, axes = subplots(1, 2, width=3.4, height=3.2)
    for ax, matrix, title in zip(
        axes[0], (scores, contextual), ("cosine similarity S", "contextual similarity J")
    ):
        image = ax.imshow(matrix[order][:, order].detach().numpy(), vmin=0, vmax=1, cmap="viridis")
        ax.set_title(title)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8)
    return fig


def plot_gallery(
    result: ContextualSimilarityResult,
    images: torch.Tensor,
    labels: torch.Tensor,
    loss: str,
    noise: float | None = None,
):
    """For a few test queries (left column), the four nearest test images under ``loss`` at
    noise rate ``noise`` (default: the noisiest), titled by their class (red: a wrong class)."""
    noise = max(result.config["noise_levels"]) if noise is None else noise
    gallery = result.arm(loss, noise).gallery
    fig, axes = subplots(len(gallery), 5, width=0.8, height=0.9)
    for row, ids in enumerate(gallery):
        for col, idx in enumerate(ids):
            ax = axes[row, col]
            ax.imshow(images[idx].squeeze(0).numpy(), cmap="gray_r")
            ax.set_xticks([])
            ax.set_yticks([])
            wrong = labels[idx] != labels[ids[0]]
            title = "query" if col == 0 else str(int(labels[idx]))
            ax.set_title(title, fontsize="x-small", color="red" if wrong else "black")
    fig.suptitle(f"{LABELS[loss]}, p={noise:g}", fontsize="small")
    return fig


def figures(result: ContextualSimilarityResult) -> dict:
    """Every figure that needs only the result, by file name (``companion run`` saves them)."""
    return {
        "recall_vs_noise": plot_recall_vs_noise(result),
        "map_vs_noise": plot_recall_vs_noise(result, "map"),
        "training": plot_training(result),
    }
