"""The experiment: three estimators of W₁ against POT's exact value as W shrinks.

One seed draws μ: ``n`` points of mass 1/n in ``n_blobs`` tight Gaussian blobs inside the unit
square, and one noise direction g_i per point. For each σ in ``sigmas``, ν_i = clip(μ_i + σ·g_i)
(same masses), so W(μ, ν) shrinks with σ while everything else stays fixed. Arms:

* ``exact``: ``ot.emd2`` on all n × n pairs (the ground truth, timed);
* ``plain``: the additive black box alone at ε (error ≤ ε by construction);
* ``control``: the same boosting code with the recursion collapsed to one level, i.e. the black
  box alone at ε/d, the accuracy the boosting uses inside: it removes only the hierarchy;
* ``boosted``: the boosting over a randomly shifted hierarchy, one estimate per shift
  (``n_shifts`` shifts; the paper's bound is an expectation over the shift);
* ``worst``: the same boosting, same shifts, with the worst black box the guarantee allows
  (:func:`~companion.papers.w1_boosting.method.worst_case_w1`: exact W + ε/d at every call).

Blobs make the points dense at the scale of the black box's grid: with one point per grid cell,
blind lifting inside a cell is exact and no additive error would show.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np

from companion.core import Config, Result
from companion.core import results as _results
from companion.errors import CompanionError
from companion.papers.w1_boosting.method import (
    additive_w1,
    boosted_w1,
    children_per_side,
    exact_w1,
    relative_error,
    worst_case_w1,
)


@dataclasses.dataclass(frozen=True)
class W1BoostingConfig(Config):
    """Point sets and estimator settings. Presets change sizes, never the algorithm."""

    n: int = 400  # points in μ and in ν, mass 1/n each
    dim: int = 2
    n_blobs: int = 8
    blob_std: float = 0.01
    sigmas: tuple[float, ...] = (1e-5, 3.5e-5, 1.2e-4, 4e-4, 1.4e-3, 5e-3, 1.7e-2)
    eps: float = 0.2  # the black box's additive error ε
    n_shifts: int = 10  # random shifts of the hierarchy per σ
    precision: str = "64-true"  # relative errors at W ≈ 1e-5 need float64

    def validate(self) -> None:
        if self.n < 2 or self.dim < 1 or self.n_blobs < 1 or self.n_shifts < 1:
            raise CompanionError("need n >= 2, dim >= 1, n_blobs >= 1, n_shifts >= 1")
        if not 0 < self.eps < 1 or self.blob_std <= 0:
            raise CompanionError(f"need 0 < eps < 1 and blob_std > 0, got {self.eps}")
        if not self.sigmas or any(s <= 0 for s in self.sigmas):
            raise CompanionError(f"sigmas must be positive, got {self.sigmas}")
        if self.precision != "64-true":
            raise CompanionError("this experiment runs in float64 (precision='64-true')")


PRESETS: dict[str, W1BoostingConfig] = {
    "smoke": W1BoostingConfig(n=120, sigmas=(1e-5, 1e-3, 1.7e-2), n_shifts=2),
    "notebook": W1BoostingConfig(),
    "full": W1BoostingConfig(
        n=2000, n_blobs=20,
        sigmas=(3e-6, 1e-5, 3.5e-5, 1.2e-4, 4e-4, 1.4e-3, 5e-3, 1.7e-2, 5e-2),
        n_shifts=20,
    ),
}  # fmt: skip


@dataclasses.dataclass
class SigmaRun(Result):
    """Every arm at one σ."""

    sigma: float
    exact: float
    plain: float
    control: float
    boosted: list[float]  # one estimate per shift
    worst: list[float]  # the same shifts with the worst-case black box
    calls: list[int]  # black-box calls per shift (problems with ≥ 2 supports a side)
    points: list[int]  # supports summed over those calls, per shift
    largest: list[int]  # supports of the largest call, per shift
    levels: list[int]  # levels of the hierarchy, per shift
    plain_points: int  # supports of the plain black box's one call
    control_points: int
    exact_seconds: float
    plain_seconds: float
    control_seconds: float
    boosted_seconds: float  # mean over shifts

    @property
    def boosted_mean(self) -> float:
        return float(np.mean(self.boosted))

    def rel(self, arm: str) -> float:
        """Relative error |Ŵ − W|/W; for ``boosted`` and ``worst`` the mean over shifts."""
        if arm in ("boosted", "worst"):
            values = getattr(self, arm)
            return float(np.mean([relative_error(v, self.exact) for v in values]))
        return relative_error(getattr(self, arm), self.exact)


@dataclasses.dataclass
class W1BoostingResult(Result):
    config: dict
    n: int
    dim: int
    eps: float
    k: int  # children per side of a cell
    distinct: int  # distinct support points of μ and ν together (at the smallest σ)
    runs: list[SigmaRun]

    @property
    def w(self) -> list[float]:
        return [r.exact for r in self.runs]

    def rel(self, arm: str) -> list[float]:
        return [r.rel(arm) for r in self.runs]


def make_mu(cfg: W1BoostingConfig) -> tuple[np.ndarray, np.ndarray]:
    """μ's points (n blob points in [0, 1]^d) and the noise directions g, from ``cfg.seed``."""
    rng = np.random.default_rng([cfg.seed, 2023])
    centres = rng.uniform(0.2, 0.8, (cfg.n_blobs, cfg.dim))
    labels = rng.integers(cfg.n_blobs, size=cfg.n)
    x = np.clip(centres[labels] + cfg.blob_std * rng.standard_normal((cfg.n, cfg.dim)), 0, 1)
    return x, rng.standard_normal((cfg.n, cfg.dim))


