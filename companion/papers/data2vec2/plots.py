"""Figures: plots take a result (or images and masks) and return a matplotlib figure."""

from __future__ import annotations

import numpy as np
import torch

from companion.core import subplots
from companion.papers.data2vec2.experiment import LABELS, Data2Vec2Result
from companion.papers.data2vec2.method import inverse_block_mask


def _masked_image(image: torch.Tensor, mask: torch.Tensor, patch_size: int) -> np.ndarray:
    """A grey image with masked patches shown as a flat colour (visible patches kept)."""
    img = image.mean(0).numpy()
    grid = img.shape[0] // patch_size
    shown = np.ma.masked_array(img, mask=np.zeros_like(img, dtype=bool))
    for k in np.flatnonzero(mask.numpy()):
        r, c = divmod(int(k), grid)
        shown.mask[r * patch_size : (r + 1) * patch_size, c * patch_size : (c + 1) * patch_size] = 1
    return shown


def draw_clones(fig, images: torch.Tensor, masks: torch.Tensor, patch_size: int, clones: int):
    """Each row: one image, then its ``clones`` masked copies (masked patches in colour)."""
    n = len(images)
    axes = fig.subplots(n, clones + 1, squeeze=False)
    for i in range(n):
        axes[i, 0].imshow(images[i].mean(0), cmap="gray_r")
        for j in range(clones):
            ax = axes[i, j + 1]
            ax.set_facecolor("#f4a261")
            ax.imshow(_masked_image(images[i], masks[i * clones + j], patch_size), cmap="gray_r")
        if i == 0:
            axes[i, 0].set_title("image (teacher)")
            for j in range(clones):
                axes[i, j + 1].set_title(f"clone {j + 1} (student)")
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    return fig


def plot_clones(images: torch.Tensor, masks: torch.Tensor, patch_size: int, clones: int):
    """The teacher's unmasked images and the student's M masked clones of each."""
    fig, _ = subplots(1, 1, width=1.5 * (clones + 1), height=1.5 * len(images))
    fig.clear()
    return draw_clones(fig, images, masks, patch_size, clones)


def draw_mask_ratio(fig, images: torch.Tensor, cfg, mask_ratio: float, clones: int = 4):
    """Explore: inverse block masks at ``mask_ratio`` for a few images (seeded, so reruns
    draw the same masks)."""
    grid = cfg.image_size // cfg.patch_size
    g = torch.Generator().manual_seed(0)
    masks = inverse_block_mask(
        len(images) * clones, grid, mask_ratio, cfg.mask_block, cfg.mask_adjust, g
    )
    draw_clones(fig, images, masks, cfg.patch_size, clones)
    visible = int((~masks[0]).sum())
    fig.suptitle(f"mask ratio {mask_ratio:.2f}: {visible} of {grid * grid} patches visible")
    return fig


def plot_training(result: Data2Vec2Result):
    """Training loss of each arm against the training FLOPs spent (equal budgets); the pixel
    target's loss, on another scale, gets its own panel when that arm was trained."""
    panels = ["contextualized"] + (["pixels"] if "pixel_target" in result.arms else [])
    fig, axes = subplots(1, len(panels), width=4.4, height=3.0)
    for arm in result.arms.values():
        flops = np.asarray(arm.loss_steps, dtype=float) * arm.flops_per_step / 1e12
        ax = axes[0, panels.index(arm.target)]
        ax.plot(flops, arm.loss, lw=0.8, label=LABELS[arm.arm])
    for ax, target in zip(axes[0], panels):
        ax.set_title("contextualized targets" if target == "contextualized" else "pixel target")
        ax.set_xlabel("training TFLOPs")
        ax.set_ylabel("training loss")
        ax.legend(fontsize="small")
    return fig


def plot_probe(result: Data2Vec2Result):
    """Linear-probe accuracy on held-out images: the random encoder and each arm."""
    names = ["random", *result.arms]
    acc = [result.random_probe, *(a.probe_accuracy for a in result.arms.values())]
    fig, axes = subplots(1, 1, width=5.5, height=2.8)
    ax = axes[0, 0]
    ax.barh([LABELS[n] for n in names], acc, color=[f"C{i}" for i in range(len(names))])
    for i, a in enumerate(acc):
        ax.text(a, i, f" {a:.3f}", va="center", fontsize="small")
    ax.set_xlim(min(acc) - 0.05, max(acc) + 0.05)
    ax.invert_yaxis()
    ax.set_xlabel(f"linear-probe test accuracy ({result.n_test} images)")
    return fig


def plot_costs(result: Data2Vec2Result):
    """Cost per effective sample (one masked clone): counted FLOPs and measured time."""
    c = result.costs
    arms = list(c["flops_per_sample"])
    labels = [LABELS[a] for a in arms]
    fig, axes = subplots(1, 2, width=4.2, height=2.8)
    axes[0, 0].barh(labels, [c["flops_per_sample"][a] / 1e6 for a in arms], color="C1")
    axes[0, 0].set_xlabel("MFLOPs per effective sample (counted)")
    axes[0, 1].barh(labels, [c["sample_seconds"][a] * 1e3 for a in arms], color="C2")
    axes[0, 1].set_xlabel("ms per effective sample (measured here)")
    axes[0, 1].set_yticklabels([])
    for ax in axes.flat:
        ax.invert_yaxis()
    return fig


def figures(result: Data2Vec2Result) -> dict:
    """Every figure of a run, by name (``companion run`` saves them)."""
    return {
        "training": plot_training(result),
        "probe": plot_probe(result),
        "costs": plot_costs(result),
    }
