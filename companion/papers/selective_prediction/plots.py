"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.core.plotting import COLORBLIND
from companion.papers.selective_prediction.claims import (
    BOOT,
    NEAR_ACC,
    accuracy_correlations,
    near_accuracy_tests,
)
from companion.papers.selective_prediction.experiment import REGIMES, SelectivePredictionResult

REGIME_COLORS = dict(zip((*REGIMES, "pretrained"), COLORBLIND))
MARKERS = "osD^vP*X"


def _architectures(result: SelectivePredictionResult) -> list[str]:
    return list(dict.fromkeys(m.architecture for m in result.members.values()))


def plot_risk_coverage(
    result: SelectivePredictionResult, architecture: str | None = None, max_coverage: float = 1.0
):
    """Risk–coverage curves (the paper's key figure) of one architecture's members, one curve per
    training regime (all members for a logits folder), and the teacher if there is one."""
    members = [
        m for m in result.members.values() if architecture is None or m.architecture == architecture
    ]
    fig, axes = subplots(1, 1, width=5.2, height=3.4)
    ax = axes[0, 0]
    for m in members:
        label = f"{m.name} (acc {m.before['accuracy']:.2f}, AUROC {m.before['auroc']:.3f})"
        ax.plot(m.coverage, m.risk, label=label, color=REGIME_COLORS.get(m.regime))
    if result.teacher is not None and architecture is not None:
        t = result.teacher
        ax.plot(
            t.coverage,
            t.risk,
            "k--",
            lw=1,
            label=f"teacher {t.architecture} (acc {t.before['accuracy']:.2f}, "
            f"AUROC {t.before['auroc']:.3f})",
        )
    ax.set_xlim(0, max_coverage)
    ax.set_xlabel("coverage (share of test samples accepted, most confident first)")
    ax.set_ylabel("selective risk (error rate of the accepted)")
    ax.set_title(f"risk–coverage: {architecture or 'all models'}")
    ax.legend(fontsize="x-small")
    return fig


def plot_zoo(result: SelectivePredictionResult):
    """Across the zoo: accuracy against AURC (left) and against AUROC (right), coloured by
    training regime, marked by architecture; Spearman ρ in the titles. Thin grey lines join the
    pairs of models whose accuracies differ by at most ``NEAR_ACC`` (the decoupling claim)."""
    rho_aurc, rho_auroc = accuracy_correlations(result)
    fig, axes = subplots(1, 2, width=4.2, height=3.2)
    archs = _architectures(result)
    ms = list(result.members.values())
    for a, m in enumerate(ms):
        for n in ms[a + 1 :]:
            if abs(m.before["accuracy"] - n.before["accuracy"]) <= NEAR_ACC + 1e-12:
                for ax, key in zip(axes[0], ("aurc", "auroc")):
                    xs = [m.before["accuracy"], n.before["accuracy"]]
                    ax.plot(xs, [m.before[key], n.before[key]], color="k", lw=1.0, zorder=0)
    for m in result.members.values():
        marker = MARKERS[archs.index(m.architecture) % len(MARKERS)] if len(archs) < 9 else "o"
        for ax, key in zip(axes[0], ("aurc", "auroc")):
            ax.scatter(
                m.before["accuracy"],
                m.before[key],
                marker=marker,
                s=30,
                color=REGIME_COLORS.get(m.regime),
            )
    for regime, color in REGIME_COLORS.items():
        if any(m.regime == regime for m in result.members.values()):
            axes[0, 1].scatter([], [], color=color, label=regime)
    if len(archs) < 9:
        for i, a in enumerate(archs):
            axes[0, 1].scatter([], [], color="grey", marker=MARKERS[i], label=a)
    axes[0, 0].set_ylabel("AURC (lower is better)")
    axes[0, 0].set_title(f"accuracy vs AURC: Spearman ρ = {rho_aurc:.2f}")
    axes[0, 1].set_ylabel("AUROC of κ (higher is better)")
    axes[0, 1].set_title(f"accuracy vs AUROC: Spearman ρ = {rho_auroc:.2f}")
    for ax in axes[0]:
        ax.set_xlabel("test accuracy")
    axes[0, 1].legend(fontsize="x-small", loc="best")
    return fig


def plot_near_accuracy_pairs(result: SelectivePredictionResult):
    """Every pair of models whose accuracies differ by at most ``NEAR_ACC``, sorted by ΔAUROC:
    the difference of their AUROCs with its 95 % paired-bootstrap interval over the shared test
    samples (``BOOT`` resamples). Dark: the interval excludes 0 (the pair ranks its errors
    differently by more than the test set's sampling noise); light: it does not."""
    tests = sorted(near_accuracy_tests(result), key=lambda t: abs(t["d_auroc"]))
    fig, axes = subplots(1, 1, width=5.2, height=0.25 * len(tests) + 1.4)
    ax = axes[0, 0]
    for i, t in enumerate(tests):
        sign = 1 if t["d_auroc"] >= 0 else -1  # show each pair with a non-negative ΔAUROC
        lo, hi = sorted((sign * t["low"], sign * t["high"]))
        color = COLORBLIND[0] if t["separated"] else "silver"
        ax.plot([lo, hi], [i, i], color=color, lw=2)
        ax.scatter([sign * t["d_auroc"]], [i], color=color, s=20, zorder=3)
    ax.axvline(0, color="k", lw=0.8)
    ax.set_yticks(  # the pair's higher-AUROC model first
        np.arange(len(tests)),
        [
            " vs ".join(t["pair"] if t["d_auroc"] >= 0 else t["pair"][::-1])
            + f" (Δacc {t['accuracy_gap']:.3f})"
            for t in tests
        ],
        fontsize="x-small",
    )
    ax.set_xlabel(f"ΔAUROC with 95 % paired-bootstrap interval ({BOOT} resamples)")
    ax.set_title(f"pairs with accuracies within {NEAR_ACC}")
    return fig


