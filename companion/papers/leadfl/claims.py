"""The paper's thesis, measured on a result (never typed in).

All arms of a run share the initial weights and the data split; the attacked arms share the
selected clients and the attackers' updates, so their numbers are paired.

**How the backdoor is measured.** The attack success rate (ASR) is the share of *non-target*
test images, stamped with the trigger, that the model predicts as the target. Two things make
its raw average over a run misleading, and the claims avoid both:

* at a burst round the model often predicts the target for *everything* (its clean accuracy
  falls to chance and its target rate on clean images is near 1): an ASR near 1 there is a
  broken model, not a backdoor, and three such rounds alone add about 3 / (number of rounds)
  to a mean over the run;
* a clean model already predicts the target for some stamped images.

So the backdoor is the **residual backdoor**: the ASR averaged over the rounds *after the last
burst*, minus the same average of the ``no_attack`` arm (the same run with no attacker ever
selected: the clean floor, measured in the same run). A comparison holds only by a margin
(named constants below) that the spread over seeds 0-4 supports; a tie is not a hold.
"""

from __future__ import annotations

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.errors import CompanionError
from companion.papers.leadfl.experiment import ArmResult, LeadFLResult

LET_IN = 0.20  # premise: after the bursts, robust aggregation alone keeps a residual backdoor
# premise: ... that the trigger causes: the ASR minus the target rate on clean images (the
# share of images the model sends to the target anyway) is at least LET_IN too

LOWER = 0.10  # LeadFL lowers the residual backdoor by at least 10 points (absolute)
OWN = 0.05  # the regularizer's own effect: LeadFL below LeadFL with α = 0 by 5 points (and
# below the step-matched control by the same margin)
COST = 0.02  # "small cost": final clean accuracy at most 2 points below robust aggregation alone
PAPER_LOW = 0.10  # the paper's headline: backdoor accuracy below 10% with LeadFL


def after_last_burst(arm: ArmResult, last_burst: int, values: list[float] | None = None) -> float:
    """The mean of ``values`` (default: the attack success rate) over the rounds after
    ``last_burst``."""
    values = arm.attack_success if values is None else values
    window = [v for r, v in zip(arm.rounds, values) if r > last_burst]
    return sum(window) / len(window)


def residual_backdoor(result: LeadFLResult, defense: str) -> float:
    """The arm's attack success rate after the last burst, above the clean floor (the
    ``no_attack`` arm over the same rounds)."""
    last = result.last_burst
    floor = after_last_burst(result.arms["no_attack"], last)
    return after_last_burst(result.arms[defense], last) - floor


NEEDED = ("none", "leadfl", "alpha0", "double_lr", "no_attack")


def check_claims(result: LeadFLResult) -> ClaimReport:
    arms = result.arms
    missing = [d for d in NEEDED if d not in arms]
    if missing:
        raise CompanionError(f"the claims need the arms {NEEDED}; this result lacks {missing}")
    alone, lead = arms["none"], arms["leadfl"]
    last = result.last_burst
    floor = after_last_burst(arms["no_attack"], last)
    res = {d: residual_backdoor(result, d) for d in ("none", "leadfl", "alpha0", "double_lr")}
    rate_alone = after_last_burst(alone, last, alone.target_rate)
    acc_alone, acc_lead = alone.clean_accuracy[-1], lead.clean_accuracy[-1]
    agg = result.config["aggregator"]
    asr_alone = after_last_burst(alone, last)
    premise = res["none"] >= LET_IN and asr_alone - rate_alone >= LET_IN
    rows = (
        Claim(
            f"premise: the bursts leave a trigger backdoor under {agg} alone",
            f"residual backdoor {fmt(res['none'])} (floor {fmt(floor)}); "
            f"ASR {fmt(asr_alone)}, target rate {fmt(rate_alone)}",
            f">= {LET_IN:.2f}; ASR - target rate >= {LET_IN:.2f}",
            premise,
        ),
        Claim(
            "LeadFL + robust aggregation: less backdoor than robust aggregation alone",
            f"residual backdoor {fmt(res['leadfl'])} vs {fmt(res['none'])}",
            f"LeadFL <= alone - {LOWER:.2f}",
            res["leadfl"] <= res["none"] - LOWER,
            premise_ok=premise,
        ),
        Claim(
            "the regularizer's own effect: LeadFL below the same code with α = 0 "
            "(only the regularizer removed)",
            f"residual backdoor {fmt(res['leadfl'])} vs {fmt(res['alpha0'])}",
            f"LeadFL <= α = 0 - {OWN:.2f}",
            res["leadfl"] <= res["alpha0"] - OWN,
            premise_ok=premise,
        ),
        Claim(
            "LeadFL below the step-matched control (plain SGD at 2η, no LeadFL code)",
            f"residual backdoor {fmt(res['leadfl'])} vs {fmt(res['double_lr'])}",
            f"LeadFL <= control - {OWN:.2f}",
            res["leadfl"] <= res["double_lr"] - OWN,
            premise_ok=premise,
        ),
        Claim(
            "LeadFL's cost in clean accuracy is small",
            f"final clean accuracy {fmt(acc_lead)} vs {fmt(acc_alone)}",
            f"LeadFL >= alone - {COST:.2f}",
            acc_lead >= acc_alone - COST,
        ),
        Claim(
            "LeadFL keeps the backdoor accuracy low (paper: below 10%)",
            f"residual backdoor {fmt(res['leadfl'])}",
            f"< {PAPER_LOW:.2f}",
            res["leadfl"] < PAPER_LOW,
            premise_ok=premise,
        ),
    )
    bursts = set(result.config["burst_rounds"])
    between = result.config["attackers_between_bursts"]
    attacked = [a for d, a in arms.items() if d != "no_attack"]
    counts = {r: a for r, a in zip(alone.rounds, alone.attackers)}
    burst_ok = all(counts[r] == result.config["burst_malicious"] for r in bursts if r in counts)
    quiet_ok = between or all(c == 0 for r, c in counts.items() if r not in bursts)
    same = all(a.attackers == alone.attackers for a in attacked)
    clean_ok = not any(arms["no_attack"].attackers)
    invariants = (
        Invariant(
            "attackers take part in exactly the burst rounds, in every attacked arm alike; "
            "never in the no-attack arm",
            f"attackers per burst round {sorted({counts[r] for r in bursts if r in counts})}",
            burst_ok and quiet_ok and same and clean_ok,
        ),
    )
    return ClaimReport(rows, invariants=invariants)
