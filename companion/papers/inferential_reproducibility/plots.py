"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.inferential_reproducibility.experiment import (
    InferentialReproducibilityResult,
)

COLORS = {"A": "C0", "B": "C1"}
ANALYSES = {
    "best_setting": "best lr per system, all seeds\n(item noise only)",
    "all_runs": "all runs of the grid\n(item noise only)",
    "all_runs_modelled": "all runs, seed and lr\nas random effects",
}
COMPONENTS = {"item": "test item", "lr": "learning rate", "seed": "seed", "residual": "residual"}


def _p(p: float) -> str:
    return "p < 0.001" if p < 1e-3 else f"p = {p:.3f}"


def plot_grid(result: InferentialReproducibilityResult):
    """Mean test score of every run against the learning rate: the two systems' profiles."""
    fig, axes = subplots(1, 1, width=5.6, height=3.4)
    ax = axes[0, 0]
    runs = result.run_scores
    for system in ("A", "B"):
        mine = [r for r in runs if r["system"] == system]
        ax.scatter(
            [r["lr"] for r in mine],
            [r["test_score"] for r in mine],
            s=12,
            alpha=0.5,
            color=COLORS[system],
        )
        means = [m for m in result.mean_scores if m["system"] == system]
        ax.plot(
            [m["lr"] for m in means],
            [m["score"] for m in means],
            marker="o",
            color=COLORS[system],
            label=f"system {system} (mean over seeds)",
        )
        overall = np.mean([r["test_score"] for r in mine])
        ax.axhline(overall, color=COLORS[system], ls=":", lw=1)
        best = result.best_settings[system]["lr"]
        score = next(m["score"] for m in means if m["lr"] == best)
        ax.scatter(
            [best], [score], marker="*", s=180, color=COLORS[system], edgecolor="k", zorder=5
        )
    ax.set_xscale("log")
    ax.set_xlabel("learning rate (Adam)")
    ax.set_ylabel("mean score: p(correct class)")
    ax.set_title("dots: runs · ★ best lr (validation) · dotted: mean of all runs")
    ax.legend(fontsize="small", loc="lower left")
    return fig


def plot_comparisons(result: InferentialReproducibilityResult):
    """A − B with a 95% CI and the GLRT, under each choice of modelled noise."""
    fig, axes = subplots(1, 1, width=6.0, height=2.8)
    ax = axes[0, 0]
    for row, key in enumerate(ANALYSES):
        t = result.tests[key]
        lo, hi = t.ci95
        color = "C2" if t.p >= result.config["alpha"] else ("C0" if t.estimate > 0 else "C1")
        ax.errorbar(
            t.estimate,
            row,
            xerr=[[t.estimate - lo], [hi - t.estimate]],
            fmt="o",
            color=color,
            capsize=4,
        )
        ax.annotate(
            f"χ² = {t.chi2:.1f}, {_p(t.p)}",
            (t.estimate, row),
            xytext=(0, 8),
            textcoords="offset points",
            ha="center",
            fontsize="small",
        )
    ax.axvline(0, color="grey", lw=1)
    ax.set_yticks(range(len(ANALYSES)), list(ANALYSES.values()), fontsize="small")
    ax.set_ylim(len(ANALYSES) - 0.4, -0.6)
    ax.set_xlabel("A − B (mean score difference, 95% CI)")
    ax.set_title("> 0: A better · < 0: B better · green: not significant")
    return fig


def plot_vca(result: InferentialReproducibilityResult):
    """Variance components as shares of the total, per system; reliability = the item share."""
    fig, axes = subplots(1, 1, width=6.0, height=2.4)
    ax = axes[0, 0]
    for row, system in enumerate(("A", "B")):
        left = 0.0
        shares = result.vca[system]["shares"]
        for k, (name, label) in enumerate(COMPONENTS.items()):
            w = shares[name]
            ax.barh(row, w, left=left, color=f"C{k + 2}", label=label if row == 0 else None)
            if w > 0.06:
                ax.text(
                    left + w / 2, row, f"{100 * w:.0f}%", ha="center", va="center", fontsize="small"
                )
            left += w
    ax.set_yticks(
        [0, 1],
        [
            f"A (R = {result.vca['A']['reliability']:.2f})",
            f"B (R = {result.vca['B']['reliability']:.2f})",
        ],
    )
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of the total variance of the per-item score (REML)")
    ax.legend(fontsize="small", ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.35))
    return fig


