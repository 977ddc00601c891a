"""Figures: plots take a result (or, for the problem picture, images) and return a figure."""

from __future__ import annotations

import numpy as np
import torch

from companion.core import subplots
from companion.data.augment import rotate
from companion.papers.sie.experiment import SIEResult

LABELS = {
    "sie": "SIE",
    "sie_mlp": "SIE, MLP predictor (control)",
    "vicreg": "VICReg",
    "untrained": "untrained encoder",
}
ARM_COLORS = {"sie": "C0", "sie_mlp": "C1", "vicreg": "C2", "untrained": "C7"}  # every panel
TERM_COLORS = {"inv": "C0", "equi": "C1", "std": "C2", "pred_std": "C7", "cov": "C4"}
PARTS = {
    "repr_inv": "representation, invariant part",
    "repr_equi": "representation, equivariant part",
    "repr_all": "whole representation",
    "embedding": "embedding the predictor sees",
}


def plot_views(images: torch.Tensor, degrees=(0, 45, 90, 180, 270)):
    """A few images, each rotated by the given angles (degrees): the views SIE pairs up."""
    theta = torch.deg2rad(torch.tensor(degrees, dtype=torch.float32))
    fig, axes = subplots(len(images), len(degrees), width=1.2, height=1.2)
    for i, img in enumerate(images):
        views = rotate(img.expand(len(degrees), *img.shape), theta)
        for j, view in enumerate(views):
            ax = axes[i, j]
            ax.imshow(view[0].numpy(), cmap="gray_r", vmin=0, vmax=1)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.grid(False)
            if i == 0:
                ax.set_title(f"{degrees[j]}°", fontsize="small")
    return fig


def plot_losses(result: SIEResult):
    """The loss's terms over training, one panel per trained arm (log scale). Each term has
    one colour in every panel, and every panel has its own legend."""
    arms = [a for a in result.arms.values() if a.loss_steps]
    fig, axes = subplots(1, len(arms), width=4.2, height=3.0, sharey=True)
    for ax, arm in zip(axes[0], arms):
        for name, values in arm.terms.items():
            ax.plot(
                arm.loss_steps,
                np.maximum(values, 1e-6),
                lw=0.9,
                label=name,
                color=TERM_COLORS.get(name),
            )
        ax.set_yscale("log")
        ax.set_title(LABELS[arm.method], fontsize="medium")
        ax.set_xlabel("step")
        ax.legend(fontsize="small", ncol=2)
    axes[0, 0].set_ylabel("loss term (before its coefficient)")
    return fig


def _similarity(ax, result: SIEResult, part: str) -> None:
    degrees = np.degrees(result.angles)
    for arm in result.arms.values():
        if part in arm.similarity:
            ax.plot(
                degrees,
                arm.similarity[part],
                marker=".",
                label=LABELS[arm.method],
                color=ARM_COLORS.get(arm.method),
            )
    ax.set_xlabel("rotation from the upright view (degrees)")
    ax.set_ylabel("mean cosine to the upright view")
    ax.set_title(PARTS[part], fontsize="medium")
    lowest = min(min(a.similarity[part]) for a in result.arms.values() if part in a.similarity)
    ax.set_ylim(min(-0.05, lowest - 0.05), 1.05)


def plot_similarity(result: SIEResult):
    """How each part of the representation changes as the image turns: the mean cosine
    similarity between a test image's vector at 0° and at each angle. Flat at 1: invariant."""
    parts = ["repr_inv", "repr_equi", "repr_all", "embedding"]
    fig, axes = subplots(1, len(parts), width=3.3, height=2.9, sharey=True)
    for ax, part in zip(axes[0], parts):
        _similarity(ax, result, part)
    lowest = min(v for a in result.arms.values() for curve in a.similarity.values() for v in curve)
    axes[0, 0].set_ylim(min(-0.05, lowest - 0.05), 1.05)
    axes[0, -1].legend(fontsize="small")
    return fig


def plot_part(fig, result: SIEResult, part: str) -> None:
    """One part's similarity curve drawn into ``fig`` (the explore widget's view)."""
    ax = fig.subplots(1, 1)
    _similarity(ax, result, part)
    shares = ", ".join(
        f"{LABELS[a.method]} {a.rotation_share[part]:.2f}"
        for a in result.arms.values()
        if part in a.rotation_share
    )
    ax.set_title(f"{PARTS[part]} (rotation share: {shares})", fontsize="medium")
    ax.legend(fontsize="small")


def plot_scores(result: SIEResult):
    """The three measures side by side: rotation R², MRR among rotations (chance dashed), and
    digit accuracy of a linear probe, per part of each arm's representation."""
    rows = []
    for arm in result.arms.values():
        for part in arm.r2:
            label = {"sie_mlp": "SIE-MLP", "untrained": "untrained"}.get(
                arm.method, LABELS[arm.method]
            )
            name = label + ("" if part == "all" else f" {part}")
            rows.append((name, arm.r2[part], arm.accuracy[part]))
    names = [r[0] for r in rows]
    fig, axes = subplots(1, 3, width=3.4, height=3.0)
    y = np.arange(len(rows))
    axes[0, 0].barh(y, [r[1] for r in rows], color="C0")
    axes[0, 0].set(
        yticks=y, yticklabels=names, xlabel="R² of the relative rotation", xlim=(-0.1, 1)
    )
    mrr = [a.mrr for a in result.arms.values()]
    short = {"sie_mlp": "SIE-MLP", "untrained": "untrained"}
    axes[0, 1].bar(
        [short.get(a.method, LABELS[a.method]) for a in result.arms.values()], mrr, color="C1"
    )
    axes[0, 1].tick_params(axis="x", labelsize="small", rotation=30)
    axes[0, 1].axhline(result.chance_mrr, ls="--", color="grey", label="chance")
    axes[0, 1].set(ylabel=f"MRR among {len(result.angles)} rotations", ylim=(0, 1))
    axes[0, 1].legend(fontsize="small")
    axes[0, 2].barh(y, [r[2] for r in rows], color="C2")
    axes[0, 2].set(yticks=y, yticklabels=names, xlabel="digit accuracy (ridge probe)", xlim=(0, 1))
    for ax in (axes[0, 0], axes[0, 2]):
        ax.invert_yaxis()
    return fig


def figures(result: SIEResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    return {
        "losses": plot_losses(result),
        "similarity": plot_similarity(result),
        "scores": plot_scores(result),
    }
