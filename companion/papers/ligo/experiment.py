"""The experiment: a small ViT is pretrained, then a wider and deeper ViT (``dim``, ``depth``) is
trained three ways — from scratch, grown by copying (bert2BERT width + StackBERT depth), and
grown by LiGO (a few steps learning the growth operator on the task loss, then normal training)
— and the training loss (on a fixed probe of training images; held-out loss and accuracy too)
is followed against the compute each arm spent.

The arm ``ligo_init`` is the control that removes only the learning: LiGO's operator is
materialized at its initialization, untrained, and then trained like the other arms (what
``ligo_steps=0`` does to the ``ligo`` arm).

Every arm of the large model sees the same batches with the same optimizer and learning rate;
they differ only in where their weights start. Compute is counted in FLOPs per optimizer step
(:func:`step_flops`): LiGO's operator steps count at their own cost; the small model's
pretraining is reported separately and, as in the paper, not charged to the grown models (the
small model is assumed to exist already).
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
    launch_or_resume,
    seed_everything,
    torch_threads,
)
from companion.core.fullscale import count_flops
from companion.errors import CompanionError, unknown
from companion.nn import ViT, cross_entropy_step
from companion.papers.ligo.method import COPY_INITS, DEPTH_INITS, WIDTH_INITS, LiGO, copy_grow

ARMS = ("scratch", "copy", "ligo", "ligo_init")
DATASETS = ("digits", "mnist_subset", "cifar10")


@dataclasses.dataclass(frozen=True)
class LiGOConfig(Config):
    """What to grow into what, and how long each phase trains. The algorithm never changes."""

    dataset: str = "digits"
    data_root: str = ""  # cifar10: the extracted python release
    image_size: int = 8
    patch_size: int = 4
    small_dim: int = 16
    small_depth: int = 2
    small_heads: int = 1
    dim: int = 64
    depth: int = 4
    heads: int = 4  # dim / heads must equal small_dim / small_heads (same head size)
    mlp_ratio: float = 2.0
    arms: tuple[str, ...] = ARMS
    lr: float = 2e-3  # Adam: the small model and every large arm
    warmup_steps: int = 20  # linear warm-up of every phase but the operator's
    cosine: bool = True  # after warm-up: cosine decay to zero, or (False) a constant lr
    batch_size: int = 128
    small_steps: int = 400  # pretraining of the small model
    steps: int = 200  # training of each large arm
    # LiGO's operator learning: official 100 steps of a 400k-step run (0.03% of its compute);
    # here 5 of 200 (2.6%): kept under 3% of the scratch run, with a larger step size
    ligo_steps: int = 5
    ligo_lr: float = 2e-2  # for the operator's coefficients
    depth_init: str = "stackbert_noisy"  # official --fuse_init_scheme stackbert_noisy rand
    width_init: str = "rand"
    copy_init: str = "aki"  # the copy arm: bert2BERT's AKI (symmetry broken) or FPI
    eval_every: int = 20  # losses measured every n optimizer steps
    probe_size: int = 512  # training examples whose loss is "the training loss"
    eval_size: int = 1000  # held-out examples (at most the test split)
    checkpoint_every: int = 0

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        for arm in self.arms:
            if arm not in ARMS:
                raise unknown("arm", arm, ARMS)
        if self.depth_init not in DEPTH_INITS:
            raise unknown("depth_init", self.depth_init, DEPTH_INITS)
        if self.width_init not in WIDTH_INITS:
            raise unknown("width_init", self.width_init, WIDTH_INITS)
        if self.copy_init not in COPY_INITS:
            raise unknown("copy_init", self.copy_init, COPY_INITS)
        if min(self.lr, self.ligo_lr) <= 0 or min(self.steps, self.small_steps) < 1:
            raise CompanionError("lr, ligo_lr, steps and small_steps must be positive")
        if self.ligo_steps < 0 or self.eval_every < 1 or self.batch_size < 1:
            raise CompanionError("ligo_steps >= 0, eval_every >= 1 and batch_size >= 1 needed")
        if self.image_size % self.patch_size:
            raise CompanionError(
                f"image_size {self.image_size} is not divisible by patch_size {self.patch_size}"
            )
        if self.dim % self.heads or self.small_dim % self.small_heads:
            raise CompanionError("dim must be divisible by heads (small and large)")
        if self.dim // self.heads != self.small_dim // self.small_heads:
            raise CompanionError(
                f"head size differs: small {self.small_dim // self.small_heads}, large "
                f"{self.dim // self.heads}; grow the number of heads with the width"
            )
        if self.dim < self.small_dim or self.depth < self.small_depth:
            raise CompanionError("the large model must be at least as wide and deep as the small")


PRESETS: dict[str, LiGOConfig] = {
    "smoke": LiGOConfig(
        small_dim=8,
        small_heads=1,
        dim=32,
        heads=4,
        batch_size=64,
        small_steps=10,
        steps=10,
        ligo_steps=4,
        eval_every=5,
        eval_size=100,
        probe_size=64,
    ),
    "notebook": LiGOConfig(),
    # Paper scale: ViT on CIFAR-10 grown from 6 layers × 192 to 12 layers × 384 (ViT-S width)
    "full": LiGOConfig(
        dataset="cifar10",
        data_root="data/cifar-10-batches-py",
        image_size=32,
        patch_size=4,
        small_dim=192,
        small_depth=6,
        small_heads=3,
        dim=384,
        depth=12,
        heads=6,
        mlp_ratio=4.0,
        lr=5e-4,
        batch_size=256,
        small_steps=20_000,
        steps=20_000,
        ligo_steps=100,
        ligo_lr=1e-3,
        eval_every=500,
        eval_size=2000,
        checkpoint_every=1000,
        precision="bf16-mixed",
    ),
}

PHASES = ("small", "scratch", "copy", "ligo_operator", "ligo", "ligo_init")


@dataclasses.dataclass
class PhaseResult(Result):
    """One training phase: the minibatch loss per step, and after ``eval_steps`` optimizer steps
    (0: the weights it started from) the loss on a fixed probe of training examples and the
    held-out loss and accuracy."""

    phase: str
    loss_steps: list[int]
    loss: list[float]
    eval_steps: list[int]
    train_loss: list[float]
    eval_loss: list[float]
    eval_accuracy: list[float]
    seconds: float
    # operator phase only: [large layer][small layer] depth coefficients (mean over modules'
    # weight coefficients), at initialization and learned
    depth_init: list[list[float]] = dataclasses.field(default_factory=list)
    depth_learned: list[list[float]] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class LiGOResult(Result):
    config: dict
    flops: dict[str, float]  # FLOPs of one optimizer step: small, large, ligo_operator
    phases: dict[str, PhaseResult]

    def compute(self, arm: str) -> tuple[list[float], list[float]]:
        """(FLOPs spent, training loss on the probe) along an arm; LiGO starts after its
        operator steps."""
        per_step = self.flops["large"]
        offset = 0.0
        if arm == "ligo":
            offset = self.config["ligo_steps"] * self.flops["ligo_operator"]
        phase = self.phases[arm]
        return [offset + s * per_step for s in phase.eval_steps], list(phase.train_loss)


def load_data(cfg: LiGOConfig):
    """(train, test, channels, classes) as in-memory tensors."""
    from companion import data

    if cfg.dataset == "cifar10":
        train = data.load_cifar(cfg.data_root, "cifar10", "train").tensors
        test = data.load_cifar(cfg.data_root, "cifar10", "test").tensors
        return train, test, 3, 10
    splits = data.load(cfg.dataset, image_size=cfg.image_size, seed=0)
    train, test = splits.train.tensors, splits.test.tensors
    if cfg.dataset == "mnist_subset":  # sorted by class: interleaved, a prefix holds every digit
        train, test = data.class_interleaved(train), data.class_interleaved(test)
    return train, test, train[0].shape[1], splits.num_classes


def build_model(cfg: LiGOConfig, size: str, channels: int, classes: int) -> ViT:
    """The small or the large ViT of ``companion.nn``."""
    dim, depth, heads = (
        (cfg.small_dim, cfg.small_depth, cfg.small_heads)
        if size == "small"
        else (cfg.dim, cfg.depth, cfg.heads)
    )
    return ViT(
        image_size=cfg.image_size,
        patch_size=cfg.patch_size,
        in_channels=channels,
        num_classes=classes,
        dim=dim,
        depth=depth,
        heads=heads,
        mlp_ratio=cfg.mlp_ratio,
    )


def step_flops(cfg: LiGOConfig, channels: int = 1, classes: int = 10) -> dict[str, float]:
    """FLOPs of one optimizer step (forward and backward at ``batch_size``), counted by torch's
    FlopCounterMode from matrix products and convolutions: the small model, the large model,
    and one LiGO step (the large model's forward and backward plus building the large weights
    from the small ones and back-propagating through that)."""

    def training_step(size):
        with torch.device("meta"):
            model = build_model(cfg, size, channels, classes)
            x = torch.empty(cfg.batch_size, channels, cfg.image_size, cfg.image_size)
            y = torch.zeros(cfg.batch_size, dtype=torch.long)
        return count_flops(lambda: F.cross_entropy(model(x), y).backward())

    small = build_model(cfg, "small", channels, classes)
    large = build_model(cfg, "large", channels, classes)
    op = LiGO(small, large, cfg.depth_init, cfg.width_init)
    growth = count_flops(lambda: sum(v.sum() for v in op.grown_state().values()).backward())
    large_step = training_step("large")
    small_step = training_step("small")
    return {"small": small_step, "large": large_step, "ligo_operator": large_step + growth}


def lr_factor(step: int, steps: int, warmup: int, cosine: bool) -> float:
    """Linear warm-up over ``warmup`` steps, then constant or cosine decay to zero at ``steps``."""
    if step < warmup:
        return (step + 1) / warmup
    if not cosine:
        return 1.0
    return 0.5 * (1 + math.cos(math.pi * min(1.0, (step - warmup) / max(1, steps - warmup))))


@torch.no_grad()
def evaluate(model: nn.Module, test, device, batch_size: int = 500) -> tuple[float, float]:
    """Held-out cross-entropy and accuracy, in float32 whatever the training precision."""
    model = getattr(model, "module", model)
    was_training = model.training
    model.eval()
    loss = correct = 0.0
    for x, y in zip(test[0].split(batch_size), test[1].split(batch_size)):
        x, y = x.to(device).float(), y.to(device)
        with torch.autocast(torch.device(device).type, enabled=False):
            logits = model(x).float()
        loss += F.cross_entropy(logits, y, reduction="sum").item()
        correct += (logits.argmax(-1) == y).sum().item()
    model.train(was_training)
    n = len(test[1])
    return loss / n, correct / n


def _weights(folder: Path | None, phase: str, store: dict) -> dict[str, torch.Tensor]:
    """A finished phase's final weights: in memory, or read back from its run folder."""
    if phase not in store:
        store[phase] = torch.load(folder.parent / phase / "weights.pt", weights_only=True)
    return store[phase]


