"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.neural_stego_optimizer.experiment import StegoResult

LABELS = {"gd": "gradient descent", "adam": "Adam", "liso": "LISO", "one_step": "one-step"}
FLOOR = 1e-4  # errors of exactly zero are drawn at this floor on the log axis


def _t_liso(result: StegoResult) -> int:
    return result.config["eval_iters"] or result.config["iters"]


def plot_error_vs_steps(result: StegoResult):
    """Paper Fig. 1 at small scale: bit error (after 8-bit rounding, kept iterate) and PSNR
    against optimizer steps, for LISO, the one-step encoder and the pixel-space optimizers at
    the step size matched to LISO's PSNR after T steps."""
    liso = result.liso
    fig, axes = subplots(1, 2, width=4.4, height=3.2)
    ax_e, ax_p = axes[0, 0], axes[0, 1]
    steps = np.arange(1, len(liso.best_error_curve) + 1)
    ax_e.plot(steps, np.maximum(liso.best_error_curve, FLOOR), "o-", color="C3", label="LISO")
    ax_p.plot(steps, liso.best_psnr_curve, "o-", color="C3", label="LISO")
    T = _t_liso(result)
    for k, (name, b) in enumerate(result.baselines.items()):
        i = b.matched(T, liso.psnr)
        if i is None:
            continue
        s = np.arange(1, len(b.best_error_curve[i]) + 1)
        label = f"{LABELS[name]} (step size {b.lrs[i]:g})"
        ax_e.plot(s, np.maximum(b.best_error_curve[i], FLOOR), ".-", color=f"C{k}", label=label)
        ax_p.plot(s, b.best_psnr_curve[i], ".-", color=f"C{k}", label=label)
    if "one_step" in result.arms:
        one = result.arms["one_step"]
        ax_e.plot([1], [max(one.error, FLOOR)], "s", color="C2", ms=8, label="one-step encoder")
        ax_p.plot([1], [one.psnr], "s", color="C2", ms=8, label="one-step encoder")
    ax_e.set(xlabel="optimizer steps", ylabel="bit error after 8-bit rounding", yscale="log")
    ax_p.set(xlabel="optimizer steps", ylabel="PSNR (dB)")
    ax_e.axvline(T, color="grey", ls=":", lw=1)
    ax_p.axvline(T, color="grey", ls=":", lw=1)
    ax_e.legend(fontsize="x-small")
    return fig


def draw_tradeoff(ax, result: StegoResult, t: int) -> None:
    """Error against PSNR after ``t`` baseline steps, one point per step size of each grid,
    with LISO's and the one-step encoder's results: lower right is better."""
    liso = result.liso
    for k, (name, b) in enumerate(result.baselines.items()):
        e = [max(c[t - 1], FLOOR) for c in b.best_error_curve]
        p = [c[t - 1] for c in b.best_psnr_curve]
        ax.plot(p, e, "o--", color=f"C{k}", label=f"{LABELS[name]}, {t} steps (step sizes)")
    ax.plot(
        [liso.psnr],
        [max(liso.error, FLOOR)],
        "*",
        ms=14,
        color="C3",
        label=f"LISO, {_t_liso(result)} steps",
    )
    if "one_step" in result.arms:
        one = result.arms["one_step"]
        ax.plot([one.psnr], [max(one.error, FLOOR)], "s", ms=8, color="C2", label="one-step")
    ax.axvline(liso.psnr, color="grey", ls=":", lw=1)
    ax.set(xlabel="PSNR (dB), higher = less visible", ylabel="bit error (8-bit)", yscale="log")
    ax.legend(fontsize="x-small")


def plot_tradeoff(result: StegoResult, t: int | None = None):
    """Image quality against bit error: every step size of the baselines after ``t`` steps
    (default: LISO's T) beside LISO."""
    fig, axes = subplots(1, 1, width=5.2, height=3.6)
    draw_tradeoff(axes[0, 0], result, t or _t_liso(result))
    return fig


def plot_example(result: StegoResult):
    """One held-out cover, the stego image LISO keeps, their difference ×3, and the bits."""
    ex = result.liso.example
    cover, stego = np.array(ex["cover"]), np.array(ex["stego"])
    message = np.array(ex["message"])
    to_img = lambda x: np.clip((x + 1) / 2, 0, 1).transpose(1, 2, 0).squeeze()  # noqa: E731
    diff = np.clip(0.5 + 1.5 * (stego - cover), 0, 1)  # ×3 on the [0, 1] scale
    diff = diff.transpose(1, 2, 0).squeeze()
    mse = float(np.mean(((stego - cover) * 127.5) ** 2))  # on the 0-255 scale
    psnr = 10 * np.log10(255**2 / mse) if mse > 0 else float("inf")
    fig, axes = subplots(1, 4, width=2.0, height=2.2)
    panels = [
        (to_img(cover), "cover"),
        (to_img(stego), f"stego (8-bit), {psnr:.1f} dB"),
        (diff, "difference ×3"),
        (message[0], "message (bit plane 1)"),
    ]
    for ax, (img, title) in zip(axes[0], panels):
        ax.imshow(img, cmap="gray", vmin=0, vmax=1)
        ax.set_title(title, fontsize="small")
        ax.axis("off")
    return fig


def plot_training(result: StegoResult):
    """Training loss (Σ_t γ^{T−t}(MSE + BCE)) of each encoder/decoder pair."""
    fig, axes = subplots(1, 1, width=5.0, height=3.0)
    ax = axes[0, 0]
    for name, arm in result.arms.items():
        ax.plot(arm.loss, lw=0.8, label=LABELS[name])
    ax.set(xlabel="training step", ylabel="sequence loss", yscale="log")
    ax.legend(fontsize="small")
    return fig


def figures(result: StegoResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    return {
        "error_vs_steps": plot_error_vs_steps(result),
        "tradeoff": plot_tradeoff(result),
        "example": plot_example(result),
        "training": plot_training(result),
    }
