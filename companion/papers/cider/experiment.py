"""The experiment: one encoder trained three ways (CIDER, SupCon, cross-entropy) on the
in-distribution classes, then asked to tell them apart from out-of-distribution inputs.

In-distribution (ID): the first ``id_classes`` classes (digits 0–5 by default). Out of
distribution, three sets of the ID test set's size:

* ``near``: images of the held-out classes (digits 6–9): same pen strokes, new shapes;
* ``noise``: pixels drawn independently from a Gaussian with the ID pixels' mean and std;
* ``shuffled``: ID test images with their pixels permuted (same intensities, no shape).

All arms start from the same initial weights, see the same batches and the same two augmented
views per image (``simclr_augmentation``), use the same optimizer and steps; only the loss
differs. Every arm is scored the same way (the paper's protocol, ``eval_ood.py``): KNN distance
on the normalised penultimate feature h. The cross-entropy arm is also scored by its own
outputs, maximum softmax probability and energy: the paper's cross-entropy baselines.
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
    Result,
    StepBatches,
    fit,
    seed_everything,
    train_arms,
)
from companion.core.metrics import auroc, fpr_at_tpr
from companion.core.probes import knn_accuracy
from companion.data.augment import simclr_augmentation
from companion.errors import CompanionError, unknown
from companion.papers.cider.method import (
    HypersphereNet,
    cider_loss,
    compactness_degrees,
    dispersion_degrees,
    energy_score,
    init_prototypes,
    knn_score,
    msp_score,
    supcon_loss,
)

METHODS = ("cider", "supcon", "ce")
DATASETS = ("digits", "cifar10")
ENCODERS = ("mlp", "resnet18")
OOD_SETS = ("near", "noise", "shuffled")


@dataclasses.dataclass(frozen=True)
class CiderConfig(Config):
    """What to train and how. Sizes change between presets; the algorithm never does."""

    dataset: str = "digits"
    data_root: str = ""  # cifar10: the extracted python release
    id_classes: int = 6  # classes 0 … id_classes−1 are ID; the rest are the near-OOD set
    encoder: str = "mlp"
    hidden: int = 256  # mlp: width of the hidden layer
    feat_dim: int = 128  # h: the penultimate feature (512 for ResNet-18)
    out_dim: int = 32  # z: the head's embedding on the sphere (128 in the paper)
    methods: tuple[str, ...] = METHODS
    batch_size: int = 128
    steps: int = 300
    lr: float = 0.5
    momentum: float = 0.9
    weight_decay: float = 1e-4
    warmup_steps: int = 60  # 10 epochs of 6 steps (the official warm-up length)
    temperature: float = 0.1  # τ of every loss
    alpha: float = 0.95  # prototype momentum ("proto_m")
    w: float = 2.0  # weight of the compactness loss
    k: int = 10  # KNN: the k-th nearest training feature
    crop_scale: float = 0.5  # RandomResizedCrop keeps 50–100% of the image area
    checkpoint_every: int = 0
    log_every: int = 5

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        if self.encoder not in ENCODERS:
            raise unknown("encoder", self.encoder, ENCODERS)
        for m in self.methods:
            if m not in METHODS:
                raise unknown("method", m, METHODS)
        if not 2 <= self.id_classes <= 9:
            raise CompanionError(f"id_classes must lie in [2, 9], got {self.id_classes}")
        if self.lr <= 0 or self.steps < 1 or self.batch_size < 2 or self.temperature <= 0:
            raise CompanionError(
                "lr, steps, batch_size (≥ 2) and temperature must be positive, got "
                f"lr={self.lr}, steps={self.steps}, batch_size={self.batch_size}, "
                f"temperature={self.temperature}"
            )
        if not 0 <= self.alpha < 1:
            raise CompanionError(f"alpha must lie in [0, 1), got {self.alpha}")
        if not 0 < self.crop_scale <= 1:
            raise CompanionError(f"crop_scale must lie in (0, 1], got {self.crop_scale}")


PRESETS: dict[str, CiderConfig] = {
    # a plumbing check (seconds): the per-step cost is mostly the augmentation's overhead, so
    # steps are what it saves
    "smoke": CiderConfig(
        hidden=32, feat_dim=16, out_dim=8, batch_size=16, steps=4, warmup_steps=1, k=5, log_every=2
    ),
    # 300 steps of 128 ≈ 50 epochs of the 758 ID training images. The warm-up is the official
    # 10 epochs (60 steps), not 2% of the run: with 6 steps SupCon's classes collapsed into a
    # small cap of the sphere at seeds 1-3 (of 0-4), a weaker baseline than its recipe gives
    "notebook": CiderConfig(),
    # the compactness needs more steps than the notebook's minute: 5x the notebook's steps
    # (about 250 epochs), the same 10-epoch warm-up; ~75 s of CPU per seed on one thread
    "medium": CiderConfig(steps=1500),
    # Paper scale (CIFAR-10 row of the official scripts): ResNet-18, 128-d head, batch 512,
    # lr 0.5 with warm-up and cosine decay, 500 epochs of the 6 ID classes (30,000 images).
    "full": CiderConfig(
        dataset="cifar10",
        data_root="data/cifar-10-batches-py",
        encoder="resnet18",
        feat_dim=512,
        out_dim=128,
        batch_size=512,
        steps=29_000,  # 500 epochs × 58 steps of 512 of the 30,000 ID training images
        warmup_steps=580,  # 10 epochs
        k=100,
        crop_scale=0.2,
        checkpoint_every=1000,
        log_every=50,
        precision="bf16-mixed",
    ),
}


@dataclasses.dataclass
class ArmResult(Result):
    """One arm: its training curves and how well its features detect each OOD set."""

    method: str
    loss_steps: list[int]
    loss: list[float]
    fpr95: dict[str, float]  # KNN score on h, per OOD set (and "mean")
    auroc: dict[str, float]
    msp_fpr95: dict[str, float] | None  # cross-entropy arm only: maximum softmax probability
    msp_auroc: dict[str, float] | None
    id_accuracy: float  # kNN classification accuracy on normalised h (ID test)
    dispersion: float  # mean angle between class-mean z (degrees); larger = more dispersed
    compactness: float  # mean angle of test z to its class-mean z (degrees); smaller = compact
    dispersion_h: float  # the same two on normalised h, the space the KNN score reads
    compactness_h: float
    ema_dispersion: float | None  # CIDER only: its own EMA prototypes
    ema_norm_error: float | None  # CIDER only: max |‖μ_c‖ − 1| of the EMA prototypes
    prototype_cos: list[list[float]]  # cosine between class-mean z, [C][C]
    scores: dict[str, list[float]]  # KNN scores of the ID test set and of each OOD set
    seconds: float
    energy_fpr95: dict[str, float] | None = None  # cross-entropy arm only: energy score
    energy_auroc: dict[str, float] | None = None


@dataclasses.dataclass
class CiderResult(Result):
    config: dict
    sizes: dict[str, int]  # ID train, ID test, each OOD set
    arms: dict[str, ArmResult]


# --------------------------------------------------------------------------------------------
# Data: ID train/test and the three OOD sets
# --------------------------------------------------------------------------------------------


def _images(cfg: CiderConfig):
    """(train images, train labels, test images, test labels) over all classes."""
    from companion import data

    if cfg.dataset == "digits":
        splits = data.load_digits(val_fraction=0.1, test_fraction=0.3, seed=0)
        xa, ya = splits.train.tensors
        xv, yv = splits.val.tensors
        xt, yt = splits.test.tensors
        return torch.cat([xa, xv]), torch.cat([ya, yv]), xt, yt
    train = data.load_cifar(cfg.data_root, "cifar10", "train").tensors
    test = data.load_cifar(cfg.data_root, "cifar10", "test").tensors
    return (*train, *test)


def ood_sets(
    id_test: torch.Tensor, held_out: torch.Tensor, pixel_mean: float, pixel_std: float, seed: int
) -> dict[str, torch.Tensor]:
    """The three OOD sets, each of the ID test set's size (fewer held-out images if there are
    not enough): a random subset of ``held_out``, Gaussian noise images with the ID pixel
    statistics (clipped to [0, 1]), and ID test images with their pixels shuffled (each image
    its own permutation, channels kept together)."""
    g = torch.Generator().manual_seed(10_007 + seed)
    n = len(id_test)
    near = held_out[torch.randperm(len(held_out), generator=g)[:n]]
    noise = (torch.randn(id_test.shape, generator=g) * pixel_std + pixel_mean).clamp(0, 1)
    flat = id_test.flatten(2)  # [N, channels, pixels]
    perm = torch.argsort(torch.rand(n, flat.shape[2], generator=g), dim=1)
    shuffled = flat.gather(2, perm[:, None, :].expand_as(flat)).view_as(id_test)
    return {"near": near, "noise": noise, "shuffled": shuffled}


def load_data(cfg: CiderConfig):
    """(ID train images, ID train labels, ID test images, ID test labels, {OOD set: images})."""
    x_train, y_train, x_test, y_test = _images(cfg)
    keep_train, keep_test = y_train < cfg.id_classes, y_test < cfg.id_classes
    xi, yi = x_train[keep_train], y_train[keep_train]
    xt, yt = x_test[keep_test], y_test[keep_test]
    if len(xi) == 0 or len(xt) == 0 or keep_test.all():
        raise CompanionError(f"id_classes={cfg.id_classes} leaves an empty ID or OOD set")
    held_out = torch.cat([x_train[~keep_train], x_test[~keep_test]])  # never trained on
    ood = ood_sets(xt, held_out, xi.mean().item(), xi.std().item(), cfg.seed)
    return xi, yi, xt, yt, ood


# --------------------------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------------------------


class _Block(nn.Module):
    """ResNet basic block (two 3×3 convolutions with batch norm and a shortcut)."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


