"""The experiment: two synthetic two-modality datasets, one whose label lives in uni-modal
features only and one where paired features carry most of it; on each, the uni-modal models
(UME's members and UMT's teachers), naive late fusion, UMT, and UMT's control (the same
distillation towards *untrained* teachers), all for the same number of steps, with the same
batches and the same initial weights where they share an architecture.

Measured per dataset and seed: test accuracy of every recipe, validation accuracy of UME and
naive fusion (the guiding rule's inputs), and a linear probe of every frozen encoder (how much
of its modality's uni-modal features it learned), at the end and along training.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import torch

from companion.core import Config, Result, resolve_device
from companion.errors import CompanionError, unknown
from companion.nn import portable_init
from companion.papers.unimodal_features.method import (
    MODALITIES,
    LateFusion,
    UniModalModel,
    World,
    accuracy,
    draw_world,
    guiding_rule,
    input_dims,
    probe_accuracy,
    sample,
    ume_probabilities,
    umt_loss,
)

DATASETS = ("unimodal", "paired")
# "control": UMT's loss and α with teachers that were never trained (their initial weights):
# the distillation term stays, the uni-modal knowledge it carries is removed
FUSION_ARMS = ("naive", "umt", "control")
DTYPES = {"64-true": torch.float64, "32-true": torch.float32}


@dataclasses.dataclass(frozen=True)
class UniModalConfig(Config):
    """Data, models and training. Sizes change between presets; the recipes never do."""

    classes: int = 4
    uni_dims: int = 8  # dimensions of a modality's uni-modal part
    noise_dims: int = 22  # pure-noise dimensions per modality
    strength_a: float = 2.0  # the strong modality's uni-modal signal (both datasets)
    strength_b: float = 1.5  # the hard modality's (XOR-coded bits)
    copies_b: int = 2  # XOR pairs per label bit in modality b
    paired_amplitude: float = 2.5  # the paired code's amplitude in the "paired" dataset
    paired_uni_scale: float = 0.5  # the "paired" dataset's uni-modal strengths, times this
    datasets: tuple[str, ...] = DATASETS
    n_train: int = 2000
    n_val: int = 400
    n_test: int = 2000
    hidden: int = 64
    features: int = 32
    head_hidden: int = 64
    steps: int = 300  # optimizer steps of every model (each uni-modal one, each fusion arm)
    batch_size: int = 64
    lr: float = 3e-3
    alphas: tuple[float, ...] = (0.03, 0.3, 1.0)  # UMT's α grid: the best on validation wins
    eval_every: int = 60  # probe curves every n steps
    num_seeds: int = 1  # seeds seed, seed + 1000, ...: one dataset draw and training each
    precision: str = "64-true"

    def validate(self) -> None:
        for name in self.datasets:
            if name not in DATASETS:
                raise unknown("dataset", name, DATASETS)
        if not self.datasets:
            raise CompanionError(f"datasets must name at least one of {', '.join(DATASETS)}")
        if self.precision not in DTYPES:
            raise unknown("precision", self.precision, tuple(DTYPES))
        for name in (
            "classes",
            "n_train",
            "n_val",
            "n_test",
            "hidden",
            "features",
            "steps",
            "batch_size",
            "eval_every",
            "num_seeds",
            "uni_dims",
            "head_hidden",
        ):
            if getattr(self, name) < 1:
                raise CompanionError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.classes < 2:
            raise CompanionError(f"classes must be >= 2, got {self.classes}")
        if self.lr <= 0 or not self.alphas or min(self.alphas) < 0 or self.noise_dims < 0:
            raise CompanionError(
                f"lr must be > 0, alphas non-empty and >= 0, noise_dims >= 0; got {self.lr}, "
                f"{self.alphas}, {self.noise_dims}"
            )

    @property
    def seeds(self) -> list[int]:
        return [self.seed + 1000 * i for i in range(self.num_seeds)]

    @property
    def dtype(self) -> torch.dtype:
        return DTYPES[self.precision]


PRESETS: dict[str, UniModalConfig] = {
    "smoke": UniModalConfig(
        n_train=300,
        n_test=300,
        n_val=100,
        hidden=32,
        features=16,
        head_hidden=32,
        steps=24,
        eval_every=12,
        alphas=(0.3,),
    ),
    "notebook": UniModalConfig(),
    # larger data, wider models, more steps and seeds, in float32 (a GPU-style run of the same
    # synthetic task: the paper's video/audio/point-cloud datasets are not reproduced)
    "full": UniModalConfig(
        n_train=20_000,
        n_val=5_000,
        n_test=20_000,
        hidden=512,
        features=128,
        head_hidden=256,
        steps=20_000,
        batch_size=256,
        lr=1e-3,
        eval_every=2_000,
        num_seeds=5,
        precision="32-true",
    ),
}


@dataclasses.dataclass
class Part(Result):
    """One dataset, one seed: every recipe's accuracies and every encoder's probe."""

    dataset: str
    seed: int
    test_accuracy: dict[str, float]  # uni_a, uni_b, ume, naive, umt, control
    val_accuracy: dict[str, float]  # ume, naive, umt
    probe: dict[str, dict[str, float]]  # arm (uni, naive, umt, control) -> modality -> test acc
    probe_steps: list[int]
    probe_curve: dict[str, dict[str, list[float]]]  # arm -> modality -> test probe over steps
    train_loss: dict[str, float]  # final training cross-entropy of each fusion arm
    choice: str  # the guiding rule's pick, from validation accuracies
    alpha: float  # UMT's α, chosen on validation (the control uses it too)
    alpha_val: dict[str, float]  # α -> UMT's validation accuracy
    seconds: float


@dataclasses.dataclass
class UniModalResult(Result):
    config: dict
    parts: dict[str, list[Part]]  # dataset -> one Part per seed

    def values(self, dataset: str, getter) -> np.ndarray:
        return np.array([getter(p) for p in self.parts[dataset]], dtype=float)


def world_for(cfg: UniModalConfig, dataset: str, seed: int) -> World:
    scale = 1.0 if dataset == "unimodal" else cfg.paired_uni_scale
    paired = 0.0 if dataset == "unimodal" else cfg.paired_amplitude
    return draw_world(
        seed,
        classes=cfg.classes,
        uni_dims=cfg.uni_dims,
        strength_a=scale * cfg.strength_a,
        strength_b=scale * cfg.strength_b,
        copies_b=cfg.copies_b,
        paired=paired,
        noise_dims=cfg.noise_dims,
    )


def make_splits(cfg: UniModalConfig, dataset: str, seed: int, device: str = "cpu"):
    """``{"train"|"val"|"test": (xa, xb, y)}`` as tensors of the config's dtype on ``device``
    (drawn with NumPy on the CPU, so every device sees the same data)."""
    world = world_for(cfg, dataset, seed)
    rng = np.random.default_rng([seed, 29, DATASETS.index(dataset)])
    out = {}
    for split, n in (("train", cfg.n_train), ("val", cfg.n_val), ("test", cfg.n_test)):
        xa, xb, y = sample(world, n, rng)
        out[split] = (
            torch.as_tensor(xa, dtype=cfg.dtype).to(device),
            torch.as_tensor(xb, dtype=cfg.dtype).to(device),
            torch.as_tensor(y).to(device),
        )
    return out


def batch_order(cfg: UniModalConfig, seed: int) -> list[np.ndarray]:
    """The mini-batches (row indices) of every model of a seed: reshuffled every epoch."""
    rng = np.random.default_rng([seed, 31])
    rows: list[np.ndarray] = []
    while len(rows) < cfg.steps:
        perm = rng.permutation(cfg.n_train)
        rows += [perm[i : i + cfg.batch_size] for i in range(0, cfg.n_train, cfg.batch_size)]
    return rows[: cfg.steps]


def inputs_of(cfg: UniModalConfig) -> tuple[int, int]:
    """Input dimensions of modality a and b."""
    return input_dims(world_for(cfg, "unimodal", 0))


def new_unimodal(cfg: UniModalConfig, seed: int, modality: str) -> UniModalModel:
    d = inputs_of(cfg)[MODALITIES.index(modality)]
    model = UniModalModel(d, cfg.hidden, cfg.features, cfg.classes).to(cfg.dtype)
    portable_init(model, np.random.default_rng([seed, 37, MODALITIES.index(modality)]))
    return model


def new_fusion(cfg: UniModalConfig, seed: int) -> LateFusion:
    """Every fusion arm of a seed starts from these same weights."""
    model = LateFusion(inputs_of(cfg), cfg.hidden, cfg.features, cfg.classes, cfg.head_hidden)
    model = model.to(cfg.dtype)
    portable_init(model, np.random.default_rng([seed, 41]))
    return model


def _probe(encoder, splits, modality: str, classes: int) -> float:
    i = MODALITIES.index(modality)
    with torch.no_grad():
        tr = encoder(splits["train"][i]).cpu()
        te = encoder(splits["test"][i]).cpu()
    return probe_accuracy(tr, splits["train"][2].cpu(), te, splits["test"][2].cpu(), classes)


def train_unimodal(cfg, model, splits, modality, batches, curve):
    """Cross-entropy on one modality; probes its encoder every ``eval_every`` steps."""
    i = MODALITIES.index(modality)
    x, y = splits["train"][i], splits["train"][2]
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    for step, rows in enumerate(batches):
        if step % cfg.eval_every == 0:
            curve.append(_probe(model.encoder, splits, modality, cfg.classes))
        idx = torch.from_numpy(rows).to(y.device)
        loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return model


def train_fusion(cfg, model, splits, batches, teachers, alpha, curves) -> float:
    """Late fusion with ``umt_loss`` (``alpha = 0``: naive fusion); returns the final training
    cross-entropy of the fused output."""
    xa, xb, y = splits["train"]
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    with torch.no_grad():  # the teachers are frozen: their features never change
        target = {m: teachers[m](x) for m, x in zip(MODALITIES, (xa, xb))} if teachers else None
    for step, rows in enumerate(batches):
        if step % cfg.eval_every == 0:
            for m in MODALITIES:
                curves[m].append(_probe(model.encoders[m], splits, m, cfg.classes))
        idx = torch.from_numpy(rows).to(y.device)
        logits, feats = model(xa[idx], xb[idx], return_features=True)
        if target is None:
            loss = torch.nn.functional.cross_entropy(logits, y[idx])
        else:
            loss = umt_loss(logits, y[idx], feats, {m: target[m][idx] for m in MODALITIES}, alpha)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    with torch.no_grad():
        return torch.nn.functional.cross_entropy(model(xa, xb), y).item()


def run_part(cfg: UniModalConfig, dataset: str, seed: int) -> Part:
    start = time.perf_counter()
    device = resolve_device(cfg.device)
    splits = make_splits(cfg, dataset, seed, device)
    batches = batch_order(cfg, seed)
    probe_steps = [s for s in range(cfg.steps) if s % cfg.eval_every == 0] + [cfg.steps]
    curves: dict[str, dict[str, list[float]]] = {
        arm: {m: [] for m in MODALITIES} for arm in ("uni", *FUSION_ARMS)
    }
    uni, untrained = {}, {}
    for m in MODALITIES:
        untrained[m] = new_unimodal(cfg, seed, m).to(device).encoder  # the control's teacher
        uni[m] = train_unimodal(
            cfg, new_unimodal(cfg, seed, m).to(device), splits, m, batches, curves["uni"][m]
        )
    fusion, loss = {}, {}
    teachers = {m: uni[m].encoder for m in MODALITIES}
    fusion["naive"] = new_fusion(cfg, seed).to(device)
    loss["naive"] = train_fusion(cfg, fusion["naive"], splits, batches, None, 0.0, curves["naive"])
    # UMT at every α of the grid; the one with the best validation accuracy is kept
    candidates, alpha_val = {}, {}
    for alpha in cfg.alphas:
        model, curve = new_fusion(cfg, seed).to(device), {m: [] for m in MODALITIES}
        final = train_fusion(cfg, model, splits, batches, teachers, alpha, curve)
        xa, xb, yv = splits["val"]
        with torch.no_grad():
            alpha_val[repr(alpha)] = accuracy(model(xa, xb), yv)
        candidates[alpha] = (model, curve, final)
    best = max(cfg.alphas, key=lambda a: (alpha_val[repr(a)], -a))
    fusion["umt"], curves["umt"], loss["umt"] = candidates[best]
    fusion["control"] = new_fusion(cfg, seed).to(device)
    loss["control"] = train_fusion(
        cfg, fusion["control"], splits, batches, untrained, best, curves["control"]
    )

    def predict(split: str) -> dict[str, torch.Tensor]:
        xa, xb, _ = splits[split]
        with torch.no_grad():
            out = {"uni_a": uni["a"](xa), "uni_b": uni["b"](xb)}
            out["ume"] = ume_probabilities(out["uni_a"], out["uni_b"])
            out.update({arm: fusion[arm](xa, xb) for arm in FUSION_ARMS})
        return out

    test = {k: accuracy(v, splits["test"][2]) for k, v in predict("test").items()}
    val_pred = predict("val")
    val = {k: accuracy(val_pred[k], splits["val"][2]) for k in ("ume", "naive", "umt")}
    probe = {"uni": {m: _probe(uni[m].encoder, splits, m, cfg.classes) for m in MODALITIES}}
    for arm in FUSION_ARMS:
        probe[arm] = {
            m: _probe(fusion[arm].encoders[m], splits, m, cfg.classes) for m in MODALITIES
        }
    for arm in curves:
        for m in MODALITIES:
            curves[arm][m].append(probe[arm][m])
    return Part(
        dataset=dataset,
        seed=seed,
        test_accuracy=test,
        val_accuracy=val,
        probe=probe,
        probe_steps=probe_steps,
        probe_curve=curves,
        train_loss=loss,
        choice=guiding_rule(val["ume"], val["naive"]),
        alpha=best,
        alpha_val=alpha_val,
        seconds=time.perf_counter() - start,
    )


def run(
    cfg: UniModalConfig, out_dir: str | Path | None = None, resume: bool = False
) -> UniModalResult:
    """Every dataset in ``cfg.datasets`` at every seed. With ``out_dir`` each finished part is
    written as ``<out_dir>/<dataset>-seed<s>/part.json``; ``resume=True`` loads those instead
    of training them again."""
    torch.manual_seed(cfg.seed)  # nothing here draws from torch; kept for any future sampler
    parts: dict[str, list[Part]] = {d: [] for d in cfg.datasets}
    for seed in cfg.seeds:
        for dataset in cfg.datasets:
            path = Path(out_dir) / f"{dataset}-seed{seed}" / "part.json" if out_dir else None
            if resume and path is not None and path.exists():
                part = Part.load(path)
            else:
                part = run_part(cfg, dataset, seed)
                if path is not None:
                    part.save(path)
            parts[dataset].append(part)
    result = UniModalResult(config=cfg.to_dict(), parts=parts)
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
