"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np
import torch

from companion.core import subplots
from companion.papers.multivariate_diffusion.experiment import MDMConfig, MDMResult, diffusion_of

LABELS = {
    "vpsde": "VPSDE",
    "cld": "CLD",
    "learned": "learned MDM",
    "learned_frozen": "MDM frozen at init",
}
COLORS = {"vpsde": "C0", "cld": "C1", "learned": "C2", "learned_frozen": "C3"}


def _smooth(values, window: int = 25):
    v = np.asarray(values, dtype=float)
    if len(v) < window:
        return np.arange(len(v)), v
    return np.arange(window - 1, len(v)), np.convolve(v, np.ones(window) / window, mode="valid")


def plot_training(result: MDMResult):
    """Left: training −ELBO (nats/dim, smoothed). Right: test bits per dimension ± 2 SE."""
    fig, axes = subplots(1, 2, width=4.6, height=3.2)
    left, right = axes[0, 0], axes[0, 1]
    for i, (name, arm) in enumerate(result.arms.items()):
        steps, loss = _smooth(arm.loss)
        left.plot(steps, loss, color=COLORS[name], label=LABELS[name], lw=1)
        right.errorbar(i, arm.test_bpd, yerr=2 * arm.test_bpd_se, fmt="o", color=COLORS[name])
    left.set(xlabel="step", ylabel="training −ELBO (nats/dim)")
    lo = min(min(_smooth(a.loss)[1][len(a.loss) // 5 :], default=0) for a in result.arms.values())
    left.set_ylim(lo - 0.2, lo + 3)
    left.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2)
    right.set_xticks(range(len(result.arms)), [LABELS[k] for k in result.arms], rotation=20)
    right.set(ylabel="test bits/dim (lower is better)", title="test ELBO ± 2 SE")
    return fig


def plot_kernels(result: MDMResult):
    """How each final diffusion noises x: Var(x_s | x₀) and the mean coefficient over time."""
    cfg = MDMConfig(**{k: tuple(v) if k == "arms" else v for k, v in result.config.items()})
    s = torch.linspace(cfg.t_min, 1.0, 200, dtype=torch.float64)
    fig, axes = subplots(1, 2, width=4.2, height=3.0)
    for name, arm in result.arms.items():
        M, Sigma = diffusion_of(cfg, arm).transition(s)
        axes[0, 0].plot(s, M[:, 0, 0], color=COLORS[name], label=LABELS[name])
        axes[0, 1].plot(s, Sigma[:, 0, 0], color=COLORS[name], label=LABELS[name])
    axes[0, 0].set(xlabel="time s", ylabel="mean coefficient of x₀ in x_s")
    axes[0, 1].set(xlabel="time s", ylabel="Var(x_s | x₀)")
    axes[0, 1].legend(fontsize="small")
    return fig


def plot_noised(fig, result: MDMResult, s: float, n: int = 800) -> None:
    """The data x₀ (grey) and its noised x_s under each arm's final diffusion at time ``s``
    (the widget's view): where each diffusion has moved the data by then."""
    from companion.papers.multivariate_diffusion.experiment import make_data

    cfg = MDMConfig(**{k: tuple(v) if k == "arms" else v for k, v in result.config.items()})
    x = make_data(cfg.dataset, n, 123).double()
    axes = fig.subplots(1, len(result.arms), sharex=True, sharey=True)
    for ax, (name, arm) in zip(np.atleast_1d(axes), result.arms.items()):
        dif = diffusion_of(cfg, arm)
        M, Sigma = dif.transition(torch.tensor([s], dtype=torch.float64))
        g = torch.Generator().manual_seed(0)
        y0 = torch.zeros(n, 2, dif.K, dtype=torch.float64)
        y0[:, :, 0] = x
        eps = torch.randn(n, 2, dif.K, dtype=torch.float64, generator=g)
        ys = y0 @ M[0].T + eps @ torch.linalg.cholesky(Sigma[0]).T
        ax.scatter(x[:, 0], x[:, 1], s=2, alpha=0.3, color="grey")
        ax.scatter(ys[:, 0, 0], ys[:, 1, 0], s=2, alpha=0.5, color=COLORS[name])
        ax.set(xlim=(-3.5, 3.5), ylim=(-3.5, 3.5), title=f"{LABELS[name]}, s = {s:.2f}")
        ax.set_aspect("equal")


def figures(result: MDMResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    return {"training": plot_training(result), "kernels": plot_kernels(result)}
