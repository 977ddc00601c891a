"""The experiment: many small training runs, their per-item test scores, and the paper's analyses.

Two systems are trained on handwritten digits over a grid of seeds × learning rates:

* **A**, a larger MLP (three hidden layers of 256), and
* **B**, a small MLP (one hidden layer of 64),

both with Adam for the same number of steps. Every run scores every test image by the
probability it gives to the correct digit (a per-item score in [0, 1], the role ROUGE-2 per
summary plays in the paper). Half of the test images (a fixed, seeded half) carry Gaussian pixel
noise: the data property ``noisy`` of the conditional analysis.

The ``data`` preset trains the grid of the ``notebook`` preset at ``seed=0`` and writes
``scores.csv`` (the project keeps it as ``data/inferential_reproducibility_scores.csv``, see
``data/README.md``). The ``notebook`` preset reads that file when it holds the config's grid
(training seeds 0-4) and otherwise trains its own block of seeds now; either way it retrains a
small fresh slice (``fresh_lrs`` at the block's first seed) and compares it with the table. The
exact scores of a run differ between CPUs and thread counts, so the fresh slice matches the cache
exactly only on a machine like the one that made it; what must not change is the inference.
``smoke`` trains a tiny grid in seconds; ``full`` trains a larger grid on the MNIST subset. The
analysis is the same at every scale:

1. each system at its best learning rate (chosen on validation data), all seeds, as a paper
   would report a tuned comparison; and the same at one seed at a time;
2. all runs of the grid with only the test items as random effect (the official code's model,
   applied to every meta-parameter run as the paper recommends);
3. all runs with seeds and learning rates as random effects too (an extension of this
   companion: the official code does not run this model);
4. the best-setting gap conditional on the data property (clean vs noisy inputs);
5. the learning rate as a fixed factor within system A;
6. variance components and the reliability coefficient of each system (REML).
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from companion.core import (
    Config,
    Result,
    StepBatches,
    fit,
    launch,
    seed_everything,
    torch_threads,
)
from companion.core import results as core_results
from companion.errors import CompanionError, unknown
from companion.nn import MLP, cross_entropy_step
from companion.papers.inferential_reproducibility.method import (
    Comparison,
    compare,
    reliability,
    shares,
    variance_components,
)

SYSTEMS = ("A", "B")
DATASETS = ("digits", "mnist_subset")
CACHED = "data/inferential_reproducibility_scores.csv"
# the cache is made on torch's and MKL's generic code paths (see data/README.md)
DATA_COMMAND = (
    "ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE companion run inferential_reproducibility "
    "--preset data --out runs/inferential_reproducibility-data"
)
# settings that define the cached grid; a cache made with others cannot serve this config
GRID_KEYS = (
    "dataset",
    "hidden_a",
    "hidden_b",
    "lrs",
    "n_seeds",
    "seed",
    "steps",
    "batch_size",
    "noise_fraction",
    "noise_std",
)
TERM = "system[T.A]"  # the fixed effect A − B (B is the reference level)


@dataclasses.dataclass(frozen=True)
class InferentialReproducibilityConfig(Config):
    """The grid, the training of one run, where cached scores live, and the fresh slice.

    ``seed`` picks the block of training seeds: ``seed * n_seeds`` ... ``seed * n_seeds +
    n_seeds - 1`` (seed 0: seeds 0-4), so another ``seed`` is a fresh, disjoint replication.
    ``scores_file`` serves a config only if it was made with the same grid (``GRID_KEYS``, the
    seed included); otherwise the grid is trained now.
    """

    dataset: str = "digits"
    hidden_a: tuple[int, ...] = (256, 256, 256)
    hidden_b: tuple[int, ...] = (64,)
    lrs: tuple[float, ...] = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
    n_seeds: int = 5
    steps: int = 300
    batch_size: int = 64
    noise_fraction: float = 0.5  # share of test (and validation) images with pixel noise
    noise_std: float = 0.3
    scores_file: str = CACHED  # read if it holds this grid, else train; "" always trains
    max_items: int = 0  # analyse only the first n test items (0: all)
    fresh_lrs: tuple[float, ...] = (0.1,)  # retrain these lrs at the block's first seed, for
    # both systems, and compare them with the table's runs
    alpha: float = 0.05

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        if len(self.lrs) < 2 or any(lr <= 0 for lr in self.lrs):
            raise CompanionError(f"lrs needs two or more positive learning rates, got {self.lrs}")
        if self.n_seeds < 2:
            raise CompanionError(
                f"n_seeds must be >= 2 to estimate seed variance, got {self.n_seeds}"
            )
        if self.steps < 1 or self.batch_size < 1 or self.max_items < 0:
            raise CompanionError("steps and batch_size must be positive, max_items >= 0")
        if not 0 < self.noise_fraction < 1 or self.noise_std < 0:
            raise CompanionError(
                f"noise_fraction must lie in (0, 1) and noise_std be >= 0, got "
                f"{self.noise_fraction}, {self.noise_std}"
            )
        if not 0 < self.alpha < 1:
            raise CompanionError(f"alpha must lie in (0, 1), got {self.alpha}")
        if 0 < self.max_items < 4:
            raise CompanionError(f"max_items must be 0 (all) or >= 4, got {self.max_items}")
        for lr in self.fresh_lrs:
            if lr not in self.lrs:
                raise CompanionError(f"fresh lr {lr} is not in the grid; valid: {self.lrs}")
        if self.devices != 1 or self.num_nodes != 1:
            raise CompanionError(
                "each run is a tiny MLP trained on one device; use devices=1 and num_nodes=1 "
                f"(got {self.devices}, {self.num_nodes})"
            )

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(range(self.seed * self.n_seeds, (self.seed + 1) * self.n_seeds))

    def grid(self) -> dict:
        return {k: getattr(self, k) for k in GRID_KEYS}


PRESETS: dict[str, InferentialReproducibilityConfig] = {
    # a tiny grid trained now (2 lrs x 2 seeds x 2 systems, 50 steps), 60 test items analysed
    "smoke": InferentialReproducibilityConfig(
        lrs=(3e-3, 1e-1), n_seeds=2, steps=50, max_items=60, scores_file=""
    ),
    # the cached scores at seed 0 (another seed trains its block of 50 runs now), all items,
    # and two fresh runs (A and B at lr 0.1, the block's first seed) compared with the table
    "notebook": InferentialReproducibilityConfig(),
    # trains the grid of the cache (50 runs, a few CPU minutes) and writes scores.csv
    "data": InferentialReproducibilityConfig(scores_file=""),
    # a larger grid on the 5,000-image MNIST subset (1,000 test items), on a GPU if present
    "full": InferentialReproducibilityConfig(
        dataset="mnist_subset",
        hidden_a=(512, 512, 512),
        hidden_b=(128,),
        lrs=(3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1),
        n_seeds=10,
        steps=2000,
        batch_size=128,
        scores_file="",
    ),
}


# --- data and training ---------------------------------------------------------------------------


def load_items(cfg: InferentialReproducibilityConfig):
    """Train tensors, and validation/test tensors with the ``noisy`` data property applied.

    A fixed, seeded share ``noise_fraction`` of the validation and test images gets Gaussian
    pixel noise (std ``noise_std``, clipped to [0, 1]); the split and the noise never depend on
    the training seed, so every run sees the same test items.
    """
    from companion import data

    splits = data.load(cfg.dataset, seed=0)
    g = torch.Generator().manual_seed(12345)

    def corrupt(x: torch.Tensor):
        noisy = torch.zeros(len(x), dtype=torch.bool)
        noisy[torch.randperm(len(x), generator=g)[: round(cfg.noise_fraction * len(x))]] = True
        x = x.clone()
        noise = cfg.noise_std * torch.randn(x[noisy].shape, generator=g)
        x[noisy] = (x[noisy] + noise).clamp(0, 1)
        return x, noisy

    x_val, val_noisy = corrupt(splits.val.tensors[0])
    x_test, test_noisy = corrupt(splits.test.tensors[0])
    return {
        "train": splits.train.tensors,
        "val": (x_val, splits.val.tensors[1], val_noisy),
        "test": (x_test, splits.test.tensors[1], test_noisy),
        "classes": splits.num_classes,
    }


def build_model(cfg: InferentialReproducibilityConfig, system: str, in_features: int, classes: int):
    """System A (larger MLP) or B (small MLP); ``seed_everything`` first fixes the init."""
    hidden = {"A": cfg.hidden_a, "B": cfg.hidden_b}[system]
    return MLP(in_features, list(hidden), classes)


@torch.no_grad()
def correct_class_probability(model, x: torch.Tensor, y: torch.Tensor, device) -> np.ndarray:
    """The per-item score: the probability the model gives to the item's true class."""
    model.eval()
    probs = torch.softmax(model(x.to(device)).float(), dim=-1).cpu()
    return probs[torch.arange(len(y)), y].double().numpy()


