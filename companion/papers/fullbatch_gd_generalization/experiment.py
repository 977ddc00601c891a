"""The experiment: full-batch GD (and SGD at the same step size and number of gradient
evaluations) on resampled training sets of n points, for n over a grid; along each run the
measured generalization gap, the measured replace-one stability, and the bounds computed from
the run's own path.

Arms (``ARMS``):

* ``gd_linear``: GD, squared loss on a linear model (convex, β = 1, not Lipschitz), constant
  η = ``eta`` / β (the paper's convex setting, η ≤ 1/β).
* ``sgd_linear``: SGD on the same problem, same η, one point per step in a fresh random order
  per set and pass, ``sgd_epochs`` passes (as many gradient evaluations as that many GD steps).
* ``gd_tanh``: GD on one tanh neuron (nonconvex), the decreasing η_t = 1/(β(t + 1)) of the
  paper's nonconvex result.

Every (arm, n) draws ``resamples`` training sets S and, for each, S^(1) (the first point
replaced by a fresh one: by exchangeability the average over i equals the value at one i) and
runs the algorithm on both, vectorised over the training sets. Finished (arm, n) parts are
saved one by one, so an interrupted run resumes after the last one.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np

from companion.core import Config, Result
from companion.core import results as core_results
from companion.errors import CompanionError, unknown
from companion.papers.fullbatch_gd_generalization.method import (
    Problem,
    generalization_bound,
    lipschitz_bound,
    stability_bound,
    step_sizes,
)

ARMS = ("gd_linear", "sgd_linear", "gd_tanh")
LABELS = {
    "gd_linear": "GD, linear (convex)",
    "sgd_linear": "SGD, linear (convex)",
    "gd_tanh": "GD, tanh neuron (nonconvex)",
}


@dataclasses.dataclass(frozen=True)
class FullBatchConfig(Config):
    """What to run. Sizes (resamples, grid, test points) change between presets; the problems,
    step sizes and bounds never do."""

    d: int = 20
    sigma: float = 0.5  # linear: Gaussian label noise sd
    tanh_sigma: float = 0.5  # tanh: label noise uniform on [−σ, σ]
    ns: tuple[int, ...] = (50, 100, 200, 400, 800)
    resamples: int = 200  # training sets per n (the expectation over S)
    steps: int = 64  # GD iterations T
    eta: float = 1.0  # constant step as a fraction of 1/β (the paper: η ≤ 1/β)
    sgd_epochs: int = 8
    tanh_steps: int = 32
    tanh_test: int = 4000  # the tanh neuron's x: uniform over a pool of this many points
    t_fit: tuple[int, ...] = (1, 2, 4, 8)  # early iterations where the T-slope is fitted
    arms: tuple[str, ...] = ARMS
    precision: str = "32-true"

    def validate(self) -> None:
        for a in self.arms:
            if a not in ARMS:
                raise unknown("arm", a, ARMS)
        if "gd_linear" not in self.arms:
            raise CompanionError("arms must include 'gd_linear' (the paper's convex setting)")
        if len(self.ns) < 2 or min(self.ns) < 2 or len(set(self.ns)) != len(self.ns):
            raise CompanionError(f"ns must hold at least two distinct sizes >= 2, got {self.ns}")
        if self.resamples < 2 or self.steps < 1 or self.sgd_epochs < 1 or self.tanh_steps < 1:
            raise CompanionError("resamples must be >= 2, steps and epochs >= 1")
        if not 0.0 < self.eta <= 1.0:
            raise CompanionError(f"eta is a fraction of 1/β in (0, 1], got {self.eta}")
        if self.d < 2 or self.sigma < 0 or self.tanh_sigma < 0 or self.tanh_test < 10:
            raise CompanionError("d >= 2, sigma >= 0 and tanh_test >= 10 are needed")
        if len(self.t_fit) < 2 or max(self.t_fit) > self.steps or min(self.t_fit) < 1:
            raise CompanionError(f"t_fit must hold >= 2 iterations in 1..steps, got {self.t_fit}")
        if self.precision not in ("32-true", "64-true"):
            raise CompanionError("precision must be 32-true or 64-true (NumPy runs)")

    @property
    def dtype(self):
        return np.float32 if self.precision == "32-true" else np.float64

    def problem(self, arm: str) -> Problem:
        if arm == "gd_tanh":
            return Problem("tanh", self.d, self.tanh_sigma)
        return Problem("linear", self.d, self.sigma)


PRESETS: dict[str, FullBatchConfig] = {
    "smoke": FullBatchConfig(
        ns=(50, 100, 200), resamples=40, steps=16, sgd_epochs=4, tanh_steps=8, tanh_test=1000
    ),
    "notebook": FullBatchConfig(),
    # a finer and wider grid, five times the resamples: the slopes' seed spread shrinks
    "full": FullBatchConfig(
        ns=(25, 50, 100, 200, 400, 800, 1600, 3200),
        resamples=1000,
        steps=128,
        sgd_epochs=32,
        tanh_steps=64,
        tanh_test=20000,
        t_fit=(1, 2, 4, 8, 16),
    ),
}


@dataclasses.dataclass
class Curve(Result):
    """One (arm, n): means over the training sets at every iteration t = 0..T (SGD: epoch)."""

    arm: str
    n: int
    beta: float
    etas: list[float]  # η_t per iteration (SGD: per epoch, its per-step η)
    train: list[float]  # E R_S(w_t)
    population: list[float]  # E R(w_t)
    gap: list[float]  # E[R(w_t) − R_S(w_t)], the measured generalization error
    gap_se: list[float]  # its standard error over the training sets
    stability: list[float]  # measured ε_stab(t) = E‖w_t − w_t^(1)‖²
    stability_bound: list[float]  # Bound 2 (GD only; empty for SGD)
    bound: list[float]  # Bound 1 with Bound 2: the path-dependent bound (GD only)
    bound_measured: list[float]  # Bound 1 with the measured ε_stab
    lipschitz: float  # the largest per-point gradient norm seen along every run
    lipschitz_bound: list[float]  # the control's bound, with that L (GD only)


@dataclasses.dataclass
class FullBatchResult(Result):
    config: dict
    curves: dict[str, Curve]  # by f"{arm}/{n}"
    seconds: float

    def curve(self, arm: str, n: int) -> Curve:
        return self.curves[f"{arm}/{n}"]

    @property
    def ns(self) -> list[int]:
        return list(self.config["ns"])

    def at(self, arm: str, field: str, t: int = -1) -> np.ndarray:
        """``field`` of ``arm`` at iteration ``t`` (default: the last), one value per n."""
        return np.array([getattr(self.curve(arm, n), field)[t] for n in self.ns])


def draw(problem: Problem, cfg: FullBatchConfig, n: int):
    """w* and the population (shared by every n of a seed), the training sets S
    (resamples × n) stacked over S^(1) (the same sets, first point replaced): 2·resamples sets.

    The tanh neuron's x is uniform over a pool of ``tanh_test`` points on the sphere, drawn once
    per seed: that pool *is* the distribution, so R(w) is exact (the noise is integrated out)."""
    base = np.random.default_rng([cfg.seed, 0])
    w_star = base.standard_normal(problem.d)
    pool = problem.sample_x(base, (cfg.tanh_test,)) if problem.kind == "tanh" else None
    rng = np.random.default_rng([cfg.seed, 1 + int(problem.kind == "tanh"), n])
    shape = (cfg.resamples, n + 1)
    if pool is None:
        x = problem.sample_x(rng, shape)
    else:
        x = pool[rng.integers(0, len(pool), shape)]
    u = x @ w_star
    noise = (
        rng.standard_normal(shape) if problem.kind == "linear" else rng.uniform(-1.0, 1.0, shape)
    )
    y = (u if problem.kind == "linear" else np.tanh(u)) + problem.sigma * noise
    # S = points 1..n; S^(1) = the fresh point 0, then points 2..n
    xs = np.concatenate([x[:, 1:], np.concatenate([x[:, :1], x[:, 2:]], axis=1)])
    ys = np.concatenate([y[:, 1:], np.concatenate([y[:, :1], y[:, 2:]], axis=1)])
    d = cfg.dtype
    return (
        w_star.astype(d),
        xs.astype(d),
        ys.astype(d),
        x[:, :1].astype(d),
        y[:, :1].astype(d),
        (None if pool is None else pool.astype(d)),
    )


def run_curve(cfg: FullBatchConfig, arm: str, n: int) -> dict:
    """Run one arm at one n on ``cfg.resamples`` training sets and their replace-one twins."""
    problem = cfg.problem(arm)
    w_star, x, y, x1, y1, pool = draw(problem, cfg, n)
    rng = np.random.default_rng([cfg.seed, 3, n])  # SGD's orders
    beta = problem.beta
    R = cfg.resamples
    w = np.zeros((2 * R, problem.d), cfg.dtype)  # rows :R run on S, rows R: on S^(1)
    rows = {k: [] for k in ("train", "population", "gap", "gap_se", "stability")}
    lip = [0.0]
    base = []  # each training set's gap at t = 0 (a control variate)

    def record(w):
        loss, norms = problem.losses_and_grad_norms(x[:R], y[:R], w[:R])
        rs = loss.astype(np.float64).mean(axis=1)
        r = problem.population_risk(w[:R], w_star, pool).astype(np.float64)
        # E[R(w_0) − R_S(w_0)] = 0 exactly (w_0 = 0 does not depend on S): each set's gap at
        # t = 0 is a control variate, subtracted with the variance-minimising coefficient
        g = r - rs
        if not rows["gap"]:
            base.append(g)
        g0 = base[0]
        if g0.var() > 0:
            g = g - np.cov(g, g0)[0, 1] / g0.var(ddof=1) * g0
        rows["train"].append(rs.mean())
        rows["population"].append(r.mean())
        rows["gap"].append(g.mean())
        rows["gap_se"].append(g.std(ddof=1) / np.sqrt(len(g)))
        diff = (w[:R] - w[R:]).astype(np.float64)
        rows["stability"].append(float(np.mean(np.sum(diff**2, -1))))
        seen = max(norms.max(), problem.grad_norm(x1, y1, w[:R]).max())
        lip[0] = max(lip[0], float(seen))

    record(w)
    if arm == "sgd_linear":
        eta = cfg.dtype(cfg.eta / beta)
        etas = np.full(cfg.sgd_epochs, float(eta))
        flat_x, flat_y = x.reshape(-1, problem.d), y.reshape(-1)
        for _ in range(cfg.sgd_epochs):
            # a fresh random order per set and pass, shared by the set and its twin
            order = np.argsort(rng.random((R, n)), axis=1)
            order = np.concatenate([order, order]) + n * np.arange(2 * R)[:, None]
            xo, yo = flat_x[order], flat_y[order]  # (2R, n, d): each set's points in its order
            for k in range(n):
                xi = xo[:, k]
                r = np.einsum("rd,rd->r", xi, w) - yo[:, k]
                w -= eta * r[:, None] * xi
            record(w)
    else:
        steps = cfg.tanh_steps if arm == "gd_tanh" else cfg.steps
        etas = step_sizes(cfg.eta / beta, steps, arm == "gd_tanh", beta)
        for eta in etas:
            # the same step on S and on S^(1): their distance is the replace-one stability
            w = w - cfg.dtype(eta) * problem.grad(x, y, w)
            record(w)
    out = {k: np.asarray(v) for k, v in rows.items()}
    gamma = 0.0 if problem.convex else beta
    bound_m = generalization_bound(beta, out["train"], out["stability"])
    if arm == "sgd_linear":
        sb = bound = lb = np.array([])
    else:
        sb = np.append(0.0, stability_bound(etas, n, beta, gamma, out["train"], out["population"]))
        bound = generalization_bound(beta, out["train"], sb)
        lb = np.append(0.0, lipschitz_bound(etas, n, beta, gamma, lip[0], out["train"]))
    r6 = lambda a: [float(f"{v:.6g}") for v in np.asarray(a, float)]  # noqa: E731
    return dict(
        arm=arm,
        n=n,
        beta=float(beta),
        etas=r6(etas),
        train=r6(out["train"]),
        population=r6(out["population"]),
        gap=r6(out["gap"]),
        gap_se=r6(out["gap_se"]),
        stability=r6(out["stability"]),
        stability_bound=r6(sb),
        bound=r6(bound),
        bound_measured=r6(bound_m),
        lipschitz=float(f"{lip[0]:.6g}"),
        lipschitz_bound=r6(lb),
    )


def run(
    cfg: FullBatchConfig, out_dir: str | Path | None = None, resume: bool = False
) -> FullBatchResult:
    """Every arm at every n; with ``out_dir`` each finished (arm, n) is written to
    ``<out_dir>/parts/<arm>-<n>.json`` (``resume=True`` keeps those) and the result to
    ``<out_dir>/result.json``."""
    start = time.perf_counter()
    curves = {}
    for arm in cfg.arms:
        for n in cfg.ns:
            path = Path(out_dir) / "parts" / f"{arm}-{n}.json" if out_dir is not None else None
            if resume and path is not None and path.exists():
                part = core_results.read_json(path)
            else:
                part = run_curve(cfg, arm, n)
                if path is not None:
                    core_results.write_json(path, part)
            curves[f"{arm}/{n}"] = Curve(**part)
    result = FullBatchResult(
        config=cfg.to_dict(), curves=curves, seconds=round(time.perf_counter() - start, 2)
    )
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
