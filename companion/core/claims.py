"""The paper's thesis, measured: rows of (claim, measured, criterion, holds).

A :class:`ClaimReport` is computed by each paper's ``check_claims(result)`` from the numbers in
the result, never typed in. It prints as a table ending with ``claims hold: K/N``.

Every row can fail on the experiment; a comparative row holds only by a margin that the spread
over seeds supports (``companion claims`` measures that spread: :mod:`companion.core.robustness`).
A property that holds by construction (a share that sums to 100 %, an algorithm that respects its
own cap, a bound that holds in exact arithmetic) is an :class:`Invariant`: printed and checked,
never counted in K/N. Measured numbers differ between CPUs, so a notebook's stored claim cell is
compared with its numbers masked (``tests/nbval_sanitize.cfg``): the words, criteria and verdicts
must be the same on every machine.
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class Claim:
    """One row. ``premise_ok=False`` marks a claim whose premise failed on this run (the
    baseline never collapsed, the teacher ranks no better): the row prints
    ``not tested: premise failed`` and does not count as holding, whatever ``holds`` says.
    The premise itself is its own row (its text starts with ``premise:``), so it is counted."""

    claim: str  # in words, as the paper states it
    measured: str  # the measured value(s), already rounded
    criterion: str  # what must be true for the claim to hold at this scale
    holds: bool
    premise_ok: bool = True

    def __post_init__(self) -> None:
        # numpy booleans would not serialize; keep a plain bool
        object.__setattr__(self, "premise_ok", bool(self.premise_ok))
        object.__setattr__(self, "holds", bool(self.holds) and self.premise_ok)

    @property
    def verdict(self) -> str:
        if not self.premise_ok:
            return NOT_TESTED
        return "yes" if self.holds else "no"


NOT_TESTED = "not tested: premise failed"


@dataclasses.dataclass(frozen=True)
class Invariant:
    """A property true by construction, checked on the run but not counted as a claim."""

    statement: str
    measured: str
    holds: bool

    def __post_init__(self) -> None:
        object.__setattr__(self, "holds", bool(self.holds))


@dataclasses.dataclass(frozen=True)
class ClaimReport:
    rows: tuple[Claim, ...]
    note: str = ""  # why a claim may not hold at this scale, or what scale makes it hold
    invariants: tuple[Invariant, ...] = ()

    @property
    def n_hold(self) -> int:
        return sum(row.holds for row in self.rows)

    @property
    def all_hold(self) -> bool:
        return self.n_hold == len(self.rows)

    def __str__(self) -> str:
        header = ("claim", "measured", "criterion", "holds")
        table = [header] + [(r.claim, r.measured, r.criterion, r.verdict) for r in self.rows]
        widths = [max(len(row[i]) for row in table) for i in range(4)]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in table]
        lines.insert(1, "  ".join("-" * w for w in widths))
        if self.invariants:
            lines.append("invariants (true by construction; checked, not counted):")
            lines += [
                f"  {'ok' if inv.holds else 'VIOLATED'}: {inv.statement} ({inv.measured})"
                for inv in self.invariants
            ]
        if self.note:
            lines.append(f"note: {self.note}")
        lines.append(f"claims hold: {self.n_hold}/{len(self.rows)}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": [dataclasses.asdict(r) for r in self.rows],
            "note": self.note,
            "invariants": [dataclasses.asdict(i) for i in self.invariants],
            "n_hold": self.n_hold,
            "n": len(self.rows),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClaimReport:
        return cls(
            tuple(Claim(**row) for row in data["rows"]),
            data.get("note", ""),
            tuple(Invariant(**inv) for inv in data.get("invariants", ())),
        )


def fmt(value: float, digits: int = 2) -> str:
    """Round for display so reruns print the same text."""
    return f"{value:.{digits}f}"
