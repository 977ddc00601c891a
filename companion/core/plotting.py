"""One look for every figure: the seaborn "whitegrid" theme, a legible dpi, and small helpers.

The theme is matplotlib's bundled copy of seaborn's style plus seaborn's colour-blind palette,
so a notebook does not pay ~1.4 s to import seaborn (pandas, scipy.stats) just for rcParams.
Papers that draw seaborn plots (heatmaps, KDEs) import seaborn themselves; it is installed.
"""

from __future__ import annotations

import matplotlib

DPI = 100  # legible in the browser; stored notebooks stay small (each file <= 2 MB)
# seaborn's "colorblind" palette
COLORBLIND = [
    "#0173b2",
    "#de8f05",
    "#029e73",
    "#d55e00",
    "#cc78bc",
    "#ca9161",
    "#fbafe4",
    "#949494",
    "#ece133",
    "#56b4e9",
]


def set_theme() -> None:
    """The companion's seaborn theme; call once at the top of a notebook (plots call it too)."""
    import matplotlib.pyplot as plt
    from cycler import cycler

    plt.style.use("seaborn-v0_8-whitegrid")
    matplotlib.rcParams.update(
        {
            "figure.dpi": DPI,
            # log axes label 0.01 ... 100 as plain numbers, not as powers of ten
            "axes.formatter.min_exponent": 3,
            "savefig.dpi": 110,
            "axes.titlesize": "medium",
            "figure.autolayout": False,
            "axes.prop_cycle": cycler(color=COLORBLIND),
        }
    )


def subplots(nrows: int = 1, ncols: int = 1, width: float = 4.0, height: float = 3.0, **kwargs):
    """``plt.subplots`` with the theme applied and a size per panel (inches)."""
    import matplotlib.pyplot as plt

    set_theme()
    kwargs.setdefault("squeeze", False)
    kwargs.setdefault("constrained_layout", True)
    return plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), **kwargs)


def save_figures(figures: dict, folder) -> list:
    """Save ``{name: Figure}`` as ``folder/name.png`` and close the figures; returns the paths."""
    from pathlib import Path

    import matplotlib.pyplot as plt

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, fig in figures.items():
        path = folder / f"{name}.png"
        fig.savefig(path, bbox_inches="tight")
        plt.close(fig)  # batch runs save many figures: pyplot would keep every one open
        paths.append(path)
    return paths
