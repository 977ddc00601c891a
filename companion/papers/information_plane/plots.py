"""Figures: plots take a result and return a matplotlib figure (or draw into one)."""

from __future__ import annotations

import matplotlib as mpl
import numpy as np

from companion.core import subplots
from companion.papers.information_plane.experiment import InformationPlaneResult, log_n

SPLITS = {"train": "training inputs", "val": "validation inputs"}
CMAP = "viridis"


def _epoch_colours(result: InformationPlaneResult):
    """One colour scale for every panel: epoch 0 to the last epoch."""
    last = result.config["epochs"]
    return mpl.cm.ScalarMappable(cmap=CMAP, norm=mpl.colors.Normalize(vmin=0, vmax=last))


def _plane(ax, x, y, epochs, colours, ceiling_x: float, ceiling_y: float) -> None:
    """One information plane: a point per measurement, coloured by epoch, with the ceilings."""
    ax.plot(x, y, color="0.8", lw=0.8, zorder=1)
    ax.scatter(x, y, c=colours.to_rgba(np.asarray(epochs)), s=22, edgecolor="none", zorder=2)
    ax.axvline(ceiling_x, ls=":", color="grey", lw=1)
    ax.axhline(ceiling_y, ls="--", color="grey", lw=1)


def plot_information_plane(result: InformationPlaneResult, izy: str = "mixture"):
    """The dropout network's information plane, as the paper draws it: I(X;Z) by the paper's
    estimator against I(Z;Y), on training and validation inputs, coloured by epoch.

    ``izy="mixture"``: the mixture estimate of I(Z;Y); ``"bound"``: H(Y) − cross-entropy.
    """
    arm = result.arms["dropout"]
    series = arm.izy if izy == "mixture" else arm.izy_bound
    colours = _epoch_colours(result)
    fig, axes = subplots(1, 2, width=4.0, height=3.3)
    for ax, split in zip(axes[0], SPLITS):
        h_y = result.h_y_train if split == "train" else result.h_y_val
        _plane(ax, arm.ixz[split], series[split], arm.epochs, colours, log_n(result, split), h_y)
        ax.set_title(f"Gaussian dropout p={arm.dropout_p:g}: {SPLITS[split]}")
        ax.set_xlabel("I(X;Z) (nats)")
    axes[0, 0].set_ylabel(
        "I(Z;Y), mixture estimate (nats)" if izy == "mixture" else "H(Y) − cross-entropy (nats)"
    )
    fig.colorbar(colours, ax=axes.ravel().tolist(), label="epoch")
    return fig