def train_runs(fabric, cfg: InferentialReproducibilityConfig, runs, steps: int, folder, resume):
    """Train each ``(system, lr, seed)`` run; returns their per-item validation/test scores.

    With ``folder``, every finished run is written to ``folder/<system>_lr<lr>_seed<seed>.json``
    and ``resume`` keeps those files instead of retraining.
    """
    items = load_items(cfg)
    with torch_threads(1):  # tiny MLPs: one thread is faster (no sync) and reproducible
        out = []
        for system, lr, seed in runs:
            path = folder / f"{system}_lr{lr:g}_seed{seed}.json" if folder is not None else None
            if resume and path is not None and path.exists():
                out.append(json.loads(path.read_text()))
                continue
            out.append(train_one(fabric, cfg, items, system, lr, seed, steps))
            if path is not None:
                # through the module, so that a test can interrupt the grid after this save
                core_results.write_json(path, out[-1])
        return out


def train_one(fabric, cfg, items: dict, system: str, lr: float, seed: int, steps: int) -> dict:
    """One run: Adam from the seed's initial weights and batch order, then per-item scores."""
    x_train, y_train = items["train"]
    seed_everything(seed)  # initial weights; StepBatches fixes the batch order from the seed
    model = build_model(cfg, system, int(np.prod(x_train.shape[1:])), items["classes"])
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model, optimizer = fabric.setup(model, optimizer)
    batches = StepBatches(
        (x_train, y_train), cfg.batch_size, seed, fabric.global_rank, fabric.world_size
    )
    fit(
        fabric,
        model,
        optimizer,
        batches,
        cross_entropy_step,
        steps=steps,
        log_every=steps,
        stop_on_nonfinite=False,  # a diverged run is a run too: it scores 0 on every item
        desc=f"{system} lr={lr:g} seed={seed}",
    )
    # scored by the module without Fabric's autocast: float32 whatever the training precision
    val = correct_class_probability(model.module, *items["val"][:2], fabric.device)
    test = correct_class_probability(model.module, *items["test"][:2], fabric.device)
    return {
        "system": system,
        "lr": lr,
        "seed": seed,
        "steps": steps,
        "val_score": float(np.nan_to_num(val).mean()),
        "scores": np.round(np.nan_to_num(test), 4).tolist(),
    }


