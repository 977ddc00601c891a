"""nbgrader courses from the notebooks (`companion notebooks assignment`) and lab plans."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from companion.cli import main
from companion.tools import classroom, notebooks

SLUGS = notebooks.all_slugs()
GRADED = ["sigma_reparam", "unimax"]  # the whole nbgrader flow runs on these two


@pytest.mark.parametrize("slug", SLUGS)
def test_every_notebook_converts_to_an_nbgrader_source(slug):
    nb = classroom.assignment_notebook(
        nbformat.read(notebooks.notebook_path(slug), as_version=4), slug, preset="smoke"
    )
    meta = [c.metadata["nbgrader"] for c in nb.cells]
    solutions = [m for m in meta if m["solution"]]
    graded = [m for m in meta if m["grade"]]
    assert len(solutions) == len(graded) >= 2
    answers = [m for c, m in zip(nb.cells, meta) if c.cell_type == "markdown" and m["grade"]]
    assert all(m["solution"] and not m["locked"] and m["points"] > 0 for m in answers)
    assert len(answers) == sum(classroom.is_answer_key(c) for c in nb.cells)
    checks = [m for m in graded if m not in answers]
    assert all(m["locked"] and m["points"] > 0 for m in checks)
    assert len({m["grade_id"] for m in meta}) == len(meta), "grade ids must be unique"
    for i, cell in enumerate(nb.cells):  # a check cell is the code cell after its solution
        if cell.cell_type == "code" and cell.metadata["nbgrader"]["grade"]:
            before = [c for c in nb.cells[:i] if c.cell_type == "code"][-1]
            assert before.metadata["nbgrader"]["solution"]
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    assert 'preset = "smoke"' in params.source
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


def test_a_solution_without_its_check_cell_is_refused():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1\n### BEGIN SOLUTION\nx = 2\n### END SOLUTION")]
    with pytest.raises(ValueError, match="followed by its check cell"):
        classroom.assignment_notebook(nb, "toy")


def test_lab_plan_counts_sections_exercises_and_points():
    plan = classroom.lab_plan("unimax")
    nb = nbformat.read(notebooks.notebook_path("unimax"), as_version=4)
    n_ex = sum(classroom.BEGIN_SOLUTION in c.source for c in nb.cells if c.cell_type == "code")
    n_keys = sum(classroom.is_answer_key(c) for c in nb.cells)
    assert (
        plan.points == classroom.POINTS_PER_EXERCISE * n_ex + classroom.POINTS_PER_ANSWER * n_keys
    )
    assert len(plan.exercises) == n_ex
    assert plan.minutes >= n_ex * min(classroom.MINUTES_PER_EXERCISE.values())
    assert "total" in str(plan)


def test_assignment_command_needs_a_course(capsys):
    assert main(["notebooks", "assignment", "unimax"]) == 2
    assert "--course" in capsys.readouterr().err


def _nbgrader(course, *args):
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args, "--force"],
        cwd=course,
        # nbgrader runs `alembic` from PATH: the environment's bin folder, as when activated
        env={
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        },
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _score(course, slug, student):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        sub = gb.find_submission_notebook(slug, slug, student)
        return sub.score, sub.max_score


@pytest.mark.notebooks
def test_nbgrader_flow_full_marks_for_solutions_zero_for_the_release(tmp_path):
    course = tmp_path / "course"
    assert (
        main(["notebooks", "assignment", *GRADED, "--course", str(course), "-p", "preset=smoke"])
        == 0
    )
    for slug in GRADED:
        _nbgrader(course, "generate_assignment", slug)
        released = course / "release" / slug / f"{slug}.ipynb"
        assert "### BEGIN SOLUTION" not in released.read_text()
        for student, source in (("teacher", course / "source"), ("newcomer", course / "release")):
            target = course / "submitted" / student / slug
            target.mkdir(parents=True)
            shutil.copy(source / slug / f"{slug}.ipynb", target)
        _nbgrader(course, "autograde", slug)
        score, max_score = _score(course, slug, "teacher")
        assert max_score == classroom.POINTS_PER_EXERCISE * len(
            classroom.exercise_cells(nbformat.read(course / "source" / slug / f"{slug}.ipynb", 4))
        )
        assert score == max_score, f"{slug}: the solutions scored {score}/{max_score}"
        assert _score(course, slug, "newcomer")[0] == 0
        graded = nbformat.read(course / "autograded" / "newcomer" / slug / f"{slug}.ipynb", 4)
        for cell in graded.cells:  # errors only where the student has work to do
            errors = [o for o in cell.get("outputs", []) if o.output_type == "error"]
            meta = cell.metadata["nbgrader"]
            assert not errors or meta["solution"] or meta["grade"], (cell.source, errors)
