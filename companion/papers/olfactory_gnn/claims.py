"""The paper's thesis, measured on a result (never typed in).

``companion claims`` runs one seed per result, so every row is judged at one seed; the margins
were fixed before the held-out seeds 5-9 (see the comments below and the notebook).
"""

from __future__ import annotations

import numpy as np

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.errors import CompanionError
from companion.papers.olfactory_gnn.experiment import OlfactoryResult

# premise: the pairs are learnable and need both sides: the better arm is this far above the
# better of the two one-sided predictors (receptor-only, molecule-only), in test AUPRC
LEARNABLE = 0.15
# premise: the task needs structure: the better graph arm is this far above the control that
# sees the receptor and the whole-molecule descriptors (groups present, carbon count) but not
# where the groups sit
STRUCTURE = 0.05
# claim: injection ahead of endCLS on held-out pairs by at least this much test AUPRC (paired,
# same seed: same data, split and batches; the initial weights differ, since the input
# projection x_proj has another shape and torch draws the layers after it from a shifted stream).
# Sized from the single-seed spread of the paired gain while designing this task (seeds 0-2: sd
# about 0.04): about two sd, so that one seed rarely clears it by chance; the test split holds
# 30% of the pairs to keep the test-sampling part of that spread small.
AHEAD = 0.08
# parameters: the control may not be smaller than the method by more than this share
PARAM_SLACK = 0.05


def _arms(result: OlfactoryResult):
    missing = [a for a in ("inject", "endcls") if a not in result.seeds[0].arms]
    if missing:
        raise CompanionError(
            f"the claims compare inject and endcls; this result has no {missing[0]!r}"
        )


def mean(values) -> float:
    """Mean over seeds, ignoring missing values (None or nan); nan when none is present."""
    v = np.array([np.nan if x is None else x for x in values], dtype=float)
    return float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")


def check_claims(result: OlfactoryResult) -> ClaimReport:
    _arms(result)
    inj, end = result.values("inject"), result.values("endcls")
    rec, mol = result.baseline("receptor_only"), result.baseline("molecule_only")
    best_arm = mean(np.maximum(inj, end))
    best_one_sided = mean(np.maximum(rec, mol))
    n = len(result.seeds)
    seeds = f"{n} seed{'s' if n > 1 else ''}"
    premise = Claim(
        "premise: the response needs receptor and molecule together (learnable, not one-sided)",
        f"best arm {fmt(best_arm, 3)} vs receptor-only {fmt(mean(rec), 3)}, "
        f"molecule-only {fmt(mean(mol), 3)}",
        f"best arm ≥ best one-sided + {LEARNABLE}",
        best_arm >= best_one_sided + LEARNABLE,
    )
    desc = result.baseline("descriptors")
    structure = Claim(
        "premise: the task needs structure (receptor + whole-molecule descriptors fall short)",
        f"best arm {fmt(best_arm, 3)} vs descriptor control {fmt(mean(desc), 3)}",
        f"best arm ≥ descriptor control + {STRUCTURE}",
        best_arm >= mean(desc) + STRUCTURE,
        premise_ok=premise.holds,
    )
    gap = inj - end
    main = Claim(
        f"injection beats endCLS on held-out pairs ({seeds}, test AUPRC)",
        f"inject {fmt(mean(inj), 3)} vs endCLS {fmt(mean(end), 3)} "
        f"(paired gain {fmt(mean(gap), 3)})",
        f"paired gain ≥ {AHEAD}",
        mean(gap) >= AHEAD,
        premise_ok=premise.holds and structure.holds,
    )
    hi, he = (
        result.values("inject", "heldout_receptor_auprc"),
        result.values("endcls", "heldout_receptor_auprc"),
    )
    p_inj = result.seeds[0].arms["inject"].parameters
    p_end = result.seeds[0].arms["endcls"].parameters
    invariants = (
        Invariant(
            "both arms: same steps, batch, data and split (initial weights differ)",
            f"{result.config['steps']} steps of {result.config['batch_size']} pairs",
            True,
        ),
        Invariant(
            "endCLS has at least as many parameters as injection (up to 5%)",
            f"inject {p_inj:,} vs endCLS {p_end:,}",
            p_end >= (1 - PARAM_SLACK) * p_inj,
        ),
    )
    note = (
        f"held-out receptors (never trained on), shown, not counted: inject {fmt(mean(hi), 3)} "
        f"vs endCLS {fmt(mean(he), 3)} AUPRC"
    )
    return ClaimReport((premise, structure, main), note=note, invariants=invariants)
