"""The paper's thesis, measured on a result (never typed in).

Both searches start from the same weights and α and see the same batches; for the first epoch
λ_t = 0, so they are identical until then. DARTS (λ = 0) is the control: it removes only the
regulariser. A comparison holds only by a margin (a named constant below), never by a tie.

The paper's story has a premise: DARTS collapses toward skip connections. Whether it does in a
small search is itself a measurement (the first row, which counts); when it fails, the rows
about preventing the collapse are printed as "not tested" and never count as holding. The skip
connection is measured alone (not together with pooling): the search space has no pooling.
"""

from __future__ import annotations

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.lambda_darts.experiment import ArmResult, LambdaDartsResult

RISES = 0.02  # premise: DARTS's final skip mass at least 0.02 above its value before the search
ALIGNED = 0.1  # Λ-DARTS: mean Λ over the last third of the epochs at least 0.1 above DARTS's
ALIGNED_VALID = 0.1  # the same on the validation batch's gradients (the ones α follows)
LIGHTER = 0.02  # Λ-DARTS's final skip mass at least 0.02 below DARTS's
COMPETITIVE = 0.01  # "at least as accurate": at most 1 point below DARTS after retraining


def late_alignment(arm: ArmResult, valid: bool = False) -> float:
    """Mean Λ over the last third of the search epochs (λ_t is largest there): of the weight
    step's training-batch gradients (the Λ the regulariser raises), or with ``valid=True`` of
    the architecture step's validation-batch gradients (the cells' votes that move α)."""
    values = arm.alignment_valid if valid else arm.alignment
    k = max(1, arm.epochs // 3)
    return sum(values[-k:]) / k


def cell_pulls(arm: ArmResult) -> list[float]:
    """Each cell's share of the push toward skip, averaged over the epochs after the first."""
    return [sum(c[1:]) / len(c[1:]) for c in arm.skip_pull]


def output_cell_pull(arm: ArmResult) -> float:
    """The last cell's share of the push toward skip, averaged over the epochs after the first."""
    return cell_pulls(arm)[-1]


def skip_edges(arm: ArmResult) -> int:
    """Edges of the derived cell that keep a skip connection."""
    return sum(1 for op, _ in arm.genotype if op == "skip_connect")


def check_claims(result: LambdaDartsResult) -> ClaimReport:
    darts, lam = result.arms["darts"], result.arms["lambda_darts"]
    collapse = darts.skip_mass[-1] >= darts.skip_mass_start + RISES
    rows = (
        Claim(
            "premise: DARTS's skip-connection mass rises during the search (collapse)",
            f"DARTS skip mass {fmt(darts.skip_mass_start, 3)} → {fmt(darts.skip_mass[-1], 3)}",
            f"final ≥ start + {RISES}",
            collapse,
        ),
        Claim(
            "the cell nearest the output pushes α toward skip connections (DARTS, "
            "validation-batch votes)",
            f"last cell's share of the skip push {fmt(output_cell_pull(darts))} "
            f"(first cell's {fmt(cell_pulls(darts)[0])}, "
            f"largest other {fmt(max(cell_pulls(darts)[:-1]))})",
            "the last cell's share is the largest of the cells'",
            output_cell_pull(darts) > max(cell_pulls(darts)[:-1]),
        ),
        Claim(
            "Λ-DARTS raises Λ of the training batch (the quantity its regulariser maximises)",
            f"late Λ_train {fmt(late_alignment(lam))} vs DARTS {fmt(late_alignment(darts))}",
            f"Λ-DARTS ≥ DARTS + {ALIGNED}",
            late_alignment(lam) >= late_alignment(darts) + ALIGNED,
        ),
        Claim(
            "Λ-DARTS aligns the cells' α-gradients (validation batch, the architecture step's)",
            f"late Λ_val {fmt(late_alignment(lam, True))} "
            f"vs DARTS {fmt(late_alignment(darts, True))}",
            f"Λ-DARTS ≥ DARTS + {ALIGNED_VALID}",
            late_alignment(lam, True) >= late_alignment(darts, True) + ALIGNED_VALID,
        ),
        Claim(
            "Λ-DARTS prevents the collapse toward skip connections",
            f"final skip mass {fmt(lam.skip_mass[-1], 3)} vs DARTS {fmt(darts.skip_mass[-1], 3)}",
            f"Λ-DARTS ≤ DARTS − {LIGHTER}",
            lam.skip_mass[-1] <= darts.skip_mass[-1] - LIGHTER,
            premise_ok=collapse,
        ),
        Claim(
            "the derived architecture, retrained, is at least as accurate as DARTS's",
            f"test accuracy {fmt(lam.retrain_accuracy, 3)} "
            f"vs DARTS {fmt(darts.retrain_accuracy, 3)}",
            f"Λ-DARTS ≥ DARTS − {COMPETITIVE}",
            lam.retrain_accuracy >= darts.retrain_accuracy - COMPETITIVE,
        ),
    )
    invariants = (
        Invariant(
            "both searches agree in the first epoch (λ_t = 0 there)",
            f"epoch-1 Λ {fmt(darts.alignment[0], 4)} and {fmt(lam.alignment[0], 4)}",
            abs(darts.alignment[0] - lam.alignment[0]) < 1e-6,
        ),
    )
    note = (
        f"not counted: skip-connection edges of the derived cell {skip_edges(lam)} of "
        f"{len(lam.genotype)} vs DARTS {skip_edges(darts)} of {len(darts.genotype)}"
    )
    return ClaimReport(rows, note=note, invariants=invariants)
