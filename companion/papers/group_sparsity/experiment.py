"""The experiment: group-sparse regression solved by four estimators at several sample sizes.

Data follow the official ``Simulation`` (``src/group_model.py``) and the ``group_vs_sparse``
notebook: a Rademacher design ``X ∈ {±1}^(m×p)``, ``w*`` equal to ``signal`` on the first
``active_groups`` groups of size ``group_size`` and zero elsewhere, Gaussian noise of standard
deviation ``noise``. For every sample size m and every draw we fit

* ``grouped``: the diagonally grouped network trained by Algorithm 2 (no penalty),
* ``grouped1``: the control that removes only the grouping: the same network and Algorithm 2
  with groups of size 1 (``w_i = u_i² v_i``, ``v_i = ±1``; the paper's own sparse-regression
  special case), which should behave like the diagonal network,
* ``diagonal``: the ungrouped diagonal network ``w = a² − b²``, same initial scale and rate,
* ``linear``: the plain linear model by gradient descent from zero,
* ``group_lasso``: the group lasso (the paper's tuned baseline; here the ``group-lasso``
  package, FISTA), its penalty chosen by ``lasso_folds``-fold cross-validation on each data
  set's own training samples along a path of ``lasso_path`` values from the smallest penalty
  that zeroes every group down to 1% of it,
* ``lasso`` (not in the default methods): scikit-learn's ``LassoCV``, which ignores the groups,

and measure the estimation error ‖ŵ − w*‖² and the support margin (smallest true-group norm
over largest other-group norm) at the end of training. The data set (``trace_m``, draw 0) has its
weights recorded during training for the "groups switch on" figure, and the data set
(``switch_m``, draw 0), where every support entry of the ungrouped networks switches on, has its
support entries recorded too (the switch-on times of all entries; no extra training).

All data sets train at once: each network is a batch of independent networks, one per data set
(``method.batched_risk``), trained under the core Fabric loop (``fit``) with one full-batch step
per epoch. Every finished network (all data sets) is saved and kept on resume; an interrupted
one continues from its checkpoint.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import numpy as np
import torch

from companion.core import Config, Every, Result, fit, launch_or_resume, seed_everything
from companion.errors import CompanionError, unknown
from companion.papers.group_sparsity.method import (
    DiagonalLinear,
    GroupedGD,
    GroupedLinear,
    PlainLinear,
    batched_risk,
    estimation_error,
    group_norms,
    support_margin,
)

METHODS = ("grouped", "grouped1", "diagonal", "linear", "group_lasso", "lasso")
DEFAULT_METHODS = ("grouped", "grouped1", "diagonal", "linear", "group_lasso")
NETWORKS = ("grouped", "grouped1", "diagonal", "linear")
GROUPED = ("grouped", "grouped1")  # trained by Algorithm 2 (grouped1: groups of size 1)


@dataclasses.dataclass(frozen=True)
class GroupSparsityConfig(Config):
    """What to fit and how. Sizes change between presets; the algorithm never does."""

    p: int = 500
    group_size: int = 4
    active_groups: int = 4
    signal: float = 1.0
    noise: float = 0.5
    sample_sizes: tuple[int, ...] = (40, 60, 80, 100, 150)
    draws: int = 2  # data sets per sample size
    methods: tuple[str, ...] = DEFAULT_METHODS
    epochs: int = 1500
    lr: float = 0.01
    init: float = 1e-6
    tol: float = 3e-2  # Algorithm 2's switching threshold on the relative change of u
    depth: int = 2
    algorithm: str = "alg2"
    lasso_folds: int = 3  # cross-validation folds of the (group) lasso's penalty
    lasso_path: int = 6  # group lasso penalties tried, geometric from λ_max to λ_max/100
    lasso_iter: int = 100  # FISTA iterations per penalty (warm-started along the path)
    trace_m: int = 100  # sample size of the recorded training run (figure; the paper's m)
    # a second recorded data set (its support entries only), where every support entry switches
    # on; 0: the largest sample size of the grid (150 at the notebook preset)
    switch_m: int = 0
    compare_m: int = 80  # the sample size of the error comparison (below the paper's m)
    record_every: int = 10
    checkpoint_every: int = 0

    def validate(self) -> None:
        for m in self.methods:
            if m not in METHODS:
                raise unknown("method", m, METHODS)
        if self.algorithm not in ("alg1", "alg2"):
            raise unknown("algorithm", self.algorithm, ("alg1", "alg2"))
        if self.p % self.group_size:
            raise CompanionError(f"p = {self.p} is not divisible by group_size = {self.group_size}")
        if not 0 < self.active_groups < self.p // self.group_size:
            raise CompanionError(
                f"active_groups must be between 1 and {self.p // self.group_size - 1}, "
                f"got {self.active_groups}"
            )
        if self.epochs < 1 or self.lr <= 0 or self.draws < 1 or self.record_every < 1:
            raise CompanionError(
                f"epochs, lr, draws and record_every must be positive, got epochs={self.epochs}, "
                f"lr={self.lr}, draws={self.draws}, record_every={self.record_every}"
            )
        for name in ("trace_m", "compare_m", "switch_m"):
            if getattr(self, name) not in self.sample_sizes and (
                name != "switch_m" or self.switch_m
            ):
                raise CompanionError(
                    f"{name} = {getattr(self, name)} is not one of sample_sizes {self.sample_sizes}"
                )
        if not self.sample_sizes or min(self.sample_sizes) < 2 * self.lasso_folds:
            raise CompanionError(
                f"sample_sizes must be at least {2 * self.lasso_folds}, got {self.sample_sizes}"
            )


PRESETS: dict[str, GroupSparsityConfig] = {
    # smoke leaves the group lasso out: cross-validating it costs seconds
    "smoke": GroupSparsityConfig(
        p=200,
        sample_sizes=(40, 80),
        draws=1,
        epochs=300,
        trace_m=80,
        compare_m=80,
        methods=("grouped", "grouped1", "diagonal", "linear"),
    ),
    "notebook": GroupSparsityConfig(),
    # The paper's scale: its Comparisons notebook averages 30 data sets per setting.
    "full": GroupSparsityConfig(
        sample_sizes=(40, 50, 60, 70, 80, 100, 120, 150, 200),
        draws=30,
        epochs=5000,
        record_every=10,
        checkpoint_every=1000,
    ),
}


@dataclasses.dataclass
class ArmResult(Result):
    """One estimator on every data set (index d ↔ ``data_sets[d]`` of the result)."""

    method: str
    error: list[float]  # ‖ŵ − w*‖² per data set
    margin: list[float]  # min true-group norm / max other-group norm per data set
    switch_epoch: list[int]  # Algorithm 2's switch per data set (−1: never or not grouped)
    record_epochs: list[int]
    error_curves: list[list[float]]  # [data set][record]: ‖w − w*‖² during training
    trace: dict[str, list[list[float]]]  # trace data set: name -> [[value per record]]
    seconds: float
    # Algorithm 2's networks: max over data sets and groups of |‖v_l‖ − 1| at the end, so that
    # ‖w_l‖ = |u_l|^D (one scale per group, by construction); nan for the other estimators
    unit_norm_gap: float = float("nan")


@dataclasses.dataclass
class GroupSparsityResult(Result):
    config: dict
    data_sets: list[list[int]]  # [m, draw] per data set
    arms: dict[str, ArmResult]

    def by_m(self, method: str, field: str = "error") -> dict[int, list[float]]:
        """Sample size -> the values of ``field`` ("error" or "margin") over draws."""
        out: dict[int, list[float]] = {}
        for (m, _), value in zip(self.data_sets, getattr(self.arms[method], field)):
            out.setdefault(m, []).append(value)
        return out

    @property
    def trace_index(self) -> int:
        return self.data_sets.index([self.config["trace_m"], 0])


def switch_size(config: dict) -> int:
    """The sample size of the second recorded data set (``switch_m``; 0: the grid's largest)."""
    return int(config.get("switch_m") or max(config["sample_sizes"]))


def data_sets(cfg: GroupSparsityConfig) -> list[list[int]]:
    return [[m, d] for m in cfg.sample_sizes for d in range(cfg.draws)]


def make_data(cfg: GroupSparsityConfig, m: int, draw: int):
    """(X, y, w*) for one data set; the generator depends on (seed, m, draw) only."""
    rng = np.random.default_rng([cfg.seed, m, draw])
    X = rng.choice([-1.0, 1.0], size=(m, cfg.p))
    w_star = np.zeros(cfg.p)
    w_star[: cfg.active_groups * cfg.group_size] = cfg.signal
    y = X @ w_star + cfg.noise * rng.standard_normal(m)
    as32 = lambda a: torch.tensor(a, dtype=torch.float32)  # noqa: E731
    return as32(X), as32(y), as32(w_star)


def stacked_data(cfg: GroupSparsityConfig):
    """(X (B, m_max, p), y (B, m_max), m (B,), w* (p,)): designs padded with zero rows."""
    sets = [make_data(cfg, m, d) for m, d in data_sets(cfg)]
    m_max = max(cfg.sample_sizes)
    X = torch.zeros(len(sets), m_max, cfg.p)
    y = torch.zeros(len(sets), m_max)
    for b, (Xb, yb, _) in enumerate(sets):
        X[b, : len(Xb)], y[b, : len(yb)] = Xb, yb
    m = torch.tensor([float(m) for m, _ in data_sets(cfg)])
    return X, y, m, sets[0][2]


def build(cfg: GroupSparsityConfig, method: str, batch: int):
    """(model, optimizer) for one of the three networks, ``batch`` copies."""
    if method in GROUPED:
        size = cfg.group_size if method == "grouped" else 1
        net = GroupedLinear(batch, cfg.p, size, cfg.depth, cfg.init)
        return net, GroupedGD(
            [net.u, net.V], lr=cfg.lr, depth=cfg.depth, tol=cfg.tol, algorithm=cfg.algorithm
        )
    if method == "diagonal":
        net = DiagonalLinear(batch, cfg.p, cfg.depth, cfg.init)
    elif method == "linear":
        net = PlainLinear(batch, cfg.p)
    else:
        raise unknown("network", method, NETWORKS)
    return net, torch.optim.SGD(net.parameters(), lr=cfg.lr)


def trace_metrics(cfg: GroupSparsityConfig, w: torch.Tensor, w_star: torch.Tensor) -> dict:
    """What the training figure needs from one ``w``: support entries, group norms, the
    largest entry and group norm off the support."""
    k = cfg.active_groups * cfg.group_size
    norms = group_norms(w, cfg.group_size)
    out = {f"w{i}": float(w[i]) for i in range(k)}
    out.update({f"norm{g}": float(norms[g]) for g in range(cfg.active_groups)})
    out["max_off"] = float(w[k:].abs().max())
    out["max_off_norm"] = float(norms[cfg.active_groups :].max())
    return out


def train_network(
    fabric, cfg: GroupSparsityConfig, method: str, folder: Path | None, resume: bool
) -> ArmResult:
    """All data sets at once under ``fit``. Every ``record_every`` epochs the errors of all data
    sets and :func:`trace_metrics` of the trace data set go into the history, which the
    checkpoint keeps, so a resumed run records everything."""
    seed_everything(cfg.seed)
    X, y, m, w_star = stacked_data(cfg)
    sets = data_sets(cfg)
    trace = sets.index([cfg.trace_m, 0])
    switch_set = sets.index([switch_size(cfg.to_dict()), 0])
    k = cfg.active_groups * cfg.group_size
    net, optimizer = build(cfg, method, len(sets))
    model, optimizer = fabric.setup(net, optimizer)
    X, y, m, w_star = fabric.to_device((X, y, m, w_star))

    def callback(step: int, _model) -> dict[str, float]:
        W = net.weights().detach().float()
        errors = (W - w_star).pow(2).sum(1).tolist()
        out = {f"error{b}": e for b, e in enumerate(errors)}
        out.update(trace_metrics(cfg, W[trace], w_star))
        out.update({f"s{i}": float(W[switch_set, i]) for i in range(k)})
        return out

    start = time.perf_counter()
    history = fit(
        fabric,
        model,
        optimizer,
        lambda step: None,
        lambda model, batch: (batched_risk(X, y, net.weights(), m), {}),
        steps=cfg.epochs,
        callbacks=[Every(cfg.record_every, callback)],
        log_every=max(1, cfg.epochs // 10),
        checkpoint=folder / "checkpoint.ckpt" if folder else None,
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        stop_on_nonfinite=False,  # one diverging data set must not stop the others
        desc=method,
    )
    seconds = time.perf_counter() - start
    W = net.weights().detach().float().cpu()
    w_star = w_star.cpu()
    support = torch.arange(cfg.active_groups)
    switch = optimizer.optimizer.switch_steps() if method in GROUPED else [-1] * len(sets)
    gap = float((net.V.detach().norm(dim=-1) - 1).abs().max()) if method in GROUPED else math.nan

    def series(name):
        return [round(v, 6) for v in history.values(name)]

    return ArmResult(
        method=method,
        error=[estimation_error(w, w_star) for w in W],
        margin=[support_margin(w, support, cfg.group_size) for w in W],
        switch_epoch=switch,
        record_epochs=[s + 1 for s in history.steps("max_off")],
        error_curves=[series(f"error{b}") for b in range(len(sets))],
        trace={
            "support_entries": [series(f"w{i}") for i in range(k)],
            "support_entries_switch_m": [series(f"s{i}") for i in range(k)],
            "group_norms": [series(f"norm{g}") for g in range(cfg.active_groups)],
            "max_off_support": [series("max_off")],
            "max_off_group_norm": [series("max_off_norm")],
        },
        seconds=seconds,
        unit_norm_gap=gap,
    )


def fit_lasso(cfg: GroupSparsityConfig, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """scikit-learn's ``LassoCV`` (no intercept: the data have none)."""
    from sklearn.linear_model import LassoCV

    model = LassoCV(cv=cfg.lasso_folds, fit_intercept=False, max_iter=5000)
    model.fit(X.double().numpy(), y.double().numpy())
    return torch.tensor(model.coef_, dtype=torch.float32)


def _group_lasso_path(cfg: GroupSparsityConfig, X: np.ndarray, y: np.ndarray, penalties):
    """Coefficients along a decreasing penalty path, each fit warm-started from the last."""
    import warnings

    from group_lasso import GroupLasso
    from sklearn.exceptions import ConvergenceWarning

    groups = np.repeat(np.arange(cfg.p // cfg.group_size), cfg.group_size)
    model = GroupLasso(
        groups=groups,
        group_reg=penalties[0],
        l1_reg=0.0,
        fit_intercept=False,
        n_iter=cfg.lasso_iter,
        tol=1e-3,
        warm_start=True,
        supress_warning=True,
    )
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for penalty in penalties:
            model.set_params(group_reg=penalty)
            model.fit(X, y)
            out.append(model.coef_.ravel().copy())
    return out


def fit_group_lasso(cfg: GroupSparsityConfig, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Group lasso, ½·mean squared error + λ Σ_l √s ‖w_l‖, with λ chosen by K-fold
    cross-validation on the training samples (held-out squared error summed over folds)."""
    from sklearn.model_selection import KFold

    X, y = X.double().numpy(), y.double().numpy()
    m, s = X.shape[0], cfg.group_size
    lam_max = np.linalg.norm((X.T @ y).reshape(-1, s), axis=1).max() / m / np.sqrt(s)
    penalties = lam_max * np.geomspace(1.0, 0.01, cfg.lasso_path)
    cv_error = np.zeros(len(penalties))
    folds = KFold(cfg.lasso_folds, shuffle=True, random_state=cfg.seed)
    for train, held in folds.split(X):
        for i, coef in enumerate(_group_lasso_path(cfg, X[train], y[train], penalties)):
            cv_error[i] += ((X[held] @ coef - y[held]) ** 2).sum()
    best = int(cv_error.argmin())
    coef = _group_lasso_path(cfg, X, y, penalties[: best + 1])[-1]
    return torch.tensor(coef, dtype=torch.float32)


def run_lasso(fabric, cfg: GroupSparsityConfig, method: str = "lasso") -> ArmResult:
    start = time.perf_counter()
    support = torch.arange(cfg.active_groups)
    fit_one = fit_group_lasso if method == "group_lasso" else fit_lasso
    error, margin = [], []
    for m, d in data_sets(cfg):
        X, y, w_star = make_data(cfg, m, d)
        w = fit_one(cfg, X, y)
        error.append(estimation_error(w, w_star))
        margin.append(support_margin(w, support, cfg.group_size))
    return ArmResult(
        method=method,
        error=error,
        margin=margin,
        switch_epoch=[-1] * len(error),
        record_epochs=[],
        error_curves=[],
        trace={},
        seconds=time.perf_counter() - start,
    )


def run(
    cfg: GroupSparsityConfig, out_dir: str | Path | None = None, resume: bool = False
) -> GroupSparsityResult:
    """Fit every method on ``draws`` data sets per sample size.

    With ``out_dir`` every finished method is saved (``<out_dir>/<method>/arm.json``) and the
    networks checkpoint every ``checkpoint_every`` epochs; ``resume=True`` keeps finished
    methods and continues an interrupted one from its checkpoint.
    """
    if not isinstance(cfg, GroupSparsityConfig):
        raise CompanionError("run() takes a GroupSparsityConfig; use PRESETS[name]")
    root = Path(out_dir) if out_dir is not None else None
    arms = {}
    for method in cfg.methods:
        folder = root / method if root else None
        if method in ("lasso", "group_lasso"):
            arms[method] = launch_or_resume(cfg, folder, resume, ArmResult, run_lasso, cfg, method)
        else:
            arms[method] = launch_or_resume(
                cfg, folder, resume, ArmResult, train_network, cfg, method, folder, resume
            )
    result = GroupSparsityResult(
        config=dataclasses.asdict(cfg), data_sets=data_sets(cfg), arms=arms
    )
    if root is not None:
        result.save(root / "result.json")
    return result
