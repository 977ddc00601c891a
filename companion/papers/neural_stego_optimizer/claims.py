"""The paper's thesis, measured on a result (never typed in).

Every error is the bit error after rounding the stego image to 8 bits, of the iterate the sender
keeps (zero error with the best PSNR, else the lowest error). "Equal image quality": a baseline is
compared at the step size of its grid with the lowest error among those whose PSNR is at least
LISO's (:meth:`BaselineResult.matched`), so the baseline never pays for the comparison with a
worse image. A comparison holds only by a margin (the named constants below), never by a tie.
"""

from __future__ import annotations

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.neural_stego_optimizer.experiment import BaselineResult, StegoResult

FEWER_ERRORS = 3.0  # same steps, equal quality: baseline error at least 3× LISO's
STEP_FACTOR = 2  # "fewer steps": the baselines get STEP_FACTOR × T steps ...
FEWER_STEPS = 2.0  # ... and their error must still be at least 2× LISO's after T
ONE_STEP = 3.0  # the one-step encoder's error at least 3× LISO's ...
PSNR_SLACK = 1.0  # ... with LISO's PSNR at most 1 dB below the one-step encoder's
FALLS = 3.0  # LISO's error after T steps at most a third of its error after one step
NAMES = {"gd": "gradient descent", "adam": "Adam"}


def baseline_at(b: BaselineResult, t: int, psnr_floor: float) -> tuple[float, float, float | None]:
    """(error, PSNR, step size) of baseline ``b`` after ``t`` steps at equal quality; when no
    step size reaches ``psnr_floor`` the error is 1 (it cannot be compared at equal quality)."""
    i = b.matched(t, psnr_floor)
    if i is None:
        return 1.0, float("nan"), None
    return b.best_error_curve[i][t - 1], b.best_psnr_curve[i][t - 1], b.lrs[i]


def _pct(x: float) -> str:
    return fmt(100 * x, 2) + "%"


def check_claims(result: StegoResult) -> ClaimReport:
    cfg = result.config
    T = cfg["eval_iters"] or cfg["iters"]
    K = min(STEP_FACTOR * T, cfg["baseline_iters"])
    liso = result.liso
    err, quality = liso.error, liso.psnr
    rows = []
    for name, b in result.baselines.items():
        e, p, lr = baseline_at(b, T, quality)
        rows.append(
            Claim(
                f"lower bit error than {NAMES[name]} on the pixels in the same steps",
                f"LISO {_pct(err)} at {fmt(quality, 1)} dB vs {_pct(e)} at {fmt(p, 1)} dB "
                f"(step size {lr})",
                f"baseline ≥ {FEWER_ERRORS:g}× LISO at PSNR ≥ LISO's",
                e >= FEWER_ERRORS * err,
            )
        )
    if result.baselines:
        best = min(
            (baseline_at(b, K, quality) for b in result.baselines.values()), key=lambda r: r[0]
        )
        rows.append(
            Claim(
                f"fewer steps: LISO after T beats the baselines after {STEP_FACTOR} T",
                f"LISO {_pct(err)} vs the better baseline {_pct(best[0])} at {fmt(best[1], 1)} dB",
                f"baseline ≥ {FEWER_STEPS:g}× LISO at PSNR ≥ LISO's",
                best[0] >= FEWER_STEPS * err,
            )
        )
    if "one_step" in result.arms:
        one = result.arms["one_step"]
        rows.append(
            Claim(
                "iterating beats a one-step encoder",
                f"LISO {_pct(err)} at {fmt(quality, 1)} dB vs one-step {_pct(one.error)} "
                f"at {fmt(one.psnr, 1)} dB",
                f"one-step ≥ {ONE_STEP:g}× LISO, LISO PSNR ≥ one-step − {PSNR_SLACK:g} dB",
                one.error >= ONE_STEP * err and quality >= one.psnr - PSNR_SLACK,
            )
        )
    first = liso.error_curve[0]
    rows.append(
        Claim(
            "LISO's bit error falls as it iterates",
            f"{_pct(first)} after one step, {_pct(err)} after {T}",
            f"after T ≤ 1/{FALLS:g} of after one step",
            first >= FALLS * err,
        )
    )
    kept_ok = all(
        be <= e + 1e-9 for be, e in zip(liso.best_error_curve, liso.error_curve, strict=True)
    )
    invariants = (
        Invariant(
            "the kept iterate's error is never above the raw iterate's",
            f"over {T} steps",
            kept_ok,
        ),
    )
    note = (
        f"errors after 8-bit rounding; {_pct(liso.zero_error_share)} of LISO's images are "
        "decoded without a wrong bit"
    )
    return ClaimReport(tuple(rows), note=note, invariants=invariants)
