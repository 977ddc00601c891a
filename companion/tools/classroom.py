"""For instructors: nbgrader courses from the notebooks, and a lab plan per notebook.

``companion notebooks assignment SLUG --course DIR`` writes ``DIR/source/<slug>/<slug>.ipynb``
with nbgrader's cell metadata, ready for ``nbgrader generate_assignment`` and
``nbgrader autograde``:

* a code cell holding ``### BEGIN SOLUTION`` / ``### END SOLUTION`` is a *solution* cell
  (nbgrader replaces the block by ``raise NotImplementedError()`` in the released version);
* the code cell right after it is its *autograded test* (the exercise's check cell), worth
  :data:`POINTS_PER_EXERCISE` points and locked;
* every other cell is *read-only* (nbgrader restores it if a student edits it).

``lab_plan`` estimates a class's time from the notebook itself: reading time of each section
(words at :data:`WORDS_PER_MINUTE`), the stored run time of its code, and
:data:`MINUTES_PER_EXERCISE` per exercise.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from pathlib import Path

import nbformat

from companion.errors import CompanionError
from companion.tools.notebooks import BEGIN_SOLUTION, END_SOLUTION, _write_atomic, notebook_path

POINTS_PER_EXERCISE = 2
WORDS_PER_MINUTE = 100  # technical reading in class, with equations and figures
MINUTES_PER_EXERCISE = 12
NBGRADER_CONFIG = """\
# nbgrader configuration written by `companion notebooks assignment`
c = get_config()  # noqa: F821
c.CourseDirectory.root = __file__.rsplit("/", 1)[0] or "."
c.CourseDirectory.course_id = "companion"
c.ExecutePreprocessor.timeout = 600
c.ExecutePreprocessor.kernel_name = "python3"
"""


def _nbgrader(grade_id: str, *, solution=False, grade=False, locked=False, points=0) -> dict:
    meta = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": locked,
        "schema_version": 3,
        "solution": solution,
        "task": False,
    }
    if grade:
        meta["points"] = points
    return meta


def exercise_cells(nb) -> list[tuple[int, int]]:
    """(solution cell, check cell) index pairs; the check is the next code cell."""
    pairs = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or BEGIN_SOLUTION not in cell.source:
            continue
        if END_SOLUTION not in cell.source:
            raise CompanionError(f"cell {i}: {BEGIN_SOLUTION!r} without {END_SOLUTION!r}")
        check = next(
            (j for j in range(i + 1, len(nb.cells)) if nb.cells[j].cell_type == "code"), None
        )
        if check is None or BEGIN_SOLUTION in nb.cells[check].source:
            raise CompanionError(
                f"cell {i}: an exercise's solution cell must be followed by its check cell"
            )
        pairs.append((i, check))
    return pairs


def assignment_notebook(nb, slug: str, preset: str | None = None):
    """A copy of ``nb`` with nbgrader metadata on every cell (see the module docstring).

    ``preset`` rewrites the parameters cell's ``preset = ...`` line (e.g. ``"smoke"`` for fast
    grading); ``None`` keeps the notebook's default.
    """
    nb = copy.deepcopy(nb)
    pairs = exercise_cells(nb)
    if not pairs:
        raise CompanionError(f"{slug}: no exercise ({BEGIN_SOLUTION!r} ... {END_SOLUTION!r})")
    solutions = {s: n for n, (s, _) in enumerate(pairs, 1)}
    checks = {c: n for n, (_, c) in enumerate(pairs, 1)}
    for i, cell in enumerate(nb.cells):
        if i in solutions:
            meta = _nbgrader(f"{slug}-exercise{solutions[i]}", solution=True)
        elif i in checks:
            meta = _nbgrader(
                f"{slug}-exercise{checks[i]}-check",
                grade=True,
                locked=True,
                points=POINTS_PER_EXERCISE,
            )
        else:
            meta = _nbgrader(f"{slug}-cell{i}", locked=True)
        cell.metadata["nbgrader"] = meta
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        if preset is not None and "parameters" in cell.metadata.get("tags", []):
            source, n = re.subn(r'(?m)^preset\s*=\s*"[^"]*"', f'preset = "{preset}"', cell.source)
            if not n:
                raise CompanionError(f"{slug}: the parameters cell sets no preset")
            cell.source = source
    return nb


def write_course(slugs, course: Path, preset: str | None = None) -> list[Path]:
    """Write ``<course>/source/<slug>/<slug>.ipynb`` per notebook and ``nbgrader_config.py``."""
    course = Path(course)
    written = []
    for slug in slugs:
        path = notebook_path(slug)
        nb = assignment_notebook(nbformat.read(path, as_version=4), slug, preset)
        target = course / "source" / slug / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(nb, target)
        written.append(target)
    config = course / "nbgrader_config.py"
    if not config.exists():
        config.write_text(NBGRADER_CONFIG)
    return written


@dataclasses.dataclass(frozen=True)
class LabPlan:
    slug: str
    sections: tuple[tuple[str, float], ...]  # (heading, minutes)
    exercises: tuple[str, ...]
    points: int

    @property
    def minutes(self) -> float:
        return sum(m for _, m in self.sections)

    def __str__(self) -> str:
        width = max(len(h) for h, _ in self.sections)
        lines = [f"lab plan for {self.slug} (minutes: reading, running, exercises):"]
        lines += [f"  {h.ljust(width)}  {m:4.0f}" for h, m in self.sections]
        lines.append(f"  {'total'.ljust(width)}  {self.minutes:4.0f}")
        lines.append(
            f"exercises ({len(self.exercises)}, {self.points} points with nbgrader): "
            + "; ".join(self.exercises)
        )
        return "\n".join(lines)


def lab_plan(slug: str) -> LabPlan:
    """Minutes per section of the stored notebook, its exercises and their points.

    Reading time per section, :data:`MINUTES_PER_EXERCISE` per exercise, and one line for
    running the whole notebook at its default preset (papermill's stored duration).
    """
    nb = nbformat.read(notebook_path(slug), as_version=4)
    exercise_ids = {s for s, _ in exercise_cells(nb)}
    sections: list[list] = []
    exercises = []
    for i, cell in enumerate(nb.cells):
        heading = re.match(r"#{1,2} (.+)", cell.source) if cell.cell_type == "markdown" else None
        if heading or not sections:
            sections.append([heading.group(1).strip() if heading else "start", 0.0])
        if cell.cell_type == "markdown":
            sections[-1][1] += len(cell.source.split()) / WORDS_PER_MINUTE
            exercises += re.findall(r"(?m)^### (Exercise[^\n]*)", cell.source)
        elif i in exercise_ids:
            sections[-1][1] += MINUTES_PER_EXERCISE
    seconds = nb.metadata.get("papermill", {}).get("duration") or 0.0
    sections.append(["running the code (default preset, stored run)", seconds / 60])
    return LabPlan(
        slug,
        tuple((h, round(m, 1)) for h, m in sections),
        tuple(exercises),
        POINTS_PER_EXERCISE * len(exercise_ids),
    )
