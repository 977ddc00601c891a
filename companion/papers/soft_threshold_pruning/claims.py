"""The paper's claim, measured on a result (never typed in).

Every arm starts from the same weights and sees the same batches, so two arms of one seed are a
pair: each comparison is judged on the paired difference d = acc(LATS) − acc(baseline). The paper's
claim is that LATS is at least as accurate as the other schedules at equal sparsity: a
non-inferiority claim. A row holds when d ≥ −``NONINFERIORITY_MARGIN``; the margin is the
seed-to-seed standard deviation of the paired differences on seeds 0-4 (derivation beside the
constant), so a loss larger than one standard deviation of d fails the row.

Counted baselines are the fair ones: the linear ramp, and gradual magnitude pruning with both
allocations (every layer to the same rate; one magnitude ranking over all layers). The fixed
threshold from step 0 zeroes whole layers of this MLP: it is printed as a reference, not counted.
One counted control removes only LATS's constant λ: the early linear ramp (``linear_early``)
prunes at least as early as LATS at every step, so a LATS win over the plain ramp that is only
"earlier pruning" does not carry over to it.

With ``one_factor_steps`` (the medium preset) the same rows are measured a second time on the
arms trained with the notebook's step count at the medium target (``result.one_factor``), their
texts marked with the step count, so that the target's effect can be told from the steps'.
"""

from __future__ import annotations

import re
import statistics
from fractions import Fraction

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.errors import CompanionError
from companion.papers.soft_threshold_pruning.experiment import SoftThresholdResult
from companion.papers.soft_threshold_pruning.method import implied_l1

# "equal final sparsity", relative to the density 1 − s (what a high target constrains): every
# compared arm's density within 10 % of the target density (at 97 %: sparsity within ±0.003; at
# 99 %: ±0.001). The search keeps the trial closest to the target; at seeds 0-4 of the notebook
# preset its largest relative gap is printed in the premise row.
DENSITY_TOL = 0.10
# "at least as accurate", up to noise: one standard deviation of the paired difference d =
# acc(LATS) − acc(GMP) over seeds 0-4 at the notebook preset (sample sd over the seeds, pooled over
# the two GMP allocations: 0.011 uniform, 0.009 global, pooled 0.010, with the first version's
# bisection). With the current search (early ramp added, interpolating search) the sds at seeds
# 0-4 are 0.010 and 0.006 (pooled 0.008); the margin was kept at 0.01, not re-tuned. The same
# margin is used for both ramps. 0.01 ≈ 4 of 359 test images.
NONINFERIORITY_MARGIN = 0.01
ISTA_TOL = 1e-9  # float64 iterates: equal up to rounding
COUNTED = ("linear", "linear_early", "gmp", "gmp_global")  # "fixed" is a printed reference
NAMES = {
    "linear": "the linear ramp",
    "linear_early": "an early linear ramp (pruning at least as early, λ not constant)",
    "gmp": "GMP with every layer pruned to the same rate",
    "gmp_global": "GMP with one global magnitude ranking",
}


def _tiny(x: float) -> str:
    """A rounding-level number in words (its exponent would differ between CPUs)."""
    return f"below {ISTA_TOL:g}" if x <= ISTA_TOL else f"{fmt(x, 6)}"


def paired_difference(result: SoftThresholdResult, other: str) -> float:
    """d = acc(LATS) − acc(other): both arms share the seed's initial weights and batches."""
    return result.arms["lats"].test_accuracy - result.arms[other].test_accuracy


def _compare(result: SoftThresholdResult, other: str, premise_ok: bool, tag: str) -> Claim:
    lats, arm = result.arms["lats"], result.arms[other]
    d = paired_difference(result, other)
    head = f"{tag}: " if tag else ""
    return Claim(
        f"{head}LATS is at least as accurate as {NAMES[other]} at equal sparsity (within noise)",
        f"LATS − {other} = {d:+.3f} ({fmt(lats.test_accuracy, 3)} vs {fmt(arm.test_accuracy, 3)})",
        f"LATS − {other} ≥ −{NONINFERIORITY_MARGIN} (paired"
        + (f", {result.config['steps']} steps)" if tag else ")"),
        d >= -NONINFERIORITY_MARGIN,
        premise_ok=premise_ok,
    )


