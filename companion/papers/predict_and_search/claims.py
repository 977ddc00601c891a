"""The paper's thesis, measured on a result (never typed in).

Quality is the mean primal gap over the test instances (``|obj − best| / max(|obj|, |best|)``,
1 for a run without a feasible solution), every arm with the same node budget. Comparisons are
ratios of mean gaps; ``(k, Δ)`` of the search and ``k`` of hard fixing were chosen on
validation instances before the test instances were solved.

Premises: the plain solver leaves a gap at this budget on a good share of the test instances
(otherwise there is nothing to improve), and the GNN's partial assignment agrees with the best
known solution clearly more often than a random one.

The best known of an instance is the best of its labelled pool and of every arm's run on it
(the paper's reference: the best solution any method found). The margin ``GAP_RATIO`` is the
paper's own effect size against SCIP (a primal gap 51.1 % lower, abstract), the same for every
comparison; it was fixed on seeds 0–4 of the notebook preset before seeds 5–9 were run (see the
notebook's robustness table). The control's scores (``random_scores``: random ones that can be 1
together) replaced plain random scores in review, because random ones on a graph make the trust
region infeasible and the control then measured infeasibility; nothing was tuned on 5–9, and
seeds 10–14 were added as never-seen seeds. With eight test instances a gap moves in steps of
about one vertex in thirty, so a smaller margin would rest on one or two instances.
"""

from __future__ import annotations

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.predict_and_search.experiment import PredictAndSearchResult

OPEN_SHARE = 0.3  # premise: the plain solver misses the best known on ≥ 30 % of test instances
AGREEMENT = 0.15  # premise: x̂ agrees with the best known ≥ 15 points above chance
GAP_RATIO = 0.5  # search's mean gap ≤ 0.5 × the other arm's (the paper: 51.1 % below SCIP)


def ratio(result: PredictAndSearchResult, arm: str, other: str) -> float:
    """``mean gap(arm) / mean gap(other)`` (1 when both are 0, inf when only ``other`` is 0)."""
    a, b = result.mean_gap(arm), result.mean_gap(other)
    if b == 0:
        return 1.0 if a == 0 else float("inf")
    return a / b


def check_claims(result: PredictAndSearchResult) -> ClaimReport:
    plain = result.arms["plain"]
    open_share = sum(g > 1e-9 for g in plain.gaps) / len(plain.gaps)
    has_gap = open_share >= OPEN_SHARE
    lift = result.agreement - result.chance
    informative = lift >= AGREEMENT
    s = result.arms["search"]
    nodes = result.config["node_limit"]
    rows = [
        Claim(
            f"premise: the plain solver does not reach the best known within {nodes} node(s)",
            f"{fmt(100 * open_share, 0)}% of test instances open, mean gap "
            f"{fmt(result.mean_gap('plain'), 4)}",
            f"open on ≥ {100 * OPEN_SHARE:g}%",
            has_gap,
        ),
        Claim(
            "premise: the GNN's partial assignment is informative (held-out instances)",
            f"agreement {fmt(result.agreement, 2)} vs chance {fmt(result.chance, 2)}",
            f"≥ chance + {AGREEMENT:g}",
            informative,
        ),
    ]
    for other, name in (("plain", "the plain solver"), ("fixing", "hard fixing (Δ = 0)")):
        r = ratio(result, "search", other)
        rows.append(
            Claim(
                f"Predict-and-Search has a lower primal gap than {name}, same budget",
                f"gap ratio {fmt(r, 2)} (k = {s.k}, Δ = {s.delta})",
                f"ratio ≤ {GAP_RATIO:g}",
                r <= GAP_RATIO,
                premise_ok=has_gap and informative if other == "plain" else informative,
            )
        )
    r = ratio(result, "search", "random")
    rows.append(
        Claim(
            "control: the gain comes from the prediction (random feasible ones, same k, Δ, budget)",
            f"gap ratio {fmt(r, 2)}",
            f"ratio ≤ {GAP_RATIO:g}",
            r <= GAP_RATIO,
            premise_ok=informative,
        )
    )
    note = (
        "one split of the labelled bank per seed and few test instances: a gap ratio rests on "
        "a handful of instances where some arm misses the best known"
    )
    return ClaimReport(tuple(rows), note=note, invariants=invariants(result))


def invariants(result: PredictAndSearchResult) -> tuple[Invariant, ...]:
    gaps = [g for a in result.arms.values() for g in a.gaps]
    return (
        Invariant(
            "primal gaps lie in [0, 1]",
            f"min {fmt(min(gaps), 4)}, max {fmt(max(gaps), 4)}",
            min(gaps) >= 0 and max(gaps) <= 1,
        ),
    )
