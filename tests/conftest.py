"""Fixtures shared by the notebook tests."""

import os
from pathlib import Path

import exercise_planting
import pytest


def _selected_slugs(session, all_slugs: list[str]) -> list[str]:
    """The notebooks whose smoke run a collected test reads (all of them in CI; one with ``-k``)."""
    wanted = {
        item.callspec.params.get("slug")
        for item in session.items
        if "smoke_runs" in getattr(item, "fixturenames", ()) and hasattr(item, "callspec")
    }
    return [s for s in all_slugs if s in wanted]


@pytest.fixture(scope="session")
def smoke_runs(request, tmp_path_factory):
    """Run each selected notebook once at the smoke preset, two at a time, with trivial answers
    planted after each exercise (``tests/exercise_planting.py``; read by
    ``tests/test_exercises.py``); the budget report leaves the planting cells' seconds out of
    each notebook's own time (:func:`companion.tools.notebooks.timing_report`). Only the
    notebooks of the collected tests run, so ``pytest -k SLUG`` executes one notebook, not all."""
    from companion.tools import notebooks

    out = tmp_path_factory.mktemp("smoke")
    params = {"preset": "smoke"}
    runs = notebooks.execute(
        _selected_slugs(request.session, notebooks.all_slugs()),
        params,
        out_dir=out / "instructor",
        jobs=2,
        timeout=300,
        prepare=exercise_planting.prepare,
    )
    report = os.environ.get("COMPANION_BUDGET_REPORT")
    if report:  # the CI prints this table: each notebook's own seconds against the smoke budget
        text, _ = notebooks.timing_report(runs, notebooks.BUDGET_S["smoke"])
        Path(report).write_text(text + "\n")
    return {r.slug: r for r in runs}
