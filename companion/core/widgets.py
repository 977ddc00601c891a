"""Widgets that leave a static default view in a stored notebook.

``ipywidgets.interact`` draws into an Output widget, whose content lives in widget state that
static viewers (and the stored notebook, which drops that state) do not show. Here the figure is
a plain image output with a display id: headless execution stores the default view, and in a
live kernel the control redraws that same output in place.
"""

from __future__ import annotations

from collections.abc import Callable


def interactive_figure(draw: Callable, control, width: float = 9.0, height: float = 3.0):
    """Display ``control`` and a figure drawn by ``draw(fig, control.value)``, redrawn on change.

    Returns the figure (so a test or the notebook can inspect what was drawn).
    """
    import matplotlib.pyplot as plt
    from IPython.display import display

    from companion.core.plotting import set_theme

    set_theme()
    fig = plt.figure(figsize=(width, height), layout="constrained")

    def render(value) -> None:
        fig.clear()
        draw(fig, value)

    render(control.value)
    plt.close(fig)  # shown through the display handle below, not by the inline backend
    display(control)
    handle = display(fig, display_id=True)

    def on_change(change) -> None:
        render(change["new"])
        handle.update(fig)

    control.observe(on_change, names="value")
    return fig
