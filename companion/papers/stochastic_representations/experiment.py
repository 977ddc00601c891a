"""The experiment: decoupled training on long-tailed digits, five ways to get the classifier.

Stage 1 (representation learning, instance-balanced sampling, cross-entropy) trains one
feature extractor and linear head twice from the same initial weights and batches:

* ``sgd``: SGD with a cosine decay from ``sgd_lr`` to zero, the final weights (the standard
  recipe; its peak rate was chosen on the validation split, see ``StochasticConfig.sgd_lr``);
* ``swa``: the same run whose rate moves linearly to a constant ``swa_lr`` by ``swa_start`` of
  the epochs, then collects one snapshot per epoch into SWA/SWAG moments (Section 3).

Stage 2 (classifier re-training, Kang et al. 2020): the extractor is frozen, a fresh linear
classifier is trained with class-balanced sampling, the same steps and rate for every arm:

* ``joint``: no re-training, the stage-1 SGD head (the long-tail baseline, for the premise);
* ``crt_sgd``: plain classifier re-training on the SGD features;
* ``crt_swa``: the same on the SWA mean's features (control: removes only the stochasticity);
* ``stochastic``: cross-entropy on SWAG stochastic representations, no distillation (control:
  removes only the self-distillation);
* ``stochastic_sd``: the paper's method, stochastic representations with self-distillation
  from SWAG into SWA.

Every re-trained arm is evaluated deterministically on its own features (SGD or the SWA mean).
Measurements: per-class accuracy averaged over all, many-, medium- and few-shot classes, and ECE
with :data:`method.ECE_BINS` equal-width bins, on a class-balanced test set.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from companion.core import Config, Result, read_json, resolve_device, write_json
from companion.errors import CompanionError, unknown
from companion.nn import portable_init
from companion.papers.stochastic_representations.method import (
    ECE_BINS,
    SGD,
    SWAGMoments,
    class_balanced_batches,
    expected_calibration_error,
    features,
    flat_parameters,
    group_accuracy,
    load_flat_parameters,
    long_tail_counts,
    long_tail_subset,
    retraining_loss,
    shot_groups,
)

ARMS = ("joint", "crt_sgd", "crt_swa", "stochastic", "stochastic_sd")
DATASETS = ("mnist_subset", "digits", "cifar10")
BACKBONES = ("mlp", "cnn")
DTYPES = {"64-true": torch.float64, "32-true": torch.float32}
SGD_LR_GRID = (0.05, 0.1, 0.2, 0.3)  # the SGD baseline's peak rates tried (``sgd_lr_sweep``)


@dataclasses.dataclass(frozen=True)
class StochasticConfig(Config):
    """What to train and how. Sizes change between presets; the algorithm never does."""

    dataset: str = "mnist_subset"
    data_root: str = ""  # cifar10: the extracted python release
    image_size: int = 14  # mnist_subset / digits: images are resized to this side
    n_max: int = 250  # training images of the head class
    imbalance: float = 50.0  # ρ = n_max / n_min
    many_shot: int = 100  # many-shot classes have more training images than this
    few_shot: int = 20  # few-shot classes have fewer
    backbone: str = "mlp"
    hidden: tuple[int, ...] = (128,)  # mlp: hidden widths; cnn: channel widths
    feature_dim: int = 64  # width of the representation φ(x)
    # stage 1: representation learning (SGD with momentum, instance-balanced batches)
    epochs: int = 40
    batch_size: int = 32
    lr: float = 0.1  # the SWA run's rate before it moves to swa_lr
    # the SGD baseline's peak rate (cosine decay to 0): chosen on the validation split at seeds
    # 0-4 from (0.05, 0.1, 0.2, 0.3) by the validation accuracy of plain re-training (crt_sgd);
    # so the baseline is not given a smaller rate than the SWA run spends its second half at
    sgd_lr: float = 0.2
    momentum: float = 0.9
    weight_decay: float = 5e-4
    swa_start: float = 0.5  # share of the epochs before SWA collects snapshots
    swa_lr: float = 0.2  # SWA's constant rate (reached linearly by swa_start)
    swag_rank: int = 10  # K, deviations kept
    swag_scale: float = 0.5  # 0.5: the 1/√2 of SWAG's sampling equation
    # stage 2: classifier re-training (class-balanced batches, cosine decay)
    retrain_steps: int = 300
    retrain_batch: int = 32
    retrain_lr: float = 0.05
    num_samples: int = 8  # S, stochastic representations per image and step
    bank_size: int = 32  # SWAG draws whose features are computed once; each step picks S
    distill_weight: float = 1.0  # λ
    temperature: float = 2.0  # T
    num_seeds: int = 3  # internal seeds seed, seed + 1000, ... (data split, init, batches)
    arms: tuple[str, ...] = ARMS
    precision: str = "64-true"

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        if self.backbone not in BACKBONES:
            raise unknown("backbone", self.backbone, BACKBONES)
        if self.precision not in DTYPES:
            raise unknown("precision", self.precision, tuple(DTYPES))
        for arm in self.arms:
            if arm not in ARMS:
                raise unknown("arm", arm, ARMS)
        if self.epochs < 2 or self.batch_size < 1 or self.retrain_steps < 1:
            raise CompanionError("epochs must be >= 2, batch_size and retrain_steps >= 1")
        if not 0 < self.swa_start < 1:
            raise CompanionError(f"swa_start must be in (0, 1), got {self.swa_start}")
        if self.epochs - self.swa_start_epoch < 2:
            raise CompanionError("SWA needs at least 2 snapshots: lower swa_start or add epochs")
        if self.swag_rank < 2 or self.num_samples < 1 or self.bank_size < self.num_samples:
            raise CompanionError("need swag_rank >= 2 and 1 <= num_samples <= bank_size")
        if self.num_seeds < 1 or self.temperature <= 0 or self.distill_weight < 0:
            raise CompanionError("need num_seeds >= 1, temperature > 0, distill_weight >= 0")
        if not self.hidden:
            raise CompanionError("hidden must name at least one width")

    @property
    def seeds(self) -> list[int]:
        # seed, seed + 1000, ...: the runs of seeds 0-4 never reuse a held-out seed 5-9
        return [self.seed + 1000 * i for i in range(self.num_seeds)]

    @property
    def swa_start_epoch(self) -> int:
        """First epoch whose end is a SWA snapshot: ``swa_start`` of the run, so the SWA phase
        scales with the number of epochs."""
        return int(round(self.swa_start * self.epochs))


PRESETS: dict[str, StochasticConfig] = {
    "smoke": StochasticConfig(
        epochs=4, retrain_steps=30, num_seeds=1, bank_size=8, num_samples=4, swag_rank=3
    ),
    "notebook": StochasticConfig(),
    # The paper's CIFAR10-LT setting at ρ = 100 (5,000 to 50 images per class), a plain CNN
    # without BatchNorm (SWAG samples then need no recomputed statistics), 200 epochs, SWA
    # over the second half; float32.
    "full": StochasticConfig(
        dataset="cifar10",
        data_root="data/cifar-10-batches-py",
        n_max=5000,
        imbalance=100.0,
        backbone="cnn",
        hidden=(64, 128, 256),
        feature_dim=256,
        epochs=200,
        batch_size=128,
        lr=0.05,
        sgd_lr=0.05,
        swa_lr=0.05,
        retrain_steps=2000,
        retrain_batch=128,
        retrain_lr=0.05,
        num_seeds=3,
        precision="32-true",
    ),
}


@dataclasses.dataclass
class ArmResult(Result):
    """One arm at one seed, on the class-balanced test set."""

    arm: str
    seed: int
    accuracy: float  # mean per-class accuracy
    many: float
    medium: float
    few: float
    ece: float
    overconfidence: float  # mean top-class confidence minus accuracy (> 0: overconfident)
    per_class: list[float]
    reliability: list[list[float]]  # [bin] (images, mean confidence, accuracy)


@dataclasses.dataclass
class SeedResult(Result):
    """Everything one seed measured."""

    seed: int
    counts: list[int]  # training images per class
    groups: dict[str, list[int]]
    feature_change: float  # mean ‖φ(x; θ̃) − φ(x; θ̄)‖ / ‖φ(x; θ̄)‖ over training images, draws
    disagreement: float  # share of (image, draw) whose crt_swa prediction differs from the mean's
    swa_snapshots: int
    arms: list[ArmResult]
    cloud: dict  # first seed: a 2-D view of stochastic representations (see ``feature_cloud``)
    seconds: float


@dataclasses.dataclass
class StochasticResult(Result):
    config: dict
    seeds: list[SeedResult]
    seconds: float

    def arm(self, name: str) -> list[ArmResult]:
        """One ``ArmResult`` per seed."""
        out = [a for s in self.seeds for a in s.arms if a.arm == name]
        if not out:
            raise CompanionError(f"this result has no arm {name!r}")
        return out

    def values(self, name: str, field: str) -> np.ndarray:
        return np.array([getattr(a, field) for a in self.arm(name)], dtype=float)

    @property
    def arm_names(self) -> list[str]:
        return [a.arm for a in self.seeds[0].arms]


# ------------------------------------------------------------------------------------------
# Data and models
# ------------------------------------------------------------------------------------------


def load_data(cfg: StochasticConfig, seed: int, split: str = "test"):
    """(train x, train y, test x, test y, counts): a long-tailed training set drawn from the
    training split and a class-balanced test set. ``split="val"`` returns the validation split
    in place of the test set (digits datasets only: used to choose the baseline's rate)."""
    from companion import data

    if cfg.dataset == "cifar10":
        if split != "test":
            raise CompanionError("cifar10 has no validation split here")
        train = data.load_cifar(cfg.data_root, "cifar10", "train").tensors
        test = data.load_cifar(cfg.data_root, "cifar10", "test").tensors
    else:
        loader = data.load_mnist_subset if cfg.dataset == "mnist_subset" else data.load_digits
        splits = loader(image_size=cfg.image_size, val_fraction=0.1, test_fraction=0.3, seed=seed)
        train = splits.train.tensors
        test = (splits.val if split == "val" else splits.test).tensors
    classes = int(max(train[1].max(), test[1].max())) + 1
    counts = long_tail_counts(cfg.n_max, cfg.imbalance, classes)
    rows = long_tail_subset(train[1], counts, seed)
    return train[0][rows], train[1][rows], test[0], test[1], counts


class ConvExtractor(nn.Module):
    """Conv-ReLU blocks (no BatchNorm) with max-pooling between, global average pooling and a
    linear map to ``feature_dim`` with ReLU."""

    def __init__(self, channels: int, widths: tuple[int, ...], feature_dim: int):
        super().__init__()
        layers: list[nn.Module] = []
        c = channels
        for i, w in enumerate(widths):
            layers += [nn.Conv2d(c, w, 3, padding=1), nn.ReLU()]
            if i < len(widths) - 1:
                layers.append(nn.MaxPool2d(2))
            c = w
        self.conv = nn.Sequential(*layers)
        self.out = nn.Sequential(nn.Linear(c, feature_dim), nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.conv(x).mean(dim=(2, 3)))


def build_extractor(cfg: StochasticConfig, input_shape: tuple[int, ...]) -> nn.Module:
    """φ: an MLP (flattened pixels → hidden → ``feature_dim``, ReLU after each) or a plain CNN."""
    if cfg.backbone == "cnn":
        return ConvExtractor(input_shape[0], cfg.hidden, cfg.feature_dim)
    layers: list[nn.Module] = [nn.Flatten()]
    width = int(np.prod(input_shape))
    for h in (*cfg.hidden, cfg.feature_dim):
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    return nn.Sequential(*layers)


def _probs(head: nn.Module, z: torch.Tensor, batch: int = 4096) -> torch.Tensor:
    with torch.no_grad():
        return torch.cat(
            [torch.softmax(head(z[i : i + batch]), 1) for i in range(0, len(z), batch)]
        )


def _features(extractor, theta, x, device, batch: int = 2048) -> torch.Tensor:
    return torch.cat(
        [features(extractor, theta, x[i : i + batch].to(device)) for i in range(0, len(x), batch)]
    )


# ------------------------------------------------------------------------------------------
# Stage 1: representation learning, SGD and SWA/SWAG
# ------------------------------------------------------------------------------------------


def train_stage1(cfg, extractor, head, x, y, arm: str, rng_batches, device):
    """Train extractor + head with cross-entropy on the long-tailed set. ``arm="sgd"``: cosine
    decay of ``sgd_lr`` to 0; ``arm="swa"``: ``lr`` moves linearly to ``swa_lr`` by the epoch
    ``swa_start_epoch``, then stays, and every later epoch's end is collected into SWAG.
    Returns the SWAG moments (``None`` for ``sgd``)."""
    n = len(y)
    per_epoch = math.ceil(n / cfg.batch_size)
    total, start = cfg.epochs * per_epoch, cfg.swa_start_epoch
    params = [*extractor.parameters(), *head.parameters()]
    opt = SGD(params, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    moments = (
        SWAGMoments.empty(len(flat_parameters(extractor)), cfg.swag_rank, DTYPES[cfg.precision])
        if arm == "swa"
        else None
    )
    step = 0
    for epoch in range(cfg.epochs):
        order = rng_batches[epoch]
        for i in range(0, n, cfg.batch_size):
            if arm == "sgd":
                lr = 0.5 * cfg.sgd_lr * (1 + math.cos(math.pi * step / total))
            else:
                lr = cfg.lr + (cfg.swa_lr - cfg.lr) * min(1.0, step / (start * per_epoch))
            opt.lr = lr
            idx = order[i : i + cfg.batch_size]
            xb, yb = x[idx].to(device), y[idx].to(device)
            loss = nn.functional.cross_entropy(head(extractor(xb)), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
        if moments is not None and epoch >= start:
            moments.collect(flat_parameters(extractor).cpu())
    return moments


# ------------------------------------------------------------------------------------------
# Stage 2: classifier re-training
# ------------------------------------------------------------------------------------------


def retrain_classifier(cfg, z_train, z_mean, y, classes, distill_weight, seed, device):
    """A fresh linear classifier trained with class-balanced batches (the same batches, initial
    weights and cosine schedule for every arm). ``z_train`` is ``[N, d]`` (deterministic
    features) or ``[M, N, d]`` (a bank of M stochastic representations, S picked per step);
    ``z_mean`` ``[N, d]`` are the SWA features the student sees in the distillation term."""
    head = nn.Linear(z_mean.shape[1], classes).to(z_mean.dtype)
    portable_init(head, np.random.default_rng(seed + 2))
    head.to(device)
    rng = np.random.default_rng(seed + 1)
    batches = class_balanced_batches(y, classes, cfg.retrain_batch, cfg.retrain_steps, rng)
    opt = SGD(head.parameters(), lr=cfg.retrain_lr, momentum=cfg.momentum)
    y = y.to(device)
    for t, rows in enumerate(batches):
        opt.lr = 0.5 * cfg.retrain_lr * (1 + math.cos(math.pi * t / cfg.retrain_steps))
        rows_t = torch.from_numpy(rows).to(device)
        if z_train.dim() == 3:
            pick = torch.from_numpy(rng.choice(len(z_train), cfg.num_samples, replace=False))
            zs = z_train[pick.to(device)][:, rows_t]
        else:
            zs = z_train[rows_t][None]
        loss, _ = retraining_loss(
            head, zs, z_mean[rows_t], y[rows_t], distill_weight, cfg.temperature
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
    return head


def reliability_bins(probs: torch.Tensor, labels: torch.Tensor) -> list[list[float]]:
    """Per equal-width confidence bin: (images, mean confidence, accuracy); empty bins are 0."""
    conf, pred = probs.max(1)
    which = torch.clamp(torch.ceil(conf * ECE_BINS).long() - 1, 0, ECE_BINS - 1)
    out = []
    for b in range(ECE_BINS):
        m = which == b
        n = int(m.sum())
        out.append(
            [
                n,
                float(conf[m].mean()) if n else 0.0,
                float((pred[m] == labels[m]).double().mean()) if n else 0.0,
            ]
        )
    return out


def evaluate(arm: str, seed: int, probs, labels, groups) -> ArmResult:
    probs, labels = probs.cpu().double(), labels.cpu()
    acc = group_accuracy(probs, labels, groups)
    hit = (probs.argmax(1) == labels).double()
    per_class = [float(hit[labels == c].mean()) for c in range(probs.shape[1])]
    return ArmResult(
        arm=arm,
        seed=seed,
        accuracy=round(acc["all"], 6),
        many=round(acc["many"], 6),
        medium=round(acc["medium"], 6),
        few=round(acc["few"], 6),
        ece=round(expected_calibration_error(probs, labels), 6),
        overconfidence=round(float(probs.max(1).values.mean() - hit.mean()), 6),
        per_class=[round(v, 6) for v in per_class],
        reliability=[[round(v, 6) for v in row] for row in reliability_bins(probs, labels)],
    )


def feature_cloud(z_bank, z_mean, y, groups, per_group: int = 3) -> dict:
    """A 2-D view of stochastic representations: the plane of the top two principal axes of the
    SWA features; for ``per_group`` training images of the most-shot class and of the fewest,
    their SWA point and each of their SWAG draws in that plane."""
    zc = z_mean - z_mean.mean(0)
    _, _, v = torch.linalg.svd(zc.double(), full_matrices=False)
    axes = v[:2].T.to(z_mean.dtype)
    out = {"images": []}
    for cls in (0, int(y.max())):
        rows = torch.nonzero(y == cls).flatten()[:per_group]
        for r in rows.tolist():
            out["images"].append(
                {
                    "label": cls,
                    "mean": ((z_mean[r] - z_mean.mean(0)) @ axes).tolist(),
                    "draws": ((z_bank[:, r] - z_mean.mean(0)) @ axes).tolist(),
                }
            )
    out["background"] = (zc[:400] @ axes).tolist()
    out["background_labels"] = y[:400].tolist()
    return out


# ------------------------------------------------------------------------------------------
# One seed, and the run
# ------------------------------------------------------------------------------------------


def run_seed(cfg: StochasticConfig, seed: int, keep_cloud: bool = False) -> SeedResult:
    start_time = time.perf_counter()
    device = resolve_device(cfg.device)
    dtype = DTYPES[cfg.precision]
    x, y, xt, yt, counts = load_data(cfg, seed)
    x, xt = x.to(dtype), xt.to(dtype)
    classes = len(counts)
    groups = shot_groups(counts, cfg.many_shot, cfg.few_shot)
    rng = np.random.default_rng(seed)
    extractor = build_extractor(cfg, tuple(x.shape[1:])).to(dtype)
    head = nn.Linear(cfg.feature_dim, classes).to(dtype)
    portable_init(extractor, rng, kinds=(nn.Linear,))  # linear layers, then convolutions
    portable_init(extractor, rng, kinds=(nn.Conv2d,))
    portable_init(head, rng)
    extractor.to(device)
    head.to(device)
    init = (flat_parameters(extractor), flat_parameters(head))
    orders = [torch.from_numpy(rng.permutation(len(y))) for _ in range(cfg.epochs)]

    # stage 1, twice from the same weights and batches (the SGD run only if an arm uses it)
    arms: list[ArmResult] = []
    theta_sgd = None
    if "joint" in cfg.arms or "crt_sgd" in cfg.arms:
        train_stage1(cfg, extractor, head, x, y, "sgd", orders, device)
        theta_sgd = flat_parameters(extractor)
        if "joint" in cfg.arms:
            z_test = _features(extractor, theta_sgd, xt, device)
            arms.append(evaluate("joint", seed, _probs(head, z_test), yt, groups))
        load_flat_parameters(extractor, init[0])
        load_flat_parameters(head, init[1])
    swag = train_stage1(cfg, extractor, head, x, y, "swa", orders, device)
    theta_swa = swag.mean.to(device)

    # stage 2
    if theta_sgd is not None:
        z_sgd, zt_sgd = (_features(extractor, theta_sgd, v, device) for v in (x, xt))
    z_swa, zt_swa = (_features(extractor, theta_swa, v, device) for v in (x, xt))
    bank_rng = np.random.default_rng(seed + 3)
    bank = torch.stack(
        [
            _features(extractor, swag.sample(bank_rng, cfg.swag_scale).to(device), x, device)
            for _ in range(cfg.bank_size)
        ]
    )
    change = float(((bank - z_swa).norm(dim=-1) / z_swa.norm(dim=-1).clamp_min(1e-12)).mean())
    crt_swa_head = None
    for arm in cfg.arms:
        if arm == "joint":
            continue
        if arm == "crt_sgd":
            clf = retrain_classifier(cfg, z_sgd, z_sgd, y, classes, 0.0, seed, device)
            arms.append(evaluate(arm, seed, _probs(clf, zt_sgd), yt, groups))
            continue
        weight = cfg.distill_weight if arm == "stochastic_sd" else 0.0
        source = z_swa if arm == "crt_swa" else bank
        clf = retrain_classifier(cfg, source, z_swa, y, classes, weight, seed, device)
        if arm == "crt_swa":
            crt_swa_head = clf
        arms.append(evaluate(arm, seed, _probs(clf, zt_swa), yt, groups))
    disagreement = float("nan")
    if crt_swa_head is not None:
        with torch.no_grad():
            base = crt_swa_head(z_swa).argmax(-1)
            disagreement = float((crt_swa_head(bank).argmax(-1) != base).double().mean())
    cloud = feature_cloud(bank.cpu(), z_swa.cpu(), y, groups) if keep_cloud else {}
    return SeedResult(
        seed=seed,
        counts=counts,
        groups=groups,
        feature_change=round(change, 6),
        disagreement=round(disagreement, 6),
        swa_snapshots=swag.n,
        arms=arms,
        cloud=cloud,
        seconds=time.perf_counter() - start_time,
    )


def sgd_lr_sweep(
    cfg: StochasticConfig, rates=SGD_LR_GRID, run_seeds=range(5)
) -> dict[str, dict[str, float]]:
    """The SGD baseline's peak rate on the **validation** split (never the test set): for each
    rate, the SGD run and plain classifier re-training (``crt_sgd``) at every internal seed of
    the runs ``run_seeds``, scored by the validation mean per-class accuracy. Returns
    ``{rate: {"accuracy": mean, "few": mean few-shot accuracy}}``; ``sgd_lr`` is the best
    accuracy (stored in ``data/runs/stochastic_representations/sgd_lr_sweep.json``)."""
    device = resolve_device(cfg.device)
    dtype = DTYPES[cfg.precision]
    out = {}
    for rate in rates:
        c = cfg.replace(sgd_lr=float(rate))
        acc, few = [], []
        for run_seed in run_seeds:
            for seed in c.replace(seed=int(run_seed)).seeds:
                x, y, xv, yv, counts = load_data(c, seed, split="val")
                x, xv = x.to(dtype), xv.to(dtype)
                groups = shot_groups(counts, c.many_shot, c.few_shot)
                rng = np.random.default_rng(seed)  # the same draws as run_seed's SGD arm
                extractor = build_extractor(c, tuple(x.shape[1:])).to(dtype)
                head = nn.Linear(c.feature_dim, len(counts)).to(dtype)
                portable_init(extractor, rng, kinds=(nn.Linear,))  # linears, then convolutions
                portable_init(extractor, rng, kinds=(nn.Conv2d,))
                portable_init(head, rng)
                extractor.to(device)
                head.to(device)
                orders = [torch.from_numpy(rng.permutation(len(y))) for _ in range(c.epochs)]
                train_stage1(c, extractor, head, x, y, "sgd", orders, device)
                theta = flat_parameters(extractor)
                z, zv = (_features(extractor, theta, v, device) for v in (x, xv))
                clf = retrain_classifier(c, z, z, y, len(counts), 0.0, seed, device)
                g = group_accuracy(_probs(clf, zv).cpu(), yv, groups)
                acc.append(g["all"])
                few.append(g["few"])
        out[f"{rate:g}"] = {"accuracy": float(np.mean(acc)), "few": float(np.mean(few))}
    return out


def run(
    cfg: StochasticConfig, out_dir: str | Path | None = None, resume: bool = False
) -> StochasticResult:
    """Every arm at every seed of ``cfg.seeds``; with ``out_dir`` each finished seed is written
    (atomically) to ``seed_<s>.json`` and, with ``resume``, read back instead of trained."""
    start = time.perf_counter()
    torch.manual_seed(cfg.seed)  # nothing draws from torch's generator; kept for safety
    seeds = []
    for i, seed in enumerate(cfg.seeds):
        path = Path(out_dir) / f"seed_{seed}.json" if out_dir is not None else None
        if path is not None and resume and path.exists():
            seeds.append(SeedResult.from_dict(read_json(path)))
            continue
        done = run_seed(cfg, seed, keep_cloud=i == 0)
        if path is not None:
            write_json(path, done.to_dict())
        seeds.append(done)
    result = StochasticResult(
        config=cfg.to_dict(), seeds=seeds, seconds=time.perf_counter() - start
    )
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
