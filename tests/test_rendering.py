"""What a reader sees in the stored notebooks (issue 23): listings shown once and in parts no
longer than ``core.source.MAX_LINES``, markdown free of control characters, the time a class
needs stated as ``lab_plan`` computes it, and an answer key for every explain prompt that only
the instructor version holds."""

import ast
import copy

import nbformat
import pytest

from companion.core.source import MAX_LINES, show_source, source_part
from companion.tools import classroom, notebooks

SLUGS = notebooks.all_slugs()


def _read(slug):
    return nbformat.read(notebooks.notebook_path(slug), as_version=4)


def listings(nb) -> list[str]:
    """The stored outputs of ``show_source`` (one text per displayed listing)."""
    return [
        out.data["text/plain"]
        for cell in nb.cells
        if cell.cell_type == "code" and "show_source(" in cell.source
        for out in cell.get("outputs", [])
        if out.output_type == "display_data" and "text/plain" in out.get("data", {})
    ]


def repeated_listings(nb) -> list[int]:
    """Cells whose result repeats a listing they displayed as a string (a missing ``;``)."""
    bad = []
    for index, cell in enumerate(nb.cells):
        shown = listings(nbformat.v4.new_notebook(cells=[cell])) if cell.cell_type == "code" else []
        for out in cell.get("outputs", []) if shown else []:
            if out.output_type != "execute_result":
                continue
            try:
                value = ast.literal_eval(out.data.get("text/plain", ""))
            except (ValueError, SyntaxError):
                continue
            if isinstance(value, str) and any(value.strip() in text for text in shown):
                bad.append(index)
    return bad


def control_characters(nb) -> list[tuple[int, str]]:
    """(cell, character) for each control character (other than a newline) in the markdown."""
    return [
        (index, repr(char))
        for index, cell in enumerate(nb.cells)
        if cell.cell_type == "markdown"
        for char in sorted(set(cell.source))
        if ord(char) < 32 and char != "\n"
    ]


def _listing_cell(text: str, result: str | None = None):
    """A code cell as Jupyter stores ``show_source(f)`` (and its echoed return value)."""
    cell = nbformat.v4.new_code_cell("show_source(f)")
    cell.outputs = [nbformat.v4.new_output("display_data", data={"text/plain": f"# where\n{text}"})]
    if result is not None:
        cell.outputs.append(
            nbformat.v4.new_output("execute_result", data={"text/plain": result}, execution_count=1)
        )
    return cell


def test_the_rendering_checks_catch_what_they_look_for():
    text = "def f():\n    return 1\n"
    echoed = nbformat.v4.new_notebook(cells=[_listing_cell(text, repr(text))])
    assert repeated_listings(echoed) == [0]
    quiet = nbformat.v4.new_notebook(cells=[_listing_cell(text, "3")])
    assert repeated_listings(quiet) == []
    tab = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("$\\alpha$\t$\\beta$")])
    assert control_characters(tab) == [(0, "'\\t'")]


@pytest.mark.parametrize("slug", SLUGS)
def test_no_listing_is_printed_twice_and_markdown_has_no_control_characters(slug):
    nb = _read(slug)
    assert repeated_listings(nb) == [], f"{slug}: end the show_source line with ';'"
    assert control_characters(nb) == []


@pytest.mark.parametrize("slug", SLUGS)
def test_every_stored_listing_is_short(slug):
    long = [len(text.splitlines()) for text in listings(_read(slug))]
    long = [n for n in long if n > MAX_LINES + 1]  # + the line naming the file
    assert not long, f"{slug}: listings of {long} lines; show them in parts (start=/stop=)"


