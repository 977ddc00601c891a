"""The experiment: ℓ2 logistic regression on n workers, one of them Byzantine, under several
attacks; robust SGD, robust momentum SGD and Byz-VR-MARINA (± RandK) through the same robust
aggregator with bucketing; the optimality gap f(x) − f* and the bits each good worker sent
(paper Sec. 4, Fig. 1).

Every worker holds the whole data set (the paper's homogeneous setting, ζ = 0), so an exact
method can reach f* despite the Byzantine worker. All arms start at x⁰ = 0 and use the same step
size γ; every arm is one call of the shared federated loop (``companion.core.federated``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from pathlib import Path

import torch
from torch import nn

from companion.core import Config, Result, launch
from companion.core.federated import AGGREGATORS, alie, bit_flip, ipm, no_attack, run_rounds
from companion.errors import CompanionError, unknown
from companion.papers.byz_vr_marina.method import (
    BucketedAggregator,
    GradientServer,
    MarinaServer,
    MarinaWorker,
    MomentumWorker,
    SGDWorker,
    alie_z,
    logistic_loss,
    marina_probability,
    rand_k_omega,
    smoothness,
    solve_optimum,
)

DATASETS = ("digits", "a9a")
ATTACKS = ("none", "bit_flip", "label_flip", "alie", "ipm")
BASE_METHODS = ("sgd", "sgdm", "marina")
METHODS = BASE_METHODS + tuple(f"{m}+randk" for m in BASE_METHODS)
ARAGGS = ("mean", "coordinate_median", "geometric_median", "krum")
LABELS = {
    "sgd": "robust SGD",
    "sgdm": "robust momentum SGD",
    "marina": "Byz-VR-MARINA",
    "sgd+randk": "robust SGD + RandK",
    "sgdm+randk": "robust momentum SGD + RandK",
    "marina+randk": "Byz-VR-MARINA + RandK",
}
ATTACK_LABELS = {
    "none": "no attack",
    "bit_flip": "bit flip",
    "label_flip": "label flip",
    "alie": "ALIE",
    "ipm": "IPM",
}


@dataclasses.dataclass(frozen=True)
class ByzVrMarinaConfig(Config):
    """What to run. Sizes and rounds change between presets; the algorithm never does."""

    dataset: str = "digits"  # digits: even vs odd; a9a: LIBSVM file <data_root>/a9a
    data_root: str = ""
    lam: float = 0.01  # ℓ2 penalty λ (the paper's 0.01)
    workers: int = 5  # n, Byzantine ones included
    byzantine: int = 1
    batch_size: int = 128  # b (the paper: 32, on 18× more samples)
    lr: float = 0.5  # γ of every method without compression
    lr_randk: float = 0.25  # γ with RandK: the theory's γ shrinks like 1/√(1 + ω)
    momentum: float = 0.9  # β of momentum SGD
    rounds: int = 600
    methods: tuple[str, ...] = ("sgd", "sgdm", "marina", "marina+randk")
    attacks: tuple[str, ...] = ("bit_flip", "label_flip", "alie", "ipm")
    aggregator: str = "coordinate_median"
    bucket_size: int = 2  # s; 1 = no bucketing
    randk_fraction: float = 0.1  # K = ⌈fraction · d⌉
    p: float = 0.0  # the coin's probability; 0 = the paper's min{b/m, 1/(1 + ω)}
    alie_z: float | None = None  # None: the official formula for n, f (method.alie_z)
    ipm_eps: float = 0.1
    evaluate_every: int = 10
    checkpoint_every: int = 0

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        for m in self.methods:
            if m not in METHODS:
                raise unknown("method", m, METHODS)
        for a in self.attacks:
            if a not in ATTACKS:
                raise unknown("attack", a, ATTACKS)
        if self.aggregator not in ARAGGS:
            raise unknown("aggregator", self.aggregator, ARAGGS)
        if not 0 <= self.byzantine < self.workers:
            raise CompanionError(
                f"need 0 <= byzantine < workers, got byzantine={self.byzantine}, "
                f"workers={self.workers}"
            )
        if (
            min(self.lr, self.lr_randk) <= 0
            or min(self.rounds, self.batch_size, self.evaluate_every) < 1
        ):
            raise CompanionError(
                "lr, lr_randk, rounds, batch_size and evaluate_every must be positive, got "
                f"lr={self.lr}, lr_randk={self.lr_randk}, "
                f"rounds={self.rounds}, batch_size={self.batch_size}, "
                f"evaluate_every={self.evaluate_every}"
            )
        if not 0 < self.randk_fraction <= 1 or not 0 <= self.p <= 1:
            raise CompanionError(
                f"randk_fraction must be in (0, 1] and p in [0, 1], got "
                f"{self.randk_fraction} and {self.p}"
            )
        if self.aggregator == "krum":
            buckets = math.ceil(self.workers / max(self.bucket_size, 1))
            if buckets - self.byzantine - 2 < 1:
                raise CompanionError(
                    f"krum needs buckets - byzantine - 2 >= 1; {self.workers} workers in "
                    f"buckets of {self.bucket_size} give {buckets} buckets"
                )


PRESETS: dict[str, ByzVrMarinaConfig] = {
    "smoke": ByzVrMarinaConfig(rounds=80, attacks=("bit_flip",), evaluate_every=10),
    "notebook": ByzVrMarinaConfig(),
    # Paper scale (Sec. 4, Fig. 1): a9a, 4 good + 1 Byzantine worker, every attack, every
    # method with and without RandK; 40 epochs of b = 32 (32,561 samples).
    "full": ByzVrMarinaConfig(
        dataset="a9a",
        data_root="data/a9a",
        batch_size=32,
        lr_randk=0.1,
        rounds=40_000,
        methods=METHODS,
        attacks=ATTACKS,
        evaluate_every=100,
        checkpoint_every=2_000,
    ),
}


@dataclasses.dataclass
class ArmResult(Result):
    """One (attack, method) run: the gap and the bits over rounds."""

    attack: str
    method: str
    rounds: list[int]  # rounds after which the gap was measured (1 = after the first step)
    gap: list[float]  # f(x) − f*, float64
    bits: list[float]  # bits sent by one good worker so far, at those rounds
    full_gradient_rounds: int  # rounds in which the good workers sent full gradients
    seconds: float
    p: float = 0.0  # the coin's probability (MARINA arms; 0 for the SGD baselines)
    # sample gradients one good worker computed so far, at ``rounds``: b per SGD round; for
    # Byz-VR-MARINA m (a full gradient) on coin rounds, else 2b (two points, b samples)
    gradients: list[float] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class ByzVrMarinaResult(Result):
    config: dict
    f_star: float
    d: int  # dimension (features + bias)
    m: int  # samples per worker
    L: float  # smoothness constant
    p: float  # the coin's probability without compression (each ArmResult keeps its own)
    k: int  # RandK's K
    arms: dict[str, ArmResult]  # key "attack/method"

    def arm(self, attack: str, method: str) -> ArmResult:
        return self.arms[f"{attack}/{method}"]


# --------------------------------------------------------------------------------------------
# Data


def read_libsvm(path: Path, features: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """A LIBSVM text file (``label index:value ...``, 1-based indices) as dense (X, y) with
    labels mapped to {0, 1} (the larger label is 1)."""
    rows, labels, width = [], [], 0
    for line in Path(path).read_text().splitlines():
        parts = line.split()
        if not parts:
            continue
        labels.append(float(parts[0]))
        entries = [(int(i) - 1, float(v)) for i, v in (p.split(":") for p in parts[1:])]
        width = max([width] + [i + 1 for i, _ in entries])
        rows.append(entries)
    width = features or width
    X = torch.zeros(len(rows), width)
    for r, entries in enumerate(rows):
        for i, v in entries:
            X[r, i] = v
    y = torch.tensor(labels)
    return X, (y == y.max()).float()


def load_problem(cfg: ByzVrMarinaConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """(X, y) float32 with a constant bias column. digits: the 1,797 images, even (1) vs odd
    (0), pixels standardised (constant pixels dropped); a9a: its 123 binary features."""
    if cfg.dataset == "digits":
        from companion.data.digits import _read_digits_csv

        raw = torch.from_numpy(_read_digits_csv())
        X, y = raw[:, :-1].double(), (raw[:, -1] % 2 == 0).float()
        sd = X.std(0, unbiased=False)
        X = (X[:, sd > 0] - X[:, sd > 0].mean(0)) / sd[sd > 0]
        X = X.float()
    else:
        path = Path(cfg.data_root) / "a9a"
        if not path.exists():
            raise CompanionError(
                f"a9a not found at {path}: download it from the LIBSVM data sets page "
                "(https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary.html#a9a) "
                "into that folder"
            )
        X, y = read_libsvm(path, features=123)
    return torch.cat([X, torch.ones(len(X), 1)], 1), y


# --------------------------------------------------------------------------------------------
# One arm


def _attack(cfg: ByzVrMarinaConfig, attack: str):
    if attack == "bit_flip":
        return bit_flip
    if attack == "alie":
        z = alie_z(cfg.workers, cfg.byzantine) if cfg.alie_z is None else cfg.alie_z
        return functools.partial(alie, z=z)
    if attack == "ipm":
        return functools.partial(ipm, eps=cfg.ipm_eps)
    return no_attack  # none, label_flip (a data attack inside the Byzantine worker)


def coin_probability(cfg: ByzVrMarinaConfig, m: int, d: int, k: int | None) -> float:
    """The configured p, or the paper's min{b/m, 1/(1 + ω)} with ω of the arm's compressor
    (RandK's ω = d/k − 1; ω = 0 without compression, ``k=None``)."""
    return cfg.p or marina_probability(cfg.batch_size, m, 0.0 if k is None else rand_k_omega(d, k))


def build_arm(cfg: ByzVrMarinaConfig, X, y, attack: str, method: str, k: int, p: float):
    """(clients, byzantine indices, server, aggregator) for one arm."""
    base, _, compression = method.partition("+")
    n_byz = 0 if attack == "none" else cfg.byzantine
    n_good = cfg.workers - cfg.byzantine
    lr = cfg.lr_randk if compression else cfg.lr
    if base == "marina":
        server = MarinaServer(lr=lr, p=p, seed=cfg.seed)
    else:
        server = GradientServer(lr=lr, seed=cfg.seed)
    clients = []
    for i in range(n_good + n_byz):
        flip = i >= n_good and attack == "label_flip"
        kwargs = dict(k=k if compression else None, label_flip=flip)
        if base == "sgd":
            clients.append(SGDWorker(X, y, cfg.lam, cfg.batch_size, **kwargs))
        elif base == "sgdm":
            clients.append(
                MomentumWorker(X, y, cfg.lam, cfg.batch_size, beta=cfg.momentum, **kwargs)
            )
        else:
            clients.append(MarinaWorker(X, y, cfg.lam, cfg.batch_size, server=server, **kwargs))
    if base != "marina":
        server.clients = tuple(clients)
    kwargs = {"f": cfg.byzantine} if cfg.aggregator == "krum" else {}
    aggregator = BucketedAggregator(
        AGGREGATORS[cfg.aggregator], cfg.bucket_size, server, cfg.seed, **kwargs
    )
    return clients, tuple(range(n_good, n_good + n_byz)), server, aggregator


def train_arm(fabric, cfg, X, y, f_star, k, p, attack, method, folder, resume) -> ArmResult:
    model = nn.Linear(X.shape[1], 1, bias=False)
    nn.init.zeros_(model.weight)  # x⁰ = 0
    clients, byzantine, server, aggregator = build_arm(cfg, X, y, attack, method, k, p)
    X64, y64 = X.double(), y.double()

    def evaluate(r, model):
        w = model.weight.detach().double().view(-1)
        return {"gap": float(logistic_loss(w, X64, y64, cfg.lam)) - f_star}

    start = time.perf_counter()
    history = run_rounds(
        fabric,
        model,
        clients,
        rounds=cfg.rounds,
        seed=cfg.seed,
        byzantine=byzantine,
        attack=_attack(cfg, attack),
        aggregator=aggregator,
        server=server,
        evaluate=evaluate,
        evaluate_every=cfg.evaluate_every,
        checkpoint=folder / "checkpoint.ckpt" if folder else None,
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        desc=f"{attack}/{method}",
    )
    bits = torch.tensor(history.values("client_bits"), dtype=torch.float64).cumsum(0)
    evaluated = history.steps("gap")
    m, b = len(y), min(cfg.batch_size, len(y))
    if method.startswith("marina"):
        coins = [server.coin(r) for r in range(cfg.rounds)]
        per_round = [float(m) if c else 2.0 * b for c in coins]
    else:
        coins, per_round = [], [float(b)] * cfg.rounds
    gradients = torch.tensor(per_round, dtype=torch.float64).cumsum(0)
    return ArmResult(
        attack=attack,
        method=method,
        rounds=[r + 1 for r in evaluated],
        gap=history.values("gap"),
        bits=[float(bits[r]) for r in evaluated],
        full_gradient_rounds=sum(coins),
        seconds=time.perf_counter() - start,
        p=p if method.startswith("marina") else 0.0,
        gradients=[float(gradients[r]) for r in evaluated],
    )


def _run_all(fabric, cfg: ByzVrMarinaConfig, out_dir: Path | None, resume: bool):
    X, y = load_problem(cfg)
    _, f_star = solve_optimum(X, y, cfg.lam)
    d, m = X.shape[1], X.shape[0]
    k = max(1, math.ceil(cfg.randk_fraction * d))
    p = coin_probability(cfg, m, d, None)
    arms = {}
    for attack in cfg.attacks:
        for method in cfg.methods:
            key = f"{attack}/{method}"
            folder = Path(out_dir) / attack / method.replace("+", "_") if out_dir else None
            done = folder / "arm.json" if folder else None
            if resume and done is not None and done.exists():
                arms[key] = ArmResult.load(done)
                continue
            compressed = "+" in method
            p_arm = coin_probability(cfg, m, d, k if compressed else None)
            arms[key] = train_arm(
                fabric, cfg, X, y, f_star, k, p_arm, attack, method, folder, resume
            )
            if done is not None:
                arms[key].save(done)
    return ByzVrMarinaResult(
        config=cfg.to_dict(),
        f_star=f_star,
        d=d,
        m=m,
        L=smoothness(X, cfg.lam),
        p=p,
        k=k,
        arms=arms,
    )


def run(
    cfg: ByzVrMarinaConfig, out_dir: str | Path | None = None, resume: bool = False
) -> ByzVrMarinaResult:
    """Run every (attack, method) arm; with ``out_dir``, checkpoint and write results.

    ``resume=True`` keeps arms that finished (``<out_dir>/<attack>/<method>/arm.json``) and
    continues an interrupted arm from its last checkpoint.
    """
    result = launch(cfg, _run_all, cfg, Path(out_dir) if out_dir else None, resume)
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
