"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.core.plotting import COLORBLIND
from companion.papers.tsimcne.experiment import TSimCNEResult

STAGE_NAMES = {
    1: "stage 1: whole network",
    2: "stage 2: new last layer only",
    3: "stage 3: whole network, low lr",
}


def _scatter(ax, embedding, labels, classes, title: str, highlight=None) -> None:
    """One 2-D embedding coloured by class (labels are only used for colour)."""
    y = np.asarray(embedding)
    labels = np.asarray(labels)
    size = max(1.0, min(8.0, 6000 / len(y)))
    colours = np.array(COLORBLIND)[labels % len(COLORBLIND)]
    if highlight is not None:
        colours = np.where(highlight[:, None], colours[:, None], "#dddddd")[:, 0]
        order = np.argsort(highlight, kind="stable")  # highlighted points on top
        y, colours = y[order], colours[order]
    ax.scatter(y[:, 0], y[:, 1], c=colours, s=size, linewidths=0, rasterized=True)
    ax.set_title(title)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_aspect("equal", "datalim")
    ax.grid(False)


def _legend(fig, classes) -> None:
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], ls="", marker="o", color=COLORBLIND[i % len(COLORBLIND)], label=c)
        for i, c in enumerate(classes)
    ]
    fig.legend(handles=handles, loc="outside right center", fontsize="small", frameon=False)


def plot_embeddings(result: TSimCNEResult):
    """The paper's comparison: t-SimCNE (final stage) beside t-SNE of the pixels, by class."""
    panels = [(result.final.embedding, f"t-SimCNE (kNN acc. {result.final.knn:.3f})")]
    if result.tsne is not None:
        panels.append((result.tsne.embedding, f"t-SNE of pixels (kNN acc. {result.tsne.knn:.3f})"))
    fig, axes = subplots(1, len(panels), width=3.6, height=3.6)
    for ax, (emb, title) in zip(axes[0], panels):
        _scatter(ax, emb, result.labels, result.classes, title)
    _legend(fig, result.classes)
    return fig


def plot_stages(result: TSimCNEResult):
    """What the stages do: the loss through all three (left), the 2-D output after stage 2
    (only the new last layer trained) and after stage 3 (everything fine-tuned)."""
    two_d = [s for s in result.stages if s.embedding is not None and s.stage > 1]
    fig, axes = subplots(1, 1 + len(two_d), width=3.4, height=3.2)
    ax = axes[0, 0]
    offset = 0
    for s in result.stages:
        epochs = np.asarray(s.loss_epochs) + offset
        ax.plot(epochs + 1, s.loss, label=STAGE_NAMES[s.stage], color=COLORBLIND[s.stage - 1])
        offset += s.epochs
        ax.axvline(offset + 0.5, color="grey", lw=0.6, ls=":")
    ax.set_xlabel("epoch (all stages)")
    ax.set_ylabel("InfoNCE loss (Cauchy kernel)")
    ax.legend(fontsize="x-small")
    for ax, s in zip(axes[0, 1:], two_d):
        _scatter(ax, s.embedding, result.labels, result.classes, f"after stage {s.stage}")
        ax.set_title(f"after stage {s.stage} (kNN acc. {s.knn:.3f})")
    return fig


def knn_table(result: TSimCNEResult):
    """kNN accuracy (k = 15, held-out images) of every representation: a pandas DataFrame."""
    import pandas as pd

    rows = [("pixels (no embedding)", "input", result.pixel_knn)]
    if result.tsne is not None:
        rows.append(("t-SNE of pixels", "2", result.tsne.knn))
    for s in result.stages:
        rows.append((f"t-SimCNE {STAGE_NAMES[s.stage]}", str(s.out_dim), s.knn))
    return pd.DataFrame(rows, columns=["representation", "dimensions", "kNN accuracy"]).round(3)


def clusters(result: TSimCNEResult, n_clusters: int = 10) -> np.ndarray:
    """k-means clusters of the final 2-D t-SimCNE embedding (no labels), for exploring it."""
    from sklearn.cluster import KMeans

    emb = np.asarray(result.final.embedding)
    return KMeans(n_clusters, n_init=4, random_state=0).fit_predict(emb)


def plot_cluster(fig, result: TSimCNEResult, images, cluster_ids, cluster: int, n_show: int = 12):
    """The widget's view: one k-means cluster highlighted in the t-SimCNE embedding (left) and
    some of its images with their (hidden from training) labels (right)."""
    cluster_ids = np.asarray(cluster_ids)
    members = np.flatnonzero(cluster_ids == cluster)
    grid = fig.add_gridspec(3, 7)
    ax = fig.add_subplot(grid[:, :3])
    _scatter(
        ax,
        result.final.embedding,
        result.labels,
        result.classes,
        f"cluster {cluster}: {len(members)} images",
        highlight=cluster_ids == cluster,
    )
    labels = np.asarray(result.labels)[members]
    counts = np.bincount(labels, minlength=len(result.classes))
    top = counts.argmax()
    ax.set_xlabel(f"{counts[top] / len(members):.0%} are '{result.classes[top]}'")
    pick = members[np.linspace(0, len(members) - 1, min(n_show, len(members))).astype(int)]
    for j, i in enumerate(pick):
        a = fig.add_subplot(grid[j // 4, 3 + j % 4])
        img = np.asarray(images[i]).transpose(1, 2, 0)
        a.imshow(img.squeeze(-1) if img.shape[-1] == 1 else img, cmap="gray_r", vmin=0, vmax=1)
        a.set_title(result.classes[result.labels[i]], fontsize="small")
        a.axis("off")


def figures(result: TSimCNEResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    return {"embeddings": plot_embeddings(result), "stages": plot_stages(result)}
