"""For instructors: nbgrader courses from the notebooks, and a lab plan per notebook.

``companion notebooks assignment SLUG --course DIR`` writes ``DIR/source/<slug>/<slug>.ipynb``
with nbgrader's cell metadata, ready for ``nbgrader generate_assignment`` and
``nbgrader autograde``:

* a code cell holding ``### BEGIN SOLUTION`` / ``### END SOLUTION`` is a *solution* cell
  (nbgrader replaces the block by ``raise NotImplementedError()`` in the released version);
* the code cell right after it is its *autograded test* (the exercise's check cell), worth
  :data:`POINTS_PER_EXERCISE` points and locked;
* an answer-key markdown cell (:func:`is_answer_key`) is a *manually graded answer* worth
  :data:`POINTS_PER_ANSWER` point (the release shows "YOUR ANSWER HERE" in its place);
* every other cell is *read-only* (nbgrader restores it if a student edits it).

``lab_plan`` estimates a class's time from what the notebook shows, never from how fast this
machine ran it (so re-executing a notebook never changes its plan): the words of each section at
:data:`WORDS_PER_MINUTE`, the shown source lines at :data:`SECONDS_PER_SOURCE_LINE`, printed
tables and text at :data:`SECONDS_PER_OUTPUT_LINE`, :data:`MINUTES_PER_FIGURE` per figure, the
nominal run time of the default preset (:data:`companion.tools.notebooks.BUDGET_S`) and
:data:`MINUTES_PER_EXERCISE` by kind of exercise. :func:`set_stated_time` writes the total, rounded
to :data:`ROUND_TO_MINUTES`, into the notebook's "Time for a class" paragraph; a test checks that
every notebook states its plan's time.

Exercises that ask to *explain* (:func:`explain_prompts`) have an answer key: a markdown cell
tagged :data:`ANSWER_KEY_TAG`, in the instructor version only. In the nbgrader source it is a
manually graded answer cell (nbgrader's release replaces its text by "YOUR ANSWER HERE");
:func:`companion.tools.notebooks.student_version` replaces it the same way.
:func:`instructor_guide` writes the instructors' page: per notebook its plan, the settings of
its parameters cell to change in class, and its answer keys.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from pathlib import Path

import nbformat

from companion.errors import CompanionError
from companion.tools.notebooks import (
    ANSWER_KEY_TAG,
    BEGIN_SOLUTION,
    END_SOLUTION,
    _write_atomic,
    notebook_path,
)

POINTS_PER_EXERCISE = 2
POINTS_PER_ANSWER = 1  # a manually graded "explain" answer
# calibrated on a master's student in class (issue 23): dense prose with equations is read at
# 70-80 words a minute, a shown listing at about ten lines a minute
WORDS_PER_MINUTE = 75
SECONDS_PER_SOURCE_LINE = 5
SECONDS_PER_OUTPUT_LINE = 2  # tables and printed text: read, not studied line by line
MINUTES_PER_FIGURE = 0.5
# by kind (the exercise's heading): writing code, a prediction to make and check, a variant or a
# setting to change and rerun; an explain prompt adds MINUTES_PER_EXPLAIN
MINUTES_PER_EXERCISE = {"code": 12, "predict": 8, "variant": 10}
MINUTES_PER_EXPLAIN = 4
ROUND_TO_MINUTES = 5
GENERIC_PARAMETERS = ("preset", "seed", "device")  # every notebook has these
ANSWER_KEY_LEAD = "**Answer key (instructor version only).**"
TIME_PARAGRAPH = re.compile(r"(?m)^\*\*Time for a class[.:]?\*\*:?[^\n]*(?:\n(?!\n)[^\n]*)*")
EXPLAIN = re.compile(r"(?i)\b(?:explain|why)\b|\bone sentence\b")
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


def is_answer_key(cell) -> bool:
    """Whether ``cell`` is an instructor-only answer key (a markdown cell tagged as one)."""
    return cell.cell_type == "markdown" and ANSWER_KEY_TAG in cell.metadata.get("tags", [])


def answer_key_cell(text: str):
    """A new answer-key markdown cell holding ``text`` (the instructor's model answer)."""
    cell = nbformat.v4.new_markdown_cell(f"{ANSWER_KEY_LEAD} {text.strip()}")
    cell.metadata["tags"] = [ANSWER_KEY_TAG]
    return cell


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
        if is_answer_key(cell):
            meta = _nbgrader(
                f"{slug}-cell{i}-answer", solution=True, grade=True, points=POINTS_PER_ANSWER
            )
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
class Exercise:
    """One exercise of a notebook: its heading, kind, whether it asks to explain, its key."""

    title: str
    kind: str  # a key of MINUTES_PER_EXERCISE
    explain: bool
    answer_key: str | None

    @property
    def minutes(self) -> int:
        return MINUTES_PER_EXERCISE[self.kind] + (MINUTES_PER_EXPLAIN if self.explain else 0)


def _exercise_kind(title: str) -> str:
    """``predict``, ``variant`` or ``code``, from an exercise's heading."""
    lower = title.lower()
    if "predict" in lower:
        return "predict"
    if "variant" in lower or "change a setting" in lower:
        return "variant"
    return "code"


def exercises(nb) -> list[Exercise]:
    """The exercises of ``nb`` in order. An exercise's prompt is the text under its
    ``### Exercise`` heading in the same markdown cell, up to the next heading; its answer key is
    the answer-key cell (if any) after it and before the next exercise."""
    found: list[list] = []  # [title, prompt text, answer key text or None]
    for cell in nb.cells:
        if is_answer_key(cell):
            if found:
                found[-1][2] = cell.source.replace(ANSWER_KEY_LEAD, "").strip()
            continue
        if cell.cell_type != "markdown":
            continue
        prompt = None  # the prompt being read in this cell
        for line in cell.source.splitlines():
            heading = re.match(r"#{1,6} (.*)", line)
            if heading and heading.group(1).startswith("Exercise"):
                found.append([heading.group(1).strip(), "", None])
                prompt = found[-1]
            elif heading:
                prompt = None
            elif prompt is not None:
                prompt[1] += line + "\n"
    return [
        Exercise(t, _exercise_kind(t), bool(EXPLAIN.search(t + "\n" + text)), key)
        for t, text, key in found
    ]


def explain_prompts(nb) -> list[Exercise]:
    """The exercises of ``nb`` that ask the student to explain (why, in one sentence)."""
    return [e for e in exercises(nb) if e.explain]


@dataclasses.dataclass(frozen=True)
class LabPlan:
    """A class's time for one notebook, by section, in minutes (see the module docstring)."""

    slug: str
    sections: tuple[tuple[str, float], ...]  # (heading, minutes)
    exercises: tuple[Exercise, ...]
    points: int

    @property
    def minutes(self) -> float:
        return sum(m for _, m in self.sections)

    @property
    def exercise_minutes(self) -> int:
        return sum(e.minutes for e in self.exercises)

    @property
    def stated(self) -> int:
        """The total a notebook states, rounded to :data:`ROUND_TO_MINUTES` (at least one step)."""
        return max(ROUND_TO_MINUTES, ROUND_TO_MINUTES * round(self.minutes / ROUND_TO_MINUTES))

    def __str__(self) -> str:
        width = max(len(h) for h, _ in self.sections)
        lines = [f"lab plan for {self.slug} (minutes: reading, running, exercises):"]
        lines += [f"  {h.ljust(width)}  {m:4.0f}" for h, m in self.sections]
        lines.append(f"  {'total'.ljust(width)}  {self.minutes:4.0f}  (stated: {self.stated})")
        lines.append(
            f"exercises ({len(self.exercises)}, {self.points} points with nbgrader): "
            + "; ".join(f"{e.title} [{e.kind}, {e.minutes} min]" for e in self.exercises)
        )
        return "\n".join(lines)


def _listing_lines(cell) -> tuple[int, int, int]:
    """(shown source lines, other printed lines, figures) in a code cell's stored outputs."""
    source = output = figures = 0
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        if "image/png" in data or "image/svg+xml" in data:
            figures += 1
            continue
        text = out.get("text") if out.output_type == "stream" else data.get("text/plain", "")
        lines = len(str(text or "").splitlines())
        if out.output_type == "display_data" and "show_source(" in cell.source:
            source += lines
        else:
            output += lines
    return source, output, figures


def lab_plan(slug: str, nb=None) -> LabPlan:
    """Minutes per section of the stored notebook (or of ``nb``), its exercises and points.

    Per section: words of the markdown, shown source lines, other printed lines and figures of
    the stored outputs, and the exercises by kind; one line for running the whole notebook at its
    default preset, counted at the preset's nominal budget (not at the stored duration, which
    depends on the machine that executed it). Answer keys are not read in class.
    """
    from companion.tools.notebooks import BUDGET_S

    if nb is None:
        nb = nbformat.read(notebook_path(slug), as_version=4)
    exercise_ids = {s for s, _ in exercise_cells(nb)}
    sections: list[list] = []
    for cell in nb.cells:
        heading = re.match(r"#{1,2} (.+)", cell.source) if cell.cell_type == "markdown" else None
        if heading or not sections:
            sections.append([heading.group(1).strip() if heading else "start", 0.0])
        if is_answer_key(cell):
            continue
        if cell.cell_type == "markdown":
            # the stated time itself is not counted: stating it must not change it
            words = len(TIME_PARAGRAPH.sub("", cell.source).split())
            sections[-1][1] += words / WORDS_PER_MINUTE
        elif cell.cell_type == "code":
            source, output, figures = _listing_lines(cell)
            sections[-1][1] += (
                source * SECONDS_PER_SOURCE_LINE + output * SECONDS_PER_OUTPUT_LINE
            ) / 60 + figures * MINUTES_PER_FIGURE
    listed = exercises(nb)
    sections.append(["exercises", float(sum(e.minutes for e in listed))])
    sections.append(["running the code (default preset, nominal)", BUDGET_S["notebook"] / 60])
    return LabPlan(
        slug,
        tuple((h, round(m, 1)) for h, m in sections),
        tuple(listed),
        POINTS_PER_EXERCISE * len(exercise_ids)
        + POINTS_PER_ANSWER * sum(is_answer_key(c) for c in nb.cells),
    )


_NUMBERS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}


