"""The log-log plot of each method's gap from backprop against the nudge β, the cosine, and
the inference residual (the premise) at every β."""

from __future__ import annotations

import numpy as np

from companion.core.plotting import COLORBLIND, subplots
from companion.papers.ebm_backprop.experiment import EBMResult

STYLE = {  # (method, dtype) -> label, colour, marker, line
    ("pc", "float64"): ("PC", COLORBLIND[0], "o", "-"),
    ("chl", "float64"): ("CHL", COLORBLIND[2], "x", "none"),
    ("ep", "float64"): ("EP (symmetric)", COLORBLIND[1], "s", "-"),
    ("pc", "float32"): ("PC in float32", COLORBLIND[3], "v", ":"),
}


def _curves(result: EBMResult, field: str):
    for (method, dtype), style in STYLE.items():
        values = result.mean_over_batches(method, field, dtype)
        if values:
            betas = np.array(sorted(values))
            yield style, betas, np.array([values[b] for b in betas])


def plot_gaps(result: EBMResult):
    """Left: the gap ‖g − ∇L‖/‖∇L‖ against β (log-log), with reference slopes 1 and 2. Middle:
    1 − cos(g, ∇L). Right: the relative residual of inference (the equilibrium premise)."""
    fig, axes = subplots(1, 3, width=4.3, height=3.4)
    ax_gap, ax_cos, ax_res = axes[0]
    for (label, colour, marker, line), betas, gaps in _curves(result, "gap"):
        ax_gap.loglog(betas, gaps, marker=marker, ls=line, color=colour, label=label, ms=5)
    b = np.array(sorted(result.config["betas"]))
    for order, ls in ((1, "--"), (2, "-.")):
        ax_gap.loglog(b, (b / b[-1]) ** order * 0.5, ls, color="grey", lw=0.8)
        ax_gap.annotate(
            f"slope {order}", (b[0], (b[0] / b[-1]) ** order * 0.5), fontsize=8, color="grey"
        )
    ax_gap.set(xlabel="nudge β", ylabel="‖g − ∇L‖ / ‖∇L‖", title="gap from backprop")
    for (label, colour, marker, line), betas, cos in _curves(result, "cosine"):
        ax_cos.loglog(
            betas,
            np.maximum(1 - cos, 1e-17),
            marker=marker,
            ls=line,
            color=colour,
            label=label,
            ms=5,
        )
    ax_cos.set(xlabel="nudge β", ylabel="1 − cos(g, ∇L)", title="cosine similarity")
    for (label, colour, marker, line), betas, res in _curves(result, "residual"):
        ax_res.loglog(
            betas, np.maximum(res, 1e-17), marker=marker, ls=line, color=colour, label=label, ms=5
        )
    ax_res.set(xlabel="nudge β", ylabel="‖∂E/∂x‖ end / start", title="inference residual")
    ax_res.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))  # outside the data
    return fig


def figures(result: EBMResult) -> dict:
    return {"gaps": plot_gaps(result)}


def plot_update_scatter(fig, net, x0, y, beta: float, mu: float, steps: int):
    """Every entry of PC's and EP's updates against the same entry of the backprop gradient,
    at one nudge ``beta``: on the diagonal when the update is backprop."""
    from companion.papers.ebm_backprop.method import bp_gradient, ep_update, pc_update

    grad = np.concatenate([g.reshape(-1).numpy() for g in bp_gradient(net, x0, y)])
    axes = fig.subplots(1, 2)
    for ax, (name, update) in zip(axes, (("PC", pc_update), ("EP (symmetric)", ep_update))):
        g, _ = update(net, x0, y, beta, mu, steps)
        g = np.concatenate([t.reshape(-1).numpy() for t in g])
        lim = float(np.abs(grad).max()) * 1.1
        ax.plot([-lim, lim], [-lim, lim], color="grey", lw=0.8)
        ax.scatter(grad, g, s=4, alpha=0.5)
        ax.set(
            xlim=(-lim, lim),
            xlabel="backprop gradient entry",
            ylabel=f"{name} update entry",
            title=f"{name} at β = {beta:g}",
        )
    return axes
