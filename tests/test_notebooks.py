"""Every notebook: executed at the smoke preset, its student version checked without running
it, audited for the sections DESIGN.md asks for. ``pytest --nbval-lax`` on the stored notebooks
runs separately (see the Makefile's ``test`` target); the budget report reads papermill's
durations. The smoke run (``smoke_runs``, tests/conftest.py) also plants trivial answers in the
exercises, checked by tests/test_exercises.py."""

import ast
import json
from pathlib import Path

import nbformat
import pytest

from companion import registry
from companion.tools import notebooks

SLUGS = notebooks.all_slugs()
pytestmark = pytest.mark.notebooks


def test_every_paper_with_a_notebook_is_in_the_registry():
    assert set(SLUGS) <= set(registry.PAPERS)
    assert SLUGS, "no notebooks found"


@pytest.mark.parametrize("slug", SLUGS)
def test_notebook_runs_at_smoke(smoke_runs, slug):
    run = smoke_runs[slug]
    assert run.status == "ok", run.error
    assert notebooks.duration(run.output) is not None
    nb = json.loads(Path(run.output).read_text())
    images = [
        o for c in nb["cells"] for o in c.get("outputs", []) if "image/png" in o.get("data", {})
    ]
    assert images, "no figure was stored as an image (is MPLBACKEND overriding the inline backend?)"


@pytest.mark.parametrize("slug", SLUGS)
def test_student_version_runs_up_to_each_exercise(slug):
    """Outside its solution blocks the student version is the notebook the smoke run executed,
    so it runs up to the first exercise; each exercise cell still compiles and raises, and no
    later cell needs a name that only a solution binds (checked statically, for every exercise,
    where running the student version would only reach the first)."""
    nb = nbformat.read(notebooks.notebook_path(slug), as_version=4)
    student = notebooks.student_version(nb)
    exercises = [c for c in student.cells if notebooks.STUDENT_LINE in c.source]
    assert len(exercises) >= 2
    for cell in exercises:
        ast.parse(cell.source)
    assert notebooks.student_gaps(nb) == []


@pytest.mark.parametrize("slug", SLUGS)
def test_stored_notebook_has_every_section(slug):
    path = notebooks.notebook_path(slug)
    assert path.stat().st_size < 2_000_000
    nb = json.loads(path.read_text())
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    text = "\n".join("".join(c["source"]) for c in nb["cells"])
    assert any("parameters" in c["metadata"].get("tags", []) for c in code)
    assert all(c.get("execution_count") for c in code), "run it with the execute command"
    assert not any(o["output_type"] == "error" for c in code for o in c["outputs"])
    assert "# NBVAL_CHECK_OUTPUT" in text and "check_claims" in text
    assert text.count("### BEGIN SOLUTION") >= 2
    assert "show_source(" in text and "ipywidgets" in text
    assert f'robustness_table("{slug}")' in text, "print the claims over seeds after the claim cell"
    for heading in ("Scaling up", "References"):
        assert heading in text
    markdown = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]
    top, bottom = "\n".join(markdown[:4]).lower(), "\n".join(markdown[-4:]).lower()
    for words in ("what you will learn", "know first", "time"):  # DESIGN.md, section 1
        assert words in top, f"the top of the notebook says nothing of {words!r}"
    for words in ("what to remember", "related notebooks"):  # DESIGN.md, section 10
        assert words in bottom, f"the end of the notebook has no {words!r}"
    claims = next(c for c in code if "NBVAL_CHECK_OUTPUT" in "".join(c["source"]))
    printed = "".join("".join(o.get("text", [])) for o in claims["outputs"])
    assert "claims hold:" in printed
    assert notebooks.duration(path) is not None
