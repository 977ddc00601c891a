"""Figures: plots take a result (or point sets) and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.w1_boosting.experiment import W1BoostingResult

LABELS = {
    "plain": "plain black box at ε",
    "control": "control: black box alone at ε/d",
    "boosted": "boosted (mean over shifts)",
    "worst": "boosted, worst-case black box",
}
COLORS = {"plain": "C1", "control": "k", "boosted": "C0", "worst": "C2"}
STYLES = {"control": ":", "worst": "--"}


def plot_points(x: np.ndarray, y: np.ndarray, eps: float, zoom: float = 0.05):
    """μ (dots) and ν (crosses) in the unit square with the black box's grid (side ε/(2√d)),
    and a zoom of side ``zoom`` around the first point of μ."""
    fig, axes = subplots(1, 2, width=3.6, height=3.4)
    side = eps / (2 * np.sqrt(x.shape[1]))
    for ax, (lo, hi) in zip(axes[0], [((0, 0), (1, 1)), (x[0] - zoom / 2, x[0] + zoom / 2)]):
        ax.scatter(*x.T, s=8, color="C0", label="μ")
        ax.scatter(*y.T, s=14, marker="x", color="C3", label="ν")
        for t in np.arange(0, 1 + side, side):
            ax.axvline(t, color="grey", lw=0.4)
            ax.axhline(t, color="grey", lw=0.4)
        ax.set(xlim=(lo[0], hi[0]), ylim=(lo[1], hi[1]), aspect="equal")
        ax.grid(False)
    axes[0][0].set_title("μ, ν and the black box's grid")
    axes[0][1].set_title(f"zoom: a {zoom:g} × {zoom:g} window")
    axes[0][1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))
    return fig


def plot_errors(result: W1BoostingResult):
    """Left: estimate against exact W (log–log; the diagonal is exact, the band around it the
    boosted spread over shifts). Right: relative error against W, with the additive ε/W line.
    The worst-case arm is the same boosting with a black box that spends its whole budget."""
    fig, axes = subplots(1, 2, width=3.9, height=3.3)
    est_ax, rel_ax = axes[0]
    w = np.array(result.w)
    for arm in LABELS:
        style = dict(color=COLORS[arm], ls=STYLES.get(arm, "-"), marker="o", label=LABELS[arm])
        if arm == "boosted":
            values = np.array([r.boosted_mean for r in result.runs])
            lo = [min(r.boosted) for r in result.runs]
            hi = [max(r.boosted) for r in result.runs]
            est_ax.fill_between(w, lo, hi, color=COLORS[arm], alpha=0.2, lw=0)
        elif arm == "worst":
            values = np.array([np.mean(r.worst) for r in result.runs])
        else:
            values = np.array([getattr(r, arm) for r in result.runs])
        est_ax.plot(w, values, **style)
        rel_ax.plot(w, result.rel(arm), **style)
    est_ax.plot(w, w, color="grey", ls="--", lw=1, label="exact (POT)")
    rel_ax.plot(w, result.eps / w, color="grey", ls="--", lw=1, label="ε / W (additive bound)")
    est_ax.set(xscale="log", yscale="log", xlabel="exact W", ylabel="estimate Ŵ",
               title="estimates against the truth")  # fmt: skip
    rel_ax.set(xscale="log", yscale="log", xlabel="exact W", ylabel="|Ŵ − W| / W",
               title="relative error")  # fmt: skip
    handles, names = est_ax.get_legend_handles_labels()
    handles.append(rel_ax.get_lines()[-1])
    names.append("ε / W (additive bound)")
    fig.legend(handles, names, loc="outside lower center", ncol=3, fontsize="small")
    return fig


def plot_work(result: W1BoostingResult):
    """Work against W: supports per black-box call (the exact solver's one call has 2n), and
    calls per estimate, for the boosted arm (mean over shifts)."""
    fig, axes = subplots(1, 2, width=3.6, height=3.0)
    size_ax, calls_ax = axes[0]
    w = result.w
    size_ax.plot(w, [2 * result.n] * len(w), color="grey", ls="--", label="exact: one call, 2n")
    size_ax.plot(w, [np.mean(r.points) for r in result.runs], "o-", color="C0",
                 label="boosted: supports, all calls")  # fmt: skip
    size_ax.plot(w, [max(r.largest) for r in result.runs], "s-", color="C2",
                 label="boosted: largest call")  # fmt: skip
    calls_ax.plot(w, [np.mean(r.calls) for r in result.runs], "o-", color="C0")
    size_ax.set(xscale="log", yscale="log", xlabel="exact W", ylabel="supports",
                title="problem sizes")  # fmt: skip
    calls_ax.set(xscale="log", xlabel="exact W", ylabel="black-box calls",
                 title="calls per boosted estimate")  # fmt: skip
    size_ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(0.0, -0.25))
    return fig


def plot_sigma(fig, result: W1BoostingResult, index: int) -> None:
    """One σ of the run: each boosted shift's relative error (dots) against the plain and control
    estimates' (lines), drawn into ``fig`` (the widget's view)."""
    run = result.runs[index]
    ax = fig.subplots(1, 1)
    rel = [abs(v - run.exact) / run.exact for v in run.boosted]
    ax.scatter(
        range(len(rel)), rel, color=COLORS["boosted"], label=LABELS["boosted"][:7] + " shifts"
    )
    for arm in ("plain", "control"):
        ax.axhline(run.rel(arm), color=COLORS[arm], ls=STYLES.get(arm, "-"), label=LABELS[arm])
    ax.set(yscale="log", xlabel="shift", ylabel="|Ŵ − W| / W",
           title=f"σ = {run.sigma:g}, exact W = {run.exact:.3g}")  # fmt: skip
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0))


def figures(result: W1BoostingResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    return {"errors": plot_errors(result), "work": plot_work(result)}
