"""``show_source``: notebooks show the package's implementation, never a copy of it."""

from __future__ import annotations

import inspect

MAX_LINES = 64  # a listing longer than this is shown in parts (``start`` / ``stop``)


def source_part(text: str, start: str | None = None, stop: str | None = None) -> str:
    """The lines of ``text`` from the first line containing ``start`` (default: the first line)
    up to, not including, the first later line containing ``stop`` (default: to the end).

    A marker that is not found raises :class:`ValueError`, so a listing cannot silently change
    when the code it shows is edited.
    """
    lines = text.splitlines(keepends=True)
    first = 0
    if start is not None:
        first = next((i for i, line in enumerate(lines) if start in line), None)
        if first is None:
            raise ValueError(f"show_source: no line contains start={start!r}")
    last = len(lines)
    if stop is not None:
        last = next((i for i in range(first + 1, len(lines)) if stop in lines[i]), None)
        if last is None:
            raise ValueError(f"show_source: no line after start contains stop={stop!r}")
    return "".join(lines[first:last])


def show_source(obj, start: str | None = None, stop: str | None = None) -> str:
    """Display the source of a function, class or method (highlighted in Jupyter).

    ``start`` / ``stop`` show one part of a long listing (see :func:`source_part`), so that each
    part can sit under the equation it implements. Returns the shown text, so a test can check
    what a notebook shows.
    """
    obj = inspect.unwrap(obj)  # decorated functions (e.g. @torch.no_grad()) show their own code
    text = source_part(inspect.getsource(obj), start, stop)
    where = f"# {inspect.getsourcefile(obj).split('companion/')[-1]}"
    if start is not None or stop is not None:
        where += f" ({obj.__qualname__}, part)"
    try:
        from IPython import get_ipython
        from IPython.display import Code, display

        if get_ipython() is not None:
            display(Code(f"{where}\n{text}", language="python"))
            return text
    except ImportError:
        pass
    print(where)
    print(text)
    return text
