"""The paper's thesis, measured on a result (never typed in).

Every comparison holds only by a margin (a named constant below) that the spread over seeds 0-4
supports (``data/claims/incompatibility_clustering.json``); a tie is not a hold. The first three
rows are premises (the backdoor works; the poisons are incompatible with clean data and
self-expanding): they hold almost by construction at this scale and only enable the claims.
"""

from __future__ import annotations

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.incompatibility_clustering.experiment import IncompatibilityResult

BACKDOOR_WORKS = 0.5  # premise: without the defense, at least half of the stamped images flip
INCOMPATIBLE = 0.5  # premise: clean-trained net, held-out clean accuracy ≥ poison accuracy + 0.5
SELF_EXPANDING = 0.5  # premise: adding half of the poisons lifts held-out poison accuracy ≥ 0.5
# The claims are counted against the pre-specified baseline filter (one network, one epoch on
# everything, drop what it misclassifies). Margins from seeds 0-4 at the notebook preset
# (data/claims/incompatibility_clustering.json), mean and standard deviation over the seeds:
RECALL = 0.8  # ISPL removes at least 80% of the poisons (seeds 0-4: 0.875-0.975) ...
RECALL_SLACK = 0.1  # ... and no fewer than the baseline − 0.1 (ISPL − baseline: −0.05 to +0.15)
SEPARATION = 1.25  # ISPL's poison/clean removal ratio ≥ 1.25× the baseline's (1.6-2.9×, mean 2.1)
DROP = 0.2  # targeted misclassification after ≤ 0.2 × before (seeds 0-4: 0.02-0.19)
HEADLINE = 0.01  # the paper's headline: attack success below 1 %
ASR_MARGIN = 0.05  # ISPL's attack success ≤ the baseline's − 0.05 (5 of 100 source images)
COST = 0.06  # clean-accuracy cost ≤ 6 points (0.019-0.044: mean 0.028 + 3 sd)
ACC_MARGIN = 0.02  # ISPL's clean accuracy ≥ the baseline's + 0.02 (+0.038 to +0.069, mean 0.053)


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("inf")


def check_claims(result: IncompatibilityResult) -> ClaimReport:
    before, after, base = result.no_defense, result.defended, result.baseline
    clean_net, mixed_net = result.compat["clean"], result.compat["clean+poisons"]
    recall, clean_share = result.poison_recall, result.clean_removed_share
    b_recall, b_clean = result.baseline_recall, result.baseline_clean_share
    tm_before, tm_after = before.targeted_misclassification, after.targeted_misclassification
    sep, b_sep = _ratio(recall, clean_share), _ratio(b_recall, b_clean)
    works = tm_before >= BACKDOOR_WORKS
    incompatible = clean_net["clean"] >= clean_net["poisons"] + INCOMPATIBLE
    expanding = mixed_net["poisons"] - clean_net["poisons"] >= SELF_EXPANDING
    rows = (
        Claim(
            "premise: the backdoor works without a defense",
            f"targeted misclassification {fmt(tm_before)} "
            f"(attack success {fmt(before.attack_success)})",
            f">= {BACKDOOR_WORKS}",
            works,
        ),
        Claim(
            "premise: clean data does not generalize to the poisons",
            f"clean-trained net: held-out clean {fmt(clean_net['clean'])}, "
            f"poisons {fmt(clean_net['poisons'])} (accuracy on their labels)",
            f"clean >= poisons + {INCOMPATIBLE}",
            incompatible,
        ),
        Claim(
            "premise: poisons generalize to each other (self-expansion)",
            f"held-out poisons {fmt(clean_net['poisons'])} -> {fmt(mixed_net['poisons'])} "
            "when half of the poisons join the training set",
            f"rise >= {SELF_EXPANDING}",
            expanding,
        ),
        Claim(
            "the defense removes most poisons, as many as the baseline filter ...",
            f"ISPL {fmt(100 * recall, 1)}% of the poisons, baseline {fmt(100 * b_recall, 1)}%",
            f">= {RECALL:.0%} and >= baseline − {RECALL_SLACK:g}",
            recall >= RECALL and recall >= b_recall - RECALL_SLACK,
            premise_ok=incompatible and expanding,
        ),
        Claim(
            "... while removing far fewer clean examples than the baseline",
            f"clean removed: ISPL {fmt(100 * clean_share, 1)}%, baseline "
            f"{fmt(100 * b_clean, 1)}% (poisons/clean ratio ×{fmt(sep, 1)} vs ×{fmt(b_sep, 1)})",
            f"ISPL ratio >= {SEPARATION:g} × baseline ratio",
            sep >= SEPARATION * b_sep,
            premise_ok=incompatible and expanding,
        ),
        Claim(
            "the attack success rate drops sharply after removal",
            f"targeted misclassification {fmt(tm_before)} -> {fmt(tm_after)} "
            f"(attack success {fmt(before.attack_success)} -> {fmt(after.attack_success)})",
            f"after <= {DROP:g} × before",
            tm_before > 0 and tm_after <= DROP * tm_before,
            premise_ok=works,
        ),
        Claim(
            "the paper's headline: attack success below 1% after the defense",
            f"attack success {fmt(after.attack_success, 3)} "
            f"(undefended {fmt(before.attack_success, 3)})",
            f"< {HEADLINE:g}",
            after.attack_success < HEADLINE,
            premise_ok=works,
        ),
        Claim(
            "lower attack success than the baseline filter",
            f"attack success: ISPL {fmt(after.attack_success)}, "
            f"baseline {fmt(base.attack_success)}",
            f"ISPL <= baseline − {ASR_MARGIN:g}",
            after.attack_success <= base.attack_success - ASR_MARGIN,
            premise_ok=works,
        ),
        Claim(
            "at a small clean-accuracy cost",
            f"clean accuracy {fmt(before.clean_accuracy, 3)} -> {fmt(after.clean_accuracy, 3)}",
            f"after >= before - {COST:g}",
            after.clean_accuracy >= before.clean_accuracy - COST,
        ),
        Claim(
            "a smaller cost than the baseline filter's",
            f"clean accuracy: ISPL {fmt(after.clean_accuracy, 3)}, "
            f"baseline {fmt(base.clean_accuracy, 3)}",
            f"ISPL >= baseline + {ACC_MARGIN:g}",
            after.clean_accuracy >= base.clean_accuracy + ACC_MARGIN,
        ),
    )
    per_bag: dict[int, int] = {}
    for learner in result.learners:
        per_bag[learner["bag"]] = per_bag.get(learner["bag"], 0) + 1
    alpha = int(result.config["boost"])
    invariants = (
        Invariant(
            "within a bag, the weak learners' core sets are disjoint",
            "checked on every example",
            result.bags_disjoint,
        ),
        Invariant(
            "at most α weak learners per bag",
            "checked on every bag",
            max(per_bag.values()) <= alpha,
        ),
    )
    note = (
        "the defense and the baseline filter saw images and labels only; the poison mask is "
        "used to measure them (and for the incompatibility picture)"
    )
    if not all(r.holds for r in rows):
        note += (
            "; at this scale (a 14×14 MLP, 40 poisons, 100 source test images, 4 weak learners "
            "instead of 24) the attack success stays above the paper's 1% and a one-epoch "
            "filter removes the poisons about as well; ISPL's edge is the clean data it keeps"
        )
    return ClaimReport(rows, note=note, invariants=invariants)
