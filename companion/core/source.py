"""``show_source``: notebooks show the package's implementation, never a copy of it."""

from __future__ import annotations

import inspect


def show_source(obj) -> str:
    """Display the source of a function, class or method (highlighted in Jupyter).

    Returns the source text, so a test can check what a notebook shows.
    """
    obj = inspect.unwrap(obj)  # decorated functions (e.g. @torch.no_grad()) show their own code
    text = inspect.getsource(obj)
    where = f"# {inspect.getsourcefile(obj).split('companion/')[-1]}"
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
