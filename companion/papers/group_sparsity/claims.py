"""The paper's thesis, measured on a result (never typed in).

Every estimator sees the same data sets (the same draws at every sample size), so the numbers are
paired. A comparison holds only by a margin (a named constant below), never by a tie. The rows
that credit the *grouping* count the grouped network against every ungrouped estimator, and
among them the control that removes only the grouping: Algorithm 2 with groups of size 1.
"""

from __future__ import annotations

import math

import numpy as np

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.group_sparsity.experiment import GroupSparsityResult, switch_size

RECOVERED = 0.1  # a data set is recovered when ‖ŵ − w*‖² < 10% of ‖w*‖²
ERROR_RATIO = 0.25  # "lower error": at most a quarter of the best ungrouped network's error
BLOCK_RATIO = 0.5  # "groups switch on as blocks": within-group spread at most half the ungrouped
UNIT_NORM = 1e-4  # invariant: every v_l of Algorithm 2 has unit norm to float32 precision
UNGROUPED = {
    "grouped1": "size-1 groups",
    "diagonal": "diagonal",
    "linear": "linear",
    "lasso": "lasso",
}
# "at least as accurate as a tuned group lasso" (one-sided): the grouped network's mean error at
# compare_m no larger than the cross-validated group lasso's (the paper reports comparable errors)
GROUP_LASSO_RATIO = 1.0
ACTIVE = 0.5  # an entry is switched on once it reaches half of its true value


def signal_energy(result: GroupSparsityResult) -> float:
    c = result.config
    return c["active_groups"] * c["group_size"] * c["signal"] ** 2


def recovery_size(result: GroupSparsityResult, method: str) -> float:
    """Smallest sample size of the grid from which on every draw is recovered (inf: none)."""
    limit = RECOVERED * signal_energy(result)
    ok = {
        m: all(math.isfinite(e) and e < limit for e in errors)
        for m, errors in result.by_m(method).items()
    }
    sizes = sorted(ok)
    for i, m in enumerate(sizes):
        if all(ok[n] for n in sizes[i:]):
            return float(m)
    return math.inf


def mean_error(result: GroupSparsityResult, method: str, m: int) -> float:
    errors = result.by_m(method)[m]
    return float(np.mean(errors)) if all(math.isfinite(e) for e in errors) else math.inf


def activation_epochs(
    result: GroupSparsityResult, method: str, trace: str = "support_entries"
) -> np.ndarray:
    """On the recorded run (``trace``: ``support_entries`` at ``trace_m``, or
    ``support_entries_switch_m`` at ``switch_m``): the first recorded epoch at which each support
    entry reaches ``ACTIVE`` of its true value, shaped (groups, group size); NaN for an entry
    that never does."""
    arm = result.arms[method]
    epochs = np.asarray(arm.record_epochs, dtype=float)
    entries = np.asarray(arm.trace[trace], dtype=float)  # (k, records)
    on = entries >= ACTIVE * result.config["signal"]
    first = np.where(on.any(1), epochs[on.argmax(1)], np.nan)
    return first.reshape(result.config["active_groups"], result.config["group_size"])


def activation_spread(
    result: GroupSparsityResult, method: str, trace: str = "support_entries"
) -> float:
    """Over switched-on entries only: for each true group with at least two entries that switch
    on, the epochs between its first and its last such entry, averaged over those groups and
    divided by the mean activation epoch of the switched-on entries. Entries that never switch
    on are left out (they would count as a spread that no entry showed); NaN when no group has
    two switched-on entries (then the blocks row cannot hold)."""
    first = activation_epochs(result, method, trace)
    spreads = [
        np.ptp(group[np.isfinite(group)]) for group in first if np.isfinite(group).sum() >= 2
    ]
    if not spreads:
        return math.nan
    return float(np.mean(spreads) / max(np.nanmean(first), 1.0))


def switch_on_summary(result: GroupSparsityResult) -> str:
    """At ``switch_m`` (draw 0), per network: how many support entries switch on, and per true
    group the epochs of its first and last entry to switch on (not a claim: one data set)."""
    c = result.config
    name = {"grouped": "grouped", **UNGROUPED}
    lines = [
        f"switch-on epochs (first epoch at {ACTIVE:.0%} of w*) at m={switch_size(c)}, draw 0, "
        "per true group: first–last entry"
    ]
    for method in (k for k in ("grouped", "grouped1", "diagonal") if k in result.arms):
        key = "support_entries_switch_m"
        first = activation_epochs(result, method, key)
        cells = []
        for g, group in enumerate(first):
            on = group[np.isfinite(group)]
            cells.append(
                f"g{g + 1} "
                + (f"{int(on.min())}–{int(on.max())}" if len(on) else "never")
                + ("" if len(on) == len(group) else f" ({len(on)}/{len(group)} on)")
            )
        lines.append(
            f"  {name[method]:14s} {int(np.isfinite(first).sum())}/{first.size} on; "
            + ", ".join(cells)
            + f"; within-group spread {fmt(activation_spread(result, method, key), 3)}"
        )
    return "\n".join(lines)