def plot_distillation(result: SelectivePredictionResult):
    """Per student architecture: AUROC (left) and accuracy (right) of the vanilla, label-smoothed,
    distilled and control (distilled from class-shuffled teacher outputs) members (same initial
    weights, same batches), with the teacher on the test samples (dashed) and out-of-fold on the
    students' training images (dotted); arrows from vanilla to distilled."""
    archs = [v.architecture for v, _ in result.twins("distilled")]
    by = {(m.architecture, m.regime): m for m in result.members.values()}
    fig, axes = subplots(1, 2, width=4.2, height=3.2)
    x = np.arange(len(archs))
    shown = [
        r
        for r in ("vanilla", "label_smoothing", "distilled", "distilled_shuffled")
        if any((a, r) in by for a in archs)
    ]
    for ax, key in zip(axes[0], ("auroc", "accuracy")):
        for k, regime in enumerate(shown):
            xs = [
                i + 0.18 * (k - (len(shown) - 1) / 2)
                for i, a in enumerate(archs)
                if (a, regime) in by
            ]
            ys = [by[(a, regime)].before[key] for a in archs if (a, regime) in by]
            ax.scatter(xs, ys, color=REGIME_COLORS[regime], label=regime, s=30, zorder=3)
        for i, a in enumerate(archs):  # arrow: vanilla twin -> distilled
            v, d = by[(a, "vanilla")].before[key], by[(a, "distilled")].before[key]
            ax.annotate(
                "",
                xy=(i + 0.18 * (shown.index("distilled") - (len(shown) - 1) / 2), d),
                xytext=(i + 0.18 * (shown.index("vanilla") - (len(shown) - 1) / 2), v),
                arrowprops=dict(arrowstyle="->", color="grey", lw=0.8),
            )
        if result.teacher is not None:
            t = result.teacher
            ax.axhline(
                t.before[key], color="k", ls="--", lw=1, label=f"teacher ({t.architecture}), test"
            )
        if result.teacher_train:
            ax.axhline(
                result.teacher_train[key],
                color="k",
                ls=":",
                lw=1,
                label="teacher, out-of-fold on the\nstudents' training images",
            )
        ax.set_xticks(x, archs)
        ax.set_xlabel("student architecture")
    axes[0, 0].set_ylabel("AUROC of κ (ranking of errors)")
    axes[0, 1].set_ylabel("test accuracy")
    axes[0, 0].set_title("distilled vs vanilla twin: AUROC")
    axes[0, 1].set_title("... and accuracy")
    axes[0, 1].legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.02, 1))
    return fig


def plot_temperature_effect(result: SelectivePredictionResult):
    """Per model, before (dot) and after (arrow head) temperature scaling: ECE (left) and AUROC
    (right); models in the order of the result."""
    members = list(result.members.values())
    fig, axes = subplots(1, 2, width=4.4, height=0.22 * len(members) + 1.2, sharey=True)
    y = np.arange(len(members))
    for ax, key in zip(axes[0], ("ece", "auroc")):
        for i, m in enumerate(members):
            a, b = m.before[key], m.after[key]
            color = REGIME_COLORS.get(m.regime)
            ax.plot([a, b], [i, i], color=color, lw=1.5)
            ax.scatter([a], [i], color=color, s=18)
            ax.scatter([b], [i], color=color, marker=">" if b >= a else "<", s=22)
        ax.set_xlabel(f"{key.upper()}: dot before TS, arrow after")
    axes[0, 0].set_yticks(
        y, [f"{m.name} (T={m.temperature:.2f})" for m in members], fontsize="x-small"
    )
    axes[0, 0].invert_yaxis()
    return fig


def plot_member(fig, result: SelectivePredictionResult, name: str):
    """For the explore widget: one model's risk–coverage curve before and after TS, drawn into
    ``fig``."""
    m = result.members[name]
    ax = fig.subplots()
    ax.plot(m.coverage, m.risk, label=f"raw softmax (AURC {m.before['aurc']:.4f})")
    ax.plot(
        m.coverage,
        m.risk_ts,
        label=f"T = {m.temperature:.2f} (AURC {m.after['aurc']:.4f})",
        ls="--",
    )
    for target in result.config["sac_targets"]:
        ax.axhline(1 - target, color="grey", ls=":", lw=0.8)
    ax.set_xlabel("coverage")
    ax.set_ylabel("selective risk")
    ax.set_title(f"{name}: accuracy {m.before['accuracy']:.3f}")
    ax.legend(fontsize="small")
    return fig


def figures(result: SelectivePredictionResult) -> dict:
    """Every figure of the paper package, by file name (``companion run`` saves them)."""
    figs = {"zoo": plot_zoo(result), "temperature": plot_temperature_effect(result)}
    figs["near_accuracy_pairs"] = plot_near_accuracy_pairs(result)
    if result.twins("distilled"):
        figs["distillation"] = plot_distillation(result)
    for a in _architectures(result)[:8]:
        figs[f"risk_coverage_{a}"] = plot_risk_coverage(result, a)
    return figs