def density_gap(result: SoftThresholdResult, arm: str) -> float:
    """|achieved − target density| / target density for one arm (density = 1 − sparsity)."""
    target = 1.0 - result.config["target_sparsity"]
    return abs((1.0 - result.arms[arm].sparsity) - target) / target


def _rows(result: SoftThresholdResult, tag: str = "") -> list[Claim]:
    arms = result.arms
    compared = [k for k in arms if k != "fixed"]
    gaps = {k: density_gap(result, k) for k in compared}
    worst = max(gaps, key=gaps.get)
    equal = gaps[worst] <= DENSITY_TOL
    head = f"premise ({tag})" if tag else "premise"
    rows = [
        Claim(
            f"{head}: the compared schedules reach the same final sparsity",
            f"largest density gap: {worst} at sparsity {fmt(arms[worst].sparsity, 4)}, "
            f"{gaps[worst]:.0%} of the target density "
            f"{fmt(1 - result.config['target_sparsity'], 3)}",
            f"every compared arm's density within {DENSITY_TOL:.0%} of the target density",
            equal,
        )
    ]
    if "lats" in arms:
        rows += [_compare(result, k, equal, tag) for k in COUNTED if k in arms]
    return rows


def check_claims(result: SoftThresholdResult) -> ClaimReport:
    arms = result.arms
    rows = _rows(result)
    if result.one_factor is not None:
        short = result.one_factor
        share = Fraction(result.config["one_factor_steps"]).limit_denominator(20)
        rows += _rows(
            short,
            f"one factor: {short.config['target_sparsity']:.0%} sparsity at {share} of the steps",
        )
    ista = result.ista
    lam = implied_l1(ista["thresholds"], ista["lrs"])
    invariants = (
        Invariant(
            "soft-threshold SGD equals ISTA step by step while no weight enters the dead zone",
            f"largest gap {_tiny(max(ista['stable_gap']))}",
            max(ista["stable_gap"]) <= ISTA_TOL,
        ),
        Invariant(
            "with pruned weights, each step still equals an ISTA step on the active weights",
            f"largest one-step gap {_tiny(max(ista['sparse_one_step_gap']))}; whole-trajectory "
            f"gap {fmt(max(ista['sparse_gap']), 3)} (θ remembers pruned weights)",
            max(ista["sparse_one_step_gap"]) <= ISTA_TOL,
        ),
        Invariant(
            "LATS keeps the L1 coefficient λ = ΔD/η constant",
            f"λ from {fmt(min(lam), 4)} to {fmt(max(lam), 4)}",
            max(lam) - min(lam) <= 1e-9 * max(lam),
        ),
    )
    note = (
        "not counted: the fixed threshold from step 0"
        + (
            f" (test accuracy {fmt(arms['fixed'].test_accuracy, 3)}): applied to the initial "
            "weights it zeroes whole layers of this small MLP, so it is a reference, not a fair "
            "baseline"
            if "fixed" in arms
            else ""
        )
        + f"; non-inferiority margin {NONINFERIORITY_MARGIN}: one standard deviation of the paired "
        "difference LATS − GMP over seeds 0-4"
    )
    return ClaimReport(tuple(rows), note=note, invariants=invariants)