def switched_on(result: GroupSparsityResult, method: str) -> int:
    """How many support entries of the recorded run ever reach ``ACTIVE`` of their value."""
    return int(np.isfinite(activation_epochs(result, method)).sum())


def _fmt_m(m: float) -> str:
    return "none" if math.isinf(m) else f"m={int(m)}"


def check_claims(result: GroupSparsityResult) -> ClaimReport:
    m0 = int(result.config.get("compare_m", 80))
    sizes = {k: recovery_size(result, k) for k in result.arms}
    ungrouped = [k for k in UNGROUPED if k in result.arms]
    name = {"grouped": "grouped", **UNGROUPED}
    best_ungrouped = min(sizes[k] for k in ungrouped)
    errs = {k: mean_error(result, k, m0) for k in result.arms}
    best_err = min(errs[k] for k in ungrouped)
    traced = [k for k in ("grouped1", "diagonal") if k in result.arms]  # the sparse networks
    spread = {k: activation_spread(result, k) for k in ("grouped", *traced)}
    on = {k: switched_on(result, k) for k in spread}
    k_support = result.config["active_groups"] * result.config["group_size"]
    rows = [
        Claim(
            "the grouped network recovers w* from fewer samples than ungrouped networks "
            "(Algorithm 2 with groups of size 1 included)",
            "recovered from "
            + ", ".join(f"{name[k]} {_fmt_m(sizes[k])}" for k in ("grouped", *ungrouped)),
            f"grouped's smallest recovered m below every ungrouped network's "
            f"(recovered: error < {RECOVERED:.0%} of ‖w*‖² on every draw)",
            sizes["grouped"] < best_ungrouped,
        ),
        Claim(
            "with few samples the grouped network has lower error than ungrouped networks "
            "(size-1 groups included)",
            f"mean ‖ŵ − w*‖² at m={m0}: "
            + ", ".join(f"{name[k]} {fmt(errs[k], 3)}" for k in ("grouped", *ungrouped)),
            f"grouped ≤ {ERROR_RATIO:g}× the best ungrouped network",
            errs["grouped"] <= ERROR_RATIO * best_err,
        ),
        Claim(
            "groups switch on as blocks; without the grouping (size-1 groups, diagonal "
            "network) entries switch on one by one",
            "within-group activation spread over switched-on entries "
            + ", ".join(f"{name[k]} {fmt(spread[k], 3)}" for k in spread)
            + " (share of the mean activation epoch; entries switched on: "
            + ", ".join(f"{name[k]} {on[k]}/{k_support}" for k in spread)
            + ")",
            f"grouped < {BLOCK_RATIO:g}× every ungrouped network's "
            f"(entries that never reach {ACTIVE:.0%} of w* left out)",
            bool(traced) and all(spread["grouped"] < BLOCK_RATIO * spread[k] for k in traced),
        ),
    ]
    comparison = "group_lasso" if "group_lasso" in result.arms else None
    if comparison:
        rows.append(
            Claim(
                "the grouped network is at least as accurate as a cross-validated group lasso "
                "(this notebook's comparison, after the paper's)",
                f"mean ‖ŵ − w*‖² at m={m0}: grouped {fmt(errs['grouped'], 3)}, group lasso "
                f"{fmt(errs['group_lasso'], 3)}; recovered from grouped "
                f"{_fmt_m(sizes['grouped'])}, group lasso {_fmt_m(sizes['group_lasso'])}",
                f"grouped ≤ {GROUP_LASSO_RATIO:g}× group lasso at m={m0}",
                errs["grouped"] <= GROUP_LASSO_RATIO * errs["group_lasso"],
            )
        )
    finite = all(math.isfinite(e) for arm in result.arms.values() for e in arm.error)
    gaps = {k: result.arms[k].unit_norm_gap for k in ("grouped", "grouped1") if k in result.arms}
    invariants = (
        Invariant(
            "one scale per group: Algorithm 2 renormalises every v_l, so ‖w_l‖ = u_l^D "
            "(all entries of a group share u_l)",
            "max |‖v_l‖ − 1| at the end: " + ", ".join(f"{name[k]} {gaps[k]:.1e}" for k in gaps),
            all(g <= UNIT_NORM for g in gaps.values()),
        ),
        Invariant(
            "every estimator returns finite weights",
            "all errors finite" if finite else "some error is not finite",
            finite,
        ),
    )
    note = (
        "not a claim: the recovered sizes are grid points; the full preset uses a finer grid "
        "and 30 draws per size"
    )
    return ClaimReport(tuple(rows), note=note, invariants=invariants)
