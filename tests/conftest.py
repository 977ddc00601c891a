"""Fixtures shared by the notebook tests."""

import os
from pathlib import Path

import exercise_planting
import pytest


@pytest.fixture(scope="session")
def smoke_runs(tmp_path_factory):
    """Run every notebook once at the smoke preset, two at a time, with trivial answers planted
    after each exercise (``tests/exercise_planting.py``; read by ``tests/test_exercises.py``)."""
    from companion.tools import notebooks

    out = tmp_path_factory.mktemp("smoke")
    params = {"preset": "smoke"}
    runs = notebooks.execute(
        notebooks.all_slugs(),
        params,
        out_dir=out / "instructor",
        jobs=2,
        timeout=300,
        prepare=exercise_planting.prepare,
    )
    report = os.environ.get("COMPANION_BUDGET_REPORT")
    if report:  # the CI prints this table: durations against the smoke budget
        text, _ = notebooks.budget_report(
            sorted((out / "instructor").glob("*.ipynb")), notebooks.BUDGET_S["smoke"]
        )
        Path(report).write_text(text + "\n")
    return {r.slug: r for r in runs}
