"""Figures: plots take a result (or data) and return a matplotlib figure."""

from __future__ import annotations

import math

import numpy as np
import torch

from companion.core import subplots
from companion.papers.instaaug.experiment import InstaAugResult

LABELS = {"none": "no augmentation", "global": "one global range", "instance": "InstaAug"}


def plot_examples(x: torch.Tensor, y: torch.Tensor, offsets: torch.Tensor, digits, n: int = 8):
    """A few Digit-Iggy inputs with their class and offset α (degrees)."""
    fig, axes = subplots(1, n, width=1.3, height=1.6)
    for i, ax in enumerate(axes[0]):
        digit, upside = digits[int(y[i]) // 2], int(y[i]) % 2
        ax.imshow(x[i, 0].cpu(), cmap="gray_r")
        ax.set_title(
            f"{digit} {'down' if upside else 'up'}\nα={math.degrees(offsets[i]):+.0f}°",
            fontsize="small",
        )
        ax.axis("off")
    return fig


def plot_ranges(result: InstaAugResult):
    """Learned against ideal ranges on the test inputs: a (counter-clockwise) and b (clockwise)
    against the offset α, with the ideal lines w − α and w + α and the global arm's range."""
    fig, axes = subplots(1, 2, width=4.2, height=3.2, sharey=True)
    alpha = np.degrees(np.asarray(result.test_offsets))
    ideal = np.degrees(result.ideal().numpy())
    order = np.argsort(alpha)
    inst = np.degrees(np.asarray(result.arms["instance"].ranges))
    glob = np.degrees(np.asarray(result.arms["global"].ranges)) if "global" in result.arms else None
    for col, (ax, name) in enumerate(zip(axes[0], ("a (counter-clockwise)", "b (clockwise)"))):
        ax.scatter(alpha, inst[:, col], s=6, alpha=0.5, label="InstaAug, per input")
        ax.plot(alpha[order], ideal[order, col], color="k", lw=1.5, label="ideal")
        if glob is not None:
            ax.axhline(glob[0, col], color="C1", ls="--", label="global range")
        ax.set_xlabel("offset α of the input in its class (degrees)")
        ax.set_title(f"range {name}")
    axes[0, 0].set_ylabel("largest rotation (degrees)")
    axes[0, 0].legend(fontsize="small")
    return fig


def plot_training(result: InstaAugResult):
    """Task loss (left) and the mean learned ranges on the test inputs (right) over training."""
    fig, axes = subplots(1, 2, width=4.2, height=3.0)
    left, right = axes[0]
    for i, arm in enumerate(result.arms.values()):
        loss = np.asarray(arm.loss)
        k = min(20, len(loss))
        smooth = np.convolve(loss, np.ones(k) / k, mode="valid")
        left.plot(arm.loss_steps[k - 1 :], smooth, color=f"C{i}", label=LABELS[arm.method])
        if arm.mean_a:
            right.plot(
                arm.range_steps,
                np.degrees(arm.mean_a),
                color=f"C{i}",
                marker=".",
                label=f"{LABELS[arm.method]}: a",
            )
            right.plot(
                arm.range_steps,
                np.degrees(arm.mean_b),
                color=f"C{i}",
                ls="--",
                marker=".",
                label=f"{LABELS[arm.method]}: b",
            )
    right.axhline(math.degrees(result.half_width), color="grey", ls=":", label="ideal mean w")
    right.axhline(90, color="k", lw=0.8, ls="-.", label="90°: up and down meet")
    left.set(xlabel="step", ylabel="task loss (smoothed)")
    right.set(xlabel="step", ylabel="mean range on test inputs (degrees)")
    left.legend(fontsize="small")
    right.legend(fontsize="x-small")
    return fig


def plot_range_traces(arms: dict, half_width: float):
    """Mean learned ranges a (solid) and b (dashed) on the test inputs over training, one colour
    per labelled run of the InstaAug arm (e.g. two learning rates of φ)."""
    fig, axes = subplots(1, 1, width=5.0, height=3.0)
    ax = axes[0, 0]
    for i, (label, arm) in enumerate(arms.items()):
        ax.plot(arm.range_steps, np.degrees(arm.mean_a), color=f"C{i}", label=f"{label}: a")
        ax.plot(
            arm.range_steps, np.degrees(arm.mean_b), color=f"C{i}", ls="--", label=f"{label}: b"
        )
    ax.axhline(math.degrees(half_width), color="grey", ls=":", label="ideal mean w")
    ax.axhline(90, color="k", lw=0.8, ls="-.", label="90°")
    ax.set(xlabel="step", ylabel="mean range on test inputs (degrees)")
    ax.legend(fontsize="x-small")
    return fig


def plot_accuracy(result: InstaAugResult):
    """Test accuracy of each arm (un-rotated test inputs)."""
    fig, axes = subplots(1, 1, width=4.0, height=2.6)
    ax = axes[0, 0]
    names = list(result.arms)
    acc = [result.arms[n].test_accuracy for n in names]
    ax.barh([LABELS[n] for n in names], acc, color=[f"C{i}" for i in range(len(names))])
    ax.set_xlim(min(acc) - 0.1, 1.0)
    ax.set_xlabel("test accuracy")
    return fig


def plot_input(fig, result: InstaAugResult, x: torch.Tensor, index: int) -> None:
    """One test input: the image and its learned range against its ideal range (widget view)."""
    ax1, ax2 = fig.subplots(1, 2)
    ax1.imshow(x[index, 0].cpu(), cmap="gray_r")
    ax1.axis("off")
    alpha = result.test_offsets[index]
    a, b = result.arms["instance"].ranges[index]
    ia, ib = result.ideal()[index].tolist()
    ax1.set_title(f"test input {index}: α = {math.degrees(alpha):+.0f}°")
    ax2.barh([1, 0], [math.degrees(a), math.degrees(ia)], color=["C0", "grey"], label="a")
    ax2.barh([1, 0], [-math.degrees(b), -math.degrees(ib)], color=["C0", "grey"], alpha=0.6)
    ax2.set_yticks([1, 0], ["learned", "ideal"])
    ax2.axvline(0, color="k", lw=0.8)
    ax2.set_xlabel("rotation range [−b, a] (degrees)")
    ax2.set_xlim(-180, 180)


def figures(result: InstaAugResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    return {
        "ranges": plot_ranges(result),
        "training": plot_training(result),
        "accuracy": plot_accuracy(result),
    }
