"""Figures: plots take a result (or matrices) and return a matplotlib figure."""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import torch

from companion.core import subplots
from companion.papers.mimetic_init.experiment import MimeticResult
from companion.papers.mimetic_init.method import (
    diagonal_score,
    factorize,
    local_attention_mass,
    mimetic_target,
    self_attention_mass,
)

LABELS = {
    "default": "default init",
    "noise_only": "noise only (β = 0)",
    "mimetic": "mimetic init",
}
COLORS = {"default": "C0", "noise_only": "C2", "mimetic": "C1"}


def uniform_local_mass(grid: int) -> float:
    """The neighbour mass of uniform attention: where a structureless map sits."""
    t = grid * grid + 1
    return local_attention_mass(torch.full((t, t), 1.0 / t), grid).item()


def uniform_self_mass(grid: int) -> float:
    """The self-attention mass of uniform attention over the ``grid² + 1`` tokens: 1 / T."""
    return 1.0 / (grid * grid + 1)


def plot_curves(result: MimeticResult):
    """Test accuracy (mean over seeds, band = min to max) and training loss, per init."""
    fig, axes = subplots(1, 2, width=4.4, height=3.0)
    acc_ax, loss_ax = axes[0]
    for init, arms in result.runs.items():
        steps = arms[0].eval_steps
        acc = np.array([a.test_accuracy for a in arms])
        acc_ax.plot(steps, acc.mean(0), marker=".", color=COLORS[init], label=LABELS[init])
        acc_ax.fill_between(steps, acc.min(0), acc.max(0), color=COLORS[init], alpha=0.2)
        loss = np.array([a.loss for a in arms]).mean(0)
        window = max(1, len(loss) // 20)
        smooth = np.convolve(loss, np.ones(window) / window, mode="valid")
        loss_ax.plot(arms[0].loss_steps[window - 1 :], smooth, color=COLORS[init])
    acc_ax.set(xlabel="step", ylabel="test accuracy", ylim=(0, 1))
    acc_ax.set_title(f"{len(arms)} seeds: mean, band = min–max")
    acc_ax.legend(fontsize="small")
    loss_ax.set(xlabel="step", ylabel="training loss (smoothed)", title="training loss, mean")
    return fig


def plot_init_attention(result: MimeticResult):
    """Each head's attention map in layer 0 at initialization (mean over the probe images),
    per init. Patch tokens only: the class token, which mostly
    attends to itself at mimetic init, would set the colour scale; one scale for all panels."""
    inits = list(result.runs)
    maps = {init: np.array(result.runs[init][0].init_maps)[:, 1:, 1:] for init in inits}
    heads = len(maps[inits[0]])
    vmax = max(m.max() for m in maps.values())
    fig, axes = subplots(len(inits), heads, width=2.2, height=2.2, squeeze=False)
    for row, init in enumerate(inits):
        for h in range(heads):
            ax = axes[row, h]
            im = ax.imshow(maps[init][h], cmap="viridis", vmin=0, vmax=vmax)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.grid(False)
            ax.set_title(f"head {h}", fontsize="small")
        axes[row, 0].set_ylabel(f"{LABELS[init]}\nquery patch")
    fig.colorbar(im, ax=axes, shrink=0.8, label="attention probability")
    fig.suptitle("layer 0 at initialization: patch-to-patch attention (rows: queries, cols: keys)")
    return fig


def plot_local_mass(result: MimeticResult):
    """At initialization, per layer (mean ± std over seeds): the attention a patch puts on
    itself (left) and on its other 3×3 neighbours (right), against uniform attention."""
    fig, axes = subplots(1, 2, width=4.2, height=3.0)
    inits = list(result.runs)
    depth = len(result.runs[inits[0]][0].init_local_mass)
    width = 0.8 / len(inits)
    panels = (
        ("init_self_mass", uniform_self_mass(result.grid), "mass on the query patch itself"),
        ("init_local_mass", uniform_local_mass(result.grid), "mass on its 3×3 neighbours"),
    )
    for ax, (field, uniform, label) in zip(axes[0], panels):
        for i, init in enumerate(inits):
            mass = np.array([getattr(a, field) for a in result.runs[init]])
            ax.bar(
                np.arange(depth) + (i - (len(inits) - 1) / 2) * width,
                mass.mean(0),
                width,
                yerr=mass.std(0),
                color=COLORS[init],
                label=LABELS[init],
            )
        ax.axhline(uniform, color="grey", ls=":", label="uniform attention")
        ax.set(xlabel="layer", ylabel=label, xticks=range(depth))
        ax.set_ylim(0, 1.35 * ax.get_ylim()[1])
    axes[0, 0].set_title("self-attention at init")
    axes[0, 1].set_title("neighbours (query left out) at init")
    axes[0, 0].legend(fontsize="small", loc="upper left")
    return fig


def _heatmap(ax, matrix, title: str) -> None:
    m = np.asarray(matrix)
    vmax = np.abs(m).max() or 1.0
    # 15 colour levels, no interpolation: as readable, and the stored PNGs stay small
    cmap = matplotlib.colormaps["RdBu_r"].resampled(15)
    ax.imshow(m, cmap=cmap, vmin=-vmax, vmax=vmax, interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
    ax.set_title(title, fontsize="small")


def plot_weight_products(qk, vo, title: str):
    """Heatmaps (red > 0, blue < 0): ``qk[layer][head]`` = W_q W_kᵀ per head and ``vo[layer]``
    = W_v W_proj per layer, each titled with its diagonal score (mean diagonal / off-diagonal
    std; about 0 for a random matrix)."""
    depth, heads = len(qk), len(qk[0])
    fig, axes = subplots(depth, heads + 1, width=1.6, height=1.6, squeeze=False)
    for layer in range(depth):
        for h in range(heads):
            m = torch.as_tensor(qk[layer][h])
            _heatmap(axes[layer, h], m, f"L{layer} h{h} QKᵀ: {diagonal_score(m).item():+.1f}")
        m = torch.as_tensor(vo[layer])
        _heatmap(axes[layer, heads], m, f"L{layer} V·Proj: {diagonal_score(m).item():+.1f}")
    fig.suptitle(title)
    return fig


def plot_weight_pattern(result: MimeticResult, init: str = "default"):
    """The trained products of the first seed's ``init`` run (paper Fig. 1 at small scale)."""
    arm = result.runs[init][0]
    if not arm.trained_qk:
        raise ValueError("this result kept no trained weights (keep_weights=False)")
    steps = arm.loss_steps[-1] + 1
    return plot_weight_products(
        arm.trained_qk, arm.trained_vo, f"after {steps} steps from {LABELS[init]}"
    )


def draw_alpha_beta(fig, value, tokens: torch.Tensor, heads: int, grid: int, seed: int = 0) -> None:
    """The widget's view: for ``value = (α₁, β₁)``, one head's W_q W_kᵀ (the rank-k SVD
    factorization of α₁Z₁ + β₁I) and the attention map it gives on ``tokens`` ``[..., T, d]``
    (averaged over the leading dimensions, e.g. a batch of images; patch tokens shown)."""
    alpha, beta = value
    d = tokens.shape[-1]
    k = d // heads
    g = torch.Generator().manual_seed(seed)  # the same Z₁ for every (α, β)
    w_q, w_k_t = factorize(mimetic_target(d, alpha, beta, g), k)
    product = w_q @ w_k_t
    x = tokens.double()
    probs = torch.softmax(x @ product @ x.transpose(-2, -1) / math.sqrt(k), dim=-1)
    probs = probs.reshape(-1, *probs.shape[-2:]).mean(0)
    mass = local_attention_mass(probs, grid).item()
    itself = self_attention_mass(probs).item()
    ax1, ax2 = fig.subplots(1, 2)
    _heatmap(ax1, product, f"one head's W_q W_kᵀ, α₁={alpha:.2f}, β₁={beta:.2f}")
    im = ax2.imshow(probs[1:, 1:], cmap="viridis", vmin=0)
    ax2.grid(False)
    fig.colorbar(im, ax=ax2, fraction=0.046)
    ax2.set(xlabel="key patch", ylabel="query patch")
    ax2.set_title(
        f"on itself {itself:.2f} (uniform {uniform_self_mass(grid):.2f})\n"
        f"on its neighbours {mass:.2f} (uniform {uniform_local_mass(grid):.2f})",
        fontsize="small",
    )


def alpha_beta_control(alpha: float = 0.7, beta: float = 0.7):
    """Two sliders (α₁, β₁) as one control whose ``value`` is the pair, for
    :func:`companion.core.interactive_figure`."""
    import ipywidgets as widgets
    import traitlets

    class Pair(widgets.HBox):
        value = traitlets.Tuple()

    a = widgets.FloatSlider(value=alpha, min=0.0, max=1.5, step=0.05, description="α₁")
    b = widgets.FloatSlider(value=beta, min=0.0, max=1.5, step=0.05, description="β₁")
    pair = Pair([a, b])
    pair.value = (a.value, b.value)

    def update(_change) -> None:
        pair.value = (a.value, b.value)

    a.observe(update, names="value")
    b.observe(update, names="value")
    return pair


def figures(result: MimeticResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    figs = {
        "curves": plot_curves(result),
        "init_attention": plot_init_attention(result),
        "local_mass": plot_local_mass(result),
    }
    if "default" in result.runs and result.runs["default"][0].trained_qk:
        figs["trained_weights"] = plot_weight_pattern(result)
    return figs