def resnet18_encoder(channels: int = 3, width: int = 64) -> nn.Sequential:
    """The CIFAR ResNet-18 of the official ``models/resnet.py`` (3×3 stem, no max-pool, four
    stages of two blocks, global average pool): image → h of 8·``width`` features."""
    layers: list[nn.Module] = [
        nn.Conv2d(channels, width, 3, 1, 1, bias=False),
        nn.BatchNorm2d(width),
        nn.ReLU(),
    ]
    cin = width
    for stage, stride in enumerate((1, 2, 2, 2)):
        cout = width * 2**stage
        layers += [_Block(cin, cout, stride), _Block(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
    return nn.Sequential(*layers)


def build_model(cfg: CiderConfig, image_shape: tuple[int, ...]) -> HypersphereNet:
    """The same network for every arm: encoder → h, MLP head → z, linear classifier on h."""
    if cfg.encoder == "resnet18":
        if cfg.feat_dim % 8:
            raise CompanionError(f"resnet18 needs feat_dim divisible by 8, got {cfg.feat_dim}")
        encoder = resnet18_encoder(image_shape[0], cfg.feat_dim // 8)
    else:
        encoder = nn.Sequential(
            nn.Flatten(),
            nn.Linear(math.prod(image_shape), cfg.hidden),
            nn.BatchNorm1d(cfg.hidden),
            nn.ReLU(),
            nn.Linear(cfg.hidden, cfg.feat_dim),
            nn.BatchNorm1d(cfg.feat_dim),
            nn.ReLU(),
        )
    return HypersphereNet(encoder, cfg.feat_dim, cfg.out_dim, cfg.id_classes)


def lr_factor(cfg: CiderConfig, step: int) -> float:
    """Linear warm-up from 0.001× over ``warmup_steps``, then cosine decay to 0.001× of lr
    (the official ``warmup_learning_rate`` / ``adjust_learning_rate`` with ``--cosine``)."""
    low = 1e-3
    if step < cfg.warmup_steps:
        return low + (1 - low) * step / cfg.warmup_steps
    progress = (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps)
    return low + (1 - low) * 0.5 * (1 + math.cos(math.pi * progress))


# --------------------------------------------------------------------------------------------
# Training and evaluation of one arm
# --------------------------------------------------------------------------------------------


def _raw(model: nn.Module) -> nn.Module:
    """The network inside Fabric's (and DDP's) wrappers."""
    while hasattr(model, "module"):
        model = model.module
    return model


@torch.no_grad()
def features(model: nn.Module, images: torch.Tensor, device, batch_size: int = 1024):
    """(h, z, logits) of unaugmented images, in float32 on the CPU whatever the training
    precision (the unwrapped model with autocast off), in eval mode."""
    net = _raw(model).eval()
    outs = []
    for x in images.split(batch_size):
        with torch.autocast(torch.device(device).type, enabled=False):
            outs.append([t.float().cpu() for t in net(x.to(device).float())])
    return tuple(torch.cat(parts) for parts in zip(*outs))


def _detection(id_scores: torch.Tensor, ood_scores: dict[str, torch.Tensor]):
    """FPR95 and AUROC of each OOD set against the ID test set (ID = positive), and the mean."""
    fpr, roc = {}, {}
    for name, s in ood_scores.items():
        scores = torch.cat([id_scores, s])
        positive = torch.cat([torch.ones(len(id_scores)), torch.zeros(len(s))]).bool()
        fpr[name] = fpr_at_tpr(scores, positive, 0.95)
        roc[name] = auroc(scores, positive)
    fpr["mean"] = sum(fpr[n] for n in ood_scores) / len(ood_scores)
    roc["mean"] = sum(roc[n] for n in ood_scores) / len(ood_scores)
    return fpr, roc


def _r(x: float, digits: int = 5) -> float:
    return round(float(x), digits)


def evaluate(model, cfg: CiderConfig, method: str, data, device) -> dict:
    """Every number of an :class:`ArmResult` except the training curves, in float32."""
    xi, yi, xt, yt, ood = data
    h_train, z_train, _ = features(model, xi, device)
    h_test, z_test, logits_test = features(model, xt, device)
    ood_out = {name: features(model, x, device) for name, x in ood.items()}
    k = min(cfg.k, len(h_train))
    id_scores = knn_score(h_train, h_test, k)
    ood_scores = {name: knn_score(h_train, out[0], k) for name, out in ood_out.items()}
    fpr, roc = _detection(id_scores, ood_scores)
    msp_fpr = msp_roc = energy_fpr = energy_roc = None
    if method == "ce":  # the paper's own scores for a cross-entropy model
        msp_fpr, msp_roc = _detection(
            msp_score(logits_test), {n: msp_score(o[2]) for n, o in ood_out.items()}
        )
        energy_fpr, energy_roc = _detection(
            energy_score(logits_test), {n: energy_score(o[2]) for n, o in ood_out.items()}
        )
    means_z = init_prototypes(z_train, yi, cfg.id_classes)
    h_n, h_test_n = F.normalize(h_train, dim=1), F.normalize(h_test, dim=1)
    means_h = init_prototypes(h_n, yi, cfg.id_classes)
    return dict(
        fpr95={n: _r(v) for n, v in fpr.items()},
        auroc={n: _r(v) for n, v in roc.items()},
        msp_fpr95=None if msp_fpr is None else {n: _r(v) for n, v in msp_fpr.items()},
        msp_auroc=None if msp_roc is None else {n: _r(v) for n, v in msp_roc.items()},
        energy_fpr95=None if energy_fpr is None else {n: _r(v) for n, v in energy_fpr.items()},
        energy_auroc=None if energy_roc is None else {n: _r(v) for n, v in energy_roc.items()},
        id_accuracy=_r(knn_accuracy(h_n, yi, h_test_n, yt, k, cfg.id_classes)),
        dispersion=_r(dispersion_degrees(means_z), 3),
        compactness=_r(compactness_degrees(z_test, yt, means_z), 3),
        dispersion_h=_r(dispersion_degrees(means_h), 3),
        compactness_h=_r(compactness_degrees(h_test_n, yt, means_h), 3),
        prototype_cos=[[_r(c, 4) for c in row] for row in (means_z @ means_z.T).tolist()],
        scores={
            "id": [_r(s, 4) for s in id_scores.tolist()],
            **{n: [_r(v, 4) for v in s.tolist()] for n, s in ood_scores.items()},
        },
    )


def make_step(cfg: CiderConfig, method: str, augment: nn.Module):
    """``step_fn(model, batch)`` for :func:`companion.core.fit`: two augmented views of every
    image (rows i and i + B), then the arm's loss. Losses run in float32 (autocast off)."""

    def step_fn(model, batch):
        x, y = batch
        views = torch.cat([augment(x), augment(x)])
        labels = torch.cat([y, y])
        h, z, logits = model(views)
        with torch.autocast(views.device.type, enabled=False):
            z, logits = z.float(), logits.float()
            if method == "cider":
                net = _raw(model)
                loss, new_mu, parts = cider_loss(
                    z, labels, net.prototypes, cfg.alpha, cfg.temperature, cfg.w
                )
                net.prototypes.copy_(new_mu)  # the EMA buffer keeps the detached update
                return loss, parts
            if method == "supcon":
                return supcon_loss(z[: len(y)], z[len(y) :], y, cfg.temperature), {}
            return F.cross_entropy(logits, labels), {}

    return step_fn


def train_arm(fabric, cfg: CiderConfig, method: str, folder: Path | None, resume: bool):
    """Train one arm under Fabric (any device, DDP, precision) and evaluate it."""
    seed_everything(cfg.seed)  # the same initial weights for every arm
    data = load_data(cfg)
    xi, yi = data[0], data[1]
    model = build_model(cfg, tuple(xi.shape[1:]))
    optimizer = torch.optim.SGD(
        model.parameters(),
        lr=cfg.lr,
        momentum=cfg.momentum,
        nesterov=True,
        weight_decay=cfg.weight_decay,
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(cfg, s))
    model, optimizer = fabric.setup(model, optimizer)
    if method == "cider":  # prototypes start at the class means of z (DisLoss.init_...)
        _, z, _ = features(model, xi, fabric.device)
        _raw(model).prototypes.copy_(init_prototypes(z, yi, cfg.id_classes))
    batches = StepBatches((xi, yi), cfg.batch_size, cfg.seed, fabric.global_rank, fabric.world_size)
    flip = 0.5 if cfg.dataset == "cifar10" else 0.0  # flips suit photographs, not digits
    augment = simclr_augmentation(
        xi.shape[-1], xi.shape[1], crop_scale=(cfg.crop_scale, 1.0), flip=flip
    ).to(fabric.device)
    start = time.perf_counter()
    history = fit(
        fabric,
        model,
        optimizer,
        batches,
        make_step(cfg, method, augment),
        steps=cfg.steps,
        scheduler=scheduler,
        log_every=cfg.log_every,
        checkpoint=folder / "checkpoint.ckpt" if folder else None,
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        desc=method,
    )
    seconds = time.perf_counter() - start
    measured = evaluate(model, cfg, method, data, fabric.device)
    ema = _raw(model).prototypes.float().cpu()
    return ArmResult(
        method=method,
        loss_steps=history.steps("loss"),
        loss=[_r(v) for v in history.values("loss")],
        ema_dispersion=_r(dispersion_degrees(ema), 3) if method == "cider" else None,
        ema_norm_error=float((ema.norm(dim=1) - 1).abs().max()) if method == "cider" else None,
        seconds=seconds,
        **measured,
    )


def run(cfg: CiderConfig, out_dir: str | Path | None = None, resume: bool = False) -> CiderResult:
    """Train every arm in ``cfg.methods``; with ``out_dir``, checkpoint and write results.

    ``resume=True`` keeps arms that finished (``<out_dir>/<method>/arm.json``) and continues an
    interrupted arm from its last checkpoint.
    """
    arms = train_arms(cfg, cfg.methods, out_dir, resume, ArmResult, train_arm)
    xi, _, xt, _, ood = load_data(cfg)
    sizes = {"id_train": len(xi), "id_test": len(xt), **{n: len(x) for n, x in ood.items()}}
    result = CiderResult(config=cfg.to_dict(), sizes=sizes, arms=arms)
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
