"""Plant trivial answers in every exercise and record whether its check still passes.

Used by ``tests/test_exercises.py`` through the smoke run (``tests/conftest.py``): :func:`prepare`
adds cells to a notebook before it is executed at the smoke preset. After each exercise's
solution and check ran normally, an added cell calls :func:`plant` in the kernel: for every name
that the solution block assigns and the check reads, it binds a trivial answer (``None``, zeros of
the true value's shape, a constant, a function returning ``None`` or zeros, another of the
solution's numbers, a library function the notebook showed with ``show_source``), runs the
solution cell's code after its block (which derives what the check reads) and the check cell's
source, and records whether they raised. Then it restores the true answers and every name the
check bound, and the random states, so the rest of the notebook runs as without it.

The kernel imports this module with ``tests/`` on its path; only :func:`prepare` needs nbformat.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import io
import json
import random
import sys
import time
from pathlib import Path

MARKER = "PLANTED-ANSWERS "
"""Prefix of the line each planting cell prints: the rest is JSON."""

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


# --- before execution: which names to plant, and the added cells -------------------------------


def solution_names(solution: str, check: str) -> list[str]:
    """Names bound by a top-level statement of ``solution`` that overlaps a solution block
        (a ``def`` whose body holds the block counts by its name) and read, not bound, by ``check``
    or read by the solution cell's code after its last block."""
    lines = solution.splitlines()
    begins = [i for i, line in enumerate(lines, 1) if BEGIN in line]
    ends = [i for i, line in enumerate(lines, 1) if END in line]
    bound = []
    for stmt in ast.parse(solution).body:
        if not any(stmt.end_lineno >= b and stmt.lineno <= e for b, e in zip(begins, ends)):
            continue
        if isinstance(stmt, ast.FunctionDef | ast.ClassDef):
            bound.append(stmt.name)
        else:
            stored = [n for n in ast.walk(stmt) if isinstance(n, ast.Name)]
            bound += [n.id for n in stored if isinstance(n.ctx, ast.Store)]
    nodes = list(ast.walk(ast.parse(check)))
    names = [n for n in nodes if isinstance(n, ast.Name)]
    rebound = {n.id for n in names if isinstance(n.ctx, ast.Store)}  # the check's own variables
    rebound |= {n.arg for n in nodes if isinstance(n, ast.arg)}  # and its functions' parameters
    read = {n.id for n in names} - rebound
    tail = [n for n in ast.walk(ast.parse(solution_tail(solution))) if isinstance(n, ast.Name)]
    read |= {n.id for n in tail} - {n.id for n in tail if isinstance(n.ctx, ast.Store)}
    return [name for name in dict.fromkeys(bound) if name in read]


def solution_tail(solution: str) -> str:
    """The top-level statements of the solution cell after its last solution block (code that
    derives, from the answer, what the check reads); planting runs them again."""
    lines = solution.splitlines()
    end = max(i for i, line in enumerate(lines, 1) if END in line)
    after = [stmt.lineno for stmt in ast.parse(solution).body if stmt.lineno > end]
    return "\n".join(lines[after[0] - 1 :]) if after else ""


def shown_functions(sources: list[str]) -> list[str]:
    """The expressions passed to ``show_source(...)`` in these cell sources, in order."""
    shown = []
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:  # an IPython magic: nothing shown there
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "show_source":
                shown += [ast.unparse(arg) for arg in node.args[:1]]
    return list(dict.fromkeys(shown))


def prepare(nb, slug: str):
    """A copy of ``nb`` with a planting cell after each exercise's check cell (all added cells
    are tagged :data:`companion.tools.notebooks.PLANTED_TAG`, so the budget leaves them out)."""
    import copy

    import nbformat

    from companion.tools.classroom import exercise_cells
    from companion.tools.notebooks import PLANTED_TAG

    nb = copy.deepcopy(nb)
    pairs = exercise_cells(nb)
    added = []
    for k, (s, c) in enumerate(pairs, 1):
        solution, check = nb.cells[s].source, nb.cells[c].source
        before = [cell.source for cell in nb.cells[:s] if cell.cell_type == "code"]
        call = (
            f"_planting.plant(globals(), exercise={k}, names={solution_names(solution, check)!r}, "
            f"check={check!r}, shown={shown_functions(before)!r}, tail={solution_tail(solution)!r})"
        )
        added.append((c + 1, nbformat.v4.new_code_cell(call, metadata={"tags": [PLANTED_TAG]})))
    for index, cell in reversed(added):
        nb.cells.insert(index, cell)
    tests = str(Path(__file__).resolve().parent)
    setup = f"import sys\nsys.path.insert(0, {tests!r})\nimport exercise_planting as _planting"
    nb.cells.insert(0, nbformat.v4.new_code_cell(setup, metadata={"tags": [PLANTED_TAG]}))
    return nb


def reports(nb) -> list[dict]:
    """The planting reports printed in an executed notebook (as JSON-loaded dicts)."""
    found = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            text = out.get("text", "")
            text = "".join(text) if isinstance(text, list) else text
            lines = [line for line in text.splitlines() if line.startswith(MARKER)]
            found += [json.loads(line[len(MARKER) :]) for line in lines]
    return found


# --- in the kernel: planting -------------------------------------------------------------------


