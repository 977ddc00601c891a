"""The experiment: information planes of a Gaussian-dropout network and of the same network
without dropout, measured while they train (the paper's experiments), and the estimators'
settings swept at the end of training (the claim).

Both arms start from the same initial weights and see the same batches; the only difference is
the Gaussian dropout on the representation layer. Every ``measure_every`` epochs, on the
training and the validation inputs:

* dropout arm: ``I(X;Z)`` by the paper's estimator, ``I(Z;Y)`` by the same mixture estimator
  and by the ``H(Y) − cross-entropy`` bound;
* both arms: the binning estimates ``I(X;T)``, ``I(T;Y)`` of the noiseless representation
  ``T = f(X)``, for every bin count in ``bins``.

At the end, on the training inputs: the dropout estimate against its two settings, the number
M of mixture components (the official code's approximation) and the number N of data points
(with the leave-one-out upper estimate), and the binning estimate against the number of bins.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from companion.core import (
    Config,
    Every,
    Result,
    StepBatches,
    fit,
    seed_everything,
    train_arms,
)
from companion.errors import CompanionError, unknown
from companion.papers.information_plane.backbones import resnet18_body
from companion.papers.information_plane.method import (
    DropoutNetwork,
    binned_mutual_information,
    conditional_entropy,
    cross_entropy_bound,
    diagonal_mixture_log_density,
    dropout_mutual_information,
    label_entropy,
    mixture_label_information,
    sample_dropout_representation,
    softplus_mlp,
)

ARMS = ("dropout", "deterministic")
DATASETS = ("digits", "mnist_subset", "mnist", "cifar10")
ARCHITECTURES = ("mlp", "resnet18")
CIFAR_MEAN = (0.4914, 0.4822, 0.4465)  # the official code's normalization
CIFAR_STD = (0.2023, 0.1994, 0.2010)


@dataclasses.dataclass(frozen=True)
class InformationPlaneConfig(Config):
    """What to train and how to measure it. Sizes change between presets; the method never does."""

    dataset: str = "digits"
    data_root: str = ""  # mnist: folder of the IDX files; cifar10: the extracted python release
    standardize: bool = True  # z-score the pixels with training statistics (mlp only)
    architecture: str = "mlp"  # mlp: softplus MLP; resnet18: the official CIFAR-10 network
    hidden: tuple[int, ...] = (128, 64, 8)  # mlp widths; the last layer carries the dropout
    dropout_p: float = 0.2  # Gaussian dropout, σ² = p / (1 − p)
    arms: tuple[str, ...] = ARMS
    lr: float = 0.1
    momentum: float = 0.9
    weight_decay: float = 1e-3
    batch_size: int = 64
    epochs: int = 30  # cosine decay of the learning rate over all epochs
    augment: bool = False  # random 4-pixel-padded crops and horizontal flips (images only)
    measure_every: int = 2  # epochs between information-plane points (official code: 2)
    train_draws: int = 1  # noise draws per training input for h(Z) (official code: 1)
    val_draws: int = 6  # ... per validation input (official code: 6)
    components: int = 0  # mixture means for h(Z); 0: all inputs (official code: 1000)
    max_points: int = 0  # inputs measured per split (a fixed random subset); 0: all
    # end of training: mixture components M, and data points N, as fractions of the inputs
    sweep_components: tuple[float, ...] = (0.0625, 0.125, 0.25, 0.5, 1.0)
    sweep_points: tuple[float, ...] = (0.0625, 0.125, 0.25, 0.5, 1.0)
    bins: tuple[int, ...] = (2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 128, 256)
    checkpoint_every: int = 0  # steps; 0: only at the end (with out_dir)

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        if self.architecture not in ARCHITECTURES:
            raise unknown("architecture", self.architecture, ARCHITECTURES)
        if self.architecture == "resnet18" and self.dataset != "cifar10":
            raise CompanionError("architecture 'resnet18' needs dataset 'cifar10'")
        for arm in self.arms:
            if arm not in ARMS:
                raise unknown("arm", arm, ARMS)
        if not self.arms:
            raise CompanionError("arms is empty; valid: one or both of dropout, deterministic")
        if not 0 < self.dropout_p < 1:
            raise CompanionError(f"dropout_p={self.dropout_p!r} is not valid; valid: 0 < p < 1")
        if self.augment and self.dataset != "cifar10":
            raise CompanionError("augment=True needs dataset 'cifar10'")
        if not self.hidden or min(self.hidden) < 1:
            raise CompanionError(f"hidden={self.hidden!r} is not valid; valid: positive widths")
        positive = ("lr", "batch_size", "epochs", "measure_every", "train_draws", "val_draws")
        for key in positive:
            if getattr(self, key) <= 0:
                raise CompanionError(f"{key}={getattr(self, key)!r} is not valid; valid: > 0")
        if self.components < 0 or self.max_points < 0:
            raise CompanionError("components and max_points must be >= 0 (0: all inputs)")
        for key in ("sweep_components", "sweep_points"):
            fractions = getattr(self, key)
            if not fractions or not all(0 < f <= 1 for f in fractions):
                raise CompanionError(f"{key}={fractions!r}; valid: fractions in (0, 1]")
        if not self.bins or min(self.bins) < 1:
            raise CompanionError(f"bins={self.bins!r} is not valid; valid: integers >= 1")


PRESETS: dict[str, InformationPlaneConfig] = {
    "smoke": InformationPlaneConfig(
        hidden=(32, 8),
        epochs=3,
        batch_size=128,
        sweep_components=(0.25, 0.5, 1.0),
        sweep_points=(0.0625, 0.5, 1.0),
        bins=(2, 8, 32),
    ),
    "notebook": InformationPlaneConfig(),
    # The paper's MNIST setting (official MNIST_dropout/mi_mnist_dropout.py): 784-512-128-32-10
    # softplus MLP, Gaussian dropout p = 0.2 on the 32 units, SGD 0.1 / 0.9 / 1e-3, cosine over
    # 200 epochs, batch 256, a point every 2 epochs; full 60k MNIST from local IDX files.
    "full": InformationPlaneConfig(
        dataset="mnist",
        data_root="data/mnist",
        standardize=False,
        hidden=(512, 128, 32),
        batch_size=256,
        epochs=200,
        checkpoint_every=2000,
    ),
    # The official CIFAR-10 setting (cifar10_dropout/mi_cifar_dropout.py): ResNet-18, then
    # Linear(512, 128) with Gaussian dropout p = 0.4, SGD 0.05 / 0.9 / 5e-4, batch 64, crops and
    # flips, 200 epochs (its EPOCHS = 200).
    "full_cifar10": InformationPlaneConfig(
        dataset="cifar10",
        data_root="data/cifar-10-batches-py",
        standardize=False,
        architecture="resnet18",
        hidden=(128,),
        dropout_p=0.4,
        lr=0.05,
        weight_decay=5e-4,
        batch_size=64,
        epochs=200,
        augment=True,
        max_points=10_000,
        checkpoint_every=5000,
    ),
}


@dataclasses.dataclass
class ArmResult(Result):
    """One arm: information-plane points over training and the end-of-training sweeps."""

    arm: str
    dropout_p: float  # 0 for the deterministic arm
    sigma: float  # standard deviation of the dropout noise D ~ N(1, σ²)
    epochs: list[float]  # when each information-plane point was measured
    loss_epochs: list[float]
    loss: list[float]  # training loss of one batch per epoch
    val_accuracy: list[float]  # per measurement
    # dropout arm only (empty for the deterministic arm): split -> [measurement]
    ixz: dict[str, list[float]]  # I(X;Z), the paper's estimator
    izy: dict[str, list[float]]  # I(Z;Y), the same mixture estimator
    izy_bound: dict[str, list[float]]  # H(Y) − cross-entropy, a lower bound on I(Z;Y)
    # both arms, binning of the noiseless T = f(X): split -> "ixt"/"ity" -> bins -> [measurement]
    binning: dict[str, dict[str, dict[str, list[float]]]]
    # end of training, training inputs
    sweep_components: list[int]  # mixture components M (of the N training inputs)
    sweep_components_ixz: list[float]  # I(X;Z) estimate with M sampled means (dropout arm)
    sweep_points: list[int]  # number of inputs N used
    sweep_points_lower: list[float]  # I(X;Z) with X uniform over them (paper's estimator)
    sweep_points_upper: list[float]  # the leave-one-out estimate (an upper estimate)
    sweep_points_unique: list[int]  # distinct representations among the N (deterministic arm)
    test_accuracy: float
    seconds: float


@dataclasses.dataclass
class InformationPlaneResult(Result):
    config: dict
    n_train: int  # inputs measured per split: I(X;Z) <= log N
    n_val: int
    h_y_train: float  # H(Y): the ceiling of I(Z;Y)
    h_y_val: float
    arms: dict[str, ArmResult]


# --- data and model -----------------------------------------------------------------------------


def load_data(cfg: InformationPlaneConfig) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """``{"train", "val", "test"}`` -> (inputs, labels) tensors, preprocessed.

    digits and mnist_subset: the companion's fixed stratified 60/20/20 split. mnist and
    cifar10: the official train and test sets, the test set doubling as validation set as in
    the official code.
    """
    from companion import data

    if cfg.dataset in ("digits", "mnist_subset"):
        splits = data.load(cfg.dataset, seed=0)
        parts = {k: getattr(splits, k).tensors for k in ("train", "val", "test")}
    elif cfg.dataset == "mnist":
        from companion.papers.information_plane.data_sources import load_mnist_idx

        train, test = (load_mnist_idx(cfg.data_root, s).tensors for s in ("train", "test"))
        parts = {"train": train, "val": test, "test": test}
    else:
        train, test = (
            data.load_cifar(cfg.data_root, "cifar10", s).tensors for s in ("train", "test")
        )
        parts = {"train": train, "val": test, "test": test}
    if cfg.architecture == "mlp":
        parts = {k: (x.flatten(1), y) for k, (x, y) in parts.items()}
        if cfg.standardize:
            # per-pixel z-scores; + 0.1 so that pixels that are almost always 0 are not blown up
            mean, std = parts["train"][0].mean(0), parts["train"][0].std(0) + 0.1
            parts = {k: ((x - mean) / std, y) for k, (x, y) in parts.items()}
    elif cfg.dataset == "cifar10":
        mean = torch.tensor(CIFAR_MEAN).view(1, 3, 1, 1)
        std = torch.tensor(CIFAR_STD).view(1, 3, 1, 1)
        parts = {k: ((x - mean) / std, y) for k, (x, y) in parts.items()}
    return parts


def build_model(
    cfg: InformationPlaneConfig, arm: str, in_shape: tuple[int, ...], classes: int
) -> DropoutNetwork:
    """The network with Gaussian dropout on its representation layer (p = 0: deterministic)."""
    p = cfg.dropout_p if arm == "dropout" else 0.0
    if cfg.architecture == "resnet18":
        return DropoutNetwork(
            resnet18_body(in_shape[0], cfg.hidden[-1]), cfg.hidden[-1], classes, p
        )
    return DropoutNetwork(softplus_mlp(in_shape[0], cfg.hidden), cfg.hidden[-1], classes, p)


def make_augment():
    """Random crops of the 4-pixel zero-padded image and horizontal flips (the official CIFAR-10
    training transform), on whole batches with kornia."""
    import kornia.augmentation as K

    return nn.Sequential(K.RandomCrop((32, 32), padding=4), K.RandomHorizontalFlip())


@torch.no_grad()
def representations(net: DropoutNetwork, x: torch.Tensor, device, batch_size: int = 1024):
    """Noiseless ``f(x)`` for all inputs, in eval mode, batched."""
    net.eval()
    return torch.cat([net.representation(b.to(device)).float() for b in x.split(batch_size)])


# --- measuring ----------------------------------------------------------------------------------


def measure(
    net: DropoutNetwork,
    split_data: dict[str, tuple[torch.Tensor, torch.Tensor]],
    cfg: InformationPlaneConfig,
    device,
    generator: torch.Generator,
) -> dict[str, float]:
    """One information-plane point per split (the callback ``fit`` calls in eval mode)."""
    out: dict[str, float] = {}
    sigma = net.dropout.sigma
    for split, (x, y) in split_data.items():
        f = representations(net, x, device)
        y = y.to(device)
        if sigma > 0:
            draws = cfg.train_draws if split == "train" else cfg.val_draws
            samples = sample_dropout_representation(f, sigma, draws * len(f), generator)
            est = dropout_mutual_information(
                f, sigma, components=cfg.components, generator=generator, samples=samples
            )
            out[f"ixz/{split}"] = est.mi
            # the same mixture (the same M means) for h(Z) and h(Z|Y)
            out[f"izy/{split}"] = mixture_label_information(
                f, y, sigma, samples, est.h_z, est.component_rows
            )
            logits = net.head(samples[0].to(f.dtype))
            out[f"izy_bound/{split}"] = cross_entropy_bound(logits, y[samples[1]])
        for n_bins in cfg.bins:
            ixt, ity = binned_mutual_information(f, y, n_bins)
            out[f"bin_ixt/{split}/{n_bins}"] = ixt
            out[f"bin_ity/{split}/{n_bins}"] = ity
    x_val, y_val = split_data["val"]
    pred = torch.cat([net(b.to(device)).argmax(-1) for b in x_val.split(1024)])
    out["val_accuracy"] = (pred.cpu() == y_val.cpu()).double().mean().item()
    return out


def leave_one_out_information(f: torch.Tensor, sigma: float, generator: torch.Generator) -> float:
    """``h(Z) − h(Z|X)`` with each sample's own component left out of the mixture.

    With X continuous and the N inputs an i.i.d. sample of it, the mixture of the *other* N − 1
    components is an unbiased estimate of the density p(z) at z, and ``E[−log p̂] ≥ −log p``
    (Jensen), so this over-estimates ``I(X;Z)`` of the continuous input on average, while the
    paper's estimator (X uniform over the N inputs) under-estimates it on average. Together
    they bracket the MI that the paper's theory says is finite.
    """
    z, rows = sample_dropout_representation(f, sigma, len(f), generator)
    means = f.double()
    log_p = diagonal_mixture_log_density(z, means, sigma * means.abs(), exclude=rows)
    return -log_p.mean().item() - conditional_entropy(f, sigma)


def final_sweeps(net, f: torch.Tensor, cfg: InformationPlaneConfig, seed: int) -> dict:
    """The estimators' settings varied at the end of training, on the training inputs."""
    sigma = net.dropout.sigma
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(f), generator=g).to(f.device)
    points = sorted({max(2, round(frac * len(f))) for frac in cfg.sweep_points})
    components = sorted({max(2, round(frac * len(f))) for frac in cfg.sweep_components})
    out = {"components_ixz": [], "lower": [], "upper": [], "unique": []}
    for n in points:
        sub = f[order[:n]]
        out["unique"].append(len(torch.unique(sub, dim=0)))
        if sigma > 0:
            g_n = torch.Generator().manual_seed(seed + n)
            out["lower"].append(dropout_mutual_information(sub, sigma, generator=g_n).mi)
            out["upper"].append(leave_one_out_information(sub, sigma, g_n))
    if sigma > 0:
        # the same noisy samples of all N inputs, scored under mixtures of M of their means
        g_m = torch.Generator().manual_seed(seed + 7919)
        samples = sample_dropout_representation(f, sigma, len(f), g_m)
        for m in components:
            est = dropout_mutual_information(f, sigma, components=m, generator=g_m, samples=samples)
            out["components_ixz"].append(est.mi)
    out["points"] = points
    out["components"] = components
    return out


