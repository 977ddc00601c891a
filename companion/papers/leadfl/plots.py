"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

from companion.core import subplots
from companion.papers.leadfl.experiment import LeadFLResult

LABELS = {
    "none": "robust aggregation alone",
    "leadfl": "robust aggregation + LeadFL",
    "alpha0": "LeadFL with α = 0 (no regularizer)",
    "double_lr": "step-matched control (plain SGD, 2η)",
    "no_attack": "no attack (clean floor)",
}
STYLES = {
    "none": dict(color="C0"),
    "leadfl": dict(color="C1"),
    "alpha0": dict(color="C4", ls="-."),
    "double_lr": dict(color="C2", ls="--"),
    "no_attack": dict(color="grey", ls=":"),
}


def _bursts(ax, result: LeadFLResult) -> None:
    for i, r in enumerate(result.config["burst_rounds"]):
        ax.axvline(r, color="grey", ls=":", lw=1, label="burst of attackers" if i == 0 else None)


def plot_rounds(result: LeadFLResult):
    """The paper's Fig. 3 at small scale, per arm and round: the attack success rate on
    stamped non-target test images (left), the share of *clean* non-target images predicted as
    the target (middle: near 1 means the model predicts the target for everything, not a
    backdoor) and the clean accuracy (right). Burst rounds are marked; the shaded window after
    the last burst is where the claims measure the residual backdoor."""
    fig, axes = subplots(1, 3, width=3.6, height=3.4, sharex=True)
    left, middle, right = axes[0, 0], axes[0, 1], axes[0, 2]
    for arm in result.arms.values():
        kw = dict(marker=".", label=LABELS[arm.defense], **STYLES[arm.defense])
        left.plot(arm.rounds, arm.attack_success, **kw)
        middle.plot(arm.rounds, arm.target_rate, **kw)
        right.plot(arm.rounds, arm.clean_accuracy, **kw)
    last = result.last_burst
    end = max(next(iter(result.arms.values())).rounds)
    for ax in (left, middle, right):
        _bursts(ax, result)
        if end > last:
            ax.axvspan(last + 0.5, end + 0.5, color="grey", alpha=0.08, lw=0)
        ax.set_xlabel("round")
    agg = result.config["aggregator"]
    left.set(ylabel="attack success rate", ylim=(-0.02, 1.02), title=f"backdoor ({agg})")
    middle.set(
        ylabel="target rate on clean images", ylim=(-0.02, 1.02), title="predicts the target anyway"
    )
    right.set(ylabel="clean test accuracy", title="main task")
    handles, labels = left.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=3, fontsize="small")
    return fig


def plot_attackers(result: LeadFLResult):
    """How many attackers took part in each round: the bursty pattern."""
    arms = list(result.arms.values())
    arm = next((a for a in arms if a.defense != "no_attack"), arms[0])
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
    """Every arm at one round, drawn into ``fig`` (the explore widget's view): attack success
    rate and clean accuracy as bars."""
    ax1, ax2 = fig.subplots(1, 2)
    arms = list(result.arms.values())
    short = {
        "none": "alone",
        "leadfl": "LeadFL",
        "alpha0": "α = 0",
        "double_lr": "2η control",
        "no_attack": "no attack",
    }
    names = [short[a.defense] for a in arms]
    i = arms[0].rounds.index(round_)
    colors = [STYLES[a.defense]["color"] for a in arms]
    ax1.bar(names, [a.attack_success[i] for a in arms], color=colors)
    ax2.bar(names, [a.clean_accuracy[i] for a in arms], color=colors)
    for ax in (ax1, ax2):
        ax.tick_params(axis="x", labelrotation=30, labelsize="x-small")
    ax1.set(ylim=(0, 1), ylabel="attack success rate", title=f"after round {round_}")
    ax2.set(ylim=(0, 1), ylabel="clean test accuracy", title=f"after round {round_}")


def figures(result: LeadFLResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    return {"rounds": plot_rounds(result), "attackers": plot_attackers(result)}
