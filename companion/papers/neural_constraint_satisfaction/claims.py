"""The paper's claim, measured on a result (never typed in).

Every arm is evaluated on the same tasks (same start and goal images, same step budgets), so
success rates are paired. Thresholds are named constants below, fixed on seeds 0-4 only.
"""

from __future__ import annotations

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.neural_constraint_satisfaction.experiment import NCSResult

# premise: a flat BC baseline "learns the training counts": mean success over the training
# counts at least this (sized on seeds 0-4: high at one object, partial at two at this data
# size; see the notebook). Applied to both BC arms.
BC_SOLVES = 0.5
# level one / level two premises: entity counts right in this share of images at every count,
# and this share of entity states in a cluster whose majority cell is their own
LEVELS = 0.95
# NCS solves the training counts
NCS_SOLVES = 0.9
# "generalizes where BC does not": NCS's mean success over the unseen counts exceeds the
# baseline's by at least this share of the tasks (sized on seeds 0-4: the gaps there were far
# larger; 0.5 is "at least half of the tasks", a difference no seed-to-seed spread of a few
# tasks in 30 can produce)
GAP = 0.5
# "BC does not generalize": its success at the unseen counts at most this share of its own
# success at the largest training count (not the mean, which the trivial one-object case
# inflates; sized on seeds 0-4)
BC_DROP = 0.5


def check_claims(result: NCSResult) -> ClaimReport:
    train, test = result.train_counts, result.test_counts
    arms = result.arms
    counts_ok = min(result.entity_count_accuracy.values())
    levels_ok = counts_ok >= LEVELS and result.cluster_purity >= LEVELS
    rows = [
        Claim(
            "premise: level one finds every object and level two recovers the board's cells",
            f"entity counts right in {fmt(100 * counts_ok, 0)}% of images (worst count); "
            f"cluster purity {fmt(100 * result.cluster_purity, 0)}%",
            f"both >= {LEVELS:.0%}",
            levels_ok,
        )
    ]
    bc_ok = True
    if "bc_pixels" in arms:
        bc_train = result.mean_success("bc_pixels", train)
        bc_ok = bc_train >= BC_SOLVES
        rows.append(
            Claim(
                "premise: flat BC learns the training object counts (mean over them)",
                f"BC success at K={train}: {fmt(bc_train)}",
                f">= {BC_SOLVES:g}",
                bc_ok,
            )
        )
    ent_ok = True
    if "bc_entities" in arms:
        ent_train = result.mean_success("bc_entities", train)
        ent_ok = ent_train >= BC_SOLVES
        rows.append(
            Claim(
                "premise: entity BC learns the training object counts (mean over them)",
                f"entity BC success at K={train}: {fmt(ent_train)}",
                f">= {BC_SOLVES:g}",
                ent_ok,
            )
        )
    if "ncs" in arms:
        ncs_train = result.mean_success("ncs", train)
        ncs_test = result.mean_success("ncs", test)
        rows.append(
            Claim(
                "NCS solves the training object counts",
                f"NCS success at K={train}: {fmt(ncs_train)}",
                f">= {NCS_SOLVES:g}",
                ncs_train >= NCS_SOLVES,
                premise_ok=levels_ok,
            )
        )
        if "bc_pixels" in arms:
            bc_test = result.mean_success("bc_pixels", test)
            rows.append(
                Claim(
                    "NCS generalizes to more objects than seen in training; flat BC does not",
                    f"success at K={test}: NCS {fmt(ncs_test)} vs BC {fmt(bc_test)}",
                    f"NCS >= BC + {GAP:g}",
                    ncs_test >= bc_test + GAP,
                    premise_ok=bc_ok and levels_ok,
                )
            )
            top = [max(train)]
            bc_top = result.mean_success("bc_pixels", top)
            rows.append(
                Claim(
                    "flat BC's success falls at the unseen counts",
                    f"BC success at K={test}: {fmt(bc_test)} vs at K={top}: {fmt(bc_top)}",
                    f"unseen <= {BC_DROP:g} × largest training count",
                    bc_test <= BC_DROP * bc_top,
                    premise_ok=bc_ok,
                )
            )
        if "bc_entities" in arms:
            ent_test = result.mean_success("bc_entities", test)
            ent_train = result.mean_success("bc_entities", train)
            rows.append(
                Claim(
                    "control: a flat policy on the same entities and abstract states (entity "
                    "BC: no graph, no search, no per-entity sharing) does not generalize",
                    f"success at K={test}: NCS {fmt(ncs_test)} vs entity BC {fmt(ent_test)} "
                    f"(entity BC at K={train}: {fmt(ent_train)})",
                    f"NCS >= entity BC + {GAP:g}",
                    ncs_test >= ent_test + GAP,
                    premise_ok=levels_ok and ent_ok,
                )
            )
    invariants = ()
    if "ncs" in arms:
        edges = sum(c > 0 for row in arms["ncs"].edge_counts for c in row)
        status = arms["ncs"].transitions
        invariants = (
            Invariant(
                "every transition in the data moves at most one entity (pick-and-move)",
                f"{status.get('moved', 0)} moved one entity, {status.get('no-op', 0)} no-op, "
                f"{status.get('dropped', 0)} dropped; {edges} graph edges",
                status.get("dropped", 0) == 0,
            ),
        )
    note = (
        "success is judged by the simulator (every block in its goal cell within the oracle's "
        "length + K + slack steps); the BC baselines' step was chosen on held-out episodes"
    )
    return ClaimReport(tuple(rows), note=note, invariants=invariants)