def subset(parts, n: int, seed: int):
    """A fixed random subset of ``n`` inputs (all when ``n`` is 0 or larger than the split)."""
    x, y = parts
    if n == 0 or n >= len(x):
        return x, y
    rows = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))[:n]
    return x[rows], y[rows]


# --- training one arm ---------------------------------------------------------------------------


def classification_step(cfg: InformationPlaneConfig):
    """The loss of one batch (cross-entropy), with augmentation for images when asked."""

    augment = make_augment() if cfg.augment else None

    def step(model, batch):
        x, y = batch
        if augment is not None:
            x = augment(x)
        logits = model(x)
        return F.cross_entropy(logits, y), {}

    return step


def train_arm(fabric, cfg: InformationPlaneConfig, arm: str, folder: Path | None, resume: bool):
    """Train one arm under Fabric and measure its information planes; returns an ArmResult."""
    seed_everything(cfg.seed)
    parts = load_data(cfg)
    classes = int(parts["train"][1].max()) + 1
    net = build_model(cfg, arm, tuple(parts["train"][0].shape[1:]), classes)
    optimizer = torch.optim.SGD(
        net.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay
    )
    batches = StepBatches(
        parts["train"], cfg.batch_size, cfg.seed, fabric.global_rank, fabric.world_size
    )
    steps_per_epoch = batches.steps_per_epoch
    steps = cfg.epochs * steps_per_epoch
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps)
    model, optimizer = fabric.setup(net, optimizer)
    measured = {
        "train": subset(parts["train"], cfg.max_points, cfg.seed),
        "val": subset(parts["val"], cfg.max_points, cfg.seed + 1),
    }

    def callback(step: int, _model) -> dict[str, float]:
        g = torch.Generator().manual_seed(cfg.seed * 1_000_003 + step)
        return measure(net, measured, cfg, fabric.device, g)

    start = time.perf_counter()
    history = fit(
        fabric,
        model,
        optimizer,
        batches,
        classification_step(cfg),
        steps=steps,
        scheduler=scheduler,
        callbacks=[Every(cfg.measure_every * steps_per_epoch, callback)],
        log_every=steps_per_epoch,
        checkpoint=folder / "checkpoint.ckpt" if folder else None,
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        desc=arm,
    )
    seconds = time.perf_counter() - start
    f_train = representations(net, measured["train"][0], fabric.device)
    sweeps = final_sweeps(net, f_train, cfg, cfg.seed + 17)
    net.eval()
    with torch.no_grad():
        x_test, y_test = parts["test"]
        pred = torch.cat([net(b.to(fabric.device)).argmax(-1).cpu() for b in x_test.split(1024)])
    test_accuracy = (pred == y_test).double().mean().item()

    def series(name: str) -> list[float]:
        return [round(v, 5) for v in history.values(name)]

    splits = ("train", "val")
    binning = {
        s: {
            kind: {str(b): series(f"bin_{kind}/{s}/{b}") for b in cfg.bins}
            for kind in ("ixt", "ity")
        }
        for s in splits
    }
    return ArmResult(
        arm=arm,
        dropout_p=net.dropout.p,
        sigma=net.dropout.sigma,
        epochs=[(s + 1) / steps_per_epoch for s in history.steps("val_accuracy")],
        loss_epochs=[(s + 1) / steps_per_epoch for s in history.steps("loss")],
        loss=series("loss"),
        val_accuracy=series("val_accuracy"),
        ixz={s: series(f"ixz/{s}") for s in splits},
        izy={s: series(f"izy/{s}") for s in splits},
        izy_bound={s: series(f"izy_bound/{s}") for s in splits},
        binning=binning,
        sweep_components=sweeps["components"] if net.dropout.sigma > 0 else [],
        sweep_components_ixz=[round(v, 5) for v in sweeps["components_ixz"]],
        sweep_points=sweeps["points"],
        sweep_points_lower=[round(v, 5) for v in sweeps["lower"]],
        sweep_points_upper=[round(v, 5) for v in sweeps["upper"]],
        sweep_points_unique=sweeps["unique"],
        test_accuracy=test_accuracy,
        seconds=seconds,
    )


