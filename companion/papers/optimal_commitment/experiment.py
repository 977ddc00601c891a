"""The experiment: the paper's Table 3 on simulated adaptive trials with two subgroups.

Environments (true subgroup means) are drawn from the prior, in folds of ``chunk_envs``; on each
fold every policy, and Bayes-OCP at every threshold of the sweep, runs on the same environments
with common random numbers (``simulate``). The Oracle-RCT row knows the true means and runs the
best fixed trial (or none). Folds are saved one by one, so an interrupted run resumes after the
last finished fold.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np

from companion.core import Config, Result
from companion.core import results as core_results
from companion.errors import CompanionError, unknown
from companion.papers.optimal_commitment.method import POLICIES, Trial
from companion.papers.optimal_commitment.simulate import (
    METRICS,
    draw_environments,
    oracle_rct,
    simulate,
)

TYPES = ("green", "amber", "red")  # the Oracle-RCT's best choice: everybody, a subgroup, none
LABELS = {
    "rct": "RCT",
    "adaptive_enrichment": "adaptive enrichment",
    "futility_stopping": "futility stopping",
    "greedy_bayes_ocp": "greedy Bayes-OCP",
    "bayes_ocp": "Bayes-OCP",
    "oracle_rct": "Oracle-RCT",
}


@dataclasses.dataclass(frozen=True)
class OptimalCommitmentConfig(Config):
    """What to simulate. Sizes (environments, posterior samples) change between presets; the
    trial (horizon, test, costs, rewards, prior) and the policies never do."""

    n_envs: int = 400
    chunk_envs: int = 400  # environments per fold (saved one by one; the paper: 5 × 1,000)
    n_samples: int = 200  # posterior samples per decision (the paper: 1,000)
    horizon: int = 1200
    test_horizon: int = 600
    alpha: float = 0.05
    prevalence: tuple[float, ...] = (0.5, 0.5)
    reward_scale: float = 1000.0
    exponent: float = 0.1
    prior_mean: float = 0.1
    prior_count: int = 10
    threshold: float = 0.8  # Bayes-OCP's and futility stopping's (official policy_threshold)
    policies: tuple[str, ...] = POLICIES
    sweep: tuple[float, ...] = (0.5, 0.65, 0.9, 0.95)  # extra Bayes-OCP thresholds

    def validate(self) -> None:
        for p in self.policies:
            if p not in POLICIES:
                raise unknown("policy", p, POLICIES)
        if "bayes_ocp" not in self.policies:
            raise CompanionError("policies must include 'bayes_ocp' (the paper's method)")
        for t in (self.threshold, *self.sweep):
            if not 0.0 < t <= 1.0:
                raise CompanionError(f"thresholds must lie in (0, 1], got {t}")
        if self.n_envs < 1 or self.chunk_envs < 1 or self.n_envs % self.chunk_envs:
            raise CompanionError(
                f"n_envs ({self.n_envs}) must be a positive multiple of chunk_envs "
                f"({self.chunk_envs})"
            )
        if self.n_samples < 1:
            raise CompanionError(f"n_samples must be >= 1, got {self.n_samples}")
        if self.test_horizon < 2 or self.test_horizon % 2 or self.test_horizon > self.horizon:
            raise CompanionError(
                f"test_horizon must be even, >= 2 and <= horizon ({self.horizon}), "
                f"got {self.test_horizon}"
            )
        if len(self.prevalence) != 2 or min(self.prevalence) <= 0:
            raise CompanionError(
                f"prevalence must be two positive shares (two subgroups), got {self.prevalence}"
            )
        if abs(sum(self.prevalence) - 1.0) > 1e-9:
            raise CompanionError(f"prevalence must sum to 1, got {self.prevalence}")
        if not 0.0 < self.alpha < 0.5 or self.prior_count < 1:
            raise CompanionError(
                f"alpha must lie in (0, 0.5) and prior_count be >= 1, got {self.alpha}, "
                f"{self.prior_count}"
            )

    @property
    def trial(self) -> Trial:
        return Trial(
            prevalence=tuple(self.prevalence),
            horizon=self.horizon,
            test_horizon=self.test_horizon,
            alpha=self.alpha,
            reward_scale=self.reward_scale,
            exponent=self.exponent,
            prior_mean=self.prior_mean,
            prior_count=self.prior_count,
        )

    def arms(self) -> list[tuple[str, float]]:
        """(policy, threshold) of every simulated arm: the policies at ``threshold``, then
        Bayes-OCP at each sweep threshold."""
        return [(p, self.threshold) for p in self.policies] + [
            ("bayes_ocp", t) for t in self.sweep if t != self.threshold
        ]


def arm_name(policy: str, threshold: float, cfg: OptimalCommitmentConfig) -> str:
    """``bayes_ocp`` at the preset's threshold, ``bayes_ocp@0.95`` in the sweep."""
    if policy == "bayes_ocp" and threshold != cfg.threshold:
        return f"bayes_ocp@{threshold:g}"
    return policy


PRESETS: dict[str, OptimalCommitmentConfig] = {
    "smoke": OptimalCommitmentConfig(n_envs=40, chunk_envs=40, n_samples=50, sweep=(0.5, 0.95)),
    "notebook": OptimalCommitmentConfig(),
    # The paper's Table 3: 5,000 environments (5 folds of 1,000), 1,000 posterior samples.
    "full": OptimalCommitmentConfig(n_envs=5000, chunk_envs=1000, n_samples=1000),
}