def _is_number(value) -> bool:
    """A Python int or float, not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _zeros(value):
    """Zeros shaped like ``value`` (tensor, array, number, or a list/tuple/dict of them), else
    ``NotImplemented``."""
    import numpy as np
    import torch

    if isinstance(value, torch.Tensor):
        return torch.zeros_like(value)
    if isinstance(value, np.ndarray):
        return np.zeros_like(value)
    if isinstance(value, np.generic) and not isinstance(value, np.bool_):
        return type(value)(0)
    if _is_number(value):
        return type(value)(0)
    if isinstance(value, list | tuple) and value:
        parts = [_zeros(v) for v in value]
        return NotImplemented if NotImplemented in parts else type(value)(parts)
    if isinstance(value, dict) and value:
        parts = {key: _zeros(v) for key, v in value.items()}
        return NotImplemented if NotImplemented in parts.values() else parts
    return NotImplemented


class NotApplicable(Exception):
    """A planted function cannot make its trivial answer (zeros of a result that has none)."""


def _zeros_or_refuse(value):
    """Zeros shaped like ``value``; raises :class:`NotApplicable` where it has none (a function
    that works in place and returns ``None``), so that variant never counts as passing."""
    zeros = _zeros(value)
    if zeros is NotImplemented:
        raise NotApplicable(type(value).__name__)
    return zeros


def _constant(value):
    """A constant of ``value``'s kind: 0.5 (1 for integers), the other boolean, an empty
    string; ``NotImplemented`` for anything else."""
    import numpy as np
    import torch

    if isinstance(value, bool | np.bool_):
        return not value
    if isinstance(value, torch.Tensor):
        return torch.full_like(value, 1 if not value.is_floating_point() else 0.5)
    if isinstance(value, np.ndarray):
        return np.full_like(value, 1 if value.dtype.kind in "iub" else 0.5)
    if _is_number(value) or isinstance(value, np.generic):
        return 1 if isinstance(value, int | np.integer) else 0.5
    if isinstance(value, list | tuple) and value and all(_is_number(v) for v in value):
        return type(value)(0.5 for _ in value)
    if isinstance(value, str):
        return ""
    return NotImplemented


def _stub(function):
    """A function with ``function``'s signature that does nothing and returns ``None``."""

    def planted(*args, **kwargs):
        return None

    planted.__signature__ = inspect.signature(function)
    return planted


def _returning(function, make):
    """A function with ``function``'s signature whose result is ``make(true result)``."""

    def planted(*args, **kwargs):
        return make(function(*args, **kwargs))

    planted.__signature__ = inspect.signature(function)
    return planted


def _same(a, b) -> bool:
    """Whether a planted value equals the true one (then planting it proves nothing)."""
    import numpy as np
    import torch

    try:
        if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
            return bool(torch.equal(torch.as_tensor(a), torch.as_tensor(b)))
        return bool(np.all(np.asarray(a == b)))
    except Exception:
        return False


def variants(name: str, true: dict, ns: dict, shown: list[str]):
    """``(kind, value)`` pairs: the trivial answers to plant for ``name``."""
    value = true[name]
    yield "None", None
    if inspect.isfunction(value):
        yield "returns None", _stub(value)
        yield "returns zeros", _returning(value, _zeros_or_refuse)
        for expr in shown:
            try:
                library = eval(expr, ns)  # noqa: S307 - an expression the notebook itself printed
            except Exception:
                continue
            if callable(library) and library is not value:
                yield f"shown {expr}", library
        return
    for kind, make in (("zeros", _zeros), ("constant", _constant)):
        planted = make(value)
        if planted is not NotImplemented and not _same(planted, value):
            yield kind, planted
    if _is_number(value):  # a prediction copied from a number the solution also computed
        for other, copied in true.items():
            if other != name and _is_number(copied) and not _same(copied, value):
                yield f"copy of {other}", copied


def plant(
    ns: dict, exercise: int, names: list[str], check: str, shown: list[str], tail: str = ""
) -> list[dict]:
    """Run ``tail`` (the solution cell's code after its block), then ``check``, with each
    trivial answer bound in ``ns``; print and return the results.

    Each result is ``{"name", "kind", "passed"}``; ``passed`` means the check raised nothing.
    The printed report also holds the seconds the planting took.
    ``ns`` (the kernel's globals) and the random states are restored afterwards.
    """
    import numpy as np
    import torch

    start = time.perf_counter()
    saved = dict(ns)
    states = torch.get_rng_state(), np.random.get_state(), random.getstate()
    true = {name: ns[name] for name in names if name in ns}
    code = compile(tail + "\n" + check, f"<exercise {exercise} check>", "exec")
    results = []
    try:
        for name in true:
            for kind, value in variants(name, true, ns, shown):
                ns[name] = value
                try:
                    with contextlib.redirect_stdout(io.StringIO()):
                        exec(code, ns)  # noqa: S102 - the notebook's own check cell
                    passed = True
                except Exception:
                    passed = False
                finally:
                    ns.clear()
                    ns.update(saved)
                results.append({"name": name, "kind": kind, "passed": passed})
    finally:
        ns.clear()
        ns.update(saved)
        torch.set_rng_state(states[0])
        np.random.set_state(states[1])
        random.setstate(states[2])
    seconds = round(time.perf_counter() - start, 2)
    report = {"exercise": exercise, "names": list(true), "results": results, "seconds": seconds}
    sys.stdout.write(MARKER + json.dumps(report) + "\n")
    return results
