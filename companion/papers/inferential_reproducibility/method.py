"""The paper's statistics: LMEMs of per-item scores, the GLRT, variance components, reliability.

Every model here is a linear mixed effects model (LMEM) of one evaluation score per
(training run, test item)::

    y = X β + b_item + Σ_f b_f + ε,   b_item ~ N(0, σ²_item), b_f ~ N(0, σ²_f), ε ~ N(0, σ²)

with fixed effects ``X β`` written as a patsy formula (``"score ~ system"``) and a random
intercept per test item plus one per *facet* ``f`` (a column that is constant within a run:
the seed, the learning rate, ...). The analyses of the paper and its official code:

* system comparison (official ``system_comparison``): H1 ``y ~ system + (1 | item)`` against
  H0 ``y ~ (1 | item)``, both fitted by maximum likelihood;
* GLRT: ``χ² = 2 (ℓ₁ − ℓ₀)``, ``df`` = difference in the number of fixed effects,
  ``p = 1 − F_χ²(χ²; df)``;
* conditional comparison: H1 adds a data property ``d`` and ``system × d``, H0 only main effects;
* variance component analysis (official ``icc``): ``y ~ 1 + (1 | item) + Σ_f (1 | f)`` fitted by
  REML; each component's share of the total ``σ²_item + Σ_f σ²_f + σ²``;
* reliability coefficient: the share of the *substantial* variance (between test items) in the
  total, ``σ²_item / (σ²_item + Σ_f σ²_f + σ²)`` ("ratio of substantial to total variance").

The fits use statsmodels' ``MixedLM``, which fits crossed random effects (items crossed with
seeds and learning rates) only as one big group with dense algebra: minutes for a few thousand
rows. Our designs are balanced (every run scores every test item once), so :func:`fit_lmem`
first changes the basis of the data with orthogonal matrices. Over the items (the item mean and
the Helmert contrasts between items), the item-mean rows carry every run-level effect and each
item contrast only an item intercept of its own; over the runs inside each item contrast, one
row carries that intercept and the others only residual noise. An orthogonal transform leaves
the likelihood, the REML criterion, the estimates and their standard errors unchanged, and the
crossed model becomes small independent groups that statsmodels fits in about a second. The
tests check the fits against statsmodels' direct crossed fit and against closed forms.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from companion.errors import CompanionError

ITEM = "item"
RUN_KEYS = ("system", "lr", "seed")
GTOL = 1e-8  # BFGS gradient tolerance; scipy's default 1e-5 stops early in flat directions
CHUNK = 32  # item-intercept rows per statsmodels group
RESIDUAL_ROWS = 1000  # residual-only rows per group (statsmodels forms n×n products in them)


@dataclasses.dataclass
class LMEMFit:
    """One fitted LMEM, as plain data."""

    formula: str
    facets: list[str]  # run-level random intercepts besides the item intercept
    reml: bool
    n_obs: int
    llf: float  # log-likelihood (ML) or REML criterion (REML)
    names: list[str]  # fixed-effect names, as patsy writes them
    params: list[float]
    bse: list[float]  # standard errors of the fixed effects
    cov: list[list[float]]  # covariance matrix of the fixed effects
    variances: dict[str, float]  # "item", each facet, and "residual"
    converged: bool
    warnings: list[str]

    @property
    def n_fixed(self) -> int:
        return len(self.params)

    def coef(self, name: str) -> float:
        return self.params[self.names.index(name)]

    def se(self, name: str) -> float:
        return self.bse[self.names.index(name)]


@dataclasses.dataclass
class GLRT:
    """Generalized likelihood ratio test of nested ML fits."""

    chi2: float
    df: int
    p: float


def glrt(llf0: float, llf1: float, df: int) -> GLRT:
    """``χ² = 2 (ℓ₁ − ℓ₀)``, ``p = 1 − F_χ²(χ²; df)``.

    As in the official code, the statistic is ``2 |ℓ₁ − ℓ₀|``: an ML optimizer can leave the
    larger model a hair below the smaller one when the extra effect is zero.
    """
    from scipy.stats import chi2 as chi2_dist

    if df < 1:
        raise CompanionError(f"the GLRT needs nested models with df >= 1, got df={df}")
    stat = 2.0 * abs(llf1 - llf0)
    return GLRT(chi2=float(stat), df=int(df), p=float(chi2_dist.sf(stat, df)))


def _orthonormal_with_mean(n: int) -> np.ndarray:
    """An n×n orthogonal matrix whose first row is 1/√n (Helmert contrasts below it)."""
    from scipy.linalg import helmert

    return helmert(n, full=True) if n > 1 else np.ones((1, 1))


def _layout(data: pd.DataFrame, run_keys: Sequence[str], facets: Sequence[str], item: str):
    """Item and run codes of every row; refuses designs that are not balanced items × runs."""
    missing = [c for c in (*run_keys, *facets, item) if c not in data.columns]
    if missing:
        raise CompanionError(f"column {missing[0]!r} not in the data; have: {list(data.columns)}")
    items = pd.Categorical(data[item]).codes
    runs = data.groupby(list(run_keys), sort=True, observed=True).ngroup().to_numpy()
    n_items, n_runs = items.max() + 1, runs.max() + 1
    if n_items < 2 or n_runs < 2:
        raise CompanionError(f"need at least 2 items and 2 runs, got {n_items} and {n_runs}")
    cells = np.zeros((n_items, n_runs), dtype=int)
    np.add.at(cells, (items, runs), 1)
    if not (cells == 1).all():
        raise CompanionError(
            "fit_lmem needs a balanced design: every run scores every item exactly once "
            f"({int((cells == 0).sum())} missing and {int((cells > 1).sum())} repeated cells)"
        )
    with_run = data.assign(_run=runs)
    for f in facets:
        if with_run.groupby("_run")[f].nunique().max() > 1:
            raise CompanionError(f"facet {f!r} changes within a run; facets must be run-level")
    run_table = with_run.drop_duplicates("_run").sort_values("_run")  # one row per run, in order
    return items, runs, n_items, n_runs, run_table


def fit_lmem(
    data: pd.DataFrame,
    formula: str,
    facets: Sequence[str] = (),
    reml: bool = False,
    item: str = ITEM,
    run_keys: Sequence[str] = RUN_KEYS,
) -> LMEMFit:
    """Fit ``formula + (1 | item) + Σ_f (1 | f)`` with statsmodels MixedLM (ML or REML).

    ``data`` holds one row per (run, item); runs are the distinct values of ``run_keys`` and
    every run must score every item once. ``facets`` are run-level columns that get a random
    intercept each (crossed with the items). The fit is exact: see the module docstring.
    """
    import patsy
    from statsmodels.regression.mixed_linear_model import MixedLM, VCSpec
    from threadpoolctl import threadpool_limits

    items, runs, n_items, n_runs, run_table = _layout(data, run_keys, facets, item)
    y, x = patsy.dmatrices(formula, data, return_type="dataframe")
    if len(y) != len(data):
        raise CompanionError("the formula dropped rows (missing values?); clean the data first")
    p = x.shape[1]
    # [item, run, (y, x...)]: the data as a balanced array
    cube = np.zeros((n_items, n_runs, 1 + p))
    cube[items, runs, 0] = y.to_numpy()[:, 0]
    cube[items, runs, 1:] = x.to_numpy()
    # item axis: row 0 is √I × the mean over items (it carries every run-level effect); rows
    # 1..I-1 are orthonormal item contrasts, free of run effects, each with an intercept of its
    # own (H b ~ N(0, σ²_item I) for orthogonal H). Run axis inside each contrast: row 0 holds
    # that intercept (variance R σ²_item + σ²), the other R-1 rows only the residual σ².
    cube = np.einsum("ki,irc->krc", _orthonormal_with_mean(n_items), cube)
    cube[1:] = np.einsum("sr,krc->ksc", _orthonormal_with_mean(n_runs), cube[1:])

    # statsmodels groups: the item-mean block; the item-intercept rows, CHUNK at a time (one
    # random intercept each); the residual-only rows, in pieces of RESIDUAL_ROWS
    blocks, item_design = [cube[0]], [np.ones((n_runs, 1))]
    for start in range(1, n_items, CHUNK):
        stop = min(start + CHUNK, n_items)
        blocks.append(cube[start:stop, 0])
        item_design.append(math.sqrt(n_runs) * np.eye(stop - start))
    residual_rows = cube[1:, 1:].reshape(-1, 1 + p)
    for start in range(0, len(residual_rows), RESIDUAL_ROWS):
        blocks.append(residual_rows[start : start + RESIDUAL_ROWS])
        item_design.append(np.zeros((len(blocks[-1]), 0)))
    sizes = [len(b) for b in blocks]

    names = [item]
    colnames = [[[f"{item}{j}" for j in range(m.shape[1])] for m in item_design]]
    mats = [item_design]
    for f in facets:
        codes = pd.Categorical(run_table[f]).codes
        design = np.zeros((n_runs, codes.max() + 1))
        design[np.arange(n_runs), codes] = math.sqrt(n_items)
        names.append(f)
        colnames.append([[f"{f}{j}" for j in range(design.shape[1])]] + [[]] * (len(sizes) - 1))
        mats.append([design] + [np.zeros((size, 0)) for size in sizes[1:]])

    endog = np.concatenate([b[:, 0] for b in blocks])
    exog = np.vstack([b[:, 1:] for b in blocks])
    groups = np.repeat(np.arange(len(blocks)), sizes)
    model = MixedLM(
        endog,
        exog,
        groups,
        exog_re=np.zeros((len(endog), 0)),
        exog_vc=VCSpec(names, colnames, mats),
    )
    with warnings.catch_warnings(record=True) as caught, threadpool_limits(1):
        # small dense blocks: one BLAS thread is faster than many, and stable on shared CPUs
        warnings.simplefilter("always")
        res = model.fit(reml=reml, gtol=GTOL)
    messages = sorted({str(w.message).split("\n")[0] for w in caught})
    cov = np.asarray(res.cov_params())[:p, :p]
    return LMEMFit(
        formula=formula,
        facets=list(facets),
        reml=reml,
        n_obs=len(data),
        llf=float(res.llf),
        names=list(x.columns),
        params=[float(v) for v in res.fe_params],
        bse=[float(v) for v in np.sqrt(np.diag(cov))],
        cov=cov.tolist(),
        variances={n: float(v) for n, v in zip(names, res.vcomp)} | {"residual": float(res.scale)},
        converged=bool(res.converged),
        warnings=messages,
    )


@dataclasses.dataclass
class Comparison:
    """H0 vs H1 by GLRT, with the tested coefficient (if one) and its effect size."""

    h0: LMEMFit
    h1: LMEMFit
    test: GLRT
    term: str | None  # the coefficient reported as ``estimate``
    estimate: float | None
    se: float | None
    effect_size: float | None  # estimate / residual SD of H1 (official code's g)


def compare(
    data: pd.DataFrame,
    h0: str,
    h1: str,
    facets: Sequence[str] = (),
    term: str | None = None,
    run_keys: Sequence[str] = RUN_KEYS,
) -> Comparison:
    """Fit nested models ``h0`` ⊂ ``h1`` by ML (never REML) and test them with the GLRT.

    REML maximizes the likelihood of residual contrasts that depend on the fixed-effect
    design, so REML criteria of models with different fixed effects are not comparable; the
    official code fits both models with ``REML = False`` for this reason.
    """
    fit0 = fit_lmem(data, h0, facets, reml=False, run_keys=run_keys)
    fit1 = fit_lmem(data, h1, facets, reml=False, run_keys=run_keys)
    test = glrt(fit0.llf, fit1.llf, fit1.n_fixed - fit0.n_fixed)
    estimate = se = size = None
    if term is not None:
        estimate, se = fit1.coef(term), fit1.se(term)
        size = estimate / math.sqrt(fit1.variances["residual"])
    return Comparison(fit0, fit1, test, term, estimate, se, size)


def variance_components(
    data: pd.DataFrame, facets: Sequence[str], run_keys: Sequence[str] = RUN_KEYS
) -> dict[str, float]:
    """VCA: REML fit of ``y ~ 1 + (1 | item) + Σ_f (1 | f)``; returns each variance σ²."""
    return fit_lmem(data, "score ~ 1", facets, reml=True, run_keys=run_keys).variances


def shares(components: dict[str, float]) -> dict[str, float]:
    """Each component's share of the total variance (official ``icc``'s ICC column / 100)."""
    total = sum(components.values())
    if total <= 0:
        raise CompanionError("the variance components sum to zero; nothing to share")
    return {k: v / total for k, v in components.items()}


def reliability(components: dict[str, float], substantial: str = ITEM) -> float:
    """Reliability coefficient: substantial (between-item) variance over total variance."""
    if substantial not in components:
        raise CompanionError(f"no component {substantial!r}; have: {', '.join(components)}")
    return shares(components)[substantial]
