"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.counts.experiment import CountsResult

LABELS = {"counts": "CounTS", "no_abduction": "CounTS without abduction", "wachter": "Wachter"}
COLORS = {"counts": "C0", "no_abduction": "C2", "wachter": "C3"}
METHODS = ("counts", "no_abduction", "wachter")


def plot_validity(result: CountsResult):
    """Validity judged by the simulator next to each model's own opinion, and the error of each
    method's claimed counterfactual series against the simulator's."""
    fig, axes = subplots(1, 2, width=4.4, height=3.0)
    ax, ax2 = axes[0, 0], axes[0, 1]
    x = np.arange(len(METHODS))
    true = [result.explainer(m).validity for m in METHODS]
    own = [result.explainer(m).model_validity for m in METHODS]
    ax.bar(x - 0.2, true, 0.4, color=[COLORS[m] for m in METHODS], label="simulator says")
    ax.bar(x + 0.2, own, 0.4, color="lightgrey", edgecolor="k", label="model says")
    ax.set_xticks(x, [LABELS[m].replace(" without", "\nwithout") for m in METHODS], fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("share reaching the desired outcome")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    err = [result.explainer(m).cf_error for m in METHODS]
    ax2.bar(x, err, 0.6, color=[COLORS[m] for m in METHODS])
    ax2.set_xticks(x, [LABELS[m].replace(" without", "\nwithout") for m in METHODS], fontsize=8)
    ax2.set_ylabel("mean |claimed b′ − true b′|")
    ax2.set_title("distance to the true counterfactual", fontsize=10)
    return fig


def plot_dose_change(result: CountsResult):
    """Each explained patient's mean dose change, by desired outcome: the true effect of more
    dose is a better outcome, so a valid explanation raises the dose to make it good."""
    fig, axes = subplots(1, 1, width=6.0, height=3.2)
    ax = axes[0, 0]
    target = np.asarray(result.targets)
    rng = np.random.default_rng(0)
    for i, m in enumerate(METHODS):
        change = np.asarray(result.explainer(m).dose_change)
        for j, want in enumerate((0.0, 1.0)):
            values = change[target == want]
            pos = j * 4 + i + rng.uniform(-0.25, 0.25, len(values))
            ax.scatter(
                pos, values, s=5, alpha=0.5, color=COLORS[m], label=LABELS[m] if j == 0 else None
            )
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks([1, 5], ["desired: bad outcome", "desired: good outcome"])
    ax.set_ylabel("mean dose change a′ − a")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def plot_patient(fig, result: CountsResult, index: int) -> None:
    """One patient, drawn into ``fig`` (the widget's view): the dose each method proposes
    (left) and the vital sign it claims will follow, against the simulator's (right)."""
    ax1, ax2 = fig.subplots(1, 2)
    t = np.arange(len(result.factual["dose"][index]))
    ax1.plot(t, result.factual["dose"][index], color="k", lw=1.5, label="observed")
    ax2.plot(t, result.factual["vital"][index], color="k", lw=1.5, label="observed")
    for m in ("counts", "wachter"):
        ex = result.explainer(m).examples
        ax1.plot(t, ex["dose"][index], color=COLORS[m], label=LABELS[m])
        ax2.plot(t, ex["vital"][index], color=COLORS[m], label=f"{LABELS[m]} claims")
        ax2.plot(t, ex["true_vital"][index], color=COLORS[m], ls=":", label=f"{LABELS[m]}: truth")
    want = "good" if result.targets[index] == 1.0 else "bad"
    valid = {m: result.explainer(m).valid[index] for m in ("counts", "wachter")}
    ax1.set(xlabel="time step", ylabel="dose a", title=f"patient {index}: desired {want} outcome")
    ax2.set(
        xlabel="time step",
        ylabel="vital sign b",
        title=f"valid: CounTS {valid['counts']}, Wachter {valid['wachter']}",
    )
    ax2.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.0, 1.0))


def plot_examples(result: CountsResult, index: int = 0):
    """:func:`plot_patient` as a standalone figure."""
    import matplotlib.pyplot as plt

    from companion.core.plotting import DPI, set_theme

    set_theme()
    fig = plt.figure(figsize=(10, 3.2), dpi=DPI, layout="constrained")
    plot_patient(fig, result, index)
    return fig


def figures(result: CountsResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    return {
        "validity": plot_validity(result),
        "dose_change": plot_dose_change(result),
        "patient": plot_examples(result, 0),
    }
