"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.unimax.experiment import UniMaxResult
from companion.papers.unimax.method import (
    epochs_per_language,
    max_budget,
    temperature_sampling,
    unimax,
)

LABELS = {"temperature": "temperature", "unimax": "UniMax"}
TAUS = (1.0, 3.33, 10.0)  # proportional, mT5's, and close to uniform


def plot_corpus(result: UniMaxResult):
    """Characters per language against its rank: the imbalance the sampler must handle."""
    corpus = result.corpus
    counts = np.asarray(corpus.counts)
    fig, axes = subplots(1, 1, width=5.5, height=3.0)
    ax = axes[0, 0]
    ranks = np.arange(1, len(counts) + 1)
    ax.fill_between(ranks, counts, counts[-1] / 2, step="mid", color="C0", alpha=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("language, by rank (1 = largest corpus)")
    ax.set_ylabel("characters")
    what = "Zipf–Mandelbrot fit to the paper's numbers" if corpus.source == "fit" else "counts"
    ax.set_title(f"{len(counts)} languages, {counts.sum():.3g} characters\n{what}")
    ax.annotate(f"{counts[0]:.2g}", (1, counts[0]), textcoords="offset points", xytext=(8, -4))
    ax.annotate(
        f"{counts[-1]:.2g}",
        (ranks[-1], counts[-1]),
        ha="right",
        textcoords="offset points",
        xytext=(-6, 6),
    )
    return fig


def draw_distributions(
    fig, counts, budget: float, max_epochs: float, taus=TAUS, title: str = ""
) -> None:
    """Into ``fig``: p_l (left) and epochs per language (right) for temperatures and UniMax."""
    ax1, ax2 = fig.subplots(1, 2)
    counts = np.asarray(counts, dtype=float)
    ranks = np.arange(1, len(counts) + 1)
    for k, tau in enumerate(taus):
        p = temperature_sampling(counts, tau)
        label = f"temperature τ={tau:g}"
        ax1.plot(ranks, p, color=f"C{k}", lw=1.2, label=label)
        ax2.plot(ranks, epochs_per_language(p, counts, budget), color=f"C{k}", lw=1.2)
    if budget <= max_budget(counts, max_epochs):
        p = unimax(counts, budget, max_epochs)
        ax1.plot(ranks, p, color="k", lw=2, label=f"UniMax N={max_epochs:g}")
        ax2.plot(ranks, epochs_per_language(p, counts, budget), color="k", lw=2)
    else:
        ax2.text(
            0.5,
            0.5,
            f"C > N·Σc = {max_budget(counts, max_epochs):.3g}:\nUniMax refuses",
            transform=ax2.transAxes,
            ha="center",
            color="k",
        )
    ax2.axhline(max_epochs, ls="--", color="grey", lw=1, label=f"N = {max_epochs:g} epochs")
    ax2.axhline(1, ls=":", color="grey", lw=1)
    ax1.set(
        yscale="log",
        xlabel="language rank (1 = largest)",
        ylabel="sampling probability p_l",
        title="sampling distribution",
    )
    ax2.set(
        yscale="log",
        xlabel="language rank (1 = largest)",
        ylabel="epochs p_l·C/c_l",
        title=title or f"epochs per language at C = {budget:.3g}",
    )
    ax1.legend(fontsize="small")
    ax2.legend(fontsize="small", loc="upper left")


def plot_distributions(result: UniMaxResult, taus=TAUS):
    """The corpus's sampling distributions and epochs per language at the result's budget."""
    corpus = result.corpus
    fig, _ = subplots(1, 1, width=10.0, height=3.4)
    fig.clear()
    draw_distributions(fig, corpus.counts, corpus.budget, corpus.max_epochs, taus)
    return fig


def curves_on(ax, result: UniMaxResult, lang: int, legend: bool = True) -> None:
    """Held-out (solid) and training (dashed) loss of one toy language over training."""
    epochs = []
    for k, arm in enumerate(result.arms.values()):
        name = LABELS[arm.method]
        ax.plot(
            arm.eval_steps, arm.held_out[lang], color=f"C{k}", marker=".", label=f"{name}: held-out"
        )
        ax.plot(
            arm.eval_steps, arm.train[lang], color=f"C{k}", ls="--", label=f"{name}: training set"
        )
        epochs.append(f"{name} {arm.epochs[lang]:.1f}")
    ax.axhline(result.entropy[lang], color="grey", ls=":", label="entropy (best possible)")
    ax.set(
        xlabel="step",
        ylabel="cross-entropy (nats)",
        title=f"language {lang}: {result.sizes[lang]} examples\nepochs: {', '.join(epochs)}",
    )
    if legend:
        ax.legend(fontsize="x-small")


def draw_curves(fig, result: UniMaxResult, lang: int) -> None:
    """Into ``fig`` (the widget's view): one toy language's loss curves under both methods."""
    curves_on(fig.subplots(1, 1), result, lang)


def plot_curves(result: UniMaxResult, langs: list[int] | None = None):
    """Held-out vs training loss over training for the largest, a middle and the smallest
    toy language."""
    n = len(result.sizes)
    langs = sorted({0, n // 2, n - 1}) if langs is None else langs
    fig, axes = subplots(1, len(langs), width=4.0, height=3.2)
    for k, lang in enumerate(langs):
        curves_on(axes[0, k], result, lang, legend=k == len(langs) - 1)
    return fig


def plot_toy_summary(result: UniMaxResult):
    """Toy run, per language against its corpus size: epochs, final held-out loss above the
    entropy, and the generalization gap (held-out minus training loss)."""
    fig, axes = subplots(1, 3, width=4.0, height=3.0)
    ax_e, ax_x, ax_g = axes[0]
    for arm in result.arms.values():
        excess = [h[-1] - e for h, e in zip(arm.held_out, result.entropy)]
        gap = [h[-1] - t[-1] for h, t in zip(arm.held_out, arm.train)]
        ax_e.plot(result.sizes, arm.epochs, marker="o", label=LABELS[arm.method])
        ax_x.plot(result.sizes, excess, marker="o", label=LABELS[arm.method])
        ax_g.plot(result.sizes, gap, marker="o", label=LABELS[arm.method])
    ax_e.axhline(result.corpus.max_epochs, ls="--", color="grey", label="N")
    ax_e.set(yscale="log", ylabel="epochs U_l / n_l", title=f"budget C = {result.budget} examples")
    ax_x.set(ylabel="held-out loss − entropy (nats)", title="distance from the truth")
    ax_g.axhline(0, color="grey", lw=1)
    ax_g.set(ylabel="held-out − training loss (nats)", title="generalization gap")
    for ax in axes[0]:
        ax.set(xscale="log", xlabel="training examples of the language (n_l)")
    ax_e.legend(fontsize="small")
    return fig


def figures(result: UniMaxResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    return {
        "corpus": plot_corpus(result),
        "distributions": plot_distributions(result),
        "toy_curves": plot_curves(result),
        "toy_summary": plot_toy_summary(result),
    }
