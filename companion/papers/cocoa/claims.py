"""The paper's thesis, measured on a result (never typed in).

COCOA's attributions should point at the features the corpus shares and the foil lacks, so
inserting them first raises the eval head's probability of the corpus-majority class fastest
(highest insertion AUC) and deleting them first lowers it fastest (lowest deletion AUC); the
comparison is against the same attribution method (Integrated Gradients, same baseline) applied
to corpus similarity alone and to the explicand's self-similarity, and against random
attributions (the paper's quantitative evaluation, at small scale). All targets explain the same
explicands with the same encoder, so the AUCs are paired; a comparison holds only by a margin
(named below) in the mean AUC, never by a tie.
"""

from __future__ import annotations

import numpy as np

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.cocoa.experiment import CocoaResult

# Margin in mean AUC (AUC lies in [0, 1]: the probability averaged over the fraction of pixels),
# for insertion and deletion alike. Seeds 0-4 at the notebook preset: COCOA leads corpus-only
# similarity, the closest target, by at least 0.029 (insertion) and 0.033 (deletion) AUC
# (data/claims/cocoa.json); self-similarity and random attributions trail by far more.
MARGIN = 0.02
# Sanity checks (seeds 0-4): COCOA from a randomly re-initialised encoder scores 0.17-0.21 below
# trained COCOA in insertion AUC but still 0.11-0.13 above random attributions; a corpus of
# another class gives maps with rank correlation −0.2 to −0.3 to the original, a fresh corpus of
# the same class 0.97-0.98.
DEGRADE = 0.1  # randomised-encoder COCOA ≤ trained COCOA − 0.1 (insertion AUC)
CHANCE = 0.05  # randomised-encoder COCOA ≤ the model-free x − blur(x) ranking + 0.05
CHANGE = 0.5  # other-class corpus: mean rank correlation ≤ same-class resample − 0.5
TRAINED = 0.8  # eval-head test accuracy below which the note blames the encoder's training
COMPLETENESS = 0.1  # IG's |Σ attributions − (y(x) − y(baseline))| within 10 % of |y(x) − y(b)|

LABELS = {
    "cocoa": "COCOA",
    "corpus": "corpus similarity",
    "self": "explicand self-similarity",
    "random": "random attributions",
    "oracle": "oracle: IG of the eval head's logit",
}
COMPETITORS = ("corpus", "self", "random")  # the oracle is a reference line, not a competitor


def check_claims(result: CocoaResult) -> ClaimReport:
    cocoa = result.targets["cocoa"]
    rows = []
    for name in COMPETITORS:
        if name not in result.targets:
            continue
        other = result.targets[name]
        rows.append(
            Claim(
                f"insertion: COCOA beats {LABELS[name]}",
                f"AUC {fmt(cocoa.insertion, 3)} vs {fmt(other.insertion, 3)}",
                f"COCOA ≥ {LABELS[name]} + {MARGIN}",
                cocoa.insertion >= other.insertion + MARGIN,
            )
        )
        rows.append(
            Claim(
                f"deletion: COCOA beats {LABELS[name]}",
                f"AUC {fmt(cocoa.deletion, 3)} vs {fmt(other.deletion, 3)}",
                f"COCOA ≤ {LABELS[name]} − {MARGIN}",
                cocoa.deletion <= other.deletion - MARGIN,
            )
        )
    competitors_hold = all(r.holds for r in rows)
    rand, random = result.randomized, result.targets.get("random")
    if rand is not None:
        rows.append(
            Claim(
                "sanity: COCOA from a randomised encoder explains the trained one worse",
                f"insertion AUC {fmt(rand.insertion, 3)} (randomised) vs {fmt(cocoa.insertion, 3)}",
                f"randomised ≤ COCOA − {DEGRADE}",
                rand.insertion <= cocoa.insertion - DEGRADE,
            )
        )
        if result.input_only_insertion:
            edge = float(np.mean(result.input_only_insertion))
            rows.append(
                Claim(
                    "sanity: ... no better than ranking pixels by x − blur(x) alone (no network)",
                    f"insertion AUC {fmt(rand.insertion, 3)} (randomised) vs "
                    f"{fmt(edge, 3)} (x − blur(x))",
                    f"randomised ≤ model-free + {CHANCE}",
                    rand.insertion <= edge + CHANCE,
                )
            )
    if result.other_class_corr:
        same, other = np.mean(result.same_class_corr), np.mean(result.other_class_corr)
        rows.append(
            Claim(
                "sanity: a corpus of another class changes the explanation",
                f"rank correlation with the original map: other class {fmt(other)}, "
                f"fresh corpus of the same class {fmt(same)}",
                f"other ≤ same − {CHANGE}",
                other <= same - CHANGE,
            )
        )
    invariants = []
    for name, target in result.targets.items():
        if name == "random":
            continue
        ratio = target.convergence_delta / max(target.target_range, 1e-12)
        invariants.append(
            Invariant(
                f"IG completeness for {LABELS[name]}: attributions sum to y(x) − y(baseline)",
                f"mean |gap| {fmt(100 * ratio, 1)}% of mean |y(x) − y(baseline)|",
                ratio <= COMPLETENESS,
            )
        )
    note = (
        f"corpus-majority probability from a linear eval head (test accuracy "
        f"{fmt(result.head_accuracy)}) on the frozen SimCLR representation"
    )
    if "oracle" in result.targets and result.head_cosine:
        note += (
            f"; the protocol partly rewards COCOA's own target: the head's class direction has "
            f"cosine {fmt(float(np.mean(result.head_cosine)))} with COCOA's m_C − m_F, and IG of "
            f"the head's own logit (the oracle) reaches insertion "
            f"{fmt(result.targets['oracle'].insertion, 3)} / deletion "
            f"{fmt(result.targets['oracle'].deletion, 3)}"
        )
    if rand is not None and rand.insertion > (random.insertion if random else 0) + CHANCE:
        note += (
            "; IG from a randomised encoder stays above chance: IG multiplies the gradient by "
            "x − blur(x), and ranking pixels by that factor alone (no network) already reaches "
            f"insertion {fmt(float(np.mean(result.input_only_insertion)), 3)}"
        )
    if not competitors_hold and result.head_accuracy < TRAINED:
        note += (
            "; the encoder is barely trained at this preset (the eval head reads the class "
            "poorly): every target's curves stay low and the targets cannot be told apart"
        )
    elif not competitors_hold:
        note += (
            "; corpus similarity alone is COCOA's closest competitor: both pull towards the "
            "corpus, and only the foil term separates them"
        )
    return ClaimReport(tuple(rows), note=note, invariants=tuple(invariants))
