"""The experiment: label small MILPs, train the GNN, choose (k0, k1, Δ) on validation instances,
then give every arm the same node budget on the test instances.

Instances: maximum independent set on Erdős–Rényi graphs ``G(n_vars, edge_p)`` (the paper's IS
family on random graphs), written as a minimisation with one row per edge; read from the shipped
labelled bank, generated from ``seed``, or read from ``*.mps`` files in ``data_dir``. Labels: a
pool of ``pool_size`` solutions per instance from HiGHS with no-good cuts (``label_nodes`` nodes
each); the best of the pool is the best known solution for the primal gap.

Arms, each with ``node_limit`` branch-and-bound nodes of HiGHS (the paper's x-axis is seconds;
ours is nodes, a budget that does not depend on the CPU):

* ``plain``: HiGHS on the instance (default settings: presolve, cuts and heuristics on, for
  every arm alike);
* ``fixing``: hard fixing of the GNN's partial assignment (``Δ = 0``), ``k`` chosen on validation;
* ``search``: Predict-and-Search, ``(k, Δ)`` chosen on validation (``k0 = k1 = k``);
* ``random``: the control, the same search with the same ``(k, Δ)`` around random scores whose
  ``k`` ones can be 1 together (``random_scores``): no learned information, no infeasibility.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import torch

from companion.core import Config, Result
from companion.core import results as _results
from companion.errors import CompanionError, unknown
from companion.papers.predict_and_search.method import (
    BipartiteGNN,
    Instance,
    bipartite_graph,
    energy_weighted_bce,
    partial_assignment,
    predict_and_search,
    primal_gap,
    solution_pool,
    solve,
)
from companion.papers.predict_and_search.mps import read_folder

ARMS = ("plain", "fixing", "search", "random")
SOURCES = ("bank", "generate", "mps")


@dataclasses.dataclass(frozen=True)
class PredictAndSearchConfig(Config):
    """Sizes change between presets; the method never does."""

    source: str = "bank"  # bank: the shipped labelled instances | generate | mps (data_dir)
    data_dir: str = ""  # source=mps: a folder of *.mps files
    n_vars: int = 80  # vertices of the graph (binaries); source=bank: must be the bank's
    edge_p: float = 0.1  # edge probability of G(n, p); source=bank: must be the bank's
    n_train: int = 40
    n_val: int = 4
    n_test: int = 8
    pool_size: int = 3  # solutions per training instance (no-good cuts); bank: the bank's
    label_nodes: int = 200  # node budget of each labelling solve; bank: the bank's
    node_limit: int = 1  # the budget of every arm at test
    k_shares: tuple[float, ...] = (0.1, 0.2)  # k0 = k1 = share × n, chosen on validation
    deltas: tuple[int, ...] = (5, 10)  # Δ candidates for the search, chosen on validation
    tau: float = 0.01  # temperature of Eq. (5) relative to |best objective| of the instance
    epochs: int = 30
    lr: float = 1e-3
    dim: int = 32

    def validate(self) -> None:
        if self.source not in SOURCES:
            raise unknown("source", self.source, SOURCES)
        if self.n_vars < 4 or not 0 < self.edge_p < 1:
            raise CompanionError("need n_vars >= 4 and 0 < edge_p < 1")
        if min(self.n_train, self.n_val, self.n_test) < 1:
            raise CompanionError("need at least one train, validation and test instance")
        if not self.k_shares or any(not 0 < s <= 0.5 for s in self.k_shares):
            raise CompanionError(f"k_shares must be in (0, 0.5], got {self.k_shares}")
        if not self.deltas or any(d < 1 for d in self.deltas):
            raise CompanionError(
                f"deltas must be >= 1 (Δ = 0 is the fixing arm), got {self.deltas}"
            )
        if self.pool_size < 1 or self.label_nodes < 1 or self.node_limit < 1 or self.tau <= 0:
            raise CompanionError("pool_size, label_nodes, node_limit >= 1 and tau > 0")


PRESETS: dict[str, PredictAndSearchConfig] = {
    "smoke": PredictAndSearchConfig(n_train=8, n_val=1, n_test=2, epochs=4, k_shares=(0.1,),
                                    deltas=(5,)),
    "notebook": PredictAndSearchConfig(),
    # Instances read from *.mps files (the official benchmarks are MPS/LP files); larger
    # budgets for the labels, as the official labelling runs Gurobi for an hour.
    "full": PredictAndSearchConfig(source="mps", data_dir="data/predict_and_search/mps",
                                   n_vars=1500, edge_p=0.004, n_train=400,
                                   n_val=50, n_test=100, pool_size=10, label_nodes=5000,
                                   epochs=100, dim=64, k_shares=(0.1, 0.2, 0.3, 0.4),
                                   deltas=(5, 10, 15, 30)),
}  # fmt: skip


@dataclasses.dataclass
class Arm(Result):
    """One arm on the test instances."""

    k: int
    delta: int
    objectives: list[float | None]
    gaps: list[float]


@dataclasses.dataclass
class PredictAndSearchResult(Result):
    config: dict
    best_known: list[float]  # test instances
    arms: dict[str, Arm]
    agreement: float  # share of x̂ (GNN) equal to the best known solution, test, chosen k
    chance: float  # the same for random scores, in expectation
    train_loss: list[float]
    test_scores: list[list[float]]  # the GNN's p on each test instance
    val_table: dict[str, float]  # "k,Δ" -> mean validation gap of the search (Δ = 0: fixing)

    def mean_gap(self, arm: str) -> float:
        return float(np.mean(self.arms[arm].gaps))


# ---------------------------------------------------------------- data


def make_knapsack(n: int, m: int, rng: np.random.Generator, name: str = "") -> Instance:
    """Multi-dimensional knapsack as a minimisation: weights in 1..99, capacities half the row
    sums, profits correlated with the mean weight (correlated instances are the hard ones)."""
    W = rng.integers(1, 100, (m, n)).astype(float)
    c = -(W.mean(0) + rng.integers(0, 30, n))
    return Instance(c=c, A=W, b=np.floor(W.sum(1) / 2), name=name)


def make_independent_set(n: int, p: float, rng: np.random.Generator, name: str = "") -> Instance:
    """Maximum independent set on an Erdős–Rényi graph ``G(n, p)`` (the paper's IS family, with
    random graphs as in the brief), written as a minimisation with unit weights (``c = −1``) and
    one row ``x_u + x_v ≤ 1`` per edge. The edge formulation has a weak LP relaxation (every
    ``x = 1/2`` is feasible), so a solver with a small budget stays far from the optimum."""
    iu, ju = np.triu_indices(n, 1)
    keep = rng.random(len(iu)) < p
    u, v = iu[keep], ju[keep]
    A = np.zeros((len(u), n))
    A[np.arange(len(u)), u] = 1.0
    A[np.arange(len(u)), v] = 1.0
    return Instance(c=-np.ones(n), A=A, b=np.ones(len(u)), name=name)


def make_instances(cfg: PredictAndSearchConfig) -> list[Instance]:
    total = cfg.n_train + cfg.n_val + cfg.n_test
    if cfg.source == "mps":
        insts = read_folder(cfg.data_dir)
        if len(insts) < total:
            raise CompanionError(f"{cfg.data_dir} has {len(insts)} instances, need {total}")
        order = np.random.default_rng([cfg.seed, 5]).permutation(len(insts))[:total]
        return [insts[i] for i in order]
    rng = np.random.default_rng([cfg.seed, 2023])
    return [make_independent_set(cfg.n_vars, cfg.edge_p, rng, f"mis{i}") for i in range(total)]


@dataclasses.dataclass
class Labelled(Result):
    """Pools of every instance (train, validation, test in that order)."""

    pools: list[list[list[float]]]
    objs: list[list[float]]


def label(insts: list[Instance], cfg: PredictAndSearchConfig, n_pool: int) -> Labelled:
    """The first ``n_pool`` instances get a pool of ``pool_size`` solutions, the others only the
    best solution found with ``label_nodes`` nodes (the best known for the gap)."""
    pools, objs = [], []
    for i, inst in enumerate(insts):
        xs, ob = solution_pool(inst, cfg.pool_size if i < n_pool else 1, cfg.label_nodes)
        pools.append(xs.tolist())
        objs.append(ob.tolist())
    return Labelled(pools=pools, objs=objs)


def from_bank(cfg: PredictAndSearchConfig) -> tuple[list[Instance], Labelled]:
    """Train, validation and test instances drawn (by ``seed``) from the shipped labelled bank
    (``bank.py``); ``n_vars``, ``edge_p``, ``pool_size`` and ``label_nodes`` must be the bank's."""
    from companion.papers.predict_and_search import bank

    made = dict(n_vars=bank.N_VARS, edge_p=bank.EDGE_P, pool_size=bank.POOL_SIZE,
                label_nodes=bank.LABEL_NODES)  # fmt: skip
    wrong = {k: getattr(cfg, k) for k, v in made.items() if getattr(cfg, k) != v}
    if wrong:
        raise CompanionError(f"the bank was made with {made}; this config has {wrong}")
    insts, pools, objs = bank.load()
    total = cfg.n_train + cfg.n_val + cfg.n_test
    if total > len(insts):
        raise CompanionError(f"the bank has {len(insts)} instances, need {total}")
    order = np.random.default_rng([cfg.seed, 5]).permutation(len(insts))[:total]
    lab = Labelled(pools=[pools[i] for i in order], objs=[objs[i] for i in order])
    return [insts[i] for i in order], lab