def test_show_source_shows_the_part_between_its_markers(capsys):
    text = "def g(x):\n    a = x\n    b = a + 1\n    return b\n"
    assert source_part(text, "b = a", None) == "    b = a + 1\n    return b\n"
    assert source_part(text, None, "b = a") == "def g(x):\n    a = x\n"
    assert source_part(text, "a = x", "return") == "    a = x\n    b = a + 1\n"
    with pytest.raises(ValueError, match="no line"):
        source_part(text, "not there")
    with pytest.raises(ValueError, match="stop"):
        source_part(text, "return", "def g")  # stop must come after start
    shown = show_source(source_part, start="lines = ", stop="first = 0")
    assert shown.splitlines() == ["    lines = text.splitlines(keepends=True)"]
    assert "(source_part, part)" in capsys.readouterr().out


# --- lab times ---------------------------------------------------------------------------------


def _toy_notebook(words: int, source_lines: int, printed_lines: int, figures: int):
    """One section, one code exercise that asks to explain; its outputs as given."""
    listing = _listing_cell("\n".join(["x = 1"] * (source_lines - 1)))
    printed = nbformat.v4.new_code_cell("print(table)")
    printed.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="row\n" * printed_lines)
    ] + [nbformat.v4.new_output("display_data", data={"image/png": "AA=="})] * figures
    return nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell(
                "# Toy\n\n**Time for a class.** About 5 minutes.\n\n" + "word " * words
            ),
            listing,
            printed,
            nbformat.v4.new_markdown_cell("### Exercise 1: a loss\nWrite it, then explain why."),
            nbformat.v4.new_code_cell("### BEGIN SOLUTION\ny = 2\n### END SOLUTION"),
            nbformat.v4.new_code_cell("check(y == 2)"),
        ]
    )


def test_lab_plan_counts_what_the_notebook_shows_not_how_fast_it_ran():
    nb = _toy_notebook(words=300, source_lines=48, printed_lines=60, figures=2)
    plan = classroom.lab_plan("toy", nb)
    expected = (
        # "# Toy", the words and the exercise's 10 words; not the stated time's paragraph
        (2 + 300 + 10) / classroom.WORDS_PER_MINUTE
        + 48 * classroom.SECONDS_PER_SOURCE_LINE / 60
        + 60 * classroom.SECONDS_PER_OUTPUT_LINE / 60
        + 2 * classroom.MINUTES_PER_FIGURE
        + classroom.MINUTES_PER_EXERCISE["code"]
        + classroom.MINUTES_PER_EXPLAIN
        + notebooks.BUDGET_S["notebook"] / 60
    )
    assert plan.minutes == pytest.approx(expected, abs=0.06)  # sections rounded to 0.1 min
    assert plan.stated % classroom.ROUND_TO_MINUTES == 0
    assert abs(plan.stated - expected) <= classroom.ROUND_TO_MINUTES / 2
    slow = copy.deepcopy(nb)
    slow.metadata["papermill"] = {"duration": 3600.0}  # a slow machine re-executed it
    assert classroom.lab_plan("toy", slow) == plan
    longer = _toy_notebook(words=300, source_lines=48 + 120, printed_lines=60, figures=2)
    added = classroom.lab_plan("toy", longer).minutes - plan.minutes
    assert added == pytest.approx(120 * classroom.SECONDS_PER_SOURCE_LINE / 60, abs=0.2)


def test_set_stated_time_states_the_plan_and_is_idempotent():
    nb = _toy_notebook(words=900, source_lines=10, printed_lines=0, figures=0)
    plan = classroom.lab_plan("toy", nb)
    assert classroom.stated_minutes(nb) == 5
    assert classroom.set_stated_time(nb, "toy")
    assert classroom.stated_minutes(nb) == plan.stated != 5
    first = nb.cells[0].source
    assert classroom.lab_plan("toy", nb) == plan  # stating the time does not change the plan
    assert not classroom.set_stated_time(nb, "toy") and nb.cells[0].source == first
    assert first.startswith("# Toy\n\n**Time for a class.** About") and first.endswith("word ")
    with pytest.raises(ValueError, match="Time for a class"):
        classroom.set_stated_time(nbformat.v4.new_notebook(cells=[]), "toy")


@pytest.mark.parametrize("slug", SLUGS)
def test_each_notebook_states_its_lab_plan_time(slug):
    nb = _read(slug)
    assert classroom.stated_minutes(nb) == classroom.lab_plan(slug, nb).stated, (
        f"{slug}: run `companion notebooks times {slug}`"
    )


