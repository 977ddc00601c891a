"""Execute, normalize, time and strip the paper notebooks (the CLI and CI call this module).

Every notebook is executed with papermill under the kernel name ``python3`` (ipykernel's
spec, which launches the Python that runs this module), in the notebook folder, with progress
bars off (``COMPANION_PROGRESS=0``) so that stored outputs are stable. The executed notebook is
normalized before it is written: outputs, execution counts and the papermill duration stay;
metadata that changes on every run goes.

papermill has no whole-notebook timeout, so budgets are checked after the fact:
:func:`budget_report` compares the duration papermill recorded with :data:`BUDGET_S`, and
:func:`timing_report` splits a run's duration into the notebook's imports, its own cells and the
cells a test added (tagged :data:`PLANTED_TAG`), so that only the notebook's own cells count.

Importing this module takes about 2 s (nbformat and its schema validation): import it lazily.
"""

from __future__ import annotations

import copy
import functools
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import nbformat
import papermill
from papermill.exceptions import PapermillExecutionError

from companion.errors import CompanionError, unknown

NOTEBOOK_DIR = Path(__file__).resolve().parents[2] / "notebooks"
"""Where ``notebooks/<slug>.ipynb`` live: the folder beside the ``companion`` package."""

BUDGET_S = {"notebook": 60.0, "smoke": 10.0}
"""Seconds one whole notebook may take, per preset (DESIGN.md, "Budgets")."""

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}

BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"
STUDENT_LINE = 'raise NotImplementedError("exercise: write your solution here")'
PLANTED_TAG = "planted"  # a cell a test added before execution (tests/exercise_planting.py)
ANSWER_KEY_TAG = "answer-key"  # an instructor-only markdown cell (companion.tools.classroom)
STUDENT_ANSWER = "*Your answer here.*"  # replaces an answer key in the student version


# --- finding notebooks --------------------------------------------------------------------------


def all_slugs(notebook_dir: Path | None = None) -> list[str]:
    """Sorted slugs (file stems) of the notebooks in ``notebook_dir`` (default: the project's)."""
    return sorted(path.stem for path in (notebook_dir or NOTEBOOK_DIR).glob("*.ipynb"))


def notebook_path(slug: str, notebook_dir: Path | None = None) -> Path:
    """The notebook file of ``slug``; an unknown slug raises :class:`CompanionError`."""
    slugs = all_slugs(notebook_dir)
    if slug not in slugs:
        raise unknown("notebook", slug, slugs)
    return (notebook_dir or NOTEBOOK_DIR) / f"{slug}.ipynb"


# --- executing ----------------------------------------------------------------------------------


@dataclass
class Timing:
    """Where the seconds of one execution went, from papermill's per-cell durations.

    ``total`` is papermill's duration of the whole run (kernel start included); ``imports`` the
    notebook's first code cell after its parameters (its imports); ``planted`` the cells tagged
    :data:`PLANTED_TAG` (cells a test added, e.g. the exercise planting). :attr:`own` is what the
    notebook itself costs: the total less the planted cells.
    """

    total: float
    imports: float
    planted: float

    @property
    def own(self) -> float:
        """Seconds of the run less those of the planted cells (the smoke budget reads this)."""
        return self.total - self.planted


def timing(nb) -> Timing | None:
    """The :class:`Timing` of an executed, not yet normalized notebook (normalizing drops the
    per-cell durations); ``None`` if papermill recorded no duration for the whole run."""
    total = _papermill_duration(nb)
    if total is None:
        return None
    imports = planted = 0.0
    seen_imports = False
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        seconds = cell.metadata.get("papermill", {}).get("duration") or 0.0
        tags = cell.metadata.get("tags", [])
        if PLANTED_TAG in tags:
            planted += seconds
        elif not seen_imports and not {"parameters", "injected-parameters"} & set(tags):
            imports, seen_imports = seconds, True
    return Timing(total=total, imports=imports, planted=planted)


@dataclass
class Execution:
    """The outcome of executing one notebook.

    ``output`` is the written notebook (``None`` when nothing was written: an in-place run that
    failed leaves the original untouched). ``error`` is the last line of the error, e.g.
    ``ValueError: boom``. ``timing`` splits ``seconds`` by cells (``None`` if papermill recorded
    no duration).
    """

    slug: str
    status: str  # "ok" or "failed"
    seconds: float
    output: Path | None
    error: str | None
    timing: Timing | None = None


