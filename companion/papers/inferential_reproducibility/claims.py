"""The paper's thesis, measured on a result (never typed in).

The paper's example (Aghajanyan et al.'s "SOTA" vs "Baseline", ROUGE-2): the best runs favour
SOTA (0.217 vs 0.213, χ² = 37.0), while all meta-parameter runs favour the baseline (0.210 vs
0.190): the conclusion depends on which sources of variance enter the analysis. The best-run gap
also depends on properties of the input (word rarity, readability). The VCA then splits the score
variance into items, meta-parameters, seeds and residual, and the reliability coefficient is the
item share.

Margins (constants of this module, not measured values): the comparisons are significance
tests at the config's ``alpha``; the other rows need a margin that the spread over the seed
blocks 0-4 (``companion claims inferential_reproducibility --seeds 0-4``) clears at every block.
"""

from __future__ import annotations

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.inferential_reproducibility.experiment import (
    GLRTSummary,
    InferentialReproducibilityResult,
)


def fmt_p(p: float) -> str:
    """p-values as text that reruns reproduce: tiny ones only as a bound."""
    return "p < 0.001" if p < 1e-3 else f"p = {p:.3f}"


def _gap(t: GLRTSummary) -> str:
    return f"A − B = {t.estimate:+.3f} (SE {fmt(t.se, 3)}), χ² = {fmt(t.chi2, 1)}, {fmt_p(t.p)}"


SE_GROWTH = 5.0  # modelling seed and lr as random effects multiplies the A − B SE at least so
SHARE_MARGIN = 0.10  # VCA of A: the lr share exceeds the seed share by 10 points of the total
RELIABILITY_MARGIN = 0.10  # B's reliability exceeds A's by at least this much
SAME_ESTIMATE = 1e-6  # balanced design: the random effects leave the A − B estimate unchanged


def check_claims(result: InferentialReproducibilityResult) -> ClaimReport:
    alpha = result.config["alpha"]
    best, every, modelled = (
        result.tests["best_setting"],
        result.tests["all_runs"],
        result.tests["all_runs_modelled"],
    )
    inter = result.tests["noisy_interaction"]
    vca_a = result.vca["A"]["shares"]
    rel = {s: result.vca[s]["reliability"] for s in ("A", "B")}
    growth = modelled.se / every.se
    lo, hi = modelled.ci95
    share_gap = vca_a["lr"] - vca_a["seed"]
    rows = (
        Claim(
            "tuned comparison (best lr, all seeds): A beats B",
            _gap(best),
            f"A − B > 0 and p < {alpha}",
            best.estimate > 0 and best.p < alpha,
        ),
        Claim(
            "all meta-parameter runs: the ranking flips",
            _gap(every),
            f"A − B < 0 and p < {alpha}",
            every.estimate < 0 and every.p < alpha,
        ),
        Claim(
            "(companion's extension) seed and lr as random effects widen the A − B interval",
            f"SE {fmt(every.se, 3)} -> {fmt(modelled.se, 3)} ({fmt(growth, 1)}x), "
            f"95% CI [{lo:+.3f}, {hi:+.3f}]",
            f"SE grows >= {SE_GROWTH:g}x and the 95% CI spans 0",
            growth >= SE_GROWTH and lo < 0 < hi,
        ),
        Claim(
            "the tuned A − B gap depends on a data property (noise)",
            f"interaction {inter.estimate:+.3f}, χ² = {fmt(inter.chi2, 1)}, {fmt_p(inter.p)}",
            f"p < {alpha}",
            inter.p < alpha,
        ),
        Claim(
            "VCA of A: the meta-parameter outweighs the seed",
            f"lr {fmt(100 * vca_a['lr'], 1)}%, seed {fmt(100 * vca_a['seed'], 1)}%",
            f"lr share - seed share >= {100 * SHARE_MARGIN:g} points",
            share_gap >= SHARE_MARGIN,
        ),
        Claim(
            "reliability: A, whose score hangs on its lr, is the less reliable",
            f"R(A) {fmt(rel['A'])}, R(B) {fmt(rel['B'])}",
            f"R(B) - R(A) >= {RELIABILITY_MARGIN:g}",
            rel["B"] - rel["A"] >= RELIABILITY_MARGIN,
        ),
    )
    sums = {s: sum(result.vca[s]["shares"].values()) for s in ("A", "B")}
    moved = abs(modelled.estimate - every.estimate)
    invariants = (
        Invariant(
            "each system's variance shares sum to 100% (normalized by their total)",
            ", ".join(f"{s} {fmt(100 * v, 1)}%" for s, v in sums.items()),
            all(abs(v - 1) < 1e-9 for v in sums.values()),
        ),
        Invariant(
            "reliability = the item share, in [0, 1]",
            f"R(A) {fmt(rel['A'])}, R(B) {fmt(rel['B'])}",
            all(
                0 <= rel[s] <= 1 and abs(rel[s] - result.vca[s]["shares"]["item"]) < 1e-12
                for s in rel
            ),
        ),
        Invariant(
            "balanced design: random effects for seed and lr leave the A − B estimate unchanged",
            f"|change| < {SAME_ESTIMATE:g}" if moved < SAME_ESTIMATE else f"change {moved:.2e}",
            moved < SAME_ESTIMATE,
        ),
    )
    return ClaimReport(
        rows,
        note=""
        if all(r.holds for r in rows)
        else "a claim that does not hold here depends on the grid: the meta-parameter range, "
        "the number of runs and test items; see the notebook's discussion",
        invariants=invariants,
    )
