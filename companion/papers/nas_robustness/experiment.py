"""The experiment: a zoo of one-cell NAS-Bench-201 networks trained on 8×8 digits, each
evaluated clean, under FGSM and PGD at several ε, under three corruptions, and measured by the
Jacobian and Hessian proxies (the paper's database and its use cases 1 and 3, at small scale).

The zoo is drawn a priori from the seed: ``n_bin`` distinct architectures (up to isomorphism,
with an input→output path) from the *bin*, all cells with exactly ``bin_conv3x3`` 3×3 and
``bin_conv1x1`` 1×1 convolutions, which therefore have the same parameter count, and
``n_other`` from the rest of the space. The control for "robustness varies with the
topology" is the first bin architecture trained again from ``n_repeats`` other initial seeds:
the spread that training noise alone gives. With ``dataset="database"`` (the ``full`` preset)
nothing is trained: the released database is read instead (:class:`RobustnessDatabase`).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from companion.core import Config, Result, seed_everything
from companion.errors import CompanionError, unknown
from companion.nn.init import portable_init
from companion.papers.nas_robustness.method import (
    CORRUPTIONS,
    DATASETS,
    EDGES,
    OPS,
    CellNet,
    RobustnessDatabase,
    _live_edges,
    accuracy,
    canonical_edges,
    corrupt,
    fgsm,
    hessian_top_eigenvalue,
    jacobian_norm,
    num_params,
    op_counts,
    pgd,
)

SOURCES = ("digits", "database")


@dataclasses.dataclass(frozen=True)
class NasRobustnessConfig(Config):
    """What to train and measure. Sizes change between presets; the method never does."""

    dataset: str = "digits"  # "database": read the released database from data_root
    data_root: str = ""
    db_dataset: str = "cifar10"  # database only: cifar10, cifar100 or ImageNet16-120
    max_archs: int = 0  # database only: the first n non-isomorphic ids (0: all)
    n_bin: int = 6  # architectures drawn from the equal-parameter bin
    n_other: int = 6  # architectures drawn from the rest of the space
    n_repeats: int = 2  # control: the first bin architecture retrained from other seeds
    bin_conv3x3: int = 1  # the bin: cells with exactly this many 3×3 and 1×1 convolutions
    bin_conv1x1: int = 1
    channels: int = 8
    cells: int = 1
    steps: int = 80  # Adam steps per architecture
    batch_size: int = 64
    lr: float = 0.02
    epsilons: tuple[float, ...] = (0.02, 0.05, 0.1)  # L∞ radii on the [0, 1] pixel scale
    pgd_steps: int = 5
    pgd_long_steps: int = 10  # the attack check: twice the steps at the middle ε
    eval_size: int = 150  # test images attacked (the digits test split has 360)
    proxy_size: int = 100  # test images for the Jacobian and Hessian proxies
    hessian_iters: int = 5
    corruption_severity: float = 0.3

    def validate(self) -> None:
        if self.dataset not in SOURCES:
            raise unknown("dataset", self.dataset, SOURCES)
        if self.db_dataset not in DATASETS:
            raise unknown("db_dataset", self.db_dataset, DATASETS)
        if self.n_bin < 2 or self.n_other < 0 or self.n_repeats < 0:
            raise CompanionError(
                f"n_bin must be >= 2 and n_other, n_repeats >= 0, got {self.n_bin}, "
                f"{self.n_other}, {self.n_repeats}"
            )
        if not self.epsilons or any(e <= 0 or e > 1 for e in self.epsilons):
            raise CompanionError(f"epsilons must lie in (0, 1], got {self.epsilons}")
        if list(self.epsilons) != sorted(self.epsilons):
            raise CompanionError(f"epsilons must be increasing, got {self.epsilons}")
        for name in (
            "steps",
            "batch_size",
            "pgd_steps",
            "pgd_long_steps",
            "eval_size",
            "proxy_size",
            "hessian_iters",
            "channels",
            "cells",
        ):
            if getattr(self, name) < 1:
                raise CompanionError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.bin_conv3x3 + self.bin_conv1x1 > 6 or min(self.bin_conv3x3, self.bin_conv1x1) < 0:
            raise CompanionError("the bin's convolution counts must be >= 0 and sum to at most 6")

    @property
    def mid_epsilon(self) -> float:
        """The ε the claims read: the middle of ``epsilons``."""
        return self.epsilons[len(self.epsilons) // 2]


PRESETS: dict[str, NasRobustnessConfig] = {
    "smoke": NasRobustnessConfig(
        n_bin=3,
        n_other=1,
        n_repeats=1,
        steps=30,
        eval_size=100,
        proxy_size=30,
        hessian_iters=3,
        pgd_steps=3,
        pgd_long_steps=6,
    ),
    "notebook": NasRobustnessConfig(),
    # the released database (robustness.vision): every non-isomorphic NB201 network on CIFAR-10
    "full": NasRobustnessConfig(
        dataset="database", data_root="data/robustness-data", db_dataset="cifar10"
    ),
}


@dataclasses.dataclass
class ArchRecord(Result):
    """One architecture, one training seed: what the database stores per id, plus proxies."""

    arch: str
    train_seed: int
    params: int
    conv3x3: int
    conv1x1: int
    in_bin: bool
    clean: float
    fgsm: list[float]  # per ε of the config
    pgd: list[float]  # per ε
    pgd_long: float  # PGD with pgd_long_steps at the middle ε
    corruptions: dict[str, float]
    jacobian: float | None  # mean ‖∂f/∂x‖_F (None: not in the database)
    hessian: float | None  # mean λ_max of the input Hessian of the loss
    seconds: float


@dataclasses.dataclass
class NasRobustnessResult(Result):
    config: dict
    epsilons: list[float]
    records: list[ArchRecord]  # the zoo, one training seed each
    repeats: list[ArchRecord]  # the control: the first bin architecture, other seeds
    source: str  # "digits" or "database:<dataset>"

    @property
    def mid(self) -> int:
        return len(self.epsilons) // 2

    def column(self, name: str, records: list[ArchRecord] | None = None) -> list:
        rows = self.records if records is None else records
        if name in ("fgsm", "pgd"):
            return [getattr(r, name)[self.mid] for r in rows]
        return [getattr(r, name) for r in rows]

    @property
    def bin_records(self) -> list[ArchRecord]:
        return [r for r in self.records if r.in_bin]


def sample_zoo(cfg: NasRobustnessConfig, seed: int) -> list[str]:
    """``n_bin`` bin architectures then ``n_other`` others, drawn by ``seed`` as the database
    is queried: a uniformly random cell string (an id), mapped to its isomorphism
    representative (``get_uid``), kept if it has an input→output path and is new."""
    rng = np.random.default_rng(seed)
    chosen: dict[bool, list[str]] = {True: [], False: []}
    want = {True: cfg.n_bin, False: cfg.n_other}
    for _ in range(100_000):
        if all(len(chosen[k]) == want[k] for k in want):
            break
        edges = dict(zip(EDGES, (OPS[i] for i in rng.integers(len(OPS), size=6))))
        if not any(op != "none" for op in _live_edges(edges).values()):
            continue
        arch = canonical_edges(edges)
        counts = op_counts(arch)
        key = (
            counts["nor_conv_3x3"] == cfg.bin_conv3x3 and counts["nor_conv_1x1"] == cfg.bin_conv1x1
        )
        if len(chosen[key]) < want[key] and arch not in chosen[True] + chosen[False]:
            chosen[key].append(arch)
    else:
        raise CompanionError("could not draw the zoo: the bin is too small for n_bin")
    return chosen[True] + chosen[False]


def load_digits():
    from companion import data

    splits = data.load("digits", image_size=8, seed=0)
    return splits.train.tensors, splits.test.tensors


def train_and_measure(
    cfg: NasRobustnessConfig, arch: str, train_seed: int, train, test
) -> ArchRecord:
    """Train one architecture with Adam on cross-entropy (float64, NumPy-drawn initial weights:
    the same run on every CPU), then attack and measure it in float32 on the CPU."""
    start = time.perf_counter()
    seed_everything(train_seed)
    model = CellNet(arch, cfg.channels, cfg.cells)
    # drawn by NumPy: torch's CPU samplers give other last bits on another CPU
    portable_init(model, np.random.default_rng(train_seed))
    # trained in float64 (in float32 the last bits differ between CPUs' vector code paths and
    # a dozen-network Kendall τ flips its sign), then measured in float32
    model.double()
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    x_train, y_train = train[0].double(), train[1]
    g = torch.Generator().manual_seed(train_seed)
    model.train()
    for _ in range(cfg.steps):
        idx = torch.randint(len(x_train), (cfg.batch_size,), generator=g)
        loss = F.cross_entropy(model(x_train[idx]), y_train[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.float().eval()
    for p in model.parameters():
        p.requires_grad_(False)
    x, y = test[0][: cfg.eval_size], test[1][: cfg.eval_size]
    clean = accuracy(model, x, y)
    fg = [accuracy(model, fgsm(model, x, y, e), y) for e in cfg.epsilons]
    pg = [accuracy(model, pgd(model, x, y, e, cfg.pgd_steps), y) for e in cfg.epsilons]
    eps = cfg.mid_epsilon
    # the longer attack keeps the step size: it only searches further
    long = accuracy(model, pgd(model, x, y, eps, cfg.pgd_long_steps, 2.5 * eps / cfg.pgd_steps), y)
    cg = np.random.default_rng(10_000 + train_seed)
    corr = {k: accuracy(model, corrupt(x, k, cfg.corruption_severity, cg), y) for k in CORRUPTIONS}
    xp, yp = test[0][: cfg.proxy_size], test[1][: cfg.proxy_size]
    jac = jacobian_norm(model, xp)
    hg = np.random.default_rng(20_000 + train_seed)
    hess = hessian_top_eigenvalue(model, xp, yp, cfg.hessian_iters, hg)
    counts = op_counts(arch)
    c3, c1 = counts["nor_conv_3x3"], counts["nor_conv_1x1"]
    return ArchRecord(
        arch=arch,
        train_seed=train_seed,
        params=num_params(model),
        conv3x3=c3,
        conv1x1=c1,
        in_bin=c3 == cfg.bin_conv3x3 and c1 == cfg.bin_conv1x1,
        clean=clean,
        fgsm=fg,
        pgd=pg,
        pgd_long=long,
        corruptions=corr,
        jacobian=jac,
        hessian=hess,
        seconds=time.perf_counter() - start,
    )


def _cached(folder: Path | None, resume: bool, make) -> ArchRecord:
    path = folder / "arch.json" if folder is not None else None
    if resume and path is not None and path.exists():
        return ArchRecord.load(path)
    record = make()
    if path is not None:
        record.save(path)
    return record


def read_database(cfg: NasRobustnessConfig) -> NasRobustnessResult:
    """The released database as a result: per non-isomorphic id, clean, FGSM and PGD accuracy
    per ε (the database's own ε grid, clean prepended as ε = 0 is not stored), corruption
    accuracies where present; parameter bins from the cell's convolution counts (in NB201 the
    parameter count depends only on how many 3×3 and 1×1 convolutions the cell has)."""
    db = RobustnessDatabase(cfg.data_root)
    d = cfg.db_dataset
    ids = db.non_isomorph_ids[: cfg.max_archs or None]
    clean = db.query(d, "clean")
    fg, pg = db.query(d, "fgsm@Linf"), db.query(d, "pgd@Linf")
    corr = {k: db.query(d, k) for k in CORRUPTIONS}
    eps = db.epsilons("pgd@Linf")
    mid = len(eps) // 2
    records = []
    for i in ids:
        arch = db.id_to_string(i)
        counts = op_counts(arch)
        c3, c1 = counts["nor_conv_3x3"], counts["nor_conv_1x1"]
        records.append(
            ArchRecord(
                arch=arch,
                train_seed=-1,
                params=c3 * 9 + c1,  # in units of C² per cell (bins only)
                conv3x3=c3,
                conv1x1=c1,
                in_bin=c3 == cfg.bin_conv3x3 and c1 == cfg.bin_conv1x1,
                clean=float(clean[i]),
                fgsm=[float(v) for v in fg[i]],
                pgd=[float(v) for v in pg[i]],
                pgd_long=float(pg[i][mid]),
                corruptions={
                    k: float(v[i][0] if isinstance(v[i], list) else v[i])
                    for k, v in corr.items()
                    if i in v
                },
                jacobian=None,
                hessian=None,
                seconds=0.0,
            )
        )
    return NasRobustnessResult(
        config=cfg.to_dict(),
        epsilons=[float(e) for e in eps],
        records=records,
        repeats=[],
        source=f"database:{d}",
    )


def run(
    cfg: NasRobustnessConfig, out_dir: str | Path | None = None, resume: bool = False
) -> NasRobustnessResult:
    """Train and measure the zoo (or read the database); with ``out_dir`` each architecture's
    record is written as it finishes and ``resume=True`` keeps finished ones."""
    torch.set_default_dtype(torch.float32)
    if cfg.dataset == "database":
        folder = Path(out_dir) if out_dir is not None else None
        path = folder / "database.json" if folder is not None else None
        if resume and path is not None and path.exists():
            done = NasRobustnessResult.load(path)
            done.config = cfg.to_dict()  # as written (JSON turned its tuples into lists)
            return done
        result = read_database(cfg)
        if path is not None:
            result.save(path)
            result.save(folder / "result.json")
        return result
    train, test = load_digits()
    zoo = sample_zoo(cfg, cfg.seed)
    records = []
    for k, arch in enumerate(zoo):
        folder = Path(out_dir) / f"arch{k:02d}" if out_dir is not None else None
        records.append(
            _cached(folder, resume, lambda a=arch: train_and_measure(cfg, a, cfg.seed, train, test))
        )
    repeats = []
    for r in range(cfg.n_repeats):
        seed = cfg.seed + 1000 * (r + 1)
        folder = Path(out_dir) / f"repeat{r}" if out_dir is not None else None
        repeats.append(
            _cached(folder, resume, lambda s=seed: train_and_measure(cfg, zoo[0], s, train, test))
        )
    result = NasRobustnessResult(
        config=cfg.to_dict(),
        epsilons=list(cfg.epsilons),
        records=records,
        repeats=repeats,
        source="digits",
    )
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
