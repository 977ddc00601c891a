"""CI stage times and their projection to the whole catalog (56 notebooks).

    python -m companion.tools.cibudget run STAGE -- COMMAND ...   # run COMMAND, record its seconds
    python -m companion.tools.cibudget report [--papers 56] [--budget-min 45]

``run`` writes ``build/ci/STAGE.s``. ``report`` reads those files and the unit tests' JUnit file
(``build/ci/unit.xml``), splits every stage into a fixed part and a part per notebook, and
projects the total for the catalog: install, lint and the core unit tests are paid once; the
unit tests that name a paper, the smoke runs and nbval grow with the number of notebooks; the
nbgrader flow runs on two notebooks whatever their number.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

TIMES = Path("build/ci")
PER_NOTEBOOK = ("smoke", "nbval", "site")  # stages whose work grows with the notebooks
FIXED = ("setup", "lint", "classroom", "browser")  # paid once, whatever the number of notebooks


def record(stage: str, command: list[str]) -> int:
    """Run ``command``, write its wall seconds to ``build/ci/<stage>.s``, return its status."""
    TIMES.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    status = subprocess.call(command)
    (TIMES / f"{stage}.s").write_text(f"{time.perf_counter() - start:.1f}\n")
    return status


def paper_share_of_unit_tests(junit: Path, slugs: list[str]) -> float:
    """Share of the unit tests' summed time spent in tests that name a paper with a notebook."""
    total = paper = 0.0
    for case in ET.parse(junit).iter("testcase"):
        seconds = float(case.get("time", 0))
        total += seconds
        where = f"{case.get('classname', '')}::{case.get('name', '')}"
        if any(slug in where for slug in slugs):
            paper += seconds
    return paper / total if total else 0.0


def report(papers: int, budget_min: float, times: Path = TIMES) -> tuple[str, float]:
    """The table of stages (measured, fixed, per notebook, projected) and the projected total."""
    from companion.tools.notebooks import all_slugs

    slugs = all_slugs()
    n = len(slugs)
    seconds = {p.stem: float(p.read_text()) for p in sorted(times.glob("*.s"))}
    rows, total_now, total_proj = [], 0.0, 0.0
    for stage in ("setup", "lint", "unit", "smoke", "classroom", "nbval", "site", "browser"):
        if stage not in seconds:
            rows.append((stage, "-", "-", "-", "-"))
            continue
        s = seconds[stage]
        if stage in FIXED:
            fixed, per = s, 0.0
        elif stage in PER_NOTEBOOK:
            fixed, per = 0.0, s / n
        else:  # unit: split by which tests name a paper
            junit = times / "unit.xml"
            share = paper_share_of_unit_tests(junit, slugs) if junit.exists() else 0.5
            fixed, per = s * (1 - share), s * share / n
        projected = fixed + per * papers
        total_now += s
        total_proj += projected
        rows.append((stage, f"{s:.0f}", f"{fixed:.0f}", f"{per:.1f}", f"{projected:.0f}"))
    header = ("stage", "seconds now", "fixed", f"per notebook (of {n})", f"projected for {papers}")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(5)]
    lines = [
        "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
        for r in [header, *rows]
    ]
    lines.insert(1, "-" * len(lines[0]))
    verdict = "within" if total_proj <= budget_min * 60 else "OVER"
    lines.append(
        f"total now {total_now / 60:.1f} min for {n} notebooks; projected for {papers}: "
        f"{total_proj / 60:.1f} min ({verdict} the {budget_min:g} min budget)"
    )
    return "\n".join(lines), total_proj


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m companion.tools.cibudget")
    sub = ap.add_subparsers(dest="action", required=True)
    p = sub.add_parser("run")
    p.add_argument("stage")
    p.add_argument("command", nargs=argparse.REMAINDER)
    p = sub.add_parser("report")
    p.add_argument("--papers", type=int, default=56)
    p.add_argument("--budget-min", type=float, default=45.0)
    args = ap.parse_args(argv)
    if args.action == "run":
        command = args.command[1:] if args.command[:1] == ["--"] else args.command
        return record(args.stage, command)
    text, _ = report(args.papers, args.budget_min)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