def make_nu(x: np.ndarray, g: np.ndarray, sigma: float) -> np.ndarray:
    """ν's points: μ's moved by σ·g and kept in the unit cube."""
    return np.clip(x + sigma * g, 0.0, 1.0)


def _timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def run_sigma(cfg: W1BoostingConfig, x: np.ndarray, g: np.ndarray, sigma: float) -> SigmaRun:
    y = make_nu(x, g, sigma)
    a = np.full(cfg.n, 1.0 / cfg.n)
    w, t_exact = _timed(exact_w1, a, x, a, y)
    plain, t_plain = _timed(additive_w1, a, x, a, y, cfg.eps)
    control, t_control = _timed(
        boosted_w1, a, x, a, y, cfg.eps, np.random.default_rng([cfg.seed, 0]), levels=1
    )
    boosted, seconds, worst = [], [], []
    for shift in range(cfg.n_shifts):
        est, t = _timed(boosted_w1, a, x, a, y, cfg.eps, np.random.default_rng([cfg.seed, shift]))
        boosted.append(est)
        seconds.append(t)
        rng = np.random.default_rng([cfg.seed, shift])
        worst.append(boosted_w1(a, x, a, y, cfg.eps, rng, black_box=worst_case_w1).value)
    return SigmaRun(
        sigma=sigma,
        exact=w,
        plain=plain.value,
        control=control.value,
        boosted=[e.value for e in boosted],
        worst=worst,
        calls=[e.calls for e in boosted],
        points=[e.points for e in boosted],
        largest=[e.largest for e in boosted],
        levels=[e.levels for e in boosted],
        plain_points=plain.points,
        control_points=control.points,
        exact_seconds=t_exact,
        plain_seconds=t_plain,
        control_seconds=t_control,
        boosted_seconds=float(np.mean(seconds)),
    )


def run(
    cfg: W1BoostingConfig, out_dir: str | Path | None = None, resume: bool = False
) -> W1BoostingResult:
    """Every arm at every σ of ``cfg.sigmas`` (largest W first in the result: sorted by σ
    descending), on one μ drawn from ``cfg.seed``.

    With ``out_dir`` each finished σ is saved (``sigma_<i>.json``); ``resume=True`` keeps the
    finished ones and runs the rest. The result is written to ``result.json``.
    """
    out = Path(out_dir) if out_dir is not None else None
    x, g = make_mu(cfg)
    runs = []
    for i, sigma in enumerate(sorted(cfg.sigmas, reverse=True)):
        path = out / f"sigma_{i}.json" if out else None
        if resume and path is not None and path.exists():
            runs.append(SigmaRun.from_dict(_results.read_json(path)))
            continue
        part = run_sigma(cfg, x, g, sigma)
        if path is not None:
            _results.write_json(path, part.to_dict())
        runs.append(part)
    y = make_nu(x, g, min(cfg.sigmas))
    distinct = len(np.unique(np.vstack([x, y]), axis=0))
    result = W1BoostingResult(
        config=cfg.to_dict(),
        n=cfg.n,
        dim=cfg.dim,
        eps=cfg.eps,
        k=children_per_side(cfg.eps, cfg.dim),
        distinct=distinct,
        runs=runs,
    )
    if out is not None:
        _results.write_json(out / "result.json", result.to_dict())
    return result
