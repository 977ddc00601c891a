"""Figures from a result: reconstructions, EMD per arm, and the sliced distances of held-out
pairs along each kind of direction."""

from __future__ import annotations

import numpy as np

from companion.core.plotting import COLORBLIND, subplots
from companion.papers.amortized_dsw.experiment import AmortizedDSWResult

LABELS = {
    "sw": "SW",
    "vdsw_random": "v-DSW, random ε (control)",
    "linear_vdsw": "amortized v-DSW, linear",
    "attention_vdsw": "amortized v-DSW, attention",
}
COLOURS = {arm: COLORBLIND[i] for i, arm in enumerate(LABELS)}


def plot_reconstructions(result: AmortizedDSWResult, index: int = 0):
    """One held-out shape (grey) and each arm's reconstruction (colour), seen along z."""
    arms = list(result.arms)
    fig, axes = subplots(1, len(arms), width=2.6, height=2.7)
    for ax, arm in zip(axes[0], arms):
        shape, recon = (np.array(a) for a in result.arms[arm].samples[index])
        ax.scatter(shape[:, 0], shape[:, 1], s=4, color="0.7", label="shape")
        ax.scatter(recon[:, 0], recon[:, 1], s=4, color=COLOURS[arm], label="reconstruction")
        ax.set(title=LABELS[arm], xlabel="x", ylabel="y", aspect="equal")
        ax.title.set_fontsize(8)
    axes[0][0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(0, -0.25), ncol=2)
    return fig


def plot_emd(result: AmortizedDSWResult):
    """Left: validation EMD along training. Right: test EMD per arm (mean, and each shape)."""
    fig, axes = subplots(1, 2, width=4.6, height=3.6)
    ax_curve, ax_bar = axes[0]
    for arm, r in result.arms.items():
        ax_curve.plot(
            r.curve_steps, r.curve_val_emd, "o-", ms=3, color=COLOURS[arm], label=LABELS[arm]
        )
    ax_curve.set(
        xlabel="autoencoder step",
        ylabel="EMD (validation shapes)",
        title="reconstruction along training",
    )
    ax_curve.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2)
    rng = np.random.default_rng(0)
    for i, (arm, r) in enumerate(result.arms.items()):
        ax_bar.bar(i, r.emd_mean, color=COLOURS[arm], alpha=0.7)
        ax_bar.scatter(
            i + rng.uniform(-0.25, 0.25, len(r.emd_test)), r.emd_test, s=4, color="k", alpha=0.5
        )
    ticks = [LABELS[a].replace(", ", "\n").replace("ized ", "ized\n") for a in result.arms]
    ax_bar.set_xticks(range(len(result.arms)), ticks, fontsize=7)
    ax_bar.set(ylabel="exact EMD, test shapes", title="held-out reconstruction")
    return fig


SLICED = {
    "sw": "random directions (SW)",
    "direction_amortized": "the direction ε itself",
    "max_sw": "best direction (Max-SW, grid)",
    "vdsw_random": "vMF(random ε, κ)",
    "vdsw_amortized": "vMF(amortized ε, κ)",
    "vdsw_optimized": "vMF(ε optimized per pair, κ)",
}


def plot_sliced(result: AmortizedDSWResult, arm: str = "attention_vdsw"):
    """Mean over held-out pairs of two distinct shapes (never seen by ψ) of the sliced W₂²
    along directions of each kind: single directions on the left (random, the learned ε, the
    best one) and vMF samples at the run's κ and L on the right (around a random ε or the
    learned one). The larger, the more discriminative."""
    fig, axes = subplots(1, 1, width=6.0, height=3.0)
    ax = axes[0][0]
    sliced = result.arms[arm].sliced_shapes
    names = [k for k in SLICED if k in sliced]
    colours = [COLORBLIND[i] for i in range(len(names))]
    ax.barh(range(len(names)), [sliced[k] for k in names], color=colours)
    ax.set_yticks(range(len(names)), [SLICED[k] for k in names], fontsize=8)
    ax.invert_yaxis()
    ax.set(
        xlabel="sliced W₂² (sum over points), mean over pairs",
        title=f"held-out shape pairs, ε from {LABELS[arm]}",
    )
    ax.title.set_fontsize(9)
    return fig


def figures(result: AmortizedDSWResult) -> dict:
    figs = {"emd": plot_emd(result), "reconstructions": plot_reconstructions(result)}
    if "attention_vdsw" in result.arms:
        figs["sliced"] = plot_sliced(result)
    return figs


def draw_vmf(fig, kappa: float, num_samples: int = 400, seed: int = 0):
    """Into ``fig``: ``num_samples`` directions of vMF(ε, κ) around ε = e_z on the upper and
    lower hemispheres seen from above, and the histogram of their cosine with ε (its mean, the
    closed form coth κ − 1/κ, dashed). κ = 0 is SW's uniform law; large κ approaches Max-SW."""
    import torch

    from companion.papers.amortized_dsw.method import vmf_sample

    loc = torch.tensor([[0.0, 0.0, 1.0]], dtype=torch.float64)
    z = vmf_sample(loc, kappa, num_samples, np.random.default_rng(seed))[0].numpy()
    ax_sphere, ax_hist = fig.subplots(1, 2)
    for side, marker, colour in (
        (z[:, 2] >= 0, "o", COLORBLIND[0]),
        (z[:, 2] < 0, "x", COLORBLIND[3]),
    ):
        ax_sphere.scatter(
            z[side, 0],
            z[side, 1],
            s=6,
            marker=marker,
            color=colour,
            label="upper" if marker == "o" else "lower hemisphere",
        )
    ax_sphere.set(
        xlim=(-1.05, 1.05),
        ylim=(-1.05, 1.05),
        aspect="equal",
        xlabel="θ_x",
        ylabel="θ_y",
        title=f"vMF(ε = e_z, κ = {kappa:g}) seen from above",
    )
    ax_sphere.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax_hist.hist(z[:, 2], bins=30, range=(-1, 1), color=COLORBLIND[2])
    mean = 1 / np.tanh(kappa) - 1 / kappa if kappa > 1e-6 else 0.0
    ax_hist.axvline(mean, ls="--", color="k", label="coth κ − 1/κ")
    ax_hist.set(xlabel="cosine θ·ε", ylabel="samples", title="how concentrated the slices are")
    ax_hist.legend(fontsize=7)
