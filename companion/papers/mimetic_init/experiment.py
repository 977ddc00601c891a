"""The experiment: the same ViT trained from the default initialization and from mimetic
initialization, over several seeds, with attention maps measured at initialization and the
trained weight products kept (the paper's ViT-on-CIFAR-10 comparison and Fig. 1, at small scale).

For a given seed both arms start from the same weights except the attention's q, k, v and proj
(mimetic init overwrites only those), see the same batches and use the same optimizer.
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
    LoaderBatches,
    Result,
    StepBatches,
    fit,
    launch_or_resume,
    seed_everything,
)
from companion.errors import CompanionError, unknown
from companion.nn import ViT, attention_blocks, cross_entropy_step
from companion.papers.mimetic_init.method import (
    diagonal_score,
    local_attention_mass,
    mimetic_init,
    query_key_product,
    self_attention_mass,
    value_proj_product,
)

# "noise_only": the control arm, mimetic init's construction (same α's, same SVD factorisation,
# same scale) with β₁ = β₂ = 0, i.e. without the identities that are the paper's mechanism
INITS = ("default", "noise_only", "mimetic")
DATASETS = ("digits", "mnist_subset", "cifar10", "image_folder")
POS_EMBEDS = ("learned", "sincos")


@dataclasses.dataclass(frozen=True)
class MimeticConfig(Config):
    """What to train and how. Sizes change between presets; the algorithm never does."""

    dataset: str = "digits"
    data_root: str = ""  # cifar10: the extracted python release; image_folder: root
    image_size: int = 8
    patch_size: int = 2
    dim: int = 48
    depth: int = 3
    heads: int = 3
    mlp_ratio: float = 2.0
    pos_embed: str = "learned"  # the position embedding's initial value (both arms)
    inits: tuple[str, ...] = INITS
    num_seeds: int = 3  # seeds seed, seed+1, ...: every arm is trained once per seed
    alpha1: float = 0.7  # W_q W_kᵀ ≈ α₁Z₁ + β₁I
    beta1: float = 0.7
    alpha2: float = 0.4  # W_v W_proj ≈ α₂Z₂ − β₂I
    beta2: float = 0.4
    lr: float = 3e-3
    weight_decay: float = 0.05
    warmup_fraction: float = 0.1  # linear warm-up over this share of the steps (every arm)
    batch_size: int = 128
    steps: int = 150
    augment: bool = False  # random crop (pad 4) and horizontal flip: natural images only
    eval_every: int = 25  # test accuracy every n steps (the training curve)
    probe_size: int = 64  # images whose attention maps are measured at initialization
    keep_weights: bool = True  # store the trained W_q W_kᵀ, W_v W_proj of the first seed
    checkpoint_every: int = 0
    num_workers: int = 4  # image_folder only

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        if self.pos_embed not in POS_EMBEDS:
            raise unknown("pos_embed", self.pos_embed, POS_EMBEDS)
        if not self.inits:
            raise CompanionError(f"inits must name at least one of {', '.join(INITS)}")
        for init in self.inits:
            if init not in INITS:
                raise unknown("init", init, INITS)
        if self.lr <= 0 or self.steps < 1 or self.batch_size < 1 or self.num_seeds < 1:
            raise CompanionError(
                f"lr, steps, batch_size and num_seeds must be positive, got lr={self.lr}, "
                f"steps={self.steps}, batch_size={self.batch_size}, num_seeds={self.num_seeds}"
            )
        if self.eval_every < 1 or self.probe_size < 1:
            raise CompanionError(
                f"eval_every and probe_size must be >= 1, got {self.eval_every}, {self.probe_size}"
            )
        if not 0 <= self.warmup_fraction < 1:
            raise CompanionError(f"warmup_fraction must be in [0, 1), got {self.warmup_fraction}")
        for name in ("alpha1", "beta1", "alpha2", "beta2"):
            if getattr(self, name) < 0:
                raise CompanionError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.image_size % self.patch_size:
            raise CompanionError(
                f"image_size {self.image_size} is not divisible by patch_size {self.patch_size}"
            )
        if self.dim % self.heads:
            raise CompanionError(f"dim {self.dim} is not divisible by heads {self.heads}")
        if self.pos_embed == "sincos" and self.dim % 4:
            raise CompanionError(f"pos_embed 'sincos' needs dim divisible by 4, got {self.dim}")

    @property
    def seeds(self) -> list[int]:
        return [self.seed + i for i in range(self.num_seeds)]

    @property
    def warmup_steps(self) -> int:
        """Warm-up steps: ``warmup_fraction`` of the run, so the schedule scales with it."""
        return round(self.warmup_fraction * self.steps)

    @property
    def grid(self) -> int:
        """Patches per side."""
        return self.image_size // self.patch_size


PRESETS: dict[str, MimeticConfig] = {
    # every preset starts from 2D sine-cosine position embeddings: with timm's 0.02·randn ones
    # P Pᵀ ≈ 0 at step 0, and no initialization of W_q W_kᵀ can make a patch attend to its
    # neighbours (the notebook's section 3 and Exercise 3 show both)
    "smoke": MimeticConfig(
        dim=16,
        depth=2,
        heads=2,
        steps=12,
        num_seeds=1,
        eval_every=6,
        probe_size=16,
        pos_embed="sincos",
    ),
    "notebook": MimeticConfig(pos_embed="sincos"),
    # The paper's CIFAR-10 setting: ViT-Tiny (width 192, depth 12, 3 heads) with 2×2 patches,
    # AdamW, warm-up and cosine decay, random crops and flips; three seeds per arm.
    "full": MimeticConfig(
        dataset="cifar10",
        data_root="data/cifar-10-batches-py",
        image_size=32,
        patch_size=2,
        dim=192,
        depth=12,
        heads=3,
        mlp_ratio=4.0,
        lr=1e-3,
        weight_decay=0.05,
        warmup_fraction=0.1,  # 980 of 9,800 steps
        batch_size=512,
        steps=9_800,  # 100 epochs of 50,000 images
        augment=True,
        eval_every=490,
        probe_size=128,
        checkpoint_every=1_000,
        precision="bf16-mixed",
        pos_embed="sincos",
    ),
}


@dataclasses.dataclass
class ArmResult(Result):
    """One run (one init, one seed): curves over training and numbers at initialization."""

    init: str
    seed: int
    loss_steps: list[int]
    loss: list[float]
    eval_steps: list[int]
    test_accuracy: list[float]  # at eval_steps
    init_local_mass: list[float]  # [layer] attention on the 3×3 neighbours (not itself) at init
    init_self_mass: list[float]  # [layer] attention of a patch on itself, at initialization
    init_maps: list[list[list[float]]]  # first seed: [head] layer 0's mean attention map at init
    trained_qk_score: list[list[float]]  # [layer][head] diagonal score of W_q W_kᵀ after training
    trained_vo_score: list[float]  # [layer] diagonal score of W_v W_proj after training
    trained_qk: list  # first seed only: [layer][head] W_q W_kᵀ [d][d], else []
    trained_vo: list  # first seed only: [layer] W_v W_proj [d][d], else []
    seconds: float

    @property
    def final_accuracy(self) -> float:
        return self.test_accuracy[-1]


@dataclasses.dataclass
class MimeticResult(Result):
    config: dict
    grid: int  # patches per side; T = grid² + 1 tokens
    runs: dict[str, list[ArmResult]]  # init -> one ArmResult per seed

    def final_accuracies(self, init: str) -> list[float]:
        return [arm.final_accuracy for arm in self.runs[init]]

    def mean_curve_accuracies(self, init: str) -> list[float]:
        """Per seed: test accuracy averaged over the evaluation steps (area under the curve)."""
        return [sum(a.test_accuracy) / len(a.test_accuracy) for a in self.runs[init]]


def load_data(cfg: MimeticConfig):
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


def sincos_position_embedding(grid: int, dim: int) -> torch.Tensor:
    """2D sine-cosine position embedding ``[grid², dim]`` (MAE / "simple ViT"): a quarter of the
    channels each for sin and cos of the row and of the column, at geometric frequencies."""
    rows, cols = torch.meshgrid(torch.arange(grid), torch.arange(grid), indexing="ij")
    omega = 1.0 / 10_000 ** (torch.arange(dim // 4) / (dim // 4))  # as MAE's get_1d_sincos
    r = rows.flatten()[:, None] * omega[None]
    c = cols.flatten()[:, None] * omega[None]
    return torch.cat([c.sin(), c.cos(), r.sin(), r.cos()], dim=1)


def build_model(cfg: MimeticConfig, init: str, channels: int, classes: int, seed: int) -> nn.Module:
    """The shared ViT with its default (timm-style) initialization; ``init="mimetic"`` then
    re-initializes every attention layer's q, k, v and proj; ``init="noise_only"`` does the same
    with β₁ = β₂ = 0 (the control). The default weights come from
    ``seed``, the mimetic ones from their own generator, so both arms share everything else."""
    torch.manual_seed(seed)
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
    if cfg.pos_embed == "sincos":
        with torch.no_grad():
            model.pos_embed[0, 1:] = sincos_position_embedding(cfg.grid, cfg.dim)
            model.pos_embed[0, 0] = 0.0
    if init in ("mimetic", "noise_only"):
        g = torch.Generator().manual_seed(seed + 7919)  # its own stream: other weights unchanged
        # noise_only draws the same Z₁, Z₂ (same generator) and drops only the identities
        beta1, beta2 = (cfg.beta1, cfg.beta2) if init == "mimetic" else (0.0, 0.0)
        mimetic_init(model, cfg.alpha1, beta1, cfg.alpha2, beta2, generator=g)
    return model


def random_crop_flip(x: torch.Tensor, pad: int = 4) -> torch.Tensor:
    """Random translation by up to ``pad`` pixels (zero padding) and random horizontal flip,
    per image, on the batch's own device. The random numbers come from the CPU generator, whose
    state the checkpoints keep, so a run resumed on a GPU draws what the uninterrupted one drew
    (on the CPU this is the same stream as drawing on the batch's device)."""
    n, _, h, w = x.shape
    padded = F.pad(x, (pad, pad, pad, pad))
    dy = torch.randint(0, 2 * pad + 1, (n,)).to(x.device)
    dx = torch.randint(0, 2 * pad + 1, (n,)).to(x.device)
    rows = (dy[:, None] + torch.arange(h, device=x.device))[:, None, :, None]
    cols = (dx[:, None] + torch.arange(w, device=x.device))[:, None, None, :]
    batch = torch.arange(n, device=x.device)[:, None, None, None]
    chan = torch.arange(x.shape[1], device=x.device)[None, :, None, None]
    out = padded[batch, chan, rows, cols]
    flip = torch.rand(n).to(x.device) < 0.5
    return torch.where(flip[:, None, None, None], out.flip(-1), out)


def augmented_step(model: nn.Module, batch):
    x, y = batch
    return cross_entropy_step(model, (random_crop_flip(x), y))


def lr_factor(cfg: MimeticConfig, step: int) -> float:
    """Linear warm-up over ``warmup_steps``, then cosine decay to zero."""
    if step < cfg.warmup_steps:
        return (step + 1) / cfg.warmup_steps
    progress = (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps)
    return 0.5 * (1 + math.cos(math.pi * progress))


@torch.no_grad()
def evaluate(model: nn.Module, test, device, batch_size: int = 500) -> float:
    """Top-1 accuracy on the test tensors or dataset, in float32 whatever the training
    precision: Fabric's wrapper would run the forward under autocast (bf16), so the unwrapped
    model (float32 weights) is called with autocast off."""
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


@torch.no_grad()
def attention_at_init(model: nn.Module, probe: torch.Tensor, grid: int):
    """Per layer, the attention mass on a patch's neighbours (itself left out) and on itself;
    and layer 0's mean map per head."""
    model.eval()
    _, maps = model(probe, return_attention=True)
    mass = [local_attention_mass(att.probs.float(), grid).mean().item() for att in maps]
    self_mass = [self_attention_mass(att.probs.float()).mean().item() for att in maps]
    return mass, self_mass, _rounded(maps[0].probs.float().mean(0))


def _rounded(t: torch.Tensor, digits: int = 4):
    return torch.round(t.detach().double().cpu(), decimals=digits).tolist()


@torch.no_grad()
def weight_products(model: nn.Module, keep: bool):
    """Diagonal scores of W_q W_kᵀ per head and W_v W_proj per layer (and the matrices)."""
    qk_score, vo_score, qk, vo = [], [], [], []
    for attn in attention_blocks(model):
        heads = [query_key_product(attn, h).float().cpu() for h in range(attn.heads)]
        product = value_proj_product(attn).float().cpu()
        qk_score.append([diagonal_score(m).item() for m in heads])
        vo_score.append(diagonal_score(product).item())
        if keep:
            qk.append([_rounded(m, 3) for m in heads])
            vo.append(_rounded(product, 3))
    return qk_score, vo_score, qk, vo


def train_arm(
    fabric, cfg: MimeticConfig, init: str, seed: int, folder: Path | None, resume: bool
) -> ArmResult:
    """Train one arm (one init, one seed) under Fabric and measure it."""
    seed_everything(seed)
    train, test, channels, classes = load_data(cfg)
    model = build_model(cfg, init, channels, classes, seed)
    if isinstance(train, tuple):
        probe = train[0][: cfg.probe_size]
    else:
        probe = torch.stack([train[i][0] for i in range(cfg.probe_size)])
    init_mass, init_self, init_maps = attention_at_init(model, probe, cfg.grid)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(cfg, s))
    model, optimizer = fabric.setup(model, optimizer)
    if isinstance(train, tuple):
        batches = StepBatches(train, cfg.batch_size, seed, fabric.global_rank, fabric.world_size)
    else:
        batches = LoaderBatches(
            train, cfg.batch_size, seed, fabric.global_rank, fabric.world_size, cfg.num_workers
        )
    start = time.perf_counter()
    history = fit(
        fabric,
        model,
        optimizer,
        batches,
        augmented_step if cfg.augment else cross_entropy_step,
        steps=cfg.steps,
        scheduler=scheduler,
        callbacks=[
            Every(cfg.eval_every, lambda s, m: {"test_accuracy": evaluate(m, test, fabric.device)})
        ],
        checkpoint=folder / "checkpoint.ckpt" if folder else None,
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        desc=f"{init} seed {seed}",
    )
    seconds = time.perf_counter() - start
    keep = cfg.keep_weights and seed == cfg.seed
    qk_score, vo_score, qk, vo = weight_products(model, keep)
    return ArmResult(
        init=init,
        seed=seed,
        loss_steps=history.steps("loss"),
        loss=[round(v, 5) for v in history.values("loss")],
        eval_steps=history.steps("test_accuracy"),
        test_accuracy=history.values("test_accuracy"),
        init_local_mass=init_mass,
        init_self_mass=init_self,
        init_maps=init_maps if seed == cfg.seed else [],
        trained_qk_score=qk_score,
        trained_vo_score=vo_score,
        trained_qk=qk,
        trained_vo=vo,
        seconds=seconds,
    )


def run(
    cfg: MimeticConfig, out_dir: str | Path | None = None, resume: bool = False
) -> MimeticResult:
    """Train every init in ``cfg.inits`` for every seed; with ``out_dir``, checkpoint and write
    results. ``resume=True`` keeps finished runs (``<out_dir>/<init>-seed<s>/arm.json``) and
    continues an interrupted one from its last checkpoint."""
    runs: dict[str, list[ArmResult]] = {init: [] for init in cfg.inits}
    for seed in cfg.seeds:
        for init in cfg.inits:
            folder = Path(out_dir) / f"{init}-seed{seed}" if out_dir is not None else None
            runs[init].append(
                launch_or_resume(
                    cfg, folder, resume, ArmResult, train_arm, cfg, init, seed, folder, resume
                )
            )
    result = MimeticResult(config=cfg.to_dict(), grid=cfg.grid, runs=runs)
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