def run(
    cfg: InformationPlaneConfig, out_dir: str | Path | None = None, resume: bool = False
) -> InformationPlaneResult:
    """Train and measure every arm in ``cfg.arms``; with ``out_dir``, checkpoint and save.

    ``resume=True`` keeps arms that finished (``<out_dir>/<arm>/arm.json``) and continues an
    interrupted arm from its last checkpoint.
    """
    arms = train_arms(cfg, cfg.arms, out_dir, resume, ArmResult, train_arm)
    parts = load_data(cfg)
    y_train = subset(parts["train"], cfg.max_points, cfg.seed)[1]
    y_val = subset(parts["val"], cfg.max_points, cfg.seed + 1)[1]
    result = InformationPlaneResult(
        config=cfg.to_dict(),
        n_train=len(y_train),
        n_val=len(y_val),
        h_y_train=label_entropy(y_train),
        h_y_val=label_entropy(y_val),
        arms=arms,
    )
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result


def log_n(result: InformationPlaneResult, split: str = "train") -> float:
    """``log N``: the largest possible ``I(X;Z)`` when X is uniform over N inputs."""
    return math.log(result.n_train if split == "train" else result.n_val)


__all__ = [
    "ARMS",
    "PRESETS",
    "ArmResult",
    "InformationPlaneConfig",
    "InformationPlaneResult",
    "build_model",
    "final_sweeps",
    "leave_one_out_information",
    "load_data",
    "log_n",
    "measure",
    "run",
    "train_arm",
]
