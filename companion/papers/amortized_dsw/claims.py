"""The paper's thesis, measured on a result (never typed in).

Rows, in order:

* two contrast premises: the official *linear* amortized map on ``[X; Y]`` moves its ε when the
  points of a cloud are shuffled, and when X and Y are swapped (the properties the paper's
  self-attention map has by construction, printed as invariants, not counted);
* a premise for the mechanism: on pairs of distinct held-out shapes (never seen by ψ, the same
  for every arm), the best single direction (Max-SW over a grid of 2,000 directions) gives a
  far larger one-dimensional W₂² than random directions do on average (SW): there is
  something for an amortized map to find;
* the mechanism: the one-dimensional W₂² along the attention map's ε is larger than along
  random directions (the control keeps everything but the learned location). The v-DSW at the
  run's κ around ε against around a random location is printed beside it: at κ = 1 the vMF is
  so broad that it stays close to SW whatever the location;
* reconstruction non-inferiority: the attention-amortized v-DSW autoencoder's exact EMD
  on held-out shapes is at most ``1 + NONINFERIORITY`` times that of SW and of the linear
  amortized v-DSW, same steps and L.

Margins. ``NONINFERIORITY = 5 %`` is fixed a priori by what "as good as" means for a
reconstruction metric (a difference smaller than one twentieth of the EMD is not one a reader
of the paper's tables would call worse); it was never sized on the differences it tests. The
angle thresholds (5°) are far below what an untied linear map gives and far above float
round-off. The mechanism ratio ``1.05`` and the premise ratio ``1.5`` say what "more
discriminative" and "far better" mean (a gain under 5 % is not a more discriminative direction;
the premise asks for a clearly non-uniform landscape of directions). The mechanism row itself was
*replaced* after seeds 0–4 were seen: the first version compared the v-DSW at κ around the
learned location with that around a random one (the paper's quantity, still printed beside the
row), which stays near 1 at κ = 1. Seeds 5–9 were never used to choose anything; the row holds
at 0–4 and fails at most of 5–9, and the notebook says the paper's central effect is not
reproduced at this scale.

Settings. κ and ψ's learning rate were chosen on the validation shapes' EMD of the attention
arm at seed 0 (κ ∈ {1, 10}, lr ∈ {0.01, 0.1}: κ = 1 and 0.01), before any test number was read.
"""

from __future__ import annotations

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.amortized_dsw.experiment import AmortizedDSWResult

ANGLE = 5.0  # degrees: the linear map's ε moves at least this much under a shuffle / a swap
INVARIANT_ANGLE = 0.1  # degrees: the attention map's ε moves less (round-off only)
MAX_SW_RATIO = 1.5  # premise: the best direction (grid) ≥ 1.5 × a random one's mean (SW)
AMORTIZED_RATIO = 1.05  # mechanism: W₂² along the amortized ε ≥ 1.05 × SW
NONINFERIORITY = 0.05  # EMD(attention) ≤ 1.05 × EMD(baseline)
BASELINES = {"sw": "SW", "linear_vdsw": "linear amortized v-DSW"}


def emd_ratio(result: AmortizedDSWResult, arm: str, other: str) -> float:
    """Mean test EMD of ``arm`` over that of ``other``."""
    return result.arms[arm].emd_mean / result.arms[other].emd_mean


def check_claims(result: AmortizedDSWResult) -> ClaimReport:
    arms = result.arms
    rows = []
    lin = arms.get("linear_vdsw")
    if lin is not None:
        rows += [
            Claim(
                "premise: the linear amortized map's ε moves when the points are shuffled",
                f"{fmt(lin.shuffle_angle, 1)}° (mean over held-out pairs)",
                f"≥ {ANGLE:g}°",
                lin.shuffle_angle >= ANGLE,
            ),
            Claim(
                "premise: the linear amortized map's ε moves when X and Y are swapped",
                f"{fmt(lin.swap_angle, 1)}°",
                f"≥ {ANGLE:g}°",
                lin.swap_angle >= ANGLE,
            ),
        ]
    att = arms.get("attention_vdsw")
    if att is not None:
        s = att.sliced_shapes
        max_ratio = s["max_sw"] / s["sw"]
        premise = max_ratio >= MAX_SW_RATIO
        direction_ratio = s["direction_amortized"] / s["sw"]
        vdsw_ratio = s["vdsw_amortized"] / s["vdsw_random"]
        rows += [
            Claim(
                "premise: some directions tell held-out shapes apart far better than random "
                "ones (Max-SW over a grid vs SW)",
                f"Max-SW / SW {fmt(max_ratio, 2)}",
                f"≥ {MAX_SW_RATIO:g}",
                premise,
            ),
            Claim(
                "the attention map's ε is a more discriminative direction than a random one "
                "(control: random directions, same pairs)",
                f"W₂² along ε / SW {fmt(direction_ratio, 2)} (v-DSW at κ: amortized / random "
                f"ε {fmt(vdsw_ratio, 2)})",
                f"≥ {AMORTIZED_RATIO:g}",
                direction_ratio >= AMORTIZED_RATIO,
                premise_ok=premise,
            ),
        ]
        for other, name in BASELINES.items():
            if other in arms:
                ratio = emd_ratio(result, "attention_vdsw", other)
                rows.append(
                    Claim(
                        f"reconstruction at least as good as {name} (exact EMD, same steps, L)",
                        f"EMD {fmt(att.emd_mean, 4)} vs {fmt(arms[other].emd_mean, 4)} "
                        f"(ratio {fmt(ratio, 3)})",
                        f"ratio ≤ {1 + NONINFERIORITY:g} (a priori)",
                        ratio <= 1 + NONINFERIORITY,
                    )
                )
    note = (
        "κ = 1 (the official value, and the better one on validation shapes) makes the vMF "
        "slices broad (mean cosine with ε: coth 1 − 1 ≈ 0.31), so the v-DSW stays close to SW "
        "whatever the location, and reconstruction is about the same for every arm; the "
        "learned ε is measured as a direction on its own for that reason"
    )
    return ClaimReport(tuple(rows), note=note, invariants=invariants(result))


def invariants(result: AmortizedDSWResult) -> tuple[Invariant, ...]:
    """Properties true by construction, checked on the run (not counted as claims)."""
    att = result.arms.get("attention_vdsw")
    if att is None:
        return ()
    return (
        Invariant(
            "the attention map's ε is unchanged when the points are shuffled",
            f"{att.shuffle_angle:.1e}°",
            att.shuffle_angle < INVARIANT_ANGLE,
        ),
        Invariant(
            "the attention map's ε is symmetric in (X, Y)",
            f"{att.swap_angle:.1e}°",
            att.swap_angle < INVARIANT_ANGLE,
        ),
    )
