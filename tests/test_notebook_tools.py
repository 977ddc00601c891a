"""Tests of companion.tools.notebooks on two tiny fixture notebooks (tests/fixtures/notebooks).

Two batches execute notebooks (about 4 s each, kernels in parallel); everything else works on
notebook files and objects without a kernel.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from companion.errors import CompanionError
from companion.tools import notebooks
from companion.tools.notebooks import Execution

FIXTURES = Path(__file__).parent / "fixtures" / "notebooks"


def stdout(cell) -> str:
    return "".join(out.get("text", "") for out in cell.outputs if out.output_type == "stream")


def cell_with(nb, text: str):
    return next(cell for cell in nb.cells if text in cell.source)


@pytest.fixture()
def nb_dir(tmp_path) -> Path:
    """A writable copy of the fixture notebooks."""
    return Path(shutil.copytree(FIXTURES, tmp_path / "notebooks"))


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """tiny, failing and the student version of tiny, executed in parallel into an out_dir."""
    root = tmp_path_factory.mktemp("batch")
    source = Path(shutil.copytree(FIXTURES, root / "notebooks"))
    student = notebooks.make_student(["tiny"], root / "student", notebook_dir=source)[0]
    shutil.copy(student, source / "tiny_student.ipynb")
    before = (os.getcwd(), os.environ.get("COMPANION_PROGRESS"))
    executions = notebooks.execute(
        ["tiny", "failing", "tiny_student"],
        {"x": 21},
        out_dir=root / "out",
        jobs=2,
        timeout=60,
        notebook_dir=source,
    )
    assert (os.getcwd(), os.environ.get("COMPANION_PROGRESS")) == before  # both restored
    return source, {execution.slug: execution for execution in executions}


# --- executing ----------------------------------------------------------------------------------


def test_execute_injects_parameters_and_normalizes(batch):
    source, runs = batch
    run = runs["tiny"]
    assert run.status == "ok" and run.error is None
    assert run.output == source.parent / "out" / "tiny.ipynb"
    nb = nbformat.read(run.output, as_version=4)
    assert stdout(cell_with(nb, "print(x * 2)")) == "42\n"
    assert stdout(cell_with(nb, "check passed")) == "check passed\n"
    assert all(cell.execution_count for cell in nb.cells if cell.cell_type == "code")

    assert notebooks.duration(run.output) == pytest.approx(run.seconds) and run.seconds > 0
    assert nb.metadata.kernelspec == {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    assert dict(nb.metadata.papermill) == {"duration": run.seconds, "parameters": {"x": 21}}
    # the cells' times were read before normalizing: nothing planted, the imports took some
    assert run.timing.total == run.seconds and run.timing.planted == 0
    assert 0 < run.timing.imports < run.seconds
    for cell in nb.cells:
        assert "papermill" not in cell.metadata and "execution" not in cell.metadata


def test_kernel_runs_this_python_in_the_notebook_dir_without_progress_bars(batch):
    source, runs = batch
    nb = nbformat.read(runs["tiny"].output, as_version=4)
    report = dict(
        line.split(" ", 1) for line in stdout(cell_with(nb, "sys.prefix")).split("\n") if line
    )
    assert report == {"prefix": sys.prefix, "cwd": str(source.resolve()), "progress": "0"}


def test_failed_notebook_is_reported_and_the_others_still_run(batch):
    _, runs = batch
    assert list(runs) == ["tiny", "failing", "tiny_student"]  # the order of the slugs
    failed = runs["failing"]
    assert failed.status == "failed"
    assert failed.error == "ValueError: boom (x=21)"
    assert failed.output is not None and failed.output.exists()  # kept for reading the error
    assert runs["tiny"].status == "ok"


def test_student_version_fails_when_executed(batch):
    _, runs = batch
    student = runs["tiny_student"]
    assert student.status == "failed"
    assert student.error == "NotImplementedError: exercise: write your solution here"


def test_inplace_replaces_only_successful_notebooks(nb_dir):
    failing_before = (nb_dir / "failing.ipynb").read_bytes()
    runs = notebooks.execute(
        ["tiny", "failing"], {"x": 21}, inplace=True, jobs=2, timeout=60, notebook_dir=nb_dir
    )
    assert [(r.status, r.output) for r in runs] == [("ok", nb_dir / "tiny.ipynb"), ("failed", None)]
    tiny = nbformat.read(nb_dir / "tiny.ipynb", as_version=4)
    assert stdout(cell_with(tiny, "print(x * 2)")) == "42\n"
    assert (nb_dir / "failing.ipynb").read_bytes() == failing_before
    assert sorted(p.name for p in nb_dir.iterdir()) == ["failing.ipynb", "tiny.ipynb"]


# --- bad input ----------------------------------------------------------------------------------


def test_execute_needs_exactly_one_destination(nb_dir, tmp_path):
    with pytest.raises(CompanionError, match="exactly one"):
        notebooks.execute(["tiny"], notebook_dir=nb_dir)
    with pytest.raises(CompanionError, match="exactly one"):
        notebooks.execute(["tiny"], out_dir=tmp_path / "out", inplace=True, notebook_dir=nb_dir)
    with pytest.raises(CompanionError, match="notebook folder"):
        notebooks.execute(["tiny"], out_dir=nb_dir, notebook_dir=nb_dir)
    with pytest.raises(CompanionError, match="jobs"):
        notebooks.execute(["tiny"], inplace=True, jobs=0, notebook_dir=nb_dir)
    with pytest.raises(CompanionError, match="not in place"):  # a prepared notebook is a copy
        notebooks.execute(["tiny"], inplace=True, prepare=lambda nb, slug: nb, notebook_dir=nb_dir)


def test_unknown_slug_names_the_valid_ones(nb_dir, tmp_path):
    message = "unknown notebook 'nope'; valid: failing, tiny"
    with pytest.raises(CompanionError, match=message):
        notebooks.notebook_path("nope", nb_dir)
    with pytest.raises(CompanionError, match=message):
        notebooks.execute(["tiny", "nope"], out_dir=tmp_path / "out", notebook_dir=nb_dir)
    assert not (tmp_path / "out").exists()  # nothing ran


def test_slugs_and_paths(nb_dir):
    assert notebooks.all_slugs(nb_dir) == ["failing", "tiny"]
    assert notebooks.notebook_path("tiny", nb_dir) == nb_dir / "tiny.ipynb"
    assert notebooks.NOTEBOOK_DIR == Path(notebooks.__file__).resolve().parents[2] / "notebooks"


# --- normalizing and reports --------------------------------------------------------------------


def test_normalize_drops_run_noise_and_keeps_outputs():
    cell = new_code_cell(
        "1", execution_count=3, outputs=[{"output_type": "stream", "name": "stdout", "text": "1\n"}]
    )
    cell.metadata.update(
        papermill={"duration": 0.1}, execution={"shell.execute_reply": "t"}, tags=[]
    )
    nb = new_notebook(
        cells=[cell],
        metadata={
            "kernelspec": {"name": "venv", "display_name": "venv"},
            "widgets": {"application/vnd.jupyter.widget-state+json": {}},
            "papermill": {
                "duration": 2.5,
                "parameters": {"seed": 1},
                "start_time": "now",
                "input_path": "/tmp/x.ipynb",
            },
        },
    )
    notebooks.normalize(nb)
    assert nb.metadata == {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "papermill": {"duration": 2.5, "parameters": {"seed": 1}},
    }
    assert nb.cells[0].metadata == {}
    assert nb.cells[0].execution_count == 3 and len(nb.cells[0].outputs) == 1


def test_summary_table():
    runs = [
        Execution("alpha", "ok", 12.34, Path("a.ipynb"), None),
        Execution("b", "failed", 1.0, None, "ValueError: boom"),
    ]
    assert notebooks.summary_table(runs).splitlines() == [
        "notebook  status  seconds  error",
        "--------  ------  -------  ----------------",
        "alpha     ok      12.3",
        "b         failed  1.0      ValueError: boom",
        "1 ok, 1 failed, total 13.3 s",
    ]
    only_ok = notebooks.summary_table(runs[:1]).splitlines()
    assert only_ok[0] == "notebook  status  seconds"
    assert only_ok[-1] == "1 ok, 0 failed, total 12.3 s"


def executed(cells: list[tuple[list[str], float | None]], total: float):
    """A notebook as papermill leaves it: code cells with their tags and durations."""
    nb = new_notebook(metadata={"papermill": {"duration": total}})
    nb.cells.append(new_markdown_cell("# title", metadata={"papermill": {"duration": 9.0}}))
    for tags, seconds in cells:
        metadata = {"tags": tags, "papermill": {"duration": seconds}}
        nb.cells.append(new_code_cell("pass", metadata=metadata))
    return nb


def test_timing_counts_the_imports_cell_and_leaves_planted_cells_out():
    nb = executed(
        [
            ([notebooks.PLANTED_TAG], 0.25),  # the planting setup cell, before the parameters
            (["parameters"], 0.5),
            (["injected-parameters"], 0.75),
            ([], 2.0),  # the imports
            ([], 3.0),
            ([notebooks.PLANTED_TAG], 1.5),
            ([], None),  # not executed (an error above): no duration
        ],
        total=10.0,
    )
    t = notebooks.timing(nb)
    assert (t.total, t.imports, t.planted) == (10.0, 2.0, 1.75)
    assert t.own == 10.0 - 0.25 - 1.5
    assert notebooks.timing(new_notebook()) is None  # papermill never ran it


def test_timing_report_checks_own_seconds_against_the_budget():
    fast = notebooks.Timing(total=12.0, imports=2.5, planted=4.0)  # over 10 s only with planting
    slow = notebooks.Timing(total=11.0, imports=2.0, planted=0.5)
    runs = [
        Execution("fast", "ok", 12.0, None, None, fast),
        Execution("slow", "ok", 11.0, None, None, slow),
        Execution("untimed", "failed", 1.0, None, "boom"),
    ]
    text, over = notebooks.timing_report(runs, notebooks.BUDGET_S["smoke"])
    assert over == ["slow", "untimed"]
    lines = text.splitlines()
    assert lines[0].split() == "notebook imports own cells planted total budget within".split()
    assert lines[2].split() == ["fast", "2.5", "8.0", "4.0", "12.0", "10.0", "yes"]
    assert lines[3].split() == ["slow", "2.0", "10.5", "0.5", "11.0", "10.0", "NO"]
    assert lines[4].split() == ["untimed", "-", "-", "-", "-", "10.0", "unknown"]
    assert lines[5].startswith("1/3 within 10 s of their own cells")


def test_budget_report_lists_slow_and_untimed_notebooks(tmp_path):
    for slug, seconds in [("fast", 3.2), ("slow", 75.0), ("untimed", None)]:
        metadata = {} if seconds is None else {"papermill": {"duration": seconds}}
        nbformat.write(new_notebook(metadata=metadata), tmp_path / f"{slug}.ipynb")
    paths = sorted(tmp_path.glob("*.ipynb"))
    assert notebooks.duration(paths[0]) == 3.2 and notebooks.duration(paths[2]) is None
    text, over = notebooks.budget_report(paths, notebooks.BUDGET_S["notebook"])
    assert over == ["slow", "untimed"]
    assert text.splitlines() == [
        "notebook  seconds  budget  within",
        "--------  -------  ------  -------",
        "fast      3.2      60.0    yes",
        "slow      75.0     60.0    NO",
        "untimed   -        60.0    unknown",
        "1/3 within 60 s",
    ]


# --- student versions ---------------------------------------------------------------------------


def exercise_notebook(solution: str):
    exercise = new_code_cell(
        solution,
        execution_count=4,
        outputs=[{"output_type": "stream", "name": "stdout", "text": "2\n"}],
    )
    return new_notebook(
        cells=[
            new_markdown_cell("### BEGIN SOLUTION in prose"),
            exercise,
            new_code_cell("check(f)", execution_count=5),
        ]
    )


def test_student_version_replaces_each_solution_at_its_indentation():
    nb = exercise_notebook(
        "def f(a):\n    ### BEGIN SOLUTION\n    b = a + 1\n    return b\n"
        "    ### END SOLUTION\n\n\n### BEGIN SOLUTION\ng = f\n"
        "### END SOLUTION\nprint(f(1))"
    )
    student = notebooks.student_version(nb)
    raise_line = 'raise NotImplementedError("exercise: write your solution here")'
    assert student.cells[1].source == (
        f"def f(a):\n    {raise_line}\n\n\n{raise_line}\nprint(f(1))"
    )
    assert student.cells[1].outputs == [] and student.cells[1].execution_count is None
    assert student.cells[0] == nb.cells[0] and student.cells[2] == nb.cells[2]  # untouched
    assert "b = a + 1" in nb.cells[1].source  # the instructor version is not modified


def stuck_notebook(*later: str):
    """Setup, an exercise binding ``answer`` (and ``helper`` outside its solution), its check
    cell, then the ``later`` cells."""
    cells = [
        "import math\nbase = 2",
        "def helper(x):\n    return x + base\n### BEGIN SOLUTION\nanswer = helper(1)\n"
        "table = [answer]\n### END SOLUTION",
        "assert answer == 3, 'answer is the helper at 1'",
        *later,
    ]
    return new_notebook(cells=[new_code_cell(c) for c in cells])


@pytest.mark.parametrize(
    ("later", "gaps"),
    [
        (["print(helper(base), math.pi)"], []),  # bound outside the solution: the student has it
        (["answer = 0", "print(answer)"], []),  # bound again before it is read
        (["def f():\n    return 1\nprint(f())"], []),
        (["print(answer)"], ["cell 3 reads 'answer', which only a solution binds"]),
        (
            ["x = 1", "for row in table:\n    print(row + x)"],
            ["cell 4 reads 'table', which only a solution binds"],
        ),
        (["def g():\n    return answer"], ["cell 3 reads 'answer', which only a solution binds"]),
    ],
)
def test_student_gaps_find_reads_of_names_only_a_solution_binds(later, gaps):
    assert notebooks.student_gaps(stuck_notebook(*later)) == gaps


@pytest.mark.parametrize(
    "source",
    [
        "### BEGIN SOLUTION\nx = 1",
        "x = 1\n### END SOLUTION",
        "### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION",
    ],
)
def test_unmatched_solution_markers_name_the_cell(source):
    with pytest.raises(CompanionError, match="^cell 1: "):
        notebooks.student_version(exercise_notebook(source))


def test_make_student_writes_student_notebooks(nb_dir, tmp_path):
    written = notebooks.make_student(["tiny"], tmp_path / "student", notebook_dir=nb_dir)
    assert written == [tmp_path / "student" / "tiny.ipynb"]
    source = "".join(cell.source for cell in nbformat.read(written[0], as_version=4).cells)
    assert "raise NotImplementedError" in source and "answer = 2 * x" not in source
    with pytest.raises(CompanionError, match="notebook folder"):
        notebooks.make_student(["tiny"], nb_dir, notebook_dir=nb_dir)

    broken = nbformat.read(nb_dir / "tiny.ipynb", as_version=4)
    broken.cells[4].source = "### BEGIN SOLUTION\nanswer = 2 * x"
    nbformat.write(broken, nb_dir / "tiny.ipynb")
    with pytest.raises(CompanionError, match=r"^tiny\.ipynb: cell 4: "):
        notebooks.make_student(["tiny"], tmp_path / "again", notebook_dir=nb_dir)