def plot_binning_plane(
    result: InformationPlaneResult,
    bins: tuple[int, ...] | None = None,
    arm: str = "deterministic",
    split: str = "train",
):
    """Binning information planes of the network without dropout, one panel per bin count:
    the same training run, a different picture for every bin count. ``bins`` default: the
    fewest, a middle and the most bins that were measured."""
    a = result.arms[arm]
    if bins is None:
        measured = sorted(int(b) for b in a.binning[split]["ixt"])
        bins = (measured[0], measured[len(measured) // 2], measured[-1])
    colours = _epoch_colours(result)
    fig, axes = subplots(1, len(bins), width=3.0, height=3.0, sharey=True)
    for ax, b in zip(axes[0], bins):
        ixt, ity = a.binning[split]["ixt"][str(b)], a.binning[split]["ity"][str(b)]
        h_y = result.h_y_train if split == "train" else result.h_y_val
        _plane(ax, ixt, ity, a.epochs, colours, log_n(result, split), h_y)
        ax.set_title(f"{b} bins")
        ax.set_xlabel("I(X;T), binned (nats)")
        ax.set_xlim(-0.2, log_n(result, split) * 1.05)
    axes[0, 0].set_ylabel("I(T;Y), binned (nats)")
    fig.colorbar(colours, ax=axes.ravel().tolist(), label="epoch")
    return fig


def plot_estimator_settings(result: InformationPlaneResult):
    """The estimators' settings at the end of training, on the training inputs: the dropout
    estimate against the number M of mixture components (left; M = N is the paper's
    estimator, M < N the official code's approximation), and the binning estimate against
    the number of bins (right)."""
    drop = result.arms["dropout"]
    fig, axes = subplots(1, 2, width=4.0, height=3.0)
    left, right = axes[0]
    m = np.asarray(drop.sweep_components)
    left.plot(m, drop.sweep_components_ixz, "-o", label="M sampled means")
    left.axhline(drop.sweep_components_ixz[-1], color="C1", lw=1, label="all N means")
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("M, mixture components")
    left.set_ylabel("I(X;Z) estimate (nats)")
    left.set_title("dropout: the paper's estimator")
    for name, style in (("deterministic", "-o"), ("dropout", "--s")):
        ixt = result.arms[name].binning["train"]["ixt"]
        bins = [int(b) for b in ixt]
        label = "no dropout" if name == "deterministic" else "dropout net, noiseless f(X)"
        right.plot(bins, [ixt[str(b)][-1] for b in bins], style, ms=4, label=label)
    right.set_xscale("log", base=2)
    right.set_xlabel("number of bins")
    right.set_ylabel("I(X;T) estimate (nats)")
    right.set_title("binning")
    right.set_ylim(0, log_n(result) * 1.08)
    for ax in (left, right):
        ax.axhline(log_n(result), ls=":", color="grey", lw=1, label="log N")
        ax.legend(fontsize="small", loc="upper right" if ax is left else "lower right")
    return fig


def plot_data_size(result: InformationPlaneResult):
    """I(X;Z) against the number N of inputs it is computed from, at the end of training:
    the paper's estimator (X uniform over the N inputs) and the leave-one-out estimate bracket
    the MI of the continuous input; without dropout the first is log N and the second infinite.
    """
    drop, det = result.arms["dropout"], result.arms["deterministic"]
    n = np.asarray(drop.sweep_points)
    fig, axes = subplots(1, 1, width=5.0, height=3.2)
    ax = axes[0, 0]
    ax.plot(n, drop.sweep_points_upper, "-o", label="dropout: leave-one-out (upper)")
    ax.plot(n, drop.sweep_points_lower, "-o", label="dropout: paper's estimator (lower)")
    ax.plot(
        det.sweep_points,
        np.log(det.sweep_points_unique),
        "k--",
        label="no dropout: log(distinct f(x)) = log N",
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("N, inputs used")
    ax.set_ylabel("I(X;Z) estimate (nats)")
    ax.legend(fontsize="small")
    return fig


def draw_bins(fig, result: InformationPlaneResult, n_bins: int) -> None:
    """The widget's view: the network without dropout, binned with ``n_bins`` bins, next to
    the dropout network's information plane (which has no bin count to choose)."""
    ax_bin, ax_drop = fig.subplots(1, 2, sharey=True)
    colours = _epoch_colours(result)
    det, drop = result.arms["deterministic"], result.arms["dropout"]
    b = str(n_bins)
    _plane(
        ax_bin,
        det.binning["train"]["ixt"][b],
        det.binning["train"]["ity"][b],
        det.epochs,
        colours,
        log_n(result),
        result.h_y_train,
    )
    ax_bin.set(
        title=f"no dropout, binning with {n_bins} bins",
        xlabel="I(X;T), binned (nats)",
        ylabel="I(·;Y) (nats)",
    )
    _plane(
        ax_drop,
        drop.ixz["train"],
        drop.izy["train"],
        drop.epochs,
        colours,
        log_n(result),
        result.h_y_train,
    )
    ax_drop.set(title="Gaussian dropout, paper's estimator", xlabel="I(X;Z) (nats)")
    for ax in (ax_bin, ax_drop):
        ax.set_xlim(-0.2, log_n(result) * 1.05)
    fig.colorbar(colours, ax=[ax_bin, ax_drop], label="epoch")


def figures(result: InformationPlaneResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    return {
        "information_plane": plot_information_plane(result),
        "information_plane_bound": plot_information_plane(result, izy="bound"),
        "binning_plane": plot_binning_plane(result),
        "estimator_settings": plot_estimator_settings(result),
        "data_size": plot_data_size(result),
    }
