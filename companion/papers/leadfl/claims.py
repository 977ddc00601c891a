"""The paper's thesis, measured on a result (never typed in).

Both arms of a run share the initial weights, the data split, the selected clients and the
mini-batches, so their numbers are paired. The backdoor is measured as the official code
summarizes it (``backdoor_accuracy_avg``): the attack success rate averaged over the rounds from
the first burst to the end. A comparison holds only by a margin (named constants below) that
the spread over seeds 0-4 supports; a tie is not a hold.
"""

from __future__ import annotations

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.leadfl.experiment import ArmResult, LeadFLResult

LET_IN = 0.5  # robust aggregation alone "lets the backdoor in": mean ASR at least 50%
LOWER = 0.10  # LeadFL lowers the mean ASR by at least 10 points (absolute)
COST = 0.02  # "small cost": final clean accuracy at most 2 points below robust aggregation alone
PAPER_LOW = 0.10  # the paper's headline: backdoor accuracy below 10% with LeadFL


def mean_attack_success(arm: ArmResult, first_burst: int) -> float:
    """The attack success rate averaged over the rounds from ``first_burst`` to the end."""
    values = [a for r, a in zip(arm.rounds, arm.attack_success) if r >= first_burst]
    return sum(values) / len(values)


def check_claims(result: LeadFLResult) -> ClaimReport:
    alone, lead = result.arms["none"], result.arms["leadfl"]
    first = result.first_burst
    asr_alone, asr_lead = mean_attack_success(alone, first), mean_attack_success(lead, first)
    acc_alone, acc_lead = alone.clean_accuracy[-1], lead.clean_accuracy[-1]
    agg = result.config["aggregator"]
    rows = (
        Claim(
            f"bursty attackers get a backdoor past {agg} alone",
            f"mean attack success {fmt(asr_alone)}",
            f">= {LET_IN:.2f}",
            asr_alone >= LET_IN,
        ),
        Claim(
            "LeadFL + robust aggregation: backdoor accuracy below robust aggregation alone",
            f"mean attack success {fmt(asr_lead)} vs {fmt(asr_alone)}",
            f"LeadFL <= alone - {LOWER:.2f}",
            asr_lead <= asr_alone - LOWER,
        ),
        Claim(
            "LeadFL's cost in clean accuracy is small",
            f"final clean accuracy {fmt(acc_lead)} vs {fmt(acc_alone)}",
            f"LeadFL >= alone - {COST:.2f}",
            acc_lead >= acc_alone - COST,
        ),
        Claim(
            "LeadFL keeps the backdoor accuracy low (paper: below 10%)",
            f"mean attack success {fmt(asr_lead)}",
            f"< {PAPER_LOW:.2f}",
            asr_lead < PAPER_LOW,
        ),
    )
    counts = {r: a for r, a in zip(alone.rounds, alone.attackers)}
    bursts = set(result.config["burst_rounds"])
    between = result.config["attackers_between_bursts"]
    burst_ok = all(counts[r] == result.config["burst_malicious"] for r in bursts if r in counts)
    quiet_ok = between or all(c == 0 for r, c in counts.items() if r not in bursts)
    same = alone.attackers == lead.attackers
    invariants = (
        Invariant(
            "attackers take part in exactly the burst rounds, in both arms alike",
            f"attackers per burst round {sorted({counts[r] for r in bursts if r in counts})}",
            burst_ok and quiet_ok and same,
        ),
    )
    note = ""
    if asr_lead >= PAPER_LOW:
        note = (
            "at this scale (a few local steps per round, a few rounds) LeadFL does not erase "
            "the backdoor as in the paper's 80-round, 10-epoch runs"
        )
    return ClaimReport(rows, note=note, invariants=invariants)