def execute(
    slugs: Iterable[str],
    parameters: dict | None = None,
    out_dir: Path | None = None,
    inplace: bool = False,
    jobs: int = 1,
    timeout: int = 600,
    kernel: str = "python3",
    progress: bool = False,
    notebook_dir: Path | None = None,
    prepare: Callable | None = None,
) -> list[Execution]:
    """Execute notebooks with papermill; one failure does not stop the others.

    Give exactly one destination: ``out_dir`` (write ``<out_dir>/<slug>.ipynb``, also for a
    failed run, so the error can be read there) or ``inplace=True`` (replace the original, only
    if the run succeeded). ``parameters`` are injected after the cell tagged ``parameters``;
    ``timeout`` limits each cell, in seconds. With ``jobs > 1`` that many notebooks run at
    once, and each kernel gets ``OMP_NUM_THREADS = cpu_count // jobs``. ``prepare(nb, slug)``,
    if given, returns the notebook to execute in place of the stored one (a test adds cells
    this way); it needs ``out_dir``, so that a prepared notebook never replaces the original.

    Results come back in the order of ``slugs``.
    """
    directory = Path(notebook_dir or NOTEBOOK_DIR).resolve()
    if (out_dir is None) == (not inplace):
        raise CompanionError("give exactly one of an output folder or in-place execution")
    if jobs < 1:
        raise CompanionError(f"jobs must be at least 1, got {jobs}")
    if prepare is not None and inplace:
        raise CompanionError("a prepared notebook is written to an output folder, not in place")
    if out_dir is not None:
        out_dir = Path(out_dir).resolve()
        _refuse_notebook_dir(out_dir, directory)
    if isinstance(slugs, str):
        slugs = [slugs]
    sources = [notebook_path(slug, directory) for slug in slugs]
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)

    env = {"COMPANION_PROGRESS": "0"}
    # Kernels draw with matplotlib's inline backend: an inherited MPLBACKEND=Agg (set for tests)
    # would make figures print as "<Figure size ...>" text instead of images.
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    if jobs > 1:
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // jobs))
    run_one = functools.partial(
        _execute_one,
        out_dir=out_dir,
        parameters=parameters,
        kernel=kernel,
        timeout=timeout,
        progress=progress,
        prepare=prepare,
    )
    # Kernels inherit the environment and the working directory of this process. Both are set
    # once for the whole batch: papermill's own `cwd` option changes the directory around each
    # run (os.chdir), which races between threads.
    with _environ(env), _working_directory(directory):
        if jobs == 1:
            return [run_one(source) for source in sources]
        with ThreadPoolExecutor(jobs) as pool:  # kernels are subprocesses: threads only wait
            return list(pool.map(run_one, sources))


def _execute_one(
    source: Path,
    out_dir: Path | None,
    parameters: dict | None,
    kernel: str,
    timeout: int,
    progress: bool,
    prepare: Callable | None = None,
) -> Execution:
    """Execute ``source`` into a temporary file, then write it normalized to its destination.

    The destination is ``<out_dir>/<name>`` (written even if the run failed) or, when
    ``out_dir`` is None, ``source`` itself (replaced only if the run succeeded).
    """
    error = None
    with tempfile.TemporaryDirectory() as tmp:
        executed = Path(tmp) / source.name
        start = time.perf_counter()
        try:
            papermill.execute_notebook(
                source if prepare is None else prepare(nbformat.read(source, 4), source.stem),
                executed,
                parameters=parameters,
                kernel_name=kernel,
                execution_timeout=timeout,
                progress_bar=progress,
                log_output=False,
                # outputs are complete when the last cell ends; a graceful shutdown would wait
                # seconds for the interpreter to tear down torch (counted in the duration)
                shutdown_kernel="immediate",
            )
        except Exception as exc:  # any failure is reported, and the other notebooks still run
            error = _error_line(exc)
        wall = time.perf_counter() - start
        nb = nbformat.read(executed, as_version=4) if executed.exists() else None

    seconds = _papermill_duration(nb) if nb is not None else None
    spent = timing(nb) if nb is not None else None  # before normalize drops the cells' times
    output = None
    if nb is not None and (error is None or out_dir is not None):
        output = source if out_dir is None else out_dir / source.name
        _write_atomic(normalize(nb), output)
    return Execution(
        slug=source.stem,
        status="ok" if error is None else "failed",
        seconds=wall if seconds is None else seconds,
        output=output,
        error=error,
        timing=spent,
    )


