"""The paper's thesis, measured on a result (never typed in)."""

from __future__ import annotations

from companion.core import Claim, ClaimReport, fmt
from companion.papers.repair.experiment import RepairResult

COLLAPSED = 0.75  # collapse: the deepest layer keeps < 75% of its std (< ~56% of its variance)
REPAIRED = 0.05  # repaired: every layer's std within 5% of its target


def check_claims(result: RepairResult) -> ClaimReport:
    loss = {m: result.barrier(m, "test_loss") for m in result.curves}
    acc = {m: 100 * result.barrier(m, "test_acc") for m in result.curves}
    collapse = result.std_ratio["permuted"][result.mid]
    repaired = result.std_ratio["repair"][result.mid]
    rows = (
        Claim(
            "alignment lowers the barrier (test loss)",
            f"naive {fmt(loss['naive'], 3)} vs permuted {fmt(loss['permuted'], 3)}",
            "naive > permuted",
            loss["naive"] > loss["permuted"],
        ),
        Claim(
            "REPAIR lowers it further (test loss)",
            f"permuted {fmt(loss['permuted'], 3)} vs REPAIR {fmt(loss['repair'], 3)}",
            "permuted > REPAIR",
            loss["permuted"] > loss["repair"],
        ),
        Claim(
            "same order for the accuracy barrier",
            f"{fmt(acc['naive'], 1)} > {fmt(acc['permuted'], 1)} > {fmt(acc['repair'], 1)} points",
            "naive > permuted > REPAIR",
            acc["naive"] > acc["permuted"] > acc["repair"],
        ),
        Claim(
            "permuted merge: std collapses with depth",
            f"std ratio {fmt(collapse[0])} ({result.layers[0]}) -> {fmt(collapse[-1])} "
            f"({result.layers[-1]})",
            f"last < first and last < {COLLAPSED}",
            collapse[-1] < collapse[0] and collapse[-1] < COLLAPSED,
        ),
        Claim(
            "REPAIR restores every layer's std",
            f"std ratios {fmt(min(repaired))} .. {fmt(max(repaired))}",
            f"all within 1 ± {REPAIRED}",
            all(abs(r - 1) <= REPAIRED for r in repaired),
        ),
    )
    return ClaimReport(
        rows,
        note=""
        if all(r.holds for r in rows)
        else "at this small scale a seed can miss a claim: try other seeds, more steps, "
        "deeper networks, or the full preset",
    )