def initial_model(cfg: LiGOConfig, phase: str, folder, store, channels, classes) -> nn.Module:
    """Where each phase starts: random weights (small, scratch), a copy-grown or LiGO-grown
    large model, the LiGO operator itself (trained in phase ``ligo_operator``), or the large
    model the untrained operator materializes (``ligo_init``)."""
    if phase in ("small", "scratch"):
        return build_model(cfg, "small" if phase == "small" else "large", channels, classes)
    small = build_model(cfg, "small", channels, classes)
    small.load_state_dict(_weights(folder, "small", store))
    large = build_model(cfg, "large", channels, classes)
    if phase == "copy":
        return copy_grow(small, large, seed=cfg.seed, init=cfg.copy_init)
    if phase == "ligo_operator":
        return LiGO(small, large, cfg.depth_init, cfg.width_init, seed=cfg.seed)
    if phase == "ligo_init":
        return LiGO(small, large, cfg.depth_init, cfg.width_init, seed=cfg.seed).materialize()
    large.load_state_dict(_weights(folder, "ligo_operator", store))
    return large


def train_phase(fabric, cfg: LiGOConfig, phase: str, folder, resume: bool, store: dict):
    """Train one phase under Fabric (any device, DDP, precision), measuring its losses; on a
    CPU with one thread (these models are too small to gain from a second one)."""
    with torch_threads(1, fabric.device):
        return _train_phase(fabric, cfg, phase, folder, resume, store)


