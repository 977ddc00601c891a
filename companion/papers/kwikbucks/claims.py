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

Premises. The weak-signal premise gates every comparison. The KwikCluster premise checks the
*setting*, not KwikCluster's result: the smallest budget must be below a lower bound on the
queries KwikCluster needs to finish, ``N − K + K(K − 1)/2`` (each of the ``N − K`` non-pivots is
confirmed once, and each pair of clusters costs ``2|A||B|/(|A| + |B|) ≥ 1`` cross queries in
expectation, exercise 2). It gates the rows that compare with KwikCluster, not the weak-kNN row.
An earlier version gated on KwikCluster's own recall at the smallest budget, which hid the
seeds where KwikCluster's random first pivot fell in the largest cluster and it beat KwikBucks
there; such a seed now counts as a failure (the margins were not changed).
"""

from __future__ import annotations

import numpy as np

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.kwikbucks.experiment import KwikBucksResult

WEAK_AUC = 0.8  # premise: the weak signal ranks a positive pair above a negative one this often
WEAK_NN_NOISY = 0.95  # premise: ... yet a point's weak nearest neighbour is wrong often enough
COST_RATIO = 0.8  # KwikBucks' cost ≤ 0.8 × the other arm's at every budget
RECALL_GAP = 0.2  # KwikBucks' recall above the better baseline by ≥ 0.2, averaged over budgets
BASELINES = {"kwikcluster": "KwikCluster on S alone", "weak_knn": "weak-kNN (KwikClusterKnn)"}


def kwikcluster_need(result: KwikBucksResult) -> int:
    """A lower bound on KwikCluster's expected queries to finish with an exact oracle:
    ``N − K`` confirmations plus at least one cross query per pair of the ``K`` clusters."""
    n, k = result.n_points, result.true_clusters
    return n - k + k * (k - 1) // 2


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
    need = kwikcluster_need(result)
    unfinished = smallest.budget < need
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
            "premise: the smallest budget is below what KwikCluster on S alone needs",
            f"budget {smallest.budget:,} vs need ≥ {need:,}",
            "budget < N − K + K(K−1)/2",
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
                premise_ok=premise if other == "kwikcluster" else informative,
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
            "one data set and one pivot order per seed: a weak signal that is too noisy (raise "
            "noise) removes the gain, and KwikCluster can get lucky at the smallest budget (its "
            "first pivot in the largest cluster); try other seeds or the settings in the notebook"
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