def scores_table(records: list[dict], noisy: np.ndarray) -> pd.DataFrame:
    """One row per (run, test item): system, lr, seed, item, noisy, score, val_score."""
    frames = []
    for r in records:
        n = len(r["scores"])
        frames.append(
            pd.DataFrame(
                {
                    "system": r["system"],
                    "lr": r["lr"],
                    "seed": r["seed"],
                    "item": np.arange(n),
                    "noisy": noisy[:n].astype(int),
                    "score": r["scores"],
                    "val_score": round(r["val_score"], 4),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def write_scores(table: pd.DataFrame, path, cfg: InferentialReproducibilityConfig) -> Path:
    """The scores CSV with its provenance (the grid and the whole config) as a leading ``#``
    line of JSON."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = {"grid": cfg.grid(), "config": cfg.to_dict()}
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w") as f:
        f.write("# " + json.dumps(header) + "\n")
        table.to_csv(f, index=False)
    tmp.replace(path)
    return path


def read_scores(path) -> tuple[pd.DataFrame, dict]:
    """``(table, provenance)`` of a scores CSV written by :func:`write_scores`."""
    path = Path(path)
    with path.open() as f:
        first = f.readline()
    if not first.startswith("# "):
        raise CompanionError(f"{path} has no provenance line; make it with: {DATA_COMMAND}")
    table = pd.read_csv(path, comment="#")
    return table, json.loads(first[2:])


def resolve_scores_file(name: str) -> Path:
    """A scores path as given if absolute, else relative to the repository root."""
    from companion.registry import ROOT

    path = Path(name)
    return path if path.is_absolute() else ROOT / path


def _grid_mismatch(cached: dict, cfg: InferentialReproducibilityConfig) -> str:
    """Empty if scores made with grid ``cached`` serve ``cfg``, else the first difference."""
    for key, value in cfg.grid().items():
        have = cached.get(key)
        if isinstance(have, list):
            have = tuple(have)
        if have != value:
            return f"the scores were made with {key}={have!r}, this config has {value!r}"
    return ""


def get_scores(
    cfg: InferentialReproducibilityConfig, folder: Path | None = None, resume: bool = False
) -> tuple[pd.DataFrame, dict]:
    """``(table, provenance)``: the scores file if it holds this config's grid, else the grid
    trained now (``2 × len(lrs) × n_seeds`` runs; ``folder``/``resume`` keep finished runs).

    The project's cache holds the ``notebook`` grid at ``seed=0``; another seed, or another grid,
    trains. A scores file other than the cache that does not match the grid is an error.
    """
    reason = "scores_file=''"
    if cfg.scores_file:
        path = resolve_scores_file(cfg.scores_file)
        if path.exists():
            table, provenance = read_scores(path)
            reason = _grid_mismatch(provenance["grid"], cfg)
            if not reason:
                return table, provenance | {"file": cfg.scores_file, "trained_now": ""}
            if cfg.scores_file != CACHED:
                raise CompanionError(f"{path}: {reason}; set scores_file='' to train this grid now")
        elif cfg.scores_file != CACHED:
            raise CompanionError(
                f"scores file {path} not found; make it with: {DATA_COMMAND} "
                "(or set scores_file='' to train the grid now)"
            )
        else:
            reason = f"{cfg.scores_file} not found"
    records = launch(cfg, train_runs, cfg, _grid_runs(cfg), cfg.steps, folder, resume)
    table = scores_table(records, load_items(cfg)["test"][2].numpy())
    return table, {"grid": cfg.grid(), "file": None, "trained_now": reason}


def swap_in(table: pd.DataFrame, fresh: list[dict]) -> pd.DataFrame:
    """The table with each fresh run's scores in place of the same run's (system, lr, seed)."""
    out = table.copy()
    for run in fresh:
        rows = (
            (out.system == run["system"])
            & np.isclose(out.lr, run["lr"])
            & (out.seed == run["seed"])
        )
        order = out.loc[rows].sort_values("item").index
        if len(order) != len(run["scores"]):
            raise CompanionError(
                f"fresh run {run['system']} lr={run['lr']:g} seed {run['seed']} has "
                f"{len(run['scores'])} scores, the table {len(order)}"
            )
        out.loc[order, "score"] = run["scores"]
    return out


# --- the analysis --------------------------------------------------------------------------------


@dataclasses.dataclass
class GLRTSummary(Result):
    """One GLRT, with the reported A − B estimate where there is one."""

    h0: str
    h1: str
    facets: list[str]
    n_obs: int
    chi2: float
    df: int
    p: float
    estimate: float | None
    se: float | None
    effect_size: float | None
    variances: dict[str, float]  # of the H1 fit
    converged: bool

    @classmethod
    def of(cls, c: Comparison) -> GLRTSummary:
        return cls(
            h0=c.h0.formula,
            h1=c.h1.formula,
            facets=c.h1.facets,
            n_obs=c.h1.n_obs,
            chi2=c.test.chi2,
            df=c.test.df,
            p=c.test.p,
            estimate=c.estimate,
            se=c.se,
            effect_size=c.effect_size,
            variances=c.h1.variances,
            converged=c.h0.converged and c.h1.converged,
        )

    @property
    def ci95(self) -> tuple[float, float]:
        return (self.estimate - 1.96 * self.se, self.estimate + 1.96 * self.se)


@dataclasses.dataclass
class InferentialReproducibilityResult(Result):
    config: dict
    provenance: dict  # where the scores came from
    n_items: int
    n_runs: int
    mean_scores: list[dict]  # per (system, lr): mean test score over seeds and items
    run_scores: list[dict]  # per run: system, lr, seed, val_score, test mean
    best_settings: dict[str, dict]  # system -> {lr, val_score}: its tuned learning rate
    tests: dict[str, GLRTSummary]  # see analyse(): best_setting, all_runs, ...
    per_seed: list[dict]  # best settings compared at each single seed: seed, estimate, se, p
    cell_means: list[dict]  # system × noisy at the best settings: estimate, se
    lr_means: list[dict]  # system A's mean score per lr (from the lr model)
    vca: dict[str, dict]  # system -> {"variances", "shares", "reliability"}
    fresh: list[dict]  # the retrained slice: system, lr, seed, steps, scores, check


def select_best_settings(table: pd.DataFrame) -> dict[str, dict]:
    """Each system's best learning rate by mean validation score over seeds (tuned, as a
    paper would report it)."""
    runs = table.drop_duplicates(["system", "lr", "seed"])
    setting = runs.groupby(["system", "lr"], observed=True).val_score.mean().reset_index()
    best = setting.loc[setting.groupby("system", observed=True).val_score.idxmax()]
    return {
        str(r.system): {"lr": float(r.lr), "val_score": float(r.val_score)}
        for r in best.itertuples()
    }


def _as_model_frame(table: pd.DataFrame) -> pd.DataFrame:
    df = table.copy()
    df["system"] = pd.Categorical(df["system"], categories=["B", "A"])  # B is the reference
    df["lr_in_system"] = df["system"].astype(str) + ":" + df["lr"].map("{:g}".format)
    df["seed_in_system"] = df["system"].astype(str) + ":" + df["seed"].astype(str)
    return df


def analyse(table: pd.DataFrame) -> dict:
    """Every analysis of the module docstring on a scores table; returns plain data."""
    df = _as_model_frame(table)
    best = select_best_settings(df)
    at_best = np.zeros(len(df), dtype=bool)
    for system, b in best.items():
        at_best |= (df.system == system) & (df.lr == b["lr"])
    tuned = df[at_best]
    modelled = ("lr_in_system", "seed_in_system")
    tests = {
        "best_setting": compare(tuned, "score ~ 1", "score ~ system", term=TERM),
        "all_runs": compare(df, "score ~ 1", "score ~ system", term=TERM),
        "all_runs_modelled": compare(df, "score ~ 1", "score ~ system", modelled, term=TERM),
        "noisy_interaction": compare(
            tuned, "score ~ system + noisy", "score ~ system * noisy", term=f"{TERM}:noisy"
        ),
    }
    a_runs = df[df.system == "A"].assign(lr_level=lambda d: d.lr.map("{:g}".format))
    tests["lr_in_A"] = compare(a_runs, "score ~ 1", "score ~ 0 + lr_level")

    # training reproducibility: the best setting compared at one seed at a time
    per_seed = []
    for seed in sorted(df.seed.unique()):
        one = tuned[tuned.seed == seed]
        c = compare(one, "score ~ 1", "score ~ system", term=TERM)
        per_seed.append({"seed": int(seed), "estimate": c.estimate, "se": c.se, "p": c.test.p})

    inter = tests["noisy_interaction"].h1
    cov = np.asarray(inter.cov)
    cell_means = []
    for system in ("B", "A"):
        for noisy in (0, 1):
            a = float(system == "A")
            coding = {"Intercept": 1.0, TERM: a, "noisy": noisy, f"{TERM}:noisy": a * noisy}
            w = np.array([coding[name] for name in inter.names])
            cell_means.append(
                {
                    "system": system,
                    "noisy": noisy,
                    "estimate": float(w @ inter.params),
                    "se": float(math.sqrt(w @ cov @ w)),
                }
            )
    lr_fit = tests["lr_in_A"].h1
    lr_means = [
        {"lr": float(name.split("[")[1].rstrip("]")), "estimate": est, "se": se}
        for name, est, se in zip(lr_fit.names, lr_fit.params, lr_fit.bse)
    ]

    vca = {}
    for system in SYSTEMS:
        components = variance_components(df[df.system == system], ("lr", "seed"))
        vca[system] = {
            "variances": components,
            "shares": shares(components),
            "reliability": reliability(components),
        }
    return {
        "best_settings": best,
        "tests": {k: GLRTSummary.of(c) for k, c in tests.items()},
        "per_seed": per_seed,
        "cell_means": cell_means,
        "lr_means": lr_means,
        "vca": vca,
    }


# --- run -----------------------------------------------------------------------------------------


def _grid_runs(cfg: InferentialReproducibilityConfig) -> list[tuple[str, float, int]]:
    return [(s, lr, seed) for s in SYSTEMS for lr in cfg.lrs for seed in cfg.seeds]


def run(
    cfg: InferentialReproducibilityConfig,
    out_dir: str | Path | None = None,
    resume: bool = False,
    scores: tuple[pd.DataFrame, dict] | None = None,
) -> InferentialReproducibilityResult:
    """Get the scores (:func:`get_scores`), retrain the fresh slice, analyse.

    ``scores``: a ``(table, provenance)`` pair from :func:`get_scores` for this config, so that
    a caller who already holds the table does not train it twice. With ``out_dir``: finished
    runs are kept under ``<out_dir>/runs/`` (``resume=True`` skips them), a table trained now is
    written as ``<out_dir>/scores.csv`` and the result as ``<out_dir>/result.json``.
    """
    folder = Path(out_dir) / "runs" if out_dir is not None else None
    if scores is None:
        table, provenance = get_scores(cfg, folder, resume)
    else:
        table, provenance = scores
        reason = _grid_mismatch(provenance["grid"], cfg)
        if reason:
            raise CompanionError(f"the scores given do not fit this config: {reason}")
    if provenance["file"] is None and out_dir is not None:
        write_scores(table, Path(out_dir) / "scores.csv", cfg)
    # the fresh slice is always retrained (never resumed): it is the reproducibility check
    slice_ = [(s, lr, cfg.seeds[0]) for s in SYSTEMS for lr in cfg.fresh_lrs]
    fresh = [
        _check_fresh(record, table)
        for record in launch(cfg, train_runs, cfg, slice_, cfg.steps, None, False)
    ]
    result = summarize(cfg, table, provenance, fresh)
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result


def summarize(
    cfg: InferentialReproducibilityConfig,
    table: pd.DataFrame,
    provenance: dict,
    fresh: list[dict] | tuple = (),
) -> InferentialReproducibilityResult:
    """Every analysis of a scores table (its first ``max_items`` items), as a result."""
    if cfg.max_items:
        table = table[table.item < cfg.max_items]
    summary = analyse(table)
    runs = table.groupby(["system", "lr", "seed"]).agg(
        val_score=("val_score", "first"), test_score=("score", "mean")
    )
    means = table.groupby(["system", "lr"]).score.mean()
    return InferentialReproducibilityResult(
        config=cfg.to_dict(),
        provenance=provenance,
        n_items=int(table.item.nunique()),
        n_runs=len(runs),
        mean_scores=[
            {"system": s, "lr": float(lr), "score": float(v)} for (s, lr), v in means.items()
        ],
        run_scores=[
            {"system": s, "lr": float(lr), "seed": int(seed), **{k: float(v) for k, v in r.items()}}
            for (s, lr, seed), r in runs.iterrows()
        ],
        fresh=list(fresh),
        **summary,
    )


def _check_fresh(record: dict, table: pd.DataFrame) -> dict:
    """A retrained run's scores, and how far they are from the table's run of the same setting."""
    cached = table[
        (table.system == record["system"])
        & np.isclose(table.lr, record["lr"])
        & (table.seed == record["seed"])
    ].sort_values("item")
    diff = float(np.abs(cached.score.to_numpy() - np.asarray(record["scores"])).max())
    return {
        "system": record["system"],
        "lr": record["lr"],
        "seed": record["seed"],
        "steps": record["steps"],
        "scores": record["scores"],
        "cached_scores": cached.score.tolist(),
        "max_abs_diff": diff,
    }
