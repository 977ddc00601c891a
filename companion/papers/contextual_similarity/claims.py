"""The paper's claim at notebook scale, measured on a result (never typed in): the contextual
loss keeps retrieval accurate when training labels are noisy, where the contrastive loss does
not (the abstract: "more robust to label noise").

Both losses at one noise rate train the same initial network on the same corrupted labels and
the same batches, so their numbers are paired. A comparison holds only by a margin (a named
constant below), never by a tie.
"""

from __future__ import annotations

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.contextual_similarity.experiment import ContextualSimilarityResult

NOISY_MARGIN = 0.04  # hybrid − contrastive Recall@1 at the noisiest rate
DROP_MARGIN = 0.04  # (contrastive drop) − (hybrid drop) of Recall@1, clean → noisiest
CLEAN_TOLERANCE = 0.03  # on clean labels the hybrid loss may trail by at most this


def check_claims(result: ContextualSimilarityResult) -> ClaimReport:
    noise = list(result.config["noise_levels"])
    hybrid = result.recall_at_1("hybrid")
    contrastive = result.recall_at_1("contrastive")
    noisy = [i for i, p in enumerate(noise) if p > 0]
    rows = []
    if noisy:
        worst = noisy[-1]
        rows.append(
            Claim(
                "under label noise the contextual (hybrid) loss retrieves better",
                f"Recall@1 at p={noise[worst]:.1f}: hybrid {fmt(hybrid[worst])}, "
                f"contrastive {fmt(contrastive[worst])}",
                f"hybrid ≥ contrastive + {NOISY_MARGIN} at the noisiest rate",
                hybrid[worst] - contrastive[worst] >= NOISY_MARGIN,
            )
        )
    if 0.0 in noise and noisy:
        clean, worst = noise.index(0.0), noisy[-1]
        drop_h = hybrid[clean] - hybrid[worst]
        drop_c = contrastive[clean] - contrastive[worst]
        rows.append(
            Claim(
                "the hybrid loss degrades less as noise grows",
                f"Recall@1 drop, clean → p={noise[worst]:.1f}: hybrid {fmt(drop_h)}, "
                f"contrastive {fmt(drop_c)}",
                f"contrastive drop ≥ hybrid drop + {DROP_MARGIN}",
                drop_c - drop_h >= DROP_MARGIN,
            )
        )
        rows.append(
            Claim(
                "on clean labels the contextual term costs no retrieval accuracy",
                f"Recall@1 hybrid {fmt(hybrid[clean])}, contrastive {fmt(contrastive[clean])}",
                f"hybrid ≥ contrastive − {CLEAN_TOLERANCE}",
                hybrid[clean] >= contrastive[clean] - CLEAN_TOLERANCE,
            )
        )
    flipped = [result.arm("hybrid", p).flipped for p in noise]
    invariants = (
        Invariant(
            "the corrupted share of training labels follows the noise rate (±0.05)",
            ", ".join(f"p={p:.1f}: {fmt(f)}" for p, f in zip(noise, flipped)),
            all(abs(f - p) < 0.05 for p, f in zip(noise, flipped)),
        ),
    )
    return ClaimReport(tuple(rows), invariants=invariants)
