"""The paper's thesis, measured on a result (never typed in).

Both arms of a run start from the same weights and see the same batches, so their numbers are
paired. A comparison holds only by a margin (a named constant below), never by a tie: a single
training run at this learning rate is chaotic, and its numbers change with the CPU's kernels.
"""

from __future__ import annotations

import numpy as np

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.sigma_reparam.experiment import ArmResult, SigmaReparamResult
from companion.papers.sigma_reparam.method import entropy_lower_bound

COLLAPSED = 0.2  # a head has collapsed when its entropy is below 20% of log T
SHARPER = 3.0  # "larger logits": the baseline's largest logit norm at least 3× σReparam's
# "Competitive" test accuracy: at most this far below the baseline. Sized on seeds 0-4 only, by
# the rule "two standard deviations of the paired accuracy difference σReparam − baseline over
# seeds 0-4" (0.053 there, so 0.10 after rounding up to a round number): σReparam at this learning
# rate can sit on a loss plateau at chance for a long part of the run before it learns (its γ start
# at σ(W₀), small, while Adam grows ‖W‖ several-fold in the first steps), and a late start costs
# accuracy at a fixed step budget. Held-out seeds 5-9 were not used to choose it.
COMPETITIVE = 0.10
PLATEAU = 0.9  # the chance plateau ends when the smoothed loss first falls below 90% of its start


def loss_spikiness(arm: ArmResult, window: int = 10) -> float:
    """Instability of training: the largest rise of the smoothed loss above its running minimum
    over the second half of training (0 for a loss that only goes down)."""
    loss = np.asarray(arm.loss, dtype=float)
    if len(loss) < 2 * window or not np.isfinite(loss).all():
        return float("inf") if not np.isfinite(loss).all() else 0.0
    smooth = np.convolve(loss, np.ones(window) / window, mode="valid")
    rise = smooth - np.minimum.accumulate(smooth)
    return float(rise[len(rise) // 2 :].max())


def plateau_steps(arm: ArmResult, window: int = 10) -> int:
    """Steps the run spends on its initial loss plateau: the first step at which the
    ``window``-step-smoothed training loss falls below ``PLATEAU`` × its first value (the number
    of steps if it never does)."""
    loss = np.asarray(arm.loss, dtype=float)
    if len(loss) < window:
        return len(loss)
    smooth = np.convolve(loss, np.ones(window) / window, mode="valid")
    below = np.flatnonzero(smooth < PLATEAU * smooth[0])
    return int(arm.loss_steps[below[0] + window - 1]) if len(below) else len(loss)


def largest_logit_norm(arm: ArmResult) -> float:
    """Theorem 3.1's σ at the end of training: the largest, over layers, of the mean centred
    logit norm ‖z − mean z‖₂ of an attention row."""
    return float(max(layer[-1] for layer in arm.logit_norm))


def bound_holds_fraction(result: SigmaReparamResult) -> float:
    """Share of measured attention rows whose entropy is at least Theorem 3.1's bound."""
    pts = np.array([p for arm in result.arms.values() for layer in arm.bound_points for p in layer])
    bound = entropy_lower_bound(pts[:, 0], result.tokens).numpy()
    return float((pts[:, 1] >= bound - 1e-3).mean())  # 1e-3: the stored rounding


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("inf")


def check_claims(result: SigmaReparamResult) -> ClaimReport:
    base, sr = result.arms["baseline"], result.arms["sigma_reparam"]
    log_t = result.log_T
    base_min, sr_min = base.min_head_entropy[-1], sr.min_head_entropy[-1]
    base_spike, sr_spike = loss_spikiness(base), loss_spikiness(sr)
    base_norm, sr_norm = largest_logit_norm(base), largest_logit_norm(sr)
    rows = (
        Claim(
            "baseline: attention entropy collapses",
            f"min head entropy {fmt(base_min)} nats (log T = {fmt(log_t)})",
            f"< {COLLAPSED:.0%} of log T",
            base_min < COLLAPSED * log_t or base.diverged,
        ),
        Claim(
            "σReparam: no head collapses",
            f"min head entropy {fmt(sr_min)} nats",
            f">= {COLLAPSED:.0%} of log T",
            sr_min >= COLLAPSED * log_t and not sr.diverged,
        ),
        Claim(
            "σReparam keeps the attention logits small",
            f"largest logit norm {fmt(base_norm, 1)} vs σReparam {fmt(sr_norm, 1)} "
            f"(×{fmt(_ratio(base_norm, sr_norm), 1)})",
            f"baseline ≥ {SHARPER:g}× σReparam",
            base_norm >= SHARPER * sr_norm or base.diverged,
        ),
        Claim(
            "σReparam trains to competitive accuracy (within the seed spread)",
            f"test accuracy {fmt(sr.test_accuracy)} vs baseline {fmt(base.test_accuracy)}",
            f"σReparam ≥ baseline − {COMPETITIVE:g}",
            sr.test_accuracy >= base.test_accuracy - COMPETITIVE and not sr.diverged,
        ),
    )
    share = bound_holds_fraction(result)
    invariants = (
        Invariant(
            "Theorem 3.1's bound holds for every measured attention row",
            f"{fmt(100 * share, 1)}% of rows on or above the bound",
            share == 1.0,
        ),
    )
    # Loss spikes: measured and printed, not a claim. One run's spikes change with the seed and
    # even with the CPU's kernels (the ratio ranged from below 1 to about 20 over seeds 0-4), so
    # no margin holds the verdict of a single run: the notebook shows it over seeds instead.
    note = (
        f"not counted: loss spikiness {fmt(base_spike, 3)} vs σReparam {fmt(sr_spike, 3)}; "
        "at this scale the baseline's loss spikes at some seeds and not at others; "
        f"steps on the initial loss plateau: baseline {plateau_steps(base)}, "
        f"σReparam {plateau_steps(sr)}"
    )
    if not all(r.holds for r in rows):
        note += "; one run at this small scale is chaotic: a seed can miss a claim"
    return ClaimReport(rows, note=note, invariants=invariants)
