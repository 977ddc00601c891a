"""The paper's figures at small scale: accuracy against ε per attack (the database notebook's
boxplots), robust accuracy against parameter count, and the proxies against robust accuracy."""

from __future__ import annotations

from companion.core import subplots
from companion.papers.nas_robustness.experiment import NasRobustnessResult


def plot_accuracy_vs_eps(result: NasRobustnessResult):
    """Per attack, a box of accuracies over the architectures at each ε (clean prepended as
    ε = 0), chance level dashed."""
    fig, axes = subplots(1, 2, width=4.5, height=3.4, sharey=True, squeeze=True)
    eps = [0.0] + list(result.epsilons)
    for ax, attack in zip(axes, ("fgsm", "pgd")):
        data = [[r.clean for r in result.records]] + [
            [getattr(r, attack)[k] for r in result.records] for k in range(len(result.epsilons))
        ]
        ax.boxplot(data, tick_labels=[f"{e:g}" for e in eps])
        ax.axhline(0.1, ls="--", color="grey", label="chance")
        ax.set_title(attack.upper())
        ax.set_xlabel("ε (pixels in [0, 1])")
    axes[0].set_ylabel("accuracy")
    axes[1].legend(loc="upper left", bbox_to_anchor=(1.02, 1))
    return fig


def plot_params(result: NasRobustnessResult):
    """PGD accuracy (middle ε) against parameter count; the equal-parameter bin highlighted,
    the control (one bin architecture retrained from other seeds) as crosses."""
    fig, ax = subplots(width=6.5, height=3.6, squeeze=True)
    eps = result.epsilons[result.mid]
    other = [r for r in result.records if not r.in_bin]
    ax.scatter(
        [r.params for r in other],
        result.column("pgd", other),
        color="C0",
        label="other architectures",
    )
    ax.scatter(
        [r.params for r in result.bin_records],
        result.column("pgd", result.bin_records),
        color="C1",
        label="the bin (equal parameters)",
    )
    if result.repeats:
        ax.scatter(
            [r.params for r in result.repeats],
            result.column("pgd", result.repeats),
            color="C3",
            marker="x",
            s=60,
            label="one bin architecture, other seeds",
        )
    ax.set_xlabel("parameters")
    ax.set_ylabel(f"PGD accuracy at ε={eps:g}")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1))
    return fig


def plot_proxies(result: NasRobustnessResult):
    """PGD accuracy against each proxy (log scale)."""
    fig, axes = subplots(1, 2, width=4.5, height=3.4, sharey=True, squeeze=True)
    pgd = result.column("pgd")
    for ax, name, label in zip(
        axes, ("jacobian", "hessian"), ("mean ‖∂f/∂x‖_F", "mean λ_max of ∇²ₓL")
    ):
        ax.scatter([getattr(r, name) for r in result.records], pgd, color="C2")
        ax.set_xscale("log")
        ax.set_xlabel(label)
    axes[0].set_ylabel(f"PGD accuracy at ε={result.epsilons[result.mid]:g}")
    return fig


def figures(result: NasRobustnessResult) -> dict:
    out = {"accuracy_vs_eps": plot_accuracy_vs_eps(result), "params": plot_params(result)}
    if all(r.jacobian is not None for r in result.records):
        out["proxies"] = plot_proxies(result)
    return out


def plot_arch(fig, result: NasRobustnessResult, index: int) -> None:
    """One architecture of the zoo, drawn into ``fig`` (the widget's view): accuracy against ε
    under FGSM and PGD, and its accuracy under each corruption next to clean."""
    r = result.records[index]
    ax1, ax2 = fig.subplots(1, 2)
    eps = [0.0] + list(result.epsilons)
    ax1.plot(eps, [r.clean] + list(r.fgsm), marker="o", color="C0", label="FGSM")
    ax1.plot(eps, [r.clean] + list(r.pgd), marker="s", color="C3", label="PGD")
    ax1.axhline(0.1, ls="--", color="grey", label="chance")
    ax1.set(xlabel="ε", ylabel="accuracy", ylim=(0, 1), title=f"{r.params} parameters")
    ax1.legend(loc="upper left", bbox_to_anchor=(1.02, 1))
    names = ["clean"] + list(r.corruptions)
    ax2.bar(
        range(len(names)),
        [r.clean] + list(r.corruptions.values()),
        color=[f"C{i}" for i in range(len(names))],
    )
    ax2.set_xticks(range(len(names)), [n.replace("_", "\n") for n in names], fontsize=8)
    ax2.set(ylim=(0, 1), title="corruptions")
    fig.suptitle(r.arch, fontsize=8)
