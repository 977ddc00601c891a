"""The paper's thesis, measured on a result (never typed in).

The three arms of a run start from the same encoder and codebook, see the same batches and use
the same neighbourhood schedule, so their maps are paired. *CPC, then SOM* is the control that
removes only the mechanism: the same encoder trained by CPC alone for the same number of steps,
and the same SOM losses trained on its frozen features for as many steps as SOM-CPC's map gets.
The map is scored with the paper's synthetic-data metrics: the topographic error, the
smoothness of the trajectories, and the error of the frequency read off the node labels.

Two premises come first: CPC learned something (the InfoNCE fell below chance), and the SOM
terms carry weight in SOM-CPC's loss (with a weight too small for the run, β (L_commit + L_SOM)
is a rounding error next to the InfoNCE and SOM-CPC is CPC, then SOM, trained in one go).
A comparison holds only by a margin (the named constants below), never by a tie.
"""

from __future__ import annotations

import math

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.som_cpc.experiment import LABELS, SOM_SHARE, SOMCPCResult

LEARNED = 0.9  # premise: the final InfoNCE at most 90 % of chance, log(N+1)
# premise: β (L_commit + L_SOM) at least 1 % of the InfoNCE at the end. The notebook's own
# threshold (the paper states none); select_beta uses the same one.
SHARE = SOM_SHARE
# "more topographic": topographic error at most 80 % of the other map's. Single-run verdicts
# are noisy: a loss rescale alone moves the control's topographic error by 15-30 %.
TOPOGRAPHIC = 0.8
SMOOTHER = 0.9  # "smoother" than the control: mean grid step at most 90 % of its
SMOOTHER_AE = 0.8  # "smoother" than AE + SOM: mean grid step at most 80 % of its
FREQ = 0.8  # "predicts the frequency better" than the control: MSE at most 80 % of its
FREQ_AE = 0.8  # ... than AE + SOM: MSE at most 80 % of its


def check_claims(result: SOMCPCResult) -> ClaimReport:
    arms, cfg = result.arms, result.config
    ours, control, ae = (arms.get(m) for m in ("som_cpc", "cpc_then_som", "ae_som"))
    chance = math.log(cfg["neg_samples"] + 1)  # the InfoNCE is averaged over the K steps
    rows = []
    learned = True
    cpc_arms = [m for m in ("som_cpc", "cpc_then_som") if m in arms]
    if cpc_arms:
        nce = [arms[m].infonce_end for m in cpc_arms]
        learned = all(v is not None and v <= LEARNED * chance for v in nce)
        rows.append(
            Claim(
                "premise: CPC learned to predict the future windows",
                "final InfoNCE "
                + ", ".join(
                    f"{LABELS[m]} {fmt(v) if v is not None else '–'}" for m, v in zip(cpc_arms, nce)
                )
                + f" (chance {fmt(chance)})",
                f"≤ {LEARNED:g} × log(N+1)",
                learned,
            )
        )
    if ours is not None and control is not None:
        share = ours.som_share or 0.0
        engaged = share >= SHARE
        rows.append(
            Claim(
                "premise: the SOM terms carry weight in SOM-CPC's loss",
                f"β (L_commit + L_SOM) = {100 * share:.2g} % of L_InfoNCE (β {cfg['beta']:g})",
                f"≥ {100 * SHARE:g} % (the notebook's threshold)",
                engaged,
            )
        )
        ok = learned and engaged
        name = LABELS["cpc_then_som"]
        rows += [
            Claim(
                f"SOM-CPC's map is more topographic than {name}'s (same encoder steps)",
                f"topographic error {fmt(ours.topographic_error)} vs "
                f"{fmt(control.topographic_error)}",
                f"≤ {TOPOGRAPHIC:g} × {name}",
                ours.topographic_error <= TOPOGRAPHIC * control.topographic_error,
                premise_ok=ok,
            ),
            Claim(
                f"SOM-CPC's map is smoother than {name}'s",
                f"mean grid step {fmt(ours.smoothness)} vs {fmt(control.smoothness)}",
                f"≤ {SMOOTHER:g} × {name}",
                ours.smoothness <= SMOOTHER * control.smoothness,
                premise_ok=ok,
            ),
            Claim(
                f"SOM-CPC's node labels predict the frequency better than {name}'s",
                f"MSE {fmt(ours.freq_error)} vs {fmt(control.freq_error)} Hz²",
                f"≤ {FREQ:g} × {name}",
                ours.freq_error <= FREQ * control.freq_error,
                premise_ok=ok,
            ),
        ]
    if ours is not None and ae is not None:
        name = LABELS["ae_som"]
        rows += [
            Claim(
                f"SOM-CPC's node labels predict the frequency better than {name}'s",
                f"MSE {fmt(ours.freq_error)} vs {fmt(ae.freq_error)} Hz²",
                f"≤ {FREQ_AE:g} × {name}",
                ours.freq_error <= FREQ_AE * ae.freq_error,
                premise_ok=learned,
            ),
            Claim(
                f"SOM-CPC's map is smoother than {name}'s",
                f"mean grid step {fmt(ours.smoothness)} vs {fmt(ae.smoothness)}",
                f"≤ {SMOOTHER_AE:g} × {name}",
                ours.smoothness <= SMOOTHER_AE * ae.smoothness,
                premise_ok=learned,
            ),
        ]
    sigma_end = cfg["sigma_end"]
    ends = [arm.sigma[-1] for arm in arms.values() if arm.sigma]
    invariants = [
        Invariant(
            "every map's neighbourhood shrank to σ_end by the end of training",
            f"final σ {', '.join(fmt(s) for s in ends)} (σ_end {fmt(sigma_end)})",
            all(abs(s - sigma_end) < 1e-6 for s in ends),
        )
    ]
    if ours is not None and control is not None:
        joint, staged = len(ours.loss_steps), len(control.loss_steps)
        invariants.append(
            Invariant(
                f"SOM-CPC and {LABELS['cpc_then_som']} train the encoder for the same steps",
                f"{joint} joint steps; {staged} = {staged // 2} CPC + {staged - staged // 2} SOM",
                staged == 2 * joint,
            )
        )
    note = "smoothness alone rewards a map that puts every window on one node; read it beside TE"
    if ours is not None and control is not None:
        note += (
            "; one run's verdict against the control is noisy (a loss rescale alone moves the "
            "control's topographic error by 15-30 %): count it over seeds"
        )
    return ClaimReport(tuple(rows), note=note, invariants=tuple(invariants))
