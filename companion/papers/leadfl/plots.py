"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

from companion.core import subplots
from companion.papers.leadfl.experiment import LeadFLResult

LABELS = {"none": "robust aggregation alone", "leadfl": "robust aggregation + LeadFL"}


def _bursts(ax, result: LeadFLResult) -> None:
    for i, r in enumerate(result.config["burst_rounds"]):
        ax.axvline(r, color="grey", ls=":", lw=1, label="burst of attackers" if i == 0 else None)


def plot_rounds(result: LeadFLResult):
    """The paper's Fig. 3 at small scale: attack success rate (left) and clean accuracy
    (right) of the global model after each round, per arm, with the burst rounds marked."""
    fig, axes = subplots(1, 2, width=4.6, height=3.0, sharex=True)
    left, right = axes[0, 0], axes[0, 1]
    for arm in result.arms.values():
        label = LABELS[arm.defense]
        left.plot(arm.rounds, arm.attack_success, marker=".", label=label)
        right.plot(arm.rounds, arm.clean_accuracy, marker=".", label=label)
    for ax in (left, right):
        _bursts(ax, result)
        ax.set_xlabel("round")
    agg = result.config["aggregator"]
    left.set(ylabel="attack success rate", ylim=(-0.02, 1.02), title=f"backdoor ({agg})")
    right.set(ylabel="clean test accuracy", title="main task")
    left.legend(fontsize="small")
    return fig


def plot_attackers(result: LeadFLResult):
    """How many attackers took part in each round: the bursty pattern."""
    arm = next(iter(result.arms.values()))
    fig, axes = subplots(1, 1, width=5.0, height=2.2)
    ax = axes[0, 0]
    ax.bar(arm.rounds, arm.attackers, color="C3")
    ax.set(
        xlabel="round",
        ylabel="attackers selected",
        title=f"{result.config['per_round']} clients per round",
    )
    return fig


def plot_summary(fig, result: LeadFLResult, round_: int) -> None:
    """Both arms at one round, drawn into ``fig`` (the explore widget's view): attack success
    rate and clean accuracy as bars."""
    ax1, ax2 = fig.subplots(1, 2)
    arms = list(result.arms.values())
    names = [LABELS[a.defense].replace("robust aggregation", "robust") for a in arms]
    i = arms[0].rounds.index(round_)
    ax1.bar(names, [a.attack_success[i] for a in arms], color=["C0", "C1"][: len(arms)])
    ax2.bar(names, [a.clean_accuracy[i] for a in arms], color=["C0", "C1"][: len(arms)])
    ax1.set(ylim=(0, 1), ylabel="attack success rate", title=f"after round {round_}")
    ax2.set(ylim=(0, 1), ylabel="clean test accuracy", title=f"after round {round_}")


def figures(result: LeadFLResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    return {"rounds": plot_rounds(result), "attackers": plot_attackers(result)}