def _paired_by_seed(data: dict) -> tuple[dict[str, dict[str, float]], dict[str, set[str]]]:
    """baseline -> {seed: d} read back from a stored claims file (the rows' measured text), and
    the seeds skipped because the premise failed there (their d compares unequal sparsities)."""
    out: dict[str, dict[str, float]] = {}
    skipped: dict[str, set[str]] = {}  # "" (the main rows) or "@<steps>" -> seeds
    for row in data["claims"]:
        match = re.match(r"LATS − (\w+) ≥ [^(]*\(paired(?:, (\d+) steps)?\)", row["criterion"])
        if not match:
            continue
        arm = match.group(1)
        key = f"{arm}@{match.group(2)}" if match.group(2) else arm
        out[key] = {}
        for seed, v in row["per_seed"].items():
            if not v.get("premise_ok", True):
                skipped.setdefault(key.partition("@")[1] + (match.group(2) or ""), set()).add(seed)
                continue
            value = re.match(rf"LATS − {arm} = ([+-][0-9.]+)", v["measured"])
            if value is None:
                raise CompanionError(
                    f"row {row['claim']!r}, seed {seed}: cannot read d from the measured text "
                    f"{v['measured']!r} (expected 'LATS − {arm} = ±0.000 ...')"
                )
            out[key][seed] = float(value[1])
    return out, skipped


def paired_summary(preset: str = "notebook", claims_dir=None) -> str:
    """Mean ± standard deviation over seeds of the paired differences d = acc(LATS) − acc(arm),
    from the stored claims files (seeds 0-4 and, when stored, the held-out seeds), plus the
    allocation effect acc(gmp_global) − acc(gmp) = d(gmp) − d(gmp_global) at the same seeds.
    Seeds whose premise failed (unequal sparsities) are left out and counted under the table."""
    from companion.core.robustness import claims_path, load_claims, read_json

    files = [load_claims("soft_threshold_pruning", claims_dir, preset)]
    heldout = claims_path("soft_threshold_pruning", preset, True, claims_dir)
    if heldout.exists():
        files.append(read_json(heldout))
    columns, table, notes = [], {}, []
    for data in files:
        d, skipped = _paired_by_seed(data)
        groups = dict.fromkeys("".join(k.partition("@")[1:]) for k in d)
        ordered: dict[str, dict[str, float]] = {}
        for suffix in groups:  # each group's rows, then its allocation line
            ordered |= {k: v for k, v in d.items() if "".join(k.partition("@")[1:]) == suffix}
            gmp, glob = "gmp" + suffix, "gmp_global" + suffix
            if gmp in d and glob in d:
                ordered["allocation" + suffix] = {
                    s: d[gmp][s] - d[glob][s] for s in d[gmp] if s in d[glob]
                }
        d = ordered
        seeds = data["seeds"]
        column = f"seeds {seeds[0]}-{seeds[-1]}"
        columns.append(column)
        for suffix, left in skipped.items():
            rows = f" of the {suffix[1:]}-step rows" if suffix else ""
            notes.append(
                f"{column}: {len(left)} seed(s) left out{rows}, premise failed "
                f"(seed {', '.join(sorted(left, key=int))})"
            )
        for name, per_seed in d.items():
            values = list(per_seed.values())
            if not values:
                table.setdefault(name, {})[column] = "no seed with the premise"
                continue
            spread = statistics.stdev(values) if len(values) > 1 else 0.0
            below = sum(v < 0 for v in values)
            table.setdefault(name, {})[column] = (
                f"{statistics.mean(values):+.3f} ± {spread:.3f} (d < 0 at {below}/{len(values)})"
            )

    def label(name: str) -> str:
        base, _, steps = name.partition("@")
        text = "gmp_global − gmp" if base == "allocation" else f"LATS − {base}"
        return f"{text} ({steps} steps)" if steps else text

    width = max(len(label(k)) for k in table) + 2
    lines = [
        f"paired differences d, mean ± sd over seeds (seeds where d < 0), preset {preset!r}",
        (" " * width + "".join(f"{c:30s}" for c in columns)).rstrip(),
    ]
    for name, cells in table.items():
        row = "".join(f"{cells.get(c, '—'):30s}" for c in columns)
        lines.append((f"{label(name):{width}s}" + row).rstrip())
    return "\n".join(lines + notes)
