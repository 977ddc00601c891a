"""Predict-and-Search (Han et al., ICLR 2023): the paper's objects, in plain torch and SciPy.

A binary MILP ``min c·x s.t. A x ≤ b, x ∈ {0,1}^n`` is read as a bipartite graph (constraints on
one side, variables on the other, an edge per non-zero ``A_ij``). A GNN predicts for each variable
the probability ``p_i`` that it is 1 in a good solution (Sec. 4.1), trained with the
energy-weighted cross-entropy over a pool of solutions (Eq. 4–6). The search (Sec. 4.2, Eq. 7)
fixes nothing: it takes the ``k1`` variables with the largest ``p`` as 1 and the ``k0`` with the
smallest as 0, giving a partial assignment ``x̂`` on a set ``X``, and asks the solver for the best
solution within the trust region ``‖x_X − x̂_X‖₁ ≤ Δ``. ``Δ = 0`` is hard fixing.

The official code builds the graph with torch-geometric (``helper.py``, ``GCN.py``); torch-geometric
is not used here: the half-convolutions are written with ``index_add_``. The solver is HiGHS
through ``scipy.optimize.milp`` (the official code calls Gurobi or SCIP).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import sys

import numpy as np
import torch
from scipy.optimize import Bounds, LinearConstraint, milp
from torch import nn


@dataclasses.dataclass
class Instance:
    """``min c·x  s.t.  A x ≤ b,  x ∈ {0, 1}^n`` (every variable binary, every row ``≤``)."""

    c: np.ndarray  # [n]
    A: np.ndarray  # [m, n]
    b: np.ndarray  # [m]
    name: str = ""

    @property
    def n(self) -> int:
        return len(self.c)

    def objective(self, x: np.ndarray) -> float:
        return float(self.c @ x)

    def feasible(self, x: np.ndarray, tol: float = 1e-6) -> bool:
        x = np.asarray(x, dtype=float)
        binary = np.all(np.abs(x - np.round(x)) <= tol)
        return bool(binary and np.all(self.A @ x <= self.b + tol))


# ---------------------------------------------------------------- the bipartite graph


def _minmax(f: np.ndarray) -> np.ndarray:
    """Min-max normalisation per column, over one instance (the official ``helper.py``)."""
    lo, hi = f.min(axis=0, keepdims=True), f.max(axis=0, keepdims=True)
    return (f - lo) / np.where(hi > lo, hi - lo, 1.0)


def bipartite_graph(inst: Instance) -> dict[str, torch.Tensor]:
    """The graph of Sec. 4.1 (features as in the official ``helper.py``, without its objective
    node): constraint nodes ``[mean coefficient, degree, rhs, sense]``, variable nodes
    ``[objective coefficient, mean coefficient, degree, max coefficient, min coefficient,
    is-binary]``, each column min-max normalised over the instance; one edge per non-zero
    ``A_ij`` with feature 1. Returns float32 tensors and ``edges`` ``[2, E]`` (constraint,
    variable).
    """
    A = np.asarray(inst.A, dtype=float)
    rows, cols = np.nonzero(A)
    nz = A != 0
    deg_c, deg_v = nz.sum(1), nz.sum(0)
    mean_c = np.where(deg_c > 0, A.sum(1) / np.maximum(deg_c, 1), 0.0)
    mean_v = np.where(deg_v > 0, A.sum(0) / np.maximum(deg_v, 1), 0.0)
    big = np.where(nz, A, -np.inf).max(0)
    small = np.where(nz, A, np.inf).min(0)
    cons = np.stack([mean_c, deg_c, inst.b, np.ones(len(inst.b))], 1)
    var = np.stack(
        [
            inst.c,
            mean_v,
            deg_v,
            np.where(np.isfinite(big), big, 0.0),
            np.where(np.isfinite(small), small, 0.0),
            np.ones(inst.n),
        ],
        1,
    )
    return {
        "cons": torch.tensor(_minmax(cons), dtype=torch.float32),
        "var": torch.tensor(_minmax(var), dtype=torch.float32),
        "edges": torch.tensor(np.stack([rows, cols]), dtype=torch.long),
        "edge_attr": torch.ones(len(rows), 1),
    }


# ---------------------------------------------------------------- the GNN (official GCN.py)


class HalfConvolution(nn.Module):
    """One Gasse-style half-convolution ``left → right`` (``BipartiteGraphConvolution`` in the
    official ``GCN.py``): a message per edge ``MLP(R(right_i) + E(e_ij) + L(left_j))`` with the
    MLP ``LayerNorm → ReLU → Linear``, summed at ``right_i`` (``index_add_``), LayerNorm, then
    ``MLP([aggregate, right_i])``. As in the official code (torch-geometric's ``_i`` is the
    receiving node), the linear map with a bias acts on the receiving side ``right``, the one
    without on the sending side ``left``."""

    def __init__(self, dim: int):
        super().__init__()
        self.right = nn.Linear(dim, dim)  # feature_module_left, applied to node_features_i
        self.edge = nn.Linear(1, dim, bias=False)
        self.left = nn.Linear(dim, dim, bias=False)  # feature_module_right, node_features_j
        self.message = nn.Sequential(nn.LayerNorm(dim), nn.ReLU(), nn.Linear(dim, dim))
        self.norm = nn.LayerNorm(dim)
        self.out = nn.Sequential(nn.Linear(2 * dim, dim), nn.ReLU(), nn.Linear(dim, dim))

    def forward(self, left, edge_index, edge_attr, right):
        src, dst = edge_index  # message from left node src to right node dst
        msg = self.message(self.right(right)[dst] + self.edge(edge_attr) + self.left(left)[src])
        agg = torch.zeros_like(right).index_add_(0, dst, msg)
        return self.out(torch.cat([self.norm(agg), right], dim=-1))


class BipartiteGNN(nn.Module):
    """The official ``GNNPolicy``: embed both sides (the edge features through a LayerNorm), two
    rounds of variable → constraint and constraint → variable half-convolutions, an MLP to one
    logit per variable (``p = σ(logit)``)."""

    def __init__(self, cons_dim: int = 4, var_dim: int = 6, dim: int = 64):
        super().__init__()

        def embed(k):
            return nn.Sequential(
                nn.LayerNorm(k), nn.Linear(k, dim), nn.ReLU(), nn.Linear(dim, dim), nn.ReLU()
            )

        self.cons_embed, self.var_embed = embed(cons_dim), embed(var_dim)
        self.edge_embed = nn.LayerNorm(1)  # the official edge embedding: a LayerNorm only
        self.v_to_c = nn.ModuleList([HalfConvolution(dim) for _ in range(2)])
        self.c_to_v = nn.ModuleList([HalfConvolution(dim) for _ in range(2)])
        self.head = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, 1, bias=False))

    def forward(self, graph: dict[str, torch.Tensor]) -> torch.Tensor:
        c, v = self.cons_embed(graph["cons"]), self.var_embed(graph["var"])
        e, ea = graph["edges"], self.edge_embed(graph["edge_attr"])
        reverse = e.flip(0)  # (variable, constraint)
        for to_c, to_v in zip(self.v_to_c, self.c_to_v):
            c = to_c(v, reverse, ea, c)
            v = to_v(c, e, ea, v)
        return self.head(v).squeeze(-1)


# ---------------------------------------------------------------- the loss (Eq. 4-6)


def energy_weights(objs: torch.Tensor, tau: float) -> torch.Tensor:
    """``w_j = exp(−E(x^j)/τ) / Σ_k exp(−E(x^k)/τ)`` with the energy ``E`` = the objective of a
    minimisation (Eq. 4–5): better solutions in the pool weigh more."""
    return torch.softmax(-objs / tau, dim=0)


def energy_weighted_bce(
    logits: torch.Tensor, pool: torch.Tensor, objs: torch.Tensor, tau: float
) -> torch.Tensor:
    """Eq. (6), the official ``trainPredictModel.py``: ``Σ_j w_j Σ_i BCE(p_i, x_i^j)`` over the
    pool ``[J, n]`` of solutions, summed over the binary variables."""
    w = energy_weights(objs, tau)
    p = torch.sigmoid(logits).clamp(1e-7, 1 - 1e-7)
    bce = -(pool * torch.log(p) + (1 - pool) * torch.log(1 - p))  # [J, n]
    return (w * bce.sum(1)).sum()


# ---------------------------------------------------------------- the search (Eq. 7)


def partial_assignment(scores: np.ndarray, k0: int, k1: int) -> tuple[np.ndarray, np.ndarray]:
    """The set ``X`` and ``x̂`` on it: the ``k1`` largest scores set to 1 and the ``k0``
    smallest to 0 (Sec. 4.2). Ties are broken by index; ``k0 + k1 ≤ n`` is required (the
    official code would silently overwrite)."""
    n = len(scores)
    if k0 < 0 or k1 < 0 or k0 + k1 > n:
        raise ValueError(f"need 0 <= k0, k1 and k0 + k1 <= n, got {k0}, {k1}, n={n}")
    order = np.argsort(scores, kind="stable")
    ones, zeros = order[n - k1 :] if k1 else order[:0], order[:k0]
    idx = np.concatenate([zeros, ones])
    xhat = np.concatenate([np.zeros(k0), np.ones(k1)])
    return idx, xhat


def trust_region_row(n: int, idx: np.ndarray, xhat: np.ndarray) -> tuple[np.ndarray, float]:
    """``‖x_X − x̂_X‖₁ ≤ Δ`` for binaries as one linear row ``a·x ≤ Δ − |{x̂ = 1}|``: ``|x_i −
    x̂_i|`` is ``x_i`` where ``x̂_i = 0`` and ``1 − x_i`` where ``x̂_i = 1``. (The official code
    introduces ``α_i ≥ ±(x_i − x̂_i)``; for binaries both give the same feasible set.)"""
    a = np.zeros(n)
    a[idx] = np.where(xhat == 1, -1.0, 1.0)
    return a, -float((xhat == 1).sum())


@contextlib.contextmanager
def _quiet():
    """Silence HiGHS: with ``disp=False`` it still writes some lines (``transformNewInteger...``)
    from C to file descriptor 1, which would land in notebook outputs."""
    try:
        sys.stdout.flush()
        fd = os.dup(1)
    except (OSError, ValueError):
        yield
        return
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 1)
        try:
            yield
        finally:
            os.dup2(fd, 1)
            os.close(fd)


@dataclasses.dataclass
class SolveResult:
    objective: float | None  # None: no feasible solution found within the budget
    x: np.ndarray | None
    nodes: int
    status: int


def solve(
    inst: Instance,
    node_limit: int | None = None,
    extra: list[tuple[np.ndarray, float, float]] = (),
    presolve: bool = True,
) -> SolveResult:
    """HiGHS (``scipy.optimize.milp``) on ``inst`` plus ``extra`` rows ``lo ≤ a·x ≤ hi``, with a
    deterministic budget of ``node_limit`` branch-and-bound nodes (None: to optimality)."""
    cons = [LinearConstraint(inst.A, -np.inf, inst.b)]
    for a, lo, hi in extra:
        cons.append(LinearConstraint(np.atleast_2d(a), lo, hi))
    options = {"disp": False, "presolve": presolve}
    if node_limit is not None:
        options["node_limit"] = int(node_limit)
    with _quiet():
        res = milp(
            inst.c,
            constraints=cons,
            integrality=np.ones(inst.n),
            bounds=Bounds(0, 1),
            options=options,
        )
    if res.x is None:
        return SolveResult(None, None, int(getattr(res, "mip_node_count", 0) or 0), res.status)
    x = np.round(res.x)
    return SolveResult(inst.objective(x), x, int(res.mip_node_count or 0), res.status)


def predict_and_search(
    inst: Instance, scores: np.ndarray, k0: int, k1: int, delta: int, node_limit: int
) -> SolveResult:
    """Eq. (7): the best solution the solver finds within ``node_limit`` nodes inside the trust
    region ``‖x_X − x̂_X‖₁ ≤ Δ`` around the prediction ``scores`` (``Δ = 0``: hard fixing)."""
    idx, xhat = partial_assignment(scores, k0, k1)
    a, rhs = trust_region_row(inst.n, idx, xhat)
    return solve(inst, node_limit, extra=[(a, -np.inf, delta + rhs)])


def primal_gap(objective: float | None, best: float) -> float:
    """``|obj − best| / max(|obj|, |best|)`` (the paper's primal gap; 0 when both are 0); a run
    that found no feasible solution counts as 1."""
    if objective is None:
        return 1.0
    denom = max(abs(objective), abs(best))
    return 0.0 if denom == 0 else min(1.0, abs(objective - best) / denom)


def solution_pool(
    inst: Instance, size: int, node_limit: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """A pool of up to ``size`` good solutions ``[J, n]`` and their objectives: solve, then add a
    no-good cut ``Σ_{x*=0} x_i + Σ_{x*=1} (1 − x_i) ≥ 1`` excluding each solution found and solve
    again (a stand-in for Gurobi's solution pool, PoolSearchMode 2, in the official labelling)."""
    xs, objs, extra = [], [], []
    for _ in range(size):
        r = solve(inst, node_limit, extra=extra)
        if r.x is None:
            break
        xs.append(r.x)
        objs.append(r.objective)
        a = np.where(r.x == 1, -1.0, 1.0)
        extra = [*extra, (a, 1.0 - r.x.sum(), np.inf)]
    return np.array(xs).reshape(len(xs), inst.n), np.array(objs)


def brute_force(inst: Instance, extra_l1: tuple | None = None) -> tuple[float, np.ndarray]:
    """The optimum by enumeration of all ``2^n`` points (tests only, ``n ≤ 16``); ``extra_l1 =
    (idx, xhat, Δ)`` adds the trust region written as ``Σ |x_i − x̂_i| ≤ Δ`` directly."""
    best, arg = np.inf, None
    for bits in itertools.product((0.0, 1.0), repeat=inst.n):
        x = np.array(bits)
        if not inst.feasible(x):
            continue
        if extra_l1 is not None:
            idx, xhat, delta = extra_l1
            if np.abs(x[idx] - xhat).sum() > delta:
                continue
        if inst.objective(x) < best:
            best, arg = inst.objective(x), x
    return best, arg
