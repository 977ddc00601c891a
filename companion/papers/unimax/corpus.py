"""Per-language corpus sizes: a fit to the paper's own figures, or real counts from a file.

The paper gives these numbers (Chung et al., 2023, abstract and Section 1):

* the refreshed mC4 corpus: 29 trillion characters across 107 languages;
* in mC4 (Xue et al., 2021) English has roughly 9.7 trillion characters, over 92,000 times the
  lowest-resource language, Yoruba.

Its per-language table is not shipped here, so by default we *fit* sizes to those numbers: a
Zipf–Mandelbrot curve over the rank r = 1 … L of a language,

    c_r = c_1 · ((1 + q) / (r + q))^s,

with c_1 = 9.7T (the head), c_1 / c_L = 92,000 (head to tail) and Σ_r c_r = 29T over L = 107
languages: two equations fix s and q. This mixes mC4's head and tail with the refresh's total and
language count, an assumption the notebook states. For real counts, write a CSV with a header
``language,characters`` (or a JSON object ``{"en": 9.7e12, ...}``) and pass its path as
``counts_path``.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
from scipy.optimize import brentq

from companion.errors import CompanionError

#: Numbers from the paper, with where they come from.
PAPER_FACTS = {
    "languages": (107, "mC4 refresh, abstract"),
    "total_characters": (29e12, "mC4 refresh, abstract"),
    "head_characters": (9.7e12, "English in mC4, Section 1"),
    "head_to_tail": (92_000, "English vs Yoruba in mC4, Section 1"),
}


def zipf_mandelbrot(
    languages: int, total: float, head: float, head_to_tail: float
) -> tuple[np.ndarray, float, float]:
    """Sizes c_1 ≥ … ≥ c_L of the Zipf–Mandelbrot curve through the given numbers, and (s, q).

    c_1 = ``head``, c_1/c_L = ``head_to_tail``, Σ c = ``total``. A solution exists when the total
    lies between a pure power law's (q = 0) and a geometric profile's (q → ∞) with that ratio.
    """
    if languages < 2 or head <= 0 or head_to_tail <= 1 or total <= head:
        raise CompanionError(
            f"need languages >= 2, head > 0, head_to_tail > 1 and total > head; got "
            f"languages={languages}, head={head:g}, head_to_tail={head_to_tail:g}, total={total:g}"
        )
    ranks = np.arange(1, languages + 1, dtype=np.float64)

    def sizes(q: float) -> tuple[np.ndarray, float]:
        s = math.log(head_to_tail) / math.log((languages + q) / (1 + q))  # fixes c_1/c_L
        return head * ((1 + q) / (ranks + q)) ** s, s

    def excess(q: float) -> float:
        return sizes(q)[0].sum() - total

    lo, hi = 0.0, 1e6
    if not excess(lo) <= 0 <= excess(hi):
        raise CompanionError(
            f"no Zipf–Mandelbrot curve has head {head:g}, head/tail {head_to_tail:g} and total "
            f"{total:g} over {languages} languages: totals from {excess(lo) + total:.4g} to "
            f"{excess(hi) + total:.4g} are possible"
        )
    q = brentq(excess, lo, hi, xtol=1e-12, rtol=1e-14)
    counts, s = sizes(q)
    return counts, s, q


def paper_fit() -> tuple[list[str], np.ndarray]:
    """(names, sizes in characters) of the fit to the paper's numbers; names are ranks."""
    counts, _, _ = zipf_mandelbrot(
        PAPER_FACTS["languages"][0],
        PAPER_FACTS["total_characters"][0],
        PAPER_FACTS["head_characters"][0],
        PAPER_FACTS["head_to_tail"][0],
    )
    return [f"rank {r}" for r in range(1, len(counts) + 1)], counts


def load_counts(path: str | Path) -> tuple[list[str], np.ndarray]:
    """(names, sizes) from a CSV ``language,characters`` or a JSON ``{name: size}``."""
    path = Path(path)
    if not path.exists():
        raise CompanionError(f"counts file {str(path)!r} does not exist")
    if path.suffix.lower() == ".json":
        data = json.loads(path.read_text())
        if not isinstance(data, dict):
            raise CompanionError(f"{path}: expected a JSON object {{language: characters}}")
        pairs = list(data.items())
    else:
        with path.open(newline="") as f:
            rows = list(csv.DictReader(f))
        if not rows or not {"language", "characters"} <= set(rows[0]):
            raise CompanionError(f"{path}: expected a CSV with header 'language,characters'")
        pairs = [(r["language"], r["characters"]) for r in rows]
    try:
        sizes = np.array([float(v) for _, v in pairs])
    except ValueError as err:
        raise CompanionError(f"{path}: a character count is not a number ({err})") from None
    if len(sizes) < 2 or np.any(~np.isfinite(sizes)) or np.any(sizes <= 0):
        raise CompanionError(f"{path}: need at least 2 languages with positive counts")
    order = np.argsort(-sizes, kind="stable")  # largest first, like the fit
    return [str(pairs[i][0]) for i in order], sizes[order]


def geometric_sizes(languages: int, largest: int, smallest: int) -> np.ndarray:
    """Integer corpus sizes falling geometrically from ``largest`` to ``smallest`` (the toy)."""
    return np.round(np.geomspace(largest, smallest, languages)).astype(np.int64)