# ---------------------------------------------------------------- training


def train(model, graphs, pools, objs, cfg: PredictAndSearchConfig) -> list[float]:
    """Adam on Eq. (6), one instance per step (the official batch is 4 graphs), ``epochs`` passes;
    ``τ`` is ``tau × |best objective|`` of each instance, so the weights do not depend on the
    scale."""
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    rng = np.random.default_rng([cfg.seed, 3])
    losses = []
    for _ in range(cfg.epochs):
        total = 0.0
        for i in rng.permutation(len(graphs)):
            pool = torch.tensor(pools[i], dtype=torch.float32)
            ob = torch.tensor(objs[i], dtype=torch.float32)
            tau = cfg.tau * float(ob.abs().min().clamp_min(1.0))
            loss = energy_weighted_bce(model(graphs[i]), pool, ob, tau)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach())
        losses.append(total / len(graphs))
    return losses


def random_scores(inst: Instance, k1: int, rng: np.random.Generator) -> np.ndarray:
    """The control's scores: uniform random, except that the ``k1`` largest are a random set of
    variables that can be 1 *together* (added greedily in random order while ``A x ≤ b`` holds
    with every other variable at 0: on an independent set, a random independent set). Random
    ones on a graph are adjacent with probability ``edge_p`` per pair, so without this the
    trust region around ``k1`` random ones is often empty and the control would measure
    infeasibility rather than the absence of learned information. The GNN's own ``x̂`` gets no
    such repair, so the control is, if anything, favoured."""
    s = rng.random(inst.n)
    A = np.asarray(inst.A, dtype=float)
    load, chosen = np.zeros(A.shape[0]), 0
    for i in rng.permutation(inst.n):
        if chosen == k1:
            break
        if np.all(load + A[:, i] <= inst.b + 1e-9):
            load += A[:, i]
            s[i] = 2.0 + rng.random()  # above every other score
            chosen += 1
    return s