# --- answer keys and the instructor guide ------------------------------------------------------


@pytest.mark.parametrize("slug", SLUGS)
def test_every_explain_prompt_has_a_key_only_the_instructor_sees(slug):
    from nbgrader.preprocessors import ClearSolutions

    nb = _read(slug)
    keys = [e.answer_key for e in classroom.explain_prompts(nb)]
    assert all(keys), f"{slug}: an exercise asks to explain and has no answer key"
    student = notebooks.student_version(nb)
    released, _ = ClearSolutions().preprocess(
        classroom.assignment_notebook(nb, slug), {"language": "python"}
    )
    for key in keys:
        assert key not in nbformat.writes(student)
        assert key not in nbformat.writes(released)


def test_an_answer_key_is_a_manually_graded_answer_in_nbgrader():
    from nbgrader.preprocessors import ClearSolutions

    nb = _toy_notebook(words=20, source_lines=2, printed_lines=0, figures=0)
    assert [e.answer_key for e in classroom.explain_prompts(nb)] == [None]
    nb.cells.append(classroom.answer_key_cell("Because the loss is convex."))
    assert [e.answer_key for e in classroom.explain_prompts(nb)] == ["Because the loss is convex."]
    source = classroom.assignment_notebook(nb, "toy")
    meta = source.cells[-1].metadata["nbgrader"]
    assert meta["solution"] and meta["grade"] and not meta["locked"]
    assert meta["points"] == classroom.POINTS_PER_ANSWER
    released, _ = ClearSolutions().preprocess(source, {"language": "python"})
    assert "convex" not in released.cells[-1].source
    assert notebooks.student_version(nb).cells[-1].source == notebooks.STUDENT_ANSWER


def test_the_instructor_guide_lists_each_notebooks_own_settings_and_keys():
    guide = classroom.instructor_guide(SLUGS)
    for slug in SLUGS:
        nb = _read(slug)
        params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
        section = guide.split(f"\n## {slug}\n")[1].split("\n## ")[0]
        for line in params.source.splitlines():
            name = line.split("=")[0].strip()
            if "=" in line and name.isidentifier():
                generic = name in classroom.GENERIC_PARAMETERS
                assert (f"`{name} =" in section) != generic, (slug, name)
        for exercise in classroom.explain_prompts(nb):
            assert exercise.answer_key in section


def test_times_rewrites_only_a_wrong_stated_time_and_guide_writes_the_page(tmp_path):
    from companion.cli import main

    nb = _toy_notebook(words=400, source_lines=10, printed_lines=0, figures=0)
    nbformat.write(nb, tmp_path / "toy.ipynb")
    expected = classroom.lab_plan("toy", nb).stated
    assert classroom.write_stated_times(["toy"], tmp_path) == [("toy", 5, expected)]
    written = (tmp_path / "toy.ipynb").stat().st_mtime_ns
    assert classroom.write_stated_times(["toy"], tmp_path) == [("toy", expected, expected)]
    assert (tmp_path / "toy.ipynb").stat().st_mtime_ns == written  # right already: not rewritten
    assert main(["notebooks", "guide", "sfat", "--out", str(tmp_path / "guide.md")]) == 0
    assert "## sfat" in (tmp_path / "guide.md").read_text()


def test_the_theme_draws_legible_figures_with_plain_log_ticks():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from companion.core import plotting

    fig, axes = plotting.subplots()
    ax = axes[0, 0]
    ax.set_yscale("log")
    ax.set_ylim(0.01, 1000)
    fig.canvas.draw()
    labels = {
        t.get_text().replace("$\\mathdefault{", "").rstrip("}$") for t in ax.get_yticklabels()
    }
    assert {"0.01", "0.1", "1", "10", "100"} <= labels  # 10^3 and beyond: powers of ten
    assert fig.dpi == plotting.DPI >= 100
    plt.close(fig)
