"""The paper's thesis, measured on a result (never typed in).

Quality is the correlation-clustering cost, Eq. (1) (lower is better), and pair recall (the
share of positive pairs a clustering puts together). Every arm at a budget had an oracle with
that many queries. Comparisons are ratios of costs at the same budget, required at *every*
budget of the run, and recall gaps averaged over the budgets.

Margins, sized on seeds 0–4 of the notebook preset before seeds 5–9 were run: KwikBucks' cost
over the baselines' ranged from 0.45 to 0.70 at the smallest budget (where the ratio is
largest; standard deviation ≈ 0.09 over seeds), so "at least 20 % lower at every budget"
(ratio ≤ 0.8) sits about three standard deviations above the mean worst ratio; the recall gap
averaged over budgets ranged from 0.27 to 0.50, and 0.2 asks for a gap clear of its lowest
value.
"""

from __future__ import annotations

import numpy as np

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.kwikbucks.experiment import KwikBucksResult

WEAK_AUC = 0.8  # premise: the weak signal ranks a positive pair above a negative one this often
WEAK_NN_NOISY = 0.95  # premise: ... yet a point's weak nearest neighbour is wrong often enough
UNFINISHED_RECALL = 0.5  # premise: KwikCluster on S alone at the smallest budget stays below
COST_RATIO = 0.8  # KwikBucks' cost ≤ 0.8 × the other arm's at every budget
RECALL_GAP = 0.2  # KwikBucks' recall above the better baseline by ≥ 0.2, averaged over budgets
BASELINES = {"kwikcluster": "KwikCluster on S alone", "weak_knn": "weak-kNN (KwikClusterKnn)"}


def cost_ratios(result: KwikBucksResult, arm: str, other: str) -> list[float]:
    """``cost(arm) / cost(other)`` at each budget (1 where both are 0)."""
    return [
        b.arms[arm].cost / b.arms[other].cost
        if b.arms[other].cost
        else float(b.arms[arm].cost == 0)
        for b in result.budgets
    ]


def recall_gaps(result: KwikBucksResult) -> list[float]:
    """KwikBucks' recall minus the better baseline's, at each budget."""
    return [
        b.arms["kwikbucks"].recall - max(b.arms[a].recall for a in BASELINES)
        for b in result.budgets
    ]


def _ratios_text(ratios) -> str:
    return " / ".join(fmt(r, 2) for r in ratios)


def check_claims(result: KwikBucksResult) -> ClaimReport:
    budgets = "/".join(f"{m:g}" for m in result.multiples)
    smallest = result.budgets[0]
    informative = result.weak_auc >= WEAK_AUC and result.weak_nn_agreement < WEAK_NN_NOISY
    unfinished = smallest.arms["kwikcluster"].recall <= UNFINISHED_RECALL
    premise = informative and unfinished
    rows = [
        Claim(
            "premise: the weak signal is informative but noisy",
            f"AUC {fmt(result.weak_auc, 2)}, weak 1-NN in the same cluster "
            f"{fmt(100 * result.weak_nn_agreement, 0)}%",
            f"AUC ≥ {WEAK_AUC:g} and 1-NN < {100 * WEAK_NN_NOISY:g}%",
            informative,
        ),
        Claim(
            "premise: KwikCluster on S alone cannot finish at the smallest budget",
            f"recall {fmt(smallest.arms['kwikcluster'].recall, 2)} at {smallest.multiple:g}N",
            f"recall ≤ {UNFINISHED_RECALL:g}",
            unfinished,
        ),
    ]
    for other, name in BASELINES.items():
        ratios = cost_ratios(result, "kwikbucks", other)
        rows.append(
            Claim(
                f"lower cost than {name}, equal budget",
                f"cost ratio {_ratios_text(ratios)} at {budgets}N",
                f"ratio ≤ {COST_RATIO:g} at every budget",
                max(ratios) <= COST_RATIO,
                premise_ok=premise,
            )
        )
    gaps = recall_gaps(result)
    rows.append(
        Claim(
            "higher pair recall than both baselines",
            f"gap {_ratios_text(gaps)} at {budgets}N (mean {fmt(np.mean(gaps), 2)})",
            f"mean gap ≥ {RECALL_GAP:g}",
            float(np.mean(gaps)) >= RECALL_GAP,
            premise_ok=premise,
        )
    )
    control = cost_ratios(result, "kwikbucks", "random_weak")
    rows.append(
        Claim(
            "control: the gain comes from the weak signal (random W, same code and budget)",
            f"cost ratio {_ratios_text(control)} at {budgets}N",
            f"ratio ≤ {COST_RATIO:g} at every budget",
            max(control) <= COST_RATIO,
            premise_ok=informative,
        )
    )
    note = ""
    if not all(r.holds for r in rows):
        note = (
            "one data set per seed: a weak signal that is too noisy (raise noise) removes the "
            "gain; try other seeds or the settings in the notebook"
        )
    return ClaimReport(tuple(rows), note=note, invariants=invariants(result))


def invariants(result: KwikBucksResult) -> tuple[Invariant, ...]:
    """Properties true by construction, checked on the run (not counted as claims)."""
    over = [
        (b.multiple, arm) for b in result.budgets for arm, s in b.arms.items() if s.calls > b.budget
    ]
    lowest = min(s.precision for b in result.budgets for s in b.arms.values())
    return (
        Invariant(
            "no arm queries more distinct pairs than its budget",
            "every arm within budget" if not over else f"over budget: {over}",
            not over,
        ),
        Invariant(
            "pair precision is 1 with an exact oracle (every join was confirmed by S)",
            f"lowest precision {lowest:g}",
            lowest == 1.0,
        ),
    )