def _error_line(exc: Exception) -> str:
    """``Name: last line of the message`` for an execution error."""
    if isinstance(exc, PapermillExecutionError):
        name, message = exc.ename, str(exc.evalue)
    else:
        name, message = type(exc).__name__, str(exc)
    lines = [line for line in message.strip().splitlines() if line.strip()]
    return f"{name}: {lines[-1].strip()}" if lines else name


@contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    """Set environment variables (which kernels inherit) for the block, then restore them."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


@contextmanager
def _working_directory(path: Path) -> Iterator[None]:
    """Run the block in ``path``, then return to the previous working directory."""
    previous = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(previous)


def _refuse_notebook_dir(out_dir: Path, notebook_dir: Path) -> None:
    """Writing generated notebooks into the source folder would overwrite the originals."""
    if Path(out_dir).resolve() == Path(notebook_dir).resolve():
        raise CompanionError(f"output folder {out_dir} is the notebook folder; choose another")


def _write_atomic(nb, path: Path) -> None:
    """Write ``nb`` to a temporary file beside ``path``, then rename it over ``path``."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            nbformat.write(nb, handle)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --- normalizing and timing ---------------------------------------------------------------------


def normalize(nb):
    """Make an executed notebook stable to commit; modifies ``nb`` in place and returns it.

    Keeps outputs, execution counts and, of papermill's notebook metadata, ``duration`` and
    ``parameters``. Sets the kernelspec to ``python3``. Drops what changes on every run: the
    per-cell ``papermill`` and ``execution`` metadata, papermill's empty ``tags`` lists, the
    rest of papermill's notebook metadata (times, paths) and the widget state.
    """
    metadata = nb.metadata
    metadata["kernelspec"] = dict(KERNELSPEC)
    metadata.pop("widgets", None)
    if "papermill" in metadata:
        kept = {
            key: metadata.papermill[key]
            for key in ("duration", "parameters")
            if key in metadata.papermill
        }
        metadata["papermill"] = nbformat.from_dict(kept)
    for cell in nb.cells:
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
        if cell.metadata.get("tags") == []:
            del cell.metadata["tags"]
    return nb


def _papermill_duration(nb) -> float | None:
    value = nb.metadata.get("papermill", {}).get("duration")
    return None if value is None else float(value)


