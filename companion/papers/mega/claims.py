"""The paper's thesis, measured on a result (never typed in).

The three arms start from the same seed and see the same batches, so their accuracies are
paired. A comparison holds only by a margin (named constants below), never by a tie. Timing is
measured on whatever machine runs the notebook, often shared: a slope is fitted to medians of
repeats, and the criteria leave room for timing noise.
"""

from __future__ import annotations

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.mega.experiment import MegaResult

LINEAR = 1.4  # "linear": the log-log slope of Mega-chunk's time against length at most 1.4 (the
# EMA's FFT adds a log factor, and a shared machine's timing noise moves a slope by ±0.2)
SLOPE_GAP = 0.4  # full attention's slope at least 0.4 above the chunked one
BEATS = 0.10  # "beats": at least 10 points of test accuracy above the other arm
FFT_TOL = 1e-4  # FFT convolution and recurrence agree to float32 rounding


def check_claims(result: MegaResult) -> ClaimReport:
    arms = result.arms
    chunk, full = result.chunk_slope, result.full_slope
    rows = [
        Claim(
            "Mega-chunk's time grows linearly with length",
            f"log-log slope {fmt(chunk)}",
            f"slope <= {LINEAR:g}",
            chunk <= LINEAR,
        ),
        Claim(
            "full attention grows faster (towards quadratic)",
            f"log-log slope {fmt(full)} vs chunked {fmt(chunk)}",
            f"full >= chunked + {SLOPE_GAP:g}",
            full >= chunk + SLOPE_GAP,
        ),
    ]
    mega = arms.get("mega")
    for other, words in (
        ("transformer", "a softmax transformer of the same size"),
        ("mega_no_ema", "Mega without its EMA"),
    ):
        if mega is None or other not in arms:
            continue
        acc_o = arms[other].test_accuracy
        rows.append(
            Claim(
                f"Mega beats {words} at equal steps",
                f"test accuracy {fmt(mega.test_accuracy)} vs {fmt(acc_o)}",
                f"Mega >= other + {BEATS:g}",
                mega.test_accuracy >= acc_o + BEATS,
            )
        )
    invariants = ()
    if mega is not None:
        invariants = (
            Invariant(
                "the trained EMA by FFT equals its recurrence",
                f"max difference {mega.fft_vs_recurrence:.1e}",
                mega.fft_vs_recurrence <= FFT_TOL,
            ),
        )
    note = ""
    if not all(r.holds for r in rows):
        note = "a row that does not hold: see the notebook for why at this scale"
    return ClaimReport(tuple(rows), note=note, invariants=invariants)