@dataclasses.dataclass
class OptimalCommitmentResult(Result):
    """Per-environment outcomes of every arm, so any table, split or paired difference can be
    computed afterwards. ``arms[name][metric]``: one value per environment (metrics:
    ``simulate.METRICS``); ``fold``: the fold of each environment."""

    config: dict
    mu: list[list[float]]  # [E][2]: true subgroup means
    env_type: list[int]  # [E]: 0 green, 1 amber, 2 red (Oracle-RCT's best choice)
    oracle_utility: list[float]  # [E]: expected utility of the Oracle-RCT
    oracle_success: list[float]  # [E]: its success probability
    fold: list[int]  # [E]
    arms: dict[str, dict[str, list[float]]]
    seconds: float

    def values(self, arm: str, metric: str, kind: str = "all") -> np.ndarray:
        """One metric of one arm per environment, for all environments or one type."""
        if arm == "oracle_rct":  # the Oracle-RCT has an expected utility and success only
            oracle = {"utility": self.oracle_utility, "success": self.oracle_success}
            v = np.asarray(oracle[metric], dtype=float)
        else:
            v = np.asarray(self.arms[arm][metric], dtype=float)
        return v if kind == "all" else v[np.asarray(self.env_type) == TYPES.index(kind)]

    def mean(self, arm: str, metric: str, kind: str = "all") -> float:
        v = self.values(arm, metric, kind)
        return float(v.mean()) if len(v) else float("nan")

    def type_share(self, kind: str) -> float:
        return float(np.mean(np.asarray(self.env_type) == TYPES.index(kind)))


def run_fold(cfg: OptimalCommitmentConfig, fold: int) -> dict:
    """Simulate one fold: its environments drawn from the prior with a generator seeded by
    (seed, fold), every arm on them. Returns a JSON-friendly dict (rounded for storage)."""
    trial = cfg.trial
    rng = np.random.default_rng([cfg.seed, fold])
    mu = draw_environments(trial, cfg.chunk_envs, rng)
    oracle = oracle_rct(trial, mu)
    arms = cfg.arms()
    out = simulate(trial, arms, mu, cfg.n_samples, rng)
    return {
        "mu": np.round(mu, 6).tolist(),
        "env_type": oracle["type"].astype(int).tolist(),
        "oracle_utility": np.round(oracle["utility"], 4).tolist(),
        "oracle_success": np.round(oracle["success"], 6).tolist(),
        "arms": {
            arm_name(p, t, cfg): {m: np.round(out[m][i], 4).tolist() for m in METRICS}
            for i, (p, t) in enumerate(arms)
        },
    }


def run(
    cfg: OptimalCommitmentConfig, out_dir: str | Path | None = None, resume: bool = False
) -> OptimalCommitmentResult:
    """Simulate every fold; with ``out_dir`` each finished fold is written to
    ``<out_dir>/folds/fold-<k>.json`` (``resume=True`` keeps those) and the result to
    ``<out_dir>/result.json``."""
    start = time.perf_counter()
    folds = []
    for k in range(cfg.n_envs // cfg.chunk_envs):
        path = Path(out_dir) / "folds" / f"fold-{k}.json" if out_dir is not None else None
        if resume and path is not None and path.exists():
            folds.append(core_results.read_json(path))
            continue
        folds.append(run_fold(cfg, k))
        if path is not None:
            core_results.write_json(path, folds[-1])
    names = list(folds[0]["arms"])
    result = OptimalCommitmentResult(
        config=cfg.to_dict(),
        mu=[m for f in folds for m in f["mu"]],
        env_type=[t for f in folds for t in f["env_type"]],
        oracle_utility=[u for f in folds for u in f["oracle_utility"]],
        oracle_success=[u for f in folds for u in f["oracle_success"]],
        fold=[k for k, f in enumerate(folds) for _ in f["mu"]],
        arms={a: {m: [v for f in folds for v in f["arms"][a][m]] for m in METRICS} for a in names},
        seconds=round(time.perf_counter() - start, 2),
    )
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result


def summary_table(result: OptimalCommitmentResult, arms: list[str] | None = None) -> str:
    """The paper's Table 3 in text: per arm, over all environments, utility, FWER, switches,
    success rate and patients enrolled, then the utility within each environment type."""
    arms = arms or [a for a in result.arms if "@" not in a]
    kinds = ", ".join(f"{k} {100 * result.type_share(k):.0f}%" for k in TYPES)
    head = (
        f"{'':22s}{'utility':>8s}{'FWER%':>7s}{'switch':>7s}{'succ%':>7s}{'time':>6s}"
        f"{'green':>8s}{'amber':>8s}{'red':>8s}"
    )
    lines = [f"{len(result.env_type)} environments ({kinds})", head]
    for a in ["oracle_rct", *arms]:
        name = LABELS.get(a.split("@")[0], a) + (f" τ={a.split('@')[1]}" if "@" in a else "")
        per_type = "".join(f"{result.mean(a, 'utility', k):8.1f}" for k in TYPES)
        if a == "oracle_rct":
            lines.append(
                f"{name:22s}{result.mean(a, 'utility'):8.1f}{'':7s}{'':7s}"
                f"{100 * result.mean(a, 'success'):7.1f}{'':6s}{per_type}"
            )
            continue
        lines.append(
            f"{name:22s}{result.mean(a, 'utility'):8.1f}{100 * result.mean(a, 'fwer'):7.2f}"
            f"{result.mean(a, 'switches'):7.2f}{100 * result.mean(a, 'success'):7.1f}"
            f"{result.mean(a, 'time'):6.0f}{per_type}"
        )
    return "\n".join(lines)
