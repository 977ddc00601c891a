"""The experiment: t-SimCNE's three training stages on an image set, and t-SNE of the pixels as
the baseline, both scored by kNN accuracy in 2-D (paper Sec. 4 and Fig. A.1).

Every image is embedded by both methods (neither sees a label); a k = 15 nearest-neighbour
classifier is then fitted on the embedded training images and scored on the embedded test
images (the official code scores a random stratified split the same way).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import torch

from companion.core import Config, Result, StepBatches, fit, launch, seed_everything
from companion.core.probes import knn_accuracy
from companion.data.augment import simclr_augmentation
from companion.errors import CompanionError, unknown
from companion.papers.tsimcne.method import (
    ResNet,
    TSimCNE,
    cosine_with_warmup,
    infonce,
    lr_from_batch_size,
    start_stage,
)

DATASETS = ("shifted_digits", "digits", "mnist_subset", "cifar10")
STAGES = (1, 2, 3)


@dataclasses.dataclass(frozen=True)
class TSimCNEConfig(Config):
    """What to embed and how. Sizes change between presets; the algorithm never does."""

    dataset: str = "shifted_digits"
    data_root: str = ""  # cifar10: the extracted python release
    image_size: int = 8
    canvas: int = 14  # shifted_digits: each image_size digit at a random place on canvas x canvas
    max_images: int = 0  # > 0: a seeded random subset of this many images (smoke tests)
    # backbone: a CIFAR ResNet; these defaults are the paper's ResNet18
    blocks: tuple[int, ...] = (2, 2, 2, 2)
    widths: tuple[int, ...] = (64, 128, 256, 512)
    hidden_dim: int = 1024  # projection head: backbone -> hidden -> ReLU -> pre_dim
    pre_dim: int = 128  # stage 1 output dimension
    out_dim: int = 2  # stages 2 and 3
    epochs: tuple[int, int, int] = (1000, 50, 450)  # the paper's
    warmup_epochs: tuple[int, int, int] = (10, 0, 10)  # the paper's
    batch_size: int = 1024  # the paper's
    lr: float = 0.0  # 0: the official rule 0.03 * batch_size / 256
    finetune_lr_factor: float = 1e-3  # stage 3 runs at lr * this (paper: lr / 1000)
    momentum: float = 0.9
    weight_decay: float = 5e-4
    last_layer_std: float = 1.0  # the new 2-d layer's weights ~ N(0, std^2)
    crop_scale: float = 0.2  # RandomResizedCrop scale (crop_scale, 1)
    flip: float = 0.5  # horizontal-flip probability (0 for digits: a mirrored digit is not one)
    k: int = 15  # kNN classifier
    tsne: bool = True  # the t-SNE-of-pixels baseline
    tsne_perplexity: float = 30.0
    tsne_iter: int = 750  # as openTSNE's defaults: 250 early-exaggeration + 500 iterations
    log_every_epoch: int = 1
    checkpoint_every: int = 0  # steps; 0: at the end of every stage only

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        if len(self.blocks) != len(self.widths) or not self.blocks:
            raise CompanionError(
                f"blocks {self.blocks} and widths {self.widths} need the same non-zero length"
            )
        if any(e < 0 for e in self.epochs) or self.epochs[0] < 1:
            raise CompanionError(f"epochs {self.epochs}: stage 1 needs >= 1, none negative")
        if any(w < 0 or w > e for w, e in zip(self.warmup_epochs, self.epochs)):
            raise CompanionError(
                f"warmup_epochs {self.warmup_epochs} must lie in [0, epochs {self.epochs}]"
            )
        if self.dataset == "shifted_digits" and self.canvas < self.image_size:
            raise CompanionError(
                f"canvas {self.canvas} must be at least image_size {self.image_size}"
            )
        if self.max_images < 0 or 0 < self.max_images < 4 * self.k:
            raise CompanionError(f"max_images {self.max_images}: 0 (all) or at least 4k")
        if self.batch_size < 2 or self.lr < 0 or not 0 < self.crop_scale <= 1:
            raise CompanionError(
                f"need batch_size >= 2, lr >= 0, crop_scale in (0, 1]; got {self.batch_size}, "
                f"{self.lr}, {self.crop_scale}"
            )
        if not 0 <= self.flip <= 1 or self.k < 1 or self.out_dim < 1:
            raise CompanionError(
                f"need flip in [0, 1], k >= 1, out_dim >= 1; got {self.flip}, {self.k}, "
                f"{self.out_dim}"
            )

    @property
    def base_lr(self) -> float:
        return self.lr or lr_from_batch_size(self.batch_size)

    @property
    def stage_lrs(self) -> tuple[float, float, float]:
        """lr, lr, lr * finetune_lr_factor (``TSimCNE(lr="auto_batch")``)."""
        return self.base_lr, self.base_lr, self.base_lr * self.finetune_lr_factor


# Shifted digits: the 1,797 8x8 digits, each at a random place on a 14x14 canvas (see
# ``shift_onto_canvas``); a three-stage ResNet of widths 16-32-64, batch 128, 18/2/10 epochs; flips
# off (a mirrored digit is not a digit); crops of at least half the canvas (a 20 % crop of 14x14
# is a 6x6 patch, less than a digit). Two rates differ from the paper's, because these runs are
# ~1/500 of its steps: lr 0.1 (the rule 0.03 * 128 / 256 = 0.015 barely moves the network in 250
# steps) and stage 3 at lr/10 (lr/1000 leaves the network where stage 2 put it).
_DIGITS = dict(
    dataset="shifted_digits",
    canvas=14,
    blocks=(1, 1, 1),
    widths=(16, 32, 64),
    batch_size=128,
    lr=0.1,
    epochs=(18, 2, 10),
    warmup_epochs=(1, 0, 1),
    finetune_lr_factor=0.1,
    crop_scale=0.5,
    flip=0.0,
    tsne_iter=500,
)

PRESETS: dict[str, TSimCNEConfig] = {
    "smoke": TSimCNEConfig(
        **_DIGITS
        | dict(
            max_images=200,
            widths=(4, 8, 16),
            hidden_dim=64,
            epochs=(2, 1, 1),
            tsne_iter=250,  # scikit-learn's minimum
        ),
    ),
    "notebook": TSimCNEConfig(**_DIGITS),
    # Paper scale: CIFAR-10 (train + test, 60,000 images), ResNet18, batch 1024, [1000, 50, 450]
    "full": TSimCNEConfig(
        dataset="cifar10",
        data_root="data/cifar-10-batches-py",
        image_size=32,
        log_every_epoch=10,
        checkpoint_every=2000,
        precision="bf16-mixed",
    ),
}


@dataclasses.dataclass
class StageResult(Result):
    """One training stage: its loss per epoch and the kNN accuracy of its output."""

    stage: int
    epochs: int
    lr: float
    out_dim: int
    loss: list[float]  # mean training loss of each logged epoch
    loss_epochs: list[int]
    knn: float  # kNN accuracy in the stage's output space (128-d after stage 1)
    embedding: list[list[float]] | None  # every image's 2-d output (None when out_dim > 2)
    seconds: float


@dataclasses.dataclass
class TSNEResult(Result):
    embedding: list[list[float]]
    knn: float
    seconds: float


@dataclasses.dataclass
class TSimCNEResult(Result):
    config: dict
    labels: list[int]
    is_test: list[bool]  # kNN: fitted on the other images, scored on these
    classes: list[str]
    pixel_knn: float  # kNN accuracy in pixel space (no embedding): a reference
    stages: list[StageResult]
    tsne: TSNEResult | None

    @property
    def final(self) -> StageResult:
        return self.stages[-1]


def shift_onto_canvas(images: torch.Tensor, canvas: int, seed: int = 0) -> torch.Tensor:
    """Each image [C, h, w] pasted at a random place (uniform over every position that fits,
    seeded) on a black ``canvas`` x ``canvas`` image: [N, C, canvas, canvas].

    The digits of scikit-learn are centred and size-normalized, so pixel distances between
    them are meaningful and t-SNE of the pixels works well. Objects in natural images (the
    paper's CIFAR) appear anywhere in the frame; placing each digit at a random position gives
    the digits that property: the same digit a few pixels apart shares little ink.
    """
    n, c, h, w = images.shape
    if canvas < max(h, w):
        raise CompanionError(f"canvas {canvas} is smaller than the images ({h}x{w})")
    g = torch.Generator().manual_seed(seed)
    top = torch.randint(0, canvas - h + 1, (n,), generator=g)
    left = torch.randint(0, canvas - w + 1, (n,), generator=g)
    out = images.new_zeros(n, c, canvas, canvas)
    for i in range(n):
        out[i, :, top[i] : top[i] + h, left[i] : left[i] + w] = images[i]
    return out


def load_images(cfg: TSimCNEConfig):
    """(images float [N, C, H, W] in [0, 1], labels int64 [N], is_test bool [N], classes).

    All images are embedded (the method never sees labels); ``is_test`` marks the ones the
    kNN classifier is scored on: the shipped datasets' seeded test split, CIFAR-10's test set.
    ``shifted_digits`` are the digits with each image moved by :func:`shift_onto_canvas`.
    """
    from companion import data

    if cfg.dataset == "cifar10":
        train = data.load_cifar(cfg.data_root, "cifar10", "train").tensors
        test = data.load_cifar(cfg.data_root, "cifar10", "test").tensors
        parts, classes = (train, test), list(data.cifar_classes(cfg.data_root, "cifar10"))
    else:
        name = "digits" if cfg.dataset == "shifted_digits" else cfg.dataset
        splits = data.load(name, image_size=cfg.image_size, seed=0)
        parts = (splits.train.tensors, splits.val.tensors, splits.test.tensors)
        classes = list(splits.classes)
        if cfg.dataset == "shifted_digits":
            parts = tuple(
                (shift_onto_canvas(x, cfg.canvas, seed=i), y) for i, (x, y) in enumerate(parts)
            )
    images = torch.cat([p[0] for p in parts])
    labels = torch.cat([p[1] for p in parts])
    is_test = torch.zeros(len(labels), dtype=torch.bool)
    is_test[-len(parts[-1][1]) :] = True
    if 0 < cfg.max_images < len(labels):
        keep = torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))
        keep = keep[: cfg.max_images].sort().values
        images, labels, is_test = images[keep], labels[keep], is_test[keep]
    return images, labels, is_test, classes


def score(embedding: np.ndarray, labels: np.ndarray, is_test: np.ndarray, k: int) -> float:
    """kNN accuracy of an embedding: fitted on the non-test rows, scored on the test rows."""
    return knn_accuracy(
        embedding[~is_test], labels[~is_test], embedding[is_test], labels[is_test], k
    )


@torch.no_grad()
def embed(model: torch.nn.Module, images: torch.Tensor, device, batch_size: int = 1024):
    """The network's output for every (unaugmented) image, as float64 numpy [N, out_dim]."""
    model.eval()
    out = [model(x.to(device)).float().cpu() for x in images.split(batch_size)]
    return torch.cat(out).double().numpy()


def build_model(cfg: TSimCNEConfig, channels: int) -> TSimCNE:
    return TSimCNE(ResNet(cfg.blocks, cfg.widths, channels), cfg.hidden_dim, cfg.pre_dim)


def train_stages(fabric, cfg: TSimCNEConfig, folder: Path | None, resume: bool):
    """The three stages under Fabric (any device, DDP, precision); every stage's result."""
    seed_everything(cfg.seed)
    images, labels, is_test, _ = load_images(cfg)
    labels_np, test_np = labels.numpy(), is_test.numpy()
    net = build_model(cfg, images.shape[1])
    augment = simclr_augmentation(
        images.shape[-1], images.shape[1], crop_scale=(cfg.crop_scale, 1.0), flip=cfg.flip
    )
    batches = StepBatches(
        (images,), cfg.batch_size, cfg.seed, fabric.global_rank, fabric.world_size
    )
    per_epoch = batches.steps_per_epoch

    def step_fn(model, batch):
        x = augment(batch[0])  # two independent augmentations of each image: rows i, i + B
        z = model(torch.cat([x, augment(batch[0])]))
        return infonce(z), {}

    results = []
    for stage, epochs, warmup, lr in zip(STAGES, cfg.epochs, cfg.warmup_epochs, cfg.stage_lrs):
        start_stage(net, stage, cfg.out_dim, cfg.last_layer_std)
        if epochs == 0:
            continue
        optimizer = torch.optim.SGD(
            net.parameters(), lr=lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay
        )
        steps, warm = epochs * per_epoch, warmup * per_epoch
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda s, steps=steps, warm=warm: cosine_with_warmup(s, steps, warm)
        )
        model, optimizer = fabric.setup(net, optimizer)
        sub = folder / f"stage{stage}" if folder is not None else None
        start = time.perf_counter()
        history = fit(
            fabric,
            model,
            optimizer,
            batches,
            step_fn,
            steps=steps,
            scheduler=scheduler,
            checkpoint=sub / "checkpoint.ckpt" if sub else None,
            checkpoint_every=cfg.checkpoint_every,
            resume=resume,
            desc=f"stage {stage}",
        )
        seconds = time.perf_counter() - start
        loss = np.asarray(history.values("loss"))
        epoch_loss = loss[: len(loss) // per_epoch * per_epoch].reshape(-1, per_epoch).mean(1)
        logged = list(range(0, len(epoch_loss), cfg.log_every_epoch))
        z = embed(net, images, fabric.device)
        results.append(
            StageResult(
                stage=stage,
                epochs=epochs,
                lr=lr,
                out_dim=z.shape[1],
                loss=[round(float(epoch_loss[e]), 5) for e in logged],
                loss_epochs=logged,
                knn=score(z, labels_np, test_np, cfg.k),
                embedding=np.round(z, 4).tolist() if z.shape[1] <= 2 else None,
                seconds=seconds,
            )
        )
    return results


def run_tsne(cfg: TSimCNEConfig, images: torch.Tensor, labels, is_test) -> TSNEResult:
    """The baseline: t-SNE of the raw pixels (scikit-learn; the paper used openTSNE's
    defaults: perplexity 30, PCA initialization), then kNN in its 2-D output."""
    from sklearn.manifold import TSNE

    start = time.perf_counter()
    tsne = TSNE(
        n_components=2,
        perplexity=cfg.tsne_perplexity,
        init="pca",
        max_iter=cfg.tsne_iter,
        random_state=cfg.seed,
        n_jobs=-1,  # the neighbour search; the gradient uses every core anyway
    )
    y = tsne.fit_transform(images.flatten(1).numpy().astype(np.float32))
    seconds = time.perf_counter() - start
    return TSNEResult(
        embedding=np.round(y, 4).tolist(),
        knn=score(y, labels, is_test, cfg.k),
        seconds=seconds,
    )


def run(
    cfg: TSimCNEConfig, out_dir: str | Path | None = None, resume: bool = False
) -> TSimCNEResult:
    """Train t-SimCNE (three stages) and embed the pixels with t-SNE; score both by kNN.

    With ``out_dir``, every stage checkpoints into ``<out_dir>/stage<k>/`` and the t-SNE result
    is kept in ``<out_dir>/tsne.json``; ``resume=True`` continues from there.
    """
    out = Path(out_dir) if out_dir is not None else None
    images, labels, is_test, classes = load_images(cfg)
    labels_np, test_np = labels.numpy(), is_test.numpy()
    stages = launch(cfg, train_stages, cfg, out, resume)
    tsne = None
    if cfg.tsne:
        done = out / "tsne.json" if out is not None else None
        if resume and done is not None and done.exists():
            tsne = TSNEResult.load(done)
        else:
            tsne = run_tsne(cfg, images, labels_np, test_np)
            if done is not None:
                tsne.save(done)
    result = TSimCNEResult(
        config=cfg.to_dict(),
        labels=labels_np.tolist(),
        is_test=test_np.tolist(),
        classes=classes,
        pixel_knn=score(images.flatten(1).numpy(), labels_np, test_np, cfg.k),
        stages=stages,
        tsne=tsne,
    )
    if out is not None:
        result.save(out / "result.json")
    return result