def _train_phase(fabric, cfg: LiGOConfig, phase: str, folder, resume: bool, store: dict):
    seed_everything(cfg.seed)  # scratch and small draw their initial weights here
    train, test, channels, classes = load_data(cfg)
    test = (test[0][: cfg.eval_size], test[1][: cfg.eval_size])
    probe = (train[0][: cfg.probe_size], train[1][: cfg.probe_size])
    model = initial_model(cfg, phase, folder, store, channels, classes)
    operator = phase == "ligo_operator"
    params = model.operator_parameters() if operator else model.parameters()
    optimizer = torch.optim.Adam(params, lr=cfg.ligo_lr if operator else cfg.lr)
    steps = {"small": cfg.small_steps, "ligo_operator": cfg.ligo_steps}.get(phase, cfg.steps)
    scheduler = None
    if not operator:
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda s: lr_factor(s, steps, cfg.warmup_steps, cfg.cosine)
        )
    coeffs_at_init = model.depth_matrix() if operator else []
    model, optimizer = fabric.setup(model, optimizer)
    start_train, _ = evaluate(model, probe, fabric.device)
    start_loss, start_acc = evaluate(model, test, fabric.device)
    batches = StepBatches(train, cfg.batch_size, cfg.seed, fabric.global_rank, fabric.world_size)

    def measure(step, m):
        train_loss, _ = evaluate(m, probe, fabric.device)
        loss, acc = evaluate(m, test, fabric.device)
        return {"train_loss": train_loss, "eval_loss": loss, "eval_accuracy": acc}

    begin = time.perf_counter()
    history = fit(
        fabric,
        model,
        optimizer,
        batches,
        cross_entropy_step,
        steps=steps,
        scheduler=scheduler,
        callbacks=[Every(cfg.eval_every, measure)],
        checkpoint=folder / "checkpoint.ckpt" if folder else None,
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        desc=phase,
    )
    seconds = time.perf_counter() - begin
    module = getattr(model, "module", model)
    coeffs_learned = module.depth_matrix() if operator else []
    final = module.materialize() if operator else module
    store[phase] = {k: v.detach().float().cpu() for k, v in final.state_dict().items()}
    if folder is not None and fabric.is_global_zero:
        torch.save(store[phase], folder / "weights.pt")
    return PhaseResult(
        phase=phase,
        loss_steps=[s + 1 for s in history.steps("loss")],
        loss=history.values("loss"),
        eval_steps=[0] + [s + 1 for s in history.steps("eval_loss")],
        train_loss=[start_train] + history.values("train_loss"),
        eval_loss=[start_loss] + history.values("eval_loss"),
        eval_accuracy=[start_acc] + history.values("eval_accuracy"),
        seconds=seconds,
        depth_init=coeffs_at_init,
        depth_learned=coeffs_learned,
    )


def phases_for(cfg: LiGOConfig) -> list[str]:
    """The phases ``cfg.arms`` needs, in order."""
    need = ["small"] if any(a != "scratch" for a in cfg.arms) else []
    for arm in cfg.arms:
        need += ["ligo_operator", "ligo"] if arm == "ligo" else [arm]
    return need


def run(cfg: LiGOConfig, out_dir: str | Path | None = None, resume: bool = False) -> LiGOResult:
    """Pretrain the small model, then every arm; with ``out_dir``, checkpoint and write results.

    ``resume=True`` keeps phases that finished (``<out_dir>/<phase>/arm.json`` and
    ``weights.pt``) and continues an interrupted phase from its last checkpoint.
    """
    store: dict[str, dict] = {}
    phases = {}
    for phase in phases_for(cfg):
        folder = Path(out_dir) / phase if out_dir is not None else None
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
        phases[phase] = launch_or_resume(
            cfg, folder, resume, PhaseResult, train_phase, cfg, phase, folder, resume, store
        )
    channels = 3 if cfg.dataset == "cifar10" else 1
    result = LiGOResult(config=cfg.to_dict(), flops=step_flops(cfg, channels), phases=phases)
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