def plot_interaction(result: InferentialReproducibilityResult):
    """Estimated mean score per system on clean and noisy test items, at the best settings."""
    fig, axes = subplots(1, 1, width=4.2, height=3.0)
    ax = axes[0, 0]
    for system in ("A", "B"):
        cells = [c for c in result.cell_means if c["system"] == system]
        ax.errorbar(
            [c["noisy"] for c in cells],
            [c["estimate"] for c in cells],
            yerr=[1.96 * c["se"] for c in cells],
            marker="o",
            capsize=4,
            color=COLORS[system],
            label=f"system {system}",
        )
    t = result.tests["noisy_interaction"]
    ax.set_xticks([0, 1], ["clean", "noisy"])
    ax.set_xlim(-0.3, 1.3)
    ax.set_xlabel("test item")
    ax.set_ylabel("estimated mean score (95% CI)")
    ax.set_title(f"system × noisy: χ² = {t.chi2:.1f}, {_p(t.p)}", fontsize="medium")
    ax.legend(fontsize="small")
    return fig


def plot_fresh(result: InferentialReproducibilityResult):
    """The freshly trained runs' per-item scores against the table's runs of the same setting."""
    runs = result.fresh
    fig, axes = subplots(1, max(1, len(runs)), width=3.0, height=3.0, squeeze=False)
    if not runs:
        axes[0, 0].text(0.5, 0.5, "no fresh runs (fresh_lrs = ())", ha="center", va="center")
        axes[0, 0].set_axis_off()
        return fig
    source = "cached" if result.provenance.get("file") else "trained-now"
    for ax, run in zip(axes[0], runs):
        ax.scatter(run["cached_scores"], run["scores"], s=6, alpha=0.5, color=COLORS[run["system"]])
        ax.plot([0, 1], [0, 1], color="grey", lw=1, ls=":")
        ax.set_title(
            f"{run['system']}, lr={run['lr']:g}, seed {run['seed']}\n"
            f"max |Δ| = {run['max_abs_diff']:.1e}",
            fontsize="small",
        )
        ax.set_xlabel(f"{source} score")
        ax.set_ylabel("fresh score")
    return fig


def plot_seed(fig, result: InferentialReproducibilityResult, seed: int) -> None:
    """One seed's best-setting comparison (the widget's view), with every seed for reference."""
    ax = fig.subplots()
    rows = result.per_seed
    for i, r in enumerate(rows):
        chosen = r["seed"] == seed
        ax.errorbar(
            r["estimate"],
            i,
            xerr=1.96 * r["se"],
            fmt="o",
            capsize=3,
            color="C3" if chosen else "lightgrey",
            zorder=3 if chosen else 2,
        )
        if chosen:
            ax.annotate(
                f"A − B = {r['estimate']:+.3f}, {_p(r['p'])}",
                (r["estimate"], i),
                xytext=(0, 8),
                textcoords="offset points",
                ha="center",
            )
    t = result.tests["best_setting"]
    ax.axvspan(*t.ci95, color="C0", alpha=0.15, label="best lr, all seeds together (95% CI)")
    ax.axvline(0, color="grey", lw=1)
    ax.set_yticks(range(len(rows)), [f"seed {r['seed']}" for r in rows])
    ax.set_ylim(len(rows) - 0.5, -0.8)
    ax.set_xlabel("A − B at each system's best learning rate, one seed (95% CI)")
    ax.legend(fontsize="small", loc="lower right")


def figures(result: InferentialReproducibilityResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    out = {
        "grid": plot_grid(result),
        "comparisons": plot_comparisons(result),
        "vca": plot_vca(result),
        "interaction": plot_interaction(result),
    }
    if result.fresh:
        out["fresh"] = plot_fresh(result)
    return out