def duration(path: Path) -> float | None:
    """Seconds papermill recorded for the last execution of the notebook at ``path``."""
    return _papermill_duration(nbformat.read(path, as_version=4))


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    """Lines of a left-aligned text table with a rule under the header."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths)).rstrip()

    return [line(header), line(["-" * width for width in widths]), *map(line, rows)]


def summary_table(executions: list[Execution]) -> str:
    """A table of slug, status and seconds (and the error, if any failed), then a total line."""
    failed = [e for e in executions if e.status != "ok"]
    header = ["notebook", "status", "seconds"] + (["error"] if failed else [])
    rows = [
        [e.slug, e.status, f"{e.seconds:.1f}"] + ([e.error or ""] if failed else [])
        for e in executions
    ]
    total = sum(e.seconds for e in executions)
    ok = len(executions) - len(failed)
    lines = _table(header, rows) + [f"{ok} ok, {len(failed)} failed, total {total:.1f} s"]
    return "\n".join(lines)


def budget_report(paths: Iterable[Path], budget_s: float) -> tuple[str, list[str]]:
    """Compare each notebook's recorded duration with ``budget_s``.

    Returns the report text and the slugs over budget. A notebook without a recorded
    duration (never executed by papermill) counts as over budget: its time is unknown.
    """
    rows, over = [], []
    for path in paths:
        seconds = duration(Path(path))
        within = seconds is not None and seconds <= budget_s
        if not within:
            over.append(Path(path).stem)
        verdict = "unknown" if seconds is None else ("yes" if within else "NO")
        shown = "-" if seconds is None else f"{seconds:.1f}"
        rows.append([Path(path).stem, shown, f"{budget_s:.1f}", verdict])
    lines = _table(["notebook", "seconds", "budget", "within"], rows)
    lines.append(f"{len(rows) - len(over)}/{len(rows)} within {budget_s:g} s")
    return "\n".join(lines), over


def timing_report(executions: Iterable[Execution], budget_s: float) -> tuple[str, list[str]]:
    """Compare each run's own seconds (:attr:`Timing.own`: the total less the cells a test
    planted) with ``budget_s``, showing the imports, the own cells, the planted cells and the total.

    Returns the report text and the slugs over budget; a run without a timing counts as over.
    """
    rows, over = [], []
    for run in executions:
        t = run.timing
        within = t is not None and t.own <= budget_s
        if not within:
            over.append(run.slug)
        verdict = "unknown" if t is None else ("yes" if within else "NO")
        shown = (
            ["-"] * 4 if t is None else [f"{s:.1f}" for s in (t.imports, t.own, t.planted, t.total)]
        )
        rows.append([run.slug, *shown, f"{budget_s:.1f}", verdict])
    header = ["notebook", "imports", "own cells", "planted", "total", "budget", "within"]
    lines = _table(header, rows)
    lines.append(
        f"{len(rows) - len(over)}/{len(rows)} within {budget_s:g} s of their own cells "
        "(total less the planted cells; imports and kernel start included)"
    )
    return "\n".join(lines), over


CATALOG_MARKERS = ("<!-- catalog:start -->", "<!-- catalog:end -->")


def readme_tables() -> dict[str, str]:
    """The README's generated parts by marker name: the counts at the top, the course's modules
    (:mod:`companion.course`), the catalog, the line on planned papers and the scaling-up table
    (all from the registry, the course and the files)."""
    from companion import registry
    from companion.core.fullscale import scaling_table
    from companion.tools.course import readme_section

    n, ready = len(registry.PAPERS), len(all_slugs())
    summary = "\n".join(
        [
            "| | |",
            "|---|---|",
            f"| papers | {n} (see `companion list`); {ready} notebooks available "
            f"(`sigma_reparam` is the exemplar), {n - ready} planned |",
        ]
    )
    planned = (
        f"The other {n - ready} papers are listed by `companion list` with status `planned`."
        if n > ready
        else "Every paper of the catalog has its notebook (`companion list`)."
    )
    return {
        "summary": summary,
        "course": readme_section(),
        "catalog": catalog_table(),
        "planned": planned,
        "scaling": scaling_table(all_slugs()),
    }


def catalog_table(notebook_dir: Path | None = None) -> str:
    """The README's catalog: every paper with a notebook, its claims over seeds (read from
    ``data/claims/<slug>.json``), whether its effect is visible at notebook scale
    (:func:`companion.core.robustness.effect_visible`) and its stored run time (last, so that the
    README check can leave it out). ``companion catalog --write README.md``
    puts it between :data:`CATALOG_MARKERS`; a test keeps the README in step with the files."""
    from companion import registry
    from companion.core.robustness import catalog_cell, effect_visible

    slugs = set(all_slugs(notebook_dir))
    rows = []
    for paper in registry.PAPERS.values():
        if paper.slug not in slugs:
            continue
        seconds = duration(notebook_path(paper.slug, notebook_dir))
        time = "-" if seconds is None else f"~{max(5, 5 * round(seconds / 5))} s"
        rows.append(
            f"| {paper.number} | [{paper.slug}](notebooks/{paper.slug}.ipynb) | {paper.venue} "
            f"| {paper.track} | {catalog_cell(paper.slug)} "
            f"| {catalog_cell(paper.slug, heldout=True)} | {effect_visible(paper.slug)} | {time} |"
        )
    header = [
        "| # | notebook | venue | track | claims hold at (seeds 0–4) "
        "| held-out seeds 5–9 | effect visible at notebook scale | time, 2 CPU cores |",
        "|---|---|---|---|---|---|---|---|",
    ]
    return "\n".join(header + rows)


# --- student versions ---------------------------------------------------------------------------


def student_version(nb):
    """A copy of ``nb`` with every exercise solution removed.

    In each code cell, the lines from ``### BEGIN SOLUTION`` to ``### END SOLUTION`` (markers
    included) become one ``raise NotImplementedError(...)`` line at the marker's indentation;
    the code around them stays, and the cell's outputs and execution count are cleared. An
    instructor's answer key (a markdown cell tagged :data:`ANSWER_KEY_TAG`, see
    :mod:`companion.tools.classroom`) becomes :data:`STUDENT_ANSWER`. Other cells are untouched.
    A marker without its partner (or a BEGIN inside a solution) raises :class:`CompanionError`
    naming the cell index.
    """
    nb = copy.deepcopy(nb)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown" and ANSWER_KEY_TAG in cell.metadata.get("tags", []):
            cell.source = STUDENT_ANSWER
        if cell.cell_type == "code" and (
            BEGIN_SOLUTION in cell.source or END_SOLUTION in cell.source
        ):
            cell.source = _strip_solutions(cell.source, index)
            cell.outputs = []
            cell.execution_count = None
    return nb


def _strip_solutions(source: str, index: int) -> str:
    """The source of code cell ``index`` with each solution block replaced by the raise line."""
    kept, in_solution = [], False
    for line in source.splitlines():
        if BEGIN_SOLUTION in line:
            if in_solution:
                raise CompanionError(f"cell {index}: {BEGIN_SOLUTION!r} inside a solution")
            in_solution = True
            indent = line[: len(line) - len(line.lstrip())]
            kept.append(indent + STUDENT_LINE)
        elif END_SOLUTION in line:
            if not in_solution:
                raise CompanionError(f"cell {index}: {END_SOLUTION!r} without {BEGIN_SOLUTION!r}")
            in_solution = False
        elif not in_solution:
            kept.append(line)
    if in_solution:
        raise CompanionError(f"cell {index}: {BEGIN_SOLUTION!r} without {END_SOLUTION!r}")
    return "\n".join(kept)


def _names(source: str) -> tuple[set[str], set[str]]:
    """Names a cell binds at its top level (not inside functions) and names it reads anywhere."""
    import ast

    tree = ast.parse(source)
    bound, read = set(), set()

    def visit(node, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if top:
                    bound.add(child.name)
                visit(child, top=False)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)) and top:
                bound.update((a.asname or a.name).split(".")[0] for a in child.names)
            if isinstance(child, ast.Name):
                if isinstance(child.ctx, ast.Load):
                    read.add(child.id)
                elif top:
                    bound.add(child.id)
            visit(child, top)

    visit(tree, top=True)
    return bound, read


def student_gaps(nb) -> list[str]:
    """Where a student would be stuck although they are not at an exercise.

    The student version (:func:`student_version`) differs from ``nb`` only inside solution
    blocks. A name that only a solution block binds is missing in the student version: the
    exercise's own check cell (the code cell right after it) may read it, any later cell may not.
    Returns one line per such read (empty when the student can run every other cell), without
    executing anything.
    """
    student = student_version(nb)
    missing: set[str] = set()
    gaps, after_solution = [], False
    for index, (cell, stripped) in enumerate(zip(nb.cells, student.cells)):
        if cell.cell_type != "code":
            continue
        bound, read = _names(cell.source)
        if BEGIN_SOLUTION in cell.source:
            student_bound, _ = _names(stripped.source)
            missing = (missing - student_bound) | (bound - student_bound)
            after_solution = True
            continue
        if not after_solution:
            for name in sorted((read - bound) & missing):
                gaps.append(f"cell {index} reads {name!r}, which only a solution binds")
        after_solution = False
        missing -= bound
    return gaps


def make_student(
    slugs: Iterable[str], out_dir: Path, notebook_dir: Path | None = None
) -> list[Path]:
    """Write the student version of each notebook to ``<out_dir>/<slug>.ipynb``."""
    directory = notebook_dir or NOTEBOOK_DIR
    _refuse_notebook_dir(out_dir, directory)
    if isinstance(slugs, str):
        slugs = [slugs]
    sources = [notebook_path(slug, directory) for slug in slugs]
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    written = []
    for source in sources:
        try:
            student = student_version(nbformat.read(source, as_version=4))
        except CompanionError as exc:
            raise CompanionError(f"{source.name}: {exc}") from exc
        target = Path(out_dir) / source.name
        _write_atomic(student, target)
        written.append(target)
    return written
