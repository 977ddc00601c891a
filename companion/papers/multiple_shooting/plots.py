"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.multiple_shooting.experiment import MultipleShootingResult

LABELS = {
    "single_shooting": "single shooting",
    "multiple_shooting": "multiple shooting",
    "loose_prior": "multiple, loose prior (control)",
}
COLORS = {"single_shooting": "C3", "multiple_shooting": "C0", "loose_prior": "C2"}
STYLES = {"single_shooting": "-", "multiple_shooting": "-", "loose_prior": "--"}


def _smooth(values, window: int = 10) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    if len(v) < window:
        return v
    return np.convolve(v, np.ones(window) / window, mode="valid")


def plot_curves(result: MultipleShootingResult):
    """Training loss (−ELBO per observed number, smoothed) and the test forecast error over
    training, every arm; the dotted line is the error of predicting the mean."""
    fig, axes = subplots(1, 2, width=4.4, height=3.0)
    left, right = axes[0, 0], axes[0, 1]
    for arm in result.arms.values():
        sm = _smooth(arm.loss)
        style = dict(color=COLORS[arm.method], ls=STYLES[arm.method], label=LABELS[arm.method])
        left.plot(arm.loss_steps[len(arm.loss_steps) - len(sm) :], sm, **style)
        right.plot(arm.measure_steps, arm.test_mse, marker=".", **style)
    right.axhline(result.data_variance, color="grey", ls=":", label="predict the mean")
    left.set(xlabel="step", ylabel="−ELBO per number (smoothed)", yscale="symlog")
    right.set(xlabel="step", ylabel="test forecast MSE", yscale="log")
    right.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1))
    return fig


def plot_grad_norm(result: MultipleShootingResult):
    """The gradient norm ‖∇θ(−ELBO per number)‖ on a fixed training batch, measured during
    training, for single and multiple shooting."""
    fig, axes = subplots(1, 1, width=5.5, height=2.8)
    ax = axes[0, 0]
    for name in ("single_shooting", "multiple_shooting"):
        arm = result.arms[name]
        ax.plot(arm.grad_steps, arm.grad_norm, marker=".", color=COLORS[name], label=LABELS[name])
    ax.set(xlabel="step", ylabel="gradient norm (fixed batch)", yscale="log")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1))
    return fig


def plot_example(result: MultipleShootingResult, dims: int = 2):
    """One test trajectory: clean observations and the forecasts of single and multiple shooting
    (s_1 from the shaded first part only, then one solve over the whole grid)."""
    cfg = result.config
    t = np.linspace(0, cfg["duration"], cfg["num_points"])
    fig, axes = subplots(dims, 1, width=7.0, height=1.8, sharex=True)
    first = next(iter(result.arms.values()))
    true = np.asarray(first.example_true)
    for d in range(dims):
        ax = axes[d, 0]
        ax.axvspan(0, cfg["observed_fraction"] * cfg["duration"], color="0.92")
        ax.plot(t, true[:, d], color="k", lw=1.5, label="truth (clean)")
        for arm in (result.arms[m] for m in ("single_shooting", "multiple_shooting")):
            ax.plot(
                t,
                np.asarray(arm.example_pred)[:, d],
                color=COLORS[arm.method],
                lw=1,
                label=LABELS[arm.method],
            )
        ax.set_ylabel(f"y[{d}]")
    axes[-1, 0].set_xlabel("time")
    axes[0, 0].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1))
    return fig


def plot_step(fig, result: MultipleShootingResult, window: int) -> None:
    """The loss curves smoothed over ``window`` steps, drawn into ``fig`` (the widget's view)."""
    ax = fig.subplots(1, 1)
    for arm in result.arms.values():
        sm = _smooth(arm.loss, window)
        ax.plot(
            arm.loss_steps[len(arm.loss_steps) - len(sm) :],
            sm,
            color=COLORS[arm.method],
            ls=STYLES[arm.method],
            label=LABELS[arm.method],
        )
    ax.set(xlabel="step", ylabel=f"−ELBO per number ({window}-step mean)", yscale="symlog")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1))


def figures(result: MultipleShootingResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    return {
        "curves": plot_curves(result),
        "grad_norm": plot_grad_norm(result),
        "example": plot_example(result),
    }