def predict(model, graphs) -> list[np.ndarray]:
    with torch.no_grad():
        return [torch.sigmoid(model(g)).numpy().astype(float) for g in graphs]


# ---------------------------------------------------------------- the arms


def _objectives(insts, scores, k, delta, node_limit) -> list[float | None]:
    return [
        predict_and_search(inst, s, k, k, delta, node_limit).objective
        for inst, s in zip(insts, scores)
    ]


def best_known(pool_objs: list[list[float]], *runs: list[float | None]) -> list[float]:
    """Per instance, the best objective of its labelled pool and of every run on it (the paper's
    primal gap is measured against the best solution any method found, so an arm that beats the
    pool scores 0, not a gap)."""
    best = []
    for i, objs in enumerate(pool_objs):
        found = [r[i] for r in runs if r[i] is not None]
        best.append(float(min([*objs, *found])))
    return best


def run(
    cfg: PredictAndSearchConfig, out_dir: str | Path | None = None, resume: bool = False
) -> PredictAndSearchResult:
    """Label, train, choose ``(k, Δ)`` on validation, evaluate every arm on the test instances.
    With ``out_dir`` the labels are saved (``labels.json``) and reused with ``resume=True``."""
    torch.manual_seed(cfg.seed)
    out = Path(out_dir) if out_dir is not None else None
    n_tr, n_va = cfg.n_train, cfg.n_val
    path = out / "labels.json" if out else None
    if cfg.source == "bank":
        insts, lab = from_bank(cfg)
    elif resume and path is not None and path.exists():
        insts = make_instances(cfg)
        lab = Labelled.from_dict(_results.read_json(path))
    else:
        insts = make_instances(cfg)
        lab = label(insts, cfg, n_tr)
        if path is not None:
            _results.write_json(path, lab.to_dict())
    graphs = [bipartite_graph(i) for i in insts]
    model = BipartiteGNN(dim=cfg.dim)
    losses = train(model, graphs[:n_tr], lab.pools[:n_tr], lab.objs[:n_tr], cfg)
    scores = predict(model, graphs[n_tr:])
    val, test = slice(0, n_va), slice(n_va, None)
    v_insts, t_insts = insts[n_tr : n_tr + n_va], insts[n_tr + n_va :]

    candidates = {}  # "k,Δ" -> objectives on the validation instances
    for share in cfg.k_shares:
        k = max(1, int(round(share * insts[0].n)))
        for delta in (0, *cfg.deltas):
            candidates[f"{k},{delta}"] = _objectives(v_insts, scores[val], k, delta, cfg.node_limit)
    v_best = best_known(lab.objs[n_tr : n_tr + n_va], *candidates.values())
    table = {
        key: float(np.mean([primal_gap(o, b) for o, b in zip(objs, v_best)]))
        for key, objs in candidates.items()
    }

    def pick(fixing: bool) -> tuple[int, int]:
        keys = [key for key in table if (key.split(",")[1] == "0") == fixing]
        key = min(keys, key=lambda s: (table[s], s))  # ties: the first in text order
        k, d = key.split(",")
        return int(k), int(d)

    kf, _ = pick(True)
    k, d = pick(False)
    rng = np.random.default_rng([cfg.seed, 17])
    rand = [random_scores(i, k, rng) for i in t_insts]
    objs = {
        "plain": [solve(i, cfg.node_limit).objective for i in t_insts],
        "fixing": _objectives(t_insts, scores[test], kf, 0, cfg.node_limit),
        "search": _objectives(t_insts, scores[test], k, d, cfg.node_limit),
        "random": _objectives(t_insts, rand, k, d, cfg.node_limit),
    }
    t_best = best_known(lab.objs[n_tr + n_va :], *objs.values())
    settings = {"plain": (0, 0), "fixing": (kf, 0), "search": (k, d), "random": (k, d)}
    arms = {
        arm: Arm(*settings[arm], objs[arm], [primal_gap(o, b) for o, b in zip(objs[arm], t_best)])
        for arm in ARMS
    }

    agree, chance = [], []
    for s, pool, objs in zip(scores[test], lab.pools[n_tr + n_va :], lab.objs[n_tr + n_va :]):
        idx, xhat = partial_assignment(s, k, k)
        x = np.array(pool[int(np.argmin(objs))])
        agree.append(float((x[idx] == xhat).mean()))
        q = x.mean()  # a random x̂ agrees with probability q on its ones and 1 − q on its zeros
        chance.append(0.5 * q + 0.5 * (1 - q))
    result = PredictAndSearchResult(
        config=cfg.to_dict(),
        best_known=t_best,
        arms=arms,
        agreement=float(np.mean(agree)),
        chance=float(np.mean(chance)),
        train_loss=losses,
        test_scores=[s.tolist() for s in scores[test]],
        val_table=table,
    )
    if out is not None:
        _results.write_json(out / "result.json", result.to_dict())
    return result