def time_paragraph(plan: LabPlan, scaling_up: bool) -> str:
    """The "Time for a class" paragraph that states ``plan``'s time."""
    n = len(plan.exercises)
    work = f"{plan.stated - plan.exercise_minutes} for reading and running the notebook"
    text = (
        f"**Time for a class.** About {plan.stated} minutes: {work}, {plan.exercise_minutes} "
        f"for the {_NUMBERS.get(n, n)} exercise{'s' if n != 1 else ''} "
        f"(`companion info {plan.slug}` prints the plan)."
    )
    if scaling_up:
        text += " The same code runs at paper scale (see *Scaling up*)."
    return text


def stated_minutes(nb) -> int | None:
    """The minutes a notebook's "Time for a class" paragraph states (None without one)."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            found = TIME_PARAGRAPH.search(cell.source)
            if found:
                minutes = re.search(r"(?i)about (\d+) minutes", found.group(0))
                return int(minutes.group(1)) if minutes else None
    return None


def set_stated_time(nb, slug: str) -> bool:
    """Rewrite the first "Time for a class" paragraph of ``nb`` from :func:`lab_plan` (in place).

    Idempotent; returns whether the text changed. A notebook without the paragraph raises
    :class:`CompanionError`.
    """
    plan = lab_plan(slug, nb)
    scaling_up = any(
        re.search(r"(?m)^#{1,3} .*Scaling up", c.source)
        for c in nb.cells
        if c.cell_type == "markdown"
    )
    for cell in nb.cells:
        if cell.cell_type == "markdown" and TIME_PARAGRAPH.search(cell.source):
            new = TIME_PARAGRAPH.sub(lambda _: time_paragraph(plan, scaling_up), cell.source, 1)
            changed, cell.source = new != cell.source, new
            return changed
    raise CompanionError(f"{slug}: no 'Time for a class' paragraph")


def write_stated_times(slugs, notebook_dir: Path | None = None) -> list[tuple[str, int, int]]:
    """Apply :func:`set_stated_time` to each notebook file (markdown only: no re-execution).

    Returns ``(slug, minutes stated before, minutes stated now)`` per notebook; a notebook whose
    text is already right is not rewritten.
    """
    done = []
    for slug in slugs:
        path = notebook_path(slug, notebook_dir)
        nb = nbformat.read(path, as_version=4)
        before = stated_minutes(nb)
        if set_stated_time(nb, slug):
            _write_atomic(nb, path)
        done.append((slug, before, stated_minutes(nb)))
    return done


def _settings(nb) -> list[str]:
    """The parameters cell's paper-specific settings, as markdown list items
    (``name = value``, then its comment)."""
    cell = next((c for c in nb.cells if "parameters" in c.metadata.get("tags", [])), None)
    if cell is None:
        return []
    items = []
    for line in cell.source.splitlines():
        if not re.match(r"\w+\s*=", line) or line.split("=")[0].strip() in GENERIC_PARAMETERS:
            continue
        code, _, comment = line.partition("#")
        items.append(f"`{code.strip()}`" + (f": {comment.strip()}" if comment.strip() else ""))
    return items


def instructor_guide(slugs, link_notebooks: bool = False) -> str:
    """The instructors' page (markdown): per notebook its lab plan's time, the settings of its
    parameters cell to change in class (all notebooks also take ``preset`` and ``seed``), and the
    answer keys of its explain prompts. ``link_notebooks`` links each heading to
    ``<slug>.ipynb`` (the site's page of the notebook, :mod:`companion.tools.site`)."""
    lines = [
        "# Instructor guide",
        "",
        "Generated by `companion notebooks guide` from the notebooks. Every notebook's parameters"
        ' cell also takes `preset` ("smoke" runs in seconds) and `seed`; change a setting there'
        " and run the notebook again to show its effect. The answer keys appear only in the"
        " instructor version (the committed notebook and nbgrader's source), not in the student"
        " version.",
    ]
    for slug in slugs:
        nb = nbformat.read(notebook_path(slug), as_version=4)
        plan = lab_plan(slug, nb)
        lines += [
            "",
            f"## [{slug}]({slug}.ipynb)" if link_notebooks else f"## {slug}",
            "",
            f"About {plan.stated} minutes; "
            f"{len(plan.exercises)} exercises, {plan.points} points with nbgrader.",
            "",
        ]
        settings = _settings(nb)
        lines.append("Settings to change in class:" if settings else "Settings: preset and seed.")
        lines += [f"- {s}" for s in settings]
        for ex in plan.exercises:
            if ex.answer_key:
                lines += ["", f"**{ex.title}** (answer key): {ex.answer_key}"]
    return "\n".join(lines) + "\n"
