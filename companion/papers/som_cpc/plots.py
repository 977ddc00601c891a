"""Figures: plots take a result (or the data) and return a matplotlib figure."""

from __future__ import annotations

import numpy as np
from matplotlib.colors import to_rgba
from matplotlib.patches import Patch

from companion.core import subplots
from companion.errors import unknown
from companion.papers.som_cpc.experiment import LABELS, SOM_SHARE, SOMCPCResult

COLOUR_BY = ("regime", "frequency")


def _regime_colours(n: int) -> list:
    """Distinct colours per regime (matplotlib's tab10: blue, orange, green, red, ...)."""
    import matplotlib

    return [matplotlib.colormaps["tab10"](r % 10) for r in range(n)]


def plot_signal(x: np.ndarray, regime: np.ndarray, window: int, seconds: int = 12):
    """The first ``seconds`` of one signal, its background coloured by the regime of each
    window (one window = one second)."""
    fig, axes = subplots(1, 1, width=8.0, height=2.4)
    ax = axes[0, 0]
    n = seconds * window
    t = np.arange(n) / window
    colours = _regime_colours(int(regime.max()) + 1)
    for w in range(seconds):
        ax.axvspan(w, w + 1, color=colours[regime[w]], alpha=0.18, lw=0)
    ax.plot(t, x[:n], lw=0.7, color="k")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("signal")
    handles = [Patch(color=c, alpha=0.4, label=f"regime {r}") for r, c in enumerate(colours)]
    ax.legend(handles=handles, fontsize="x-small", ncol=len(colours), loc="upper right")
    return fig


def _draw_map(ax, result: SOMCPCResult, method: str, colour_by: str = "regime") -> None:
    """One arm's map: each node coloured by the majority regime of the held-out windows it
    holds (opacity = that regime's share) or by their mean frequency; grey = no window; the
    white line is the path of the first held-out sequence over its windows."""
    if colour_by not in COLOUR_BY:
        raise unknown("colour_by", colour_by, COLOUR_BY)
    arm, side = result.arms[method], result.side
    counts = np.asarray(arm.node_regimes, dtype=float)
    hits = counts.sum(1)
    image = np.full((side * side, 4), to_rgba("0.85"))
    if colour_by == "regime":
        colours = _regime_colours(counts.shape[1])
        for j in np.flatnonzero(hits):
            share = counts[j].max() / hits[j]
            image[j] = to_rgba(colours[int(counts[j].argmax())], alpha=0.25 + 0.75 * share)
    else:
        import matplotlib

        freqs = np.array([np.nan if f is None else f for f in arm.node_freq])
        lo, hi = min(result.regime_freqs), max(result.regime_freqs)
        cmap = matplotlib.colormaps["viridis"]
        for j in np.flatnonzero(hits):
            image[j] = cmap((freqs[j] - lo) / (hi - lo))
    ax.imshow(image.reshape(side, side, 4), origin="upper")
    path = np.asarray(arm.trajectory)
    jitter = np.random.default_rng(0).uniform(-0.25, 0.25, (len(path), 2))
    ax.plot(path % side + jitter[:, 0], path // side + jitter[:, 1], color="w", lw=0.7, alpha=0.8)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(
        f"{LABELS[method]}\ntopographic error {arm.topographic_error:.2f}\n"
        f"smoothness {arm.smoothness:.2f} · freq. MSE {arm.freq_error:.1f} Hz²",
        fontsize="small",
    )


def plot_maps(result: SOMCPCResult, colour_by: str = "regime"):
    """Every arm's map side by side (the paper's Fig. 3 at small scale)."""
    methods = list(result.arms)
    fig, axes = subplots(1, len(methods), width=3.2, height=3.5)
    for ax, method in zip(axes[0], methods):
        _draw_map(ax, result, method, colour_by)
    if colour_by == "regime":
        n = len(result.regime_freqs)
        handles = [
            Patch(color=c, label=f"regime {r} ({result.regime_freqs[r]:g} Hz)")
            for r, c in enumerate(_regime_colours(n))
        ]
        fig.legend(handles=handles, loc="outside lower center", ncol=n, fontsize="small")
    else:
        import matplotlib
        from matplotlib.cm import ScalarMappable
        from matplotlib.colors import Normalize

        norm = Normalize(min(result.regime_freqs), max(result.regime_freqs))
        mappable = ScalarMappable(norm=norm, cmap=matplotlib.colormaps["viridis"])
        fig.colorbar(
            mappable, ax=list(axes[0]), label="mean frequency of the node (Hz)", shrink=0.8
        )
    return fig


def plot_beta_sweep(sweep: dict, result: SOMCPCResult | None = None, chosen: float | None = None):
    """SOM-CPC's map against the weight β of the SOM terms (points): the SOM terms' share of the
    loss, the topographic error, the smoothness and the frequency error of the node labels.
    With ``result``, the run's other arms as dashed lines (they do not depend on β; only when
    ``sweep`` was measured on the same sequences as ``result``); ``chosen`` marks a β."""
    betas = sorted(sweep)
    panels = (
        ("som_share", "β (L_commit + L_SOM) / L_InfoNCE"),
        ("topographic_error", "topographic error"),
        ("smoothness", "smoothness (mean grid step)"),
        ("freq_error", "frequency MSE (Hz²)"),
    )
    fig, axes = subplots(1, len(panels), width=3.0, height=2.9)
    for ax, (field, label) in zip(axes[0], panels):
        ax.plot(
            betas,
            [getattr(sweep[b], field) for b in betas],
            "o-",
            color="C0",
            label=LABELS["som_cpc"],
        )
        arms = result.arms if result is not None else {}
        for i, method in enumerate(m for m in arms if m != "som_cpc"):
            value = getattr(arms[method], field)
            if value is not None:
                ax.axhline(value, ls="--", color=f"C{i + 1}", label=LABELS[method])
        if chosen is not None:
            ax.axvline(chosen, ls=":", color="C3", label=f"chosen β = {chosen:g}")
        ax.set(xscale="log", xlabel="β", ylabel=label)
    axes[0, 0].set_yscale("log")
    axes[0, 0].axhline(SOM_SHARE, ls=":", color="0.5", label=f"{100 * SOM_SHARE:g} % (premise)")
    axes[0, 1].legend(fontsize="x-small")
    axes[0, 0].legend(fontsize="x-small")
    return fig


def plot_arm_map(fig, result: SOMCPCResult, method: str, colour_by: str = "regime") -> None:
    """One arm's map drawn into ``fig`` (the widget's view)."""
    _draw_map(fig.subplots(1, 1), result, method, colour_by)


def plot_curves(result: SOMCPCResult):
    """Training loss of each arm (left) and the neighbourhood width σ it used (right)."""
    fig, axes = subplots(1, 2, width=4.2, height=2.9)
    for method, arm in result.arms.items():
        axes[0, 0].plot(arm.loss_steps, arm.loss, lw=0.7, label=LABELS[method])
        axes[0, 1].plot(arm.loss_steps, arm.sigma, label=LABELS[method])
    axes[0, 0].set(xlabel="step", ylabel="training loss", yscale="log")
    axes[0, 1].set(xlabel="step", ylabel="neighbourhood σ (grid units)")
    axes[0, 0].legend(fontsize="small")
    return fig


def figures(result: SOMCPCResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    return {
        "maps": plot_maps(result),
        "maps_frequency": plot_maps(result, colour_by="frequency"),
        "curves": plot_curves(result),
    }
