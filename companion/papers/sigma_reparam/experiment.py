"""The experiment: a ViT trained with and without σReparam at a learning rate high enough for
attention entropy collapse, measuring per-layer attention entropy as it trains (paper Fig. 1).

Both arms start from the same initial weights (same seed; γ₀ = σ(W₀) makes Ŵ = W₀), see the same
batches and use the same optimizer; the only difference is the parametrization.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import torch
from torch import nn

from companion.core import (
    Config,
    Every,
    LoaderBatches,
    Result,
    StepBatches,
    fit,
    seed_everything,
    train_arms,
)
from companion.errors import CompanionError, unknown
from companion.nn import ViT, cross_entropy_step
from companion.papers.sigma_reparam.method import (
    attention_entropy,
    centered_logit_norm,
    convert_to_sigma_reparam,
    remove_normalization,
)

METHODS = ("baseline", "sigma_reparam")
DATASETS = ("digits", "mnist_subset", "cifar10", "image_folder")


@dataclasses.dataclass(frozen=True)
class SigmaReparamConfig(Config):
    """What to train and how. Sizes change between presets; the algorithm never does."""

    dataset: str = "digits"
    data_root: str = ""  # cifar10: the extracted python release; image_folder: root
    image_size: int = 8
    patch_size: int = 2
    dim: int = 64
    depth: int = 4
    heads: int = 4
    mlp_ratio: float = 2.0
    layer_norm: bool = True  # False: the paper's "no LayerNorm" runs (all arms)
    methods: tuple[str, ...] = METHODS
    optimizer: str = "adam"  # adam | adamw
    lr: float = 5e-3
    weight_decay: float = 0.0
    warmup_steps: int = 0  # the paper's point: σReparam trains without warm-up
    cosine: bool = False  # cosine decay of the learning rate after warm-up
    batch_size: int = 128
    steps: int = 250
    grad_clip: float | None = None
    measure_every: int = 25  # attention entropy on a fixed probe batch every n steps
    probe_size: int = 64
    checkpoint_every: int = 0
    num_workers: int = 4  # image_folder only

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        for m in self.methods:
            if m not in METHODS:
                raise unknown("method", m, METHODS)
        if self.optimizer not in ("adam", "adamw"):
            raise unknown("optimizer", self.optimizer, ("adam", "adamw"))
        if self.lr <= 0 or self.steps < 1 or self.batch_size < 1:
            raise CompanionError(
                f"lr, steps and batch_size must be positive, got lr={self.lr}, "
                f"steps={self.steps}, batch_size={self.batch_size}"
            )
        if self.image_size % self.patch_size:
            raise CompanionError(
                f"image_size {self.image_size} is not divisible by patch_size {self.patch_size}"
            )
        if self.dim % self.heads:
            raise CompanionError(f"dim {self.dim} is not divisible by heads {self.heads}")


PRESETS: dict[str, SigmaReparamConfig] = {
    "smoke": SigmaReparamConfig(
        dim=16, depth=2, heads=2, batch_size=64, steps=20, measure_every=5, probe_size=16
    ),
    "notebook": SigmaReparamConfig(),
    # Paper scale on one or more GPUs: ViT-Tiny-sized model on CIFAR-10, no warm-up.
    "full": SigmaReparamConfig(
        dataset="cifar10",
        data_root="data/cifar-10-batches-py",
        image_size=32,
        patch_size=4,
        dim=192,
        depth=12,
        heads=3,
        mlp_ratio=4.0,
        optimizer="adamw",
        lr=1e-3,
        weight_decay=0.05,
        cosine=True,
        batch_size=256,
        steps=40_000,
        measure_every=500,
        probe_size=128,
        checkpoint_every=1000,
        precision="bf16-mixed",
    ),
}


@dataclasses.dataclass
class ArmResult(Result):
    """One arm (baseline or σReparam): curves over training and final numbers."""

    method: str
    loss_steps: list[int]
    loss: list[float]
    measure_steps: list[int]
    entropy: list[list[float]]  # [layer][measurement]: mean attention entropy
    min_head_entropy: list[float]  # [measurement]: min over layers and heads
    logit_norm: list[list[float]]  # [layer][measurement]: mean ‖z − mean z‖₂ of a row
    bound_points: list[list[list[float]]]  # [layer] -> [[σ_row, Ent_row], ...] at the end
    test_accuracy: float
    diverged: bool
    seconds: float


@dataclasses.dataclass
class SigmaReparamResult(Result):
    config: dict
    tokens: int  # T: keys per attention row (patches + class token)
    arms: dict[str, ArmResult]

    @property
    def log_T(self) -> float:
        """Entropy of uniform attention over T keys: the largest possible."""
        return math.log(self.tokens)


def load_data(cfg: SigmaReparamConfig):
    """(train, test, channels, classes): tensors for in-memory data, datasets for folders."""
    from companion import data

    if cfg.dataset in ("digits", "mnist_subset"):
        splits = data.load(cfg.dataset, image_size=cfg.image_size, seed=0)
        train, test = splits.train.tensors, splits.test.tensors
        if cfg.dataset == "mnist_subset":  # sorted by class: classes take turns in the probe
            train = data.class_interleaved(train)
        return train, test, train[0].shape[1], splits.num_classes
    if cfg.dataset == "cifar10":
        train = data.load_cifar(cfg.data_root, "cifar10", "train").tensors
        test = data.load_cifar(cfg.data_root, "cifar10", "test").tensors
        return train, test, 3, 10
    train = data.ImageFolder(Path(cfg.data_root) / "train", cfg.image_size)
    test = data.ImageFolder(Path(cfg.data_root) / "val", cfg.image_size)
    return train, test, 3, len(train.classes)


def build_model(cfg: SigmaReparamConfig, method: str, channels: int, classes: int) -> nn.Module:
    """The ViT of ``companion.nn``; σReparam converts every linear layer and convolution."""
    model = ViT(
        image_size=cfg.image_size,
        patch_size=cfg.patch_size,
        in_channels=channels,
        num_classes=classes,
        dim=cfg.dim,
        depth=cfg.depth,
        heads=cfg.heads,
        mlp_ratio=cfg.mlp_ratio,
    )
    if not cfg.layer_norm:
        remove_normalization(model)
    if method == "sigma_reparam":
        convert_to_sigma_reparam(model)
    return model


def lr_factor(cfg: SigmaReparamConfig, step: int) -> float:
    """Linear warm-up over ``warmup_steps``, then constant or cosine decay to zero."""
    if step < cfg.warmup_steps:
        return (step + 1) / cfg.warmup_steps
    if not cfg.cosine:
        return 1.0
    progress = (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps)
    return 0.5 * (1 + math.cos(math.pi * progress))


def float32_attention(model: nn.Module, probe: torch.Tensor):
    """``model(probe, return_attention=True)`` in float32 whatever the training precision.

    Under mixed precision Fabric's wrapper runs the forward under autocast, so QKᵀ and the
    softmax would be rounded to bf16 (8 bits of mantissa): a row's entropy and its logit norm
    would then disagree by more than Theorem 3.1 allows. Measurements call the unwrapped
    module (its weights are float32) with autocast off.
    """
    module = getattr(model, "module", model)  # Fabric's wrapper -> the model itself
    with torch.autocast(probe.device.type, enabled=False):
        return module(probe.float(), return_attention=True)


def attention_stats(model: nn.Module, probe: torch.Tensor) -> dict[str, float]:
    """Per-layer mean entropy and logit norm on the probe batch, and the minimum head entropy
    (in float32: :func:`float32_attention`)."""
    _, maps = float32_attention(model, probe)
    stats, heads = {}, []
    for layer, att in enumerate(maps):
        ent = attention_entropy(att.probs.float())  # [B, H, T]
        stats[f"entropy/{layer}"] = ent.mean().item()
        stats[f"logit_norm/{layer}"] = centered_logit_norm(att.scores.float()).mean().item()
        heads.append(ent.mean(dim=(0, 2)))
    stats["min_head_entropy"] = torch.cat(heads).min().item()
    return stats


def bound_points(model: nn.Module, probe: torch.Tensor, per_layer: int = 150):
    """[layer] -> [[σ_row, Ent_row], ...]: each row's logit norm and its measured entropy
    (in float32: :func:`float32_attention`)."""
    _, maps = float32_attention(model, probe)
    g = torch.Generator().manual_seed(0)
    points = []
    for att in maps:
        sigma = centered_logit_norm(att.scores.float()).flatten().cpu()
        ent = attention_entropy(att.probs.float()).flatten().cpu()
        keep = torch.randperm(len(sigma), generator=g)[:per_layer]
        points.append(
            [[round(s, 4), round(e, 4)] for s, e in zip(sigma[keep].tolist(), ent[keep].tolist())]
        )
    return points


@torch.no_grad()
def evaluate(model: nn.Module, test, device, batch_size: int = 512) -> float:
    """Top-1 accuracy on the test tensors or dataset, in float32 whatever the training
    precision (the unwrapped model with autocast off, as :func:`float32_attention`)."""
    model = getattr(model, "module", model).eval()
    if isinstance(test, tuple):
        loader = zip(test[0].split(batch_size), test[1].split(batch_size))
    else:
        loader = torch.utils.data.DataLoader(test, batch_size=batch_size)
    correct = total = 0
    for x, y in loader:
        with torch.autocast(torch.device(device).type, enabled=False):
            pred = model(x.to(device).float()).argmax(-1).cpu()
        correct += (pred == y).sum().item()
        total += len(y)
    return correct / total


def train_arm(
    fabric, cfg: SigmaReparamConfig, method: str, folder: Path | None, resume: bool
) -> ArmResult:
    """Train one arm under Fabric (any device, DDP, precision) and measure it."""
    seed_everything(cfg.seed)  # the same initial weights for every arm
    train, test, channels, classes = load_data(cfg)
    model = build_model(cfg, method, channels, classes)
    opt_cls = torch.optim.AdamW if cfg.optimizer == "adamw" else torch.optim.Adam
    optimizer = opt_cls(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(cfg, s))
    model, optimizer = fabric.setup(model, optimizer)
    if isinstance(train, tuple):
        batches = StepBatches(
            train, cfg.batch_size, cfg.seed, fabric.global_rank, fabric.world_size
        )
        probe = train[0][: cfg.probe_size]
    else:
        batches = LoaderBatches(
            train, cfg.batch_size, cfg.seed, fabric.global_rank, fabric.world_size, cfg.num_workers
        )
        probe = torch.stack([train[i][0] for i in range(cfg.probe_size)])
    probe = fabric.to_device(probe)

    start = time.perf_counter()
    history = fit(
        fabric,
        model,
        optimizer,
        batches,
        cross_entropy_step,
        steps=cfg.steps,
        grad_clip=cfg.grad_clip,
        scheduler=scheduler,
        callbacks=[Every(cfg.measure_every, lambda s, m: attention_stats(m, probe))],
        checkpoint=folder / "checkpoint.ckpt" if folder else None,
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        desc=method,
    )
    seconds = time.perf_counter() - start
    model.eval()
    with torch.no_grad():
        points = bound_points(model, probe)
    return ArmResult(
        method=method,
        loss_steps=history.steps("loss"),
        loss=history.values("loss"),
        measure_steps=history.steps("min_head_entropy"),
        entropy=[history.values(f"entropy/{layer}") for layer in range(cfg.depth)],
        min_head_entropy=history.values("min_head_entropy"),
        logit_norm=[history.values(f"logit_norm/{layer}") for layer in range(cfg.depth)],
        bound_points=points,
        test_accuracy=evaluate(model, test, fabric.device),
        diverged="diverged" in history.data,
        seconds=seconds,
    )


def run(
    cfg: SigmaReparamConfig, out_dir: str | Path | None = None, resume: bool = False
) -> SigmaReparamResult:
    """Train every arm in ``cfg.methods``; with ``out_dir``, checkpoint and write results.

    ``resume=True`` keeps arms that finished (``<out_dir>/<method>/arm.json``) and continues an
    interrupted arm from its last checkpoint.
    """
    arms = train_arms(cfg, cfg.methods, out_dir, resume, ArmResult, train_arm)
    tokens = (cfg.image_size // cfg.patch_size) ** 2 + 1
    result = SigmaReparamResult(config=cfg.to_dict(), tokens=tokens, arms=arms)
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
