"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.neural_constraint_satisfaction.experiment import LABELS, NCSResult
from companion.papers.neural_constraint_satisfaction.method import infer_entities

COLOURS = {"ncs": "C0", "bc_pixels": "C3", "bc_entities": "C2"}


def plot_scene(result: NCSResult):
    """Level one on a test task: the start and goal images, and the entities inferred from
    them (type = colour of the marker, state = its position)."""
    fig, axes = subplots(1, 2, width=3.0, height=3.0)
    for ax, key in zip(axes[0], ("start", "goal")):
        img = np.array(result.example[key])
        ax.imshow(img.transpose(1, 2, 0), interpolation="nearest")
        ent = infer_entities(img)
        ax.scatter(
            ent.states[:, 1],
            ent.states[:, 0],
            marker="x",
            s=60,
            c="white",
            linewidths=1.0,
        )
        ax.set_title(f"{key}: {len(ent.types)} entities (×: state s)")
        ax.set_xticks([])
        ax.set_yticks([])
    return fig


def plot_graph(result: NCSResult):
    """Level two: the k-means abstract states (dots, at their centroid) and the factorized
    transition graph (an arrow per edge, darker for more transitions in the data)."""
    arm = result.arms["ncs"]
    c = np.array(arm.centroids)
    counts = np.array(arm.edge_counts, dtype=float)
    fig, axes = subplots(1, 1, width=4.6, height=4.0)
    ax = axes[0, 0]
    top = counts.max() if counts.size and counts.max() > 0 else 1.0
    cmap = __import__("matplotlib").colormaps["Blues"]
    for i, j in zip(*np.nonzero(counts)):
        (y0, x0), (y1, x1) = c[i], c[j]
        ax.annotate(
            "",
            xy=(x0 + 0.8 * (x1 - x0), y0 + 0.8 * (y1 - y0)),
            xytext=(x0, y0),
            arrowprops=dict(arrowstyle="->", color=cmap(0.3 + 0.7 * counts[i, j] / top), lw=1.0),
        )
    ax.scatter(c[:, 1], c[:, 0], s=30, c="k", zorder=3, label="abstract state (cluster)")
    ax.invert_yaxis()
    ax.set_aspect("equal")
    ax.set_xlabel("column (pixels)")
    ax.set_ylabel("row (pixels)")
    ax.set_title(f"{len(c)} abstract states, {int((counts > 0).sum())} edges")
    sm = __import__("matplotlib").cm.ScalarMappable(
        cmap=cmap, norm=__import__("matplotlib").colors.Normalize(0, top)
    )
    fig.colorbar(sm, ax=ax, label="transitions on the edge", fraction=0.046, pad=0.04)
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.15), fontsize="small")
    return fig


def plot_success(result: NCSResult):
    """Success rate against the number of objects, per arm; the shaded band is the counts the
    offline data contained."""
    fig, axes = subplots(1, 1, width=5.2, height=3.2)
    ax = axes[0, 0]
    counts = result.train_counts + result.test_counts
    ax.axvspan(
        min(result.train_counts) - 0.4,
        max(result.train_counts) + 0.4,
        color="0.9",
        label="counts in the data",
    )
    for arm, a in result.arms.items():
        ax.plot(
            counts,
            [a.success[str(k)] for k in counts],
            marker="o",
            color=COLOURS[arm],
            label=LABELS[arm],
        )
    ax.set_xticks(counts)
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel("number of objects K")
    ax.set_ylabel("success rate (simulator)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small")
    return fig


def plot_arm(fig, result: NCSResult, arm: str) -> None:
    """One arm's success per object count, drawn into ``fig`` (the widget's view)."""
    ax = fig.subplots(1, 1)
    counts = result.train_counts + result.test_counts
    values = [result.arms[arm].success[str(k)] for k in counts]
    colours = ["0.6" if k in result.train_counts else COLOURS[arm] for k in counts]
    ax.bar([str(k) for k in counts], values, color=colours)
    ax.set(
        ylim=(0, 1.05),
        xlabel="number of objects K (grey: in the data)",
        ylabel="success rate",
        title=LABELS[arm],
    )


def figures(result: NCSResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    out = {"scene": plot_scene(result), "success": plot_success(result)}
    if "ncs" in result.arms:
        out["graph"] = plot_graph(result)
    return out
