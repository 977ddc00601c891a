"""The experiment: train two networks from different seeds, align B to A, interpolate, REPAIR.

For every α on a grid, three interpolated networks are evaluated on the test set:

* ``naive``: θ_α = (1 − α)θ_A + αθ_B, no alignment;
* ``permuted``: the same with B's units permuted to match A's (activation correlation);
* ``repair``: the permuted interpolation with REPAIR's renormalization.

and for each, the std of every REPAIR'd layer's pre-activations relative to the endpoints'
interpolated std (the variance-collapse measurement of the paper's Sec. 3).

Pipeline and defaults follow the official notebooks (``Train-and-Permute-MNIST-MLP``,
``Train-Merge-REPAIR-VGG11``): SGD with momentum, learning rate warmed up linearly and then
decayed linearly to zero; statistics and correlations from one pass over the training data
(augmented when training is); barrier = metric at α = ½ minus the endpoints' mean.
"""

from __future__ import annotations

import dataclasses
import functools
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from companion.core import (
    Config,
    Result,
    StepBatches,
    fit,
    launch,
    resolve_device,
    seed_everything,
    torch_threads,
)
from companion.errors import CompanionError, unknown
from companion.nn import MLP, cross_entropy_step
from companion.papers.repair.method import (
    activation_stats,
    align,
    interpolate,
    repair,
    repair_targets,
    weighted_layers,
)

DATASETS = ("digits", "mnist_subset", "cifar10")
NATIVE_SIZE = {"digits": 8, "mnist_subset": 28, "cifar10": 32}
METHODS = ("naive", "permuted", "repair")
# the official VGG configurations, in units of the first block's width (64 in the paper)
VGG = {
    "vgg11": (1, "M", 2, "M", 4, 4, "M", 8, 8, "M", 8, 8, "M"),
    "vgg13": (1, 1, "M", 2, 2, "M", 4, 4, "M", 8, 8, "M", 8, 8, "M"),
    "vgg16": (1, 1, "M", 2, 2, "M", 4, 4, 4, "M", 8, 8, 8, "M", 8, 8, 8, "M"),
    "vgg19": (1, 1, "M", 2, 2, "M", 4, 4, 4, 4, "M", 8, 8, 8, 8, "M", 8, 8, 8, 8, "M"),
}
ARCHS = ("mlp", *VGG)


@dataclasses.dataclass(frozen=True)
class RepairConfig(Config):
    """What to train and how to merge. Presets change sizes; the algorithm never does."""

    dataset: str = "digits"
    data_root: str = ""  # cifar10: the extracted python release
    image_size: int = 0  # 0: the dataset's own size (digits 8, mnist_subset 28, cifar10 32)
    arch: str = "mlp"  # mlp | vgg11 | vgg13 | vgg16 | vgg19 (no normalization layers)
    width: int = 128  # mlp: units per hidden layer; vgg: channels of the first block (64)
    depth: int = 5  # mlp: number of hidden layers (vgg: fixed by the architecture)
    steps: int = 300  # optimizer steps per network
    batch_size: int = 100
    lr: float = 0.05
    momentum: float = 0.9
    weight_decay: float = 0.0
    warmup: float = 0.1  # fraction of steps of linear warm-up, then linear decay to zero
    augment: bool = False  # random crop (pad 4) + horizontal flip, as for CIFAR-10
    stats_batch_size: int = 2000  # batches of the correlation, statistics and REPAIR passes
    num_alphas: int = 11  # interpolation grid 0, ..., 1 (odd, so that α = ½ is on it)
    repair_head: bool = True  # also REPAIR the logits (official MLP: yes; official VGG: no)
    checkpoint_every: int = 0
    # CPU threads for torch inside run (0: leave torch's setting). One thread is as fast for
    # these small matrices, immune to oversubscribed machines, and gives the same numbers on
    # any machine (multi-threaded sums round differently).
    threads: int = 1

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        if self.arch not in ARCHS:
            raise unknown("arch", self.arch, ARCHS)
        for key in ("width", "depth", "steps", "batch_size", "stats_batch_size"):
            if getattr(self, key) < 1:
                raise CompanionError(f"{key} must be >= 1, got {getattr(self, key)}")
        if self.lr <= 0 or not 0 <= self.warmup < 1 or not 0 <= self.momentum < 1:
            raise CompanionError(
                f"need lr > 0, 0 <= warmup < 1, 0 <= momentum < 1; got lr={self.lr}, "
                f"warmup={self.warmup}, momentum={self.momentum}"
            )
        if self.num_alphas < 3 or self.num_alphas % 2 == 0:
            raise CompanionError(
                f"num_alphas must be odd and >= 3 (α = 0.5 on the grid), got {self.num_alphas}"
            )
        if self.threads < 0:
            raise CompanionError(f"threads must be >= 0 (0: torch's default), got {self.threads}")
        if self.image_size < 0:
            raise CompanionError(f"image_size must be >= 0, got {self.image_size}")
        if self.arch != "mlp" and self.size % 32:
            raise CompanionError(
                f"{self.arch} halves the image five times: image_size must be a multiple of 32, "
                f"got {self.size}"
            )

    @property
    def size(self) -> int:
        """The image size actually used."""
        return self.image_size or NATIVE_SIZE[self.dataset]


PRESETS: dict[str, RepairConfig] = {
    "smoke": RepairConfig(width=32, depth=3, steps=60, num_alphas=5),
    "notebook": RepairConfig(),
    # The official VGG11 run (Train-Merge-REPAIR-VGG11): CIFAR-10, no normalization layers,
    # SGD lr 0.08, momentum 0.9, wd 5e-4, batch 500, 100 epochs (5 of warm-up), flip + crop.
    "full": RepairConfig(
        dataset="cifar10",
        data_root="data/cifar-10-batches-py",
        arch="vgg11",
        width=64,
        steps=10_000,
        batch_size=500,
        lr=0.08,
        weight_decay=5e-4,
        warmup=0.05,
        augment=True,
        stats_batch_size=500,
        num_alphas=21,
        repair_head=False,
        checkpoint_every=1000,
        threads=0,
        precision="bf16-mixed",
    ),
}


@dataclasses.dataclass
class RepairResult(Result):
    """Curves over α and the layerwise std ratios, plain data only."""

    config: dict
    alphas: list[float]
    layers: list[str]  # names of the REPAIR'd layers, in depth order
    endpoints: dict[str, dict[str, float]]  # "a", "b", "b_permuted" -> test_loss, test_acc
    curves: dict[str, dict[str, list[float]]]  # method -> {"test_loss", "test_acc"} over α
    std_ratio: dict[str, list[list[float]]]  # method -> [α][layer]: mean σ_merged / mean σ_α
    correlation: dict[str, list[float]]  # "identity" / "matched": mean corr per hidden layer
    seconds: float
    n_test: int = 0  # test images behind every accuracy (sizes the binomial test noise)

    @property
    def mid(self) -> int:
        """Index of α = ½ on the grid."""
        return len(self.alphas) // 2

    def barrier(self, method: str, metric: str = "test_loss") -> float:
        """Metric at α = ½ minus the endpoints' mean, signed so that larger is worse."""
        ends = (self.endpoints["a"][metric] + self.endpoints["b"][metric]) / 2
        value = self.curves[method][metric][self.mid]
        return value - ends if metric == "test_loss" else ends - value


# --- data -----------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=2)
def load_data(dataset: str, data_root: str, size: int):
    """``(train_x, train_y, test_x, test_y, classes, fill)``, inputs standardized per channel with
    the training set's mean and std; ``fill`` is the value a black pixel takes after that (the
    padding of random crops). Cached: both networks and the merge read the same tensors."""
    from companion import data

    if dataset == "cifar10":
        train = data.load_cifar(data_root, "cifar10", "train").tensors
        test = data.load_cifar(data_root, "cifar10", "test").tensors
        classes = 10
        if size != 32:
            train = (F.interpolate(train[0], size=size, mode="bilinear"), train[1])
            test = (F.interpolate(test[0], size=size, mode="bilinear"), test[1])
    else:
        splits = data.load(dataset, image_size=size, seed=0)
        train, test, classes = splits.train.tensors, splits.test.tensors, splits.num_classes
    mean = train[0].mean(dim=(0, 2, 3), keepdim=True)
    std = train[0].std(dim=(0, 2, 3), keepdim=True)
    fill = (0 - mean) / std
    return (train[0] - mean) / std, train[1], (test[0] - mean) / std, test[1], classes, fill


def augment(x: torch.Tensor, fill: torch.Tensor, generator: torch.Generator, pad: int = 4):
    """Random crop of each image from a ``pad``-padded copy (padding = black) and a random
    horizontal flip: the official CIFAR-10 training transform, on a batch of tensors."""
    n, _, h, w = x.shape
    padded = F.pad(x - fill, (pad, pad, pad, pad)) + fill
    i = torch.randint(0, 2 * pad + 1, (n,), generator=generator)
    j = torch.randint(0, 2 * pad + 1, (n,), generator=generator)
    rows = (i[:, None] + torch.arange(h))[:, :, None]
    cols = (j[:, None] + torch.arange(w))[:, None, :]
    crops = padded[torch.arange(n)[:, None, None], :, rows, cols].permute(0, 3, 1, 2)
    flip = torch.rand(n, generator=generator) < 0.5
    return torch.where(flip[:, None, None, None], crops.flip(3), crops)


class AugmentedBatches:
    """Training batches with augmentation seeded by the step (a resumed run sees the same)."""

    def __init__(self, batches: StepBatches, fill: torch.Tensor, seed: int):
        self.batches, self.fill, self.seed = batches, fill, seed

    def __call__(self, step: int):
        x, y = self.batches(step)
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + step)
        return augment(x, self.fill, g), y


def stats_batches(cfg: RepairConfig, x: torch.Tensor, fill: torch.Tensor, device) -> list:
    """One epoch of training inputs for the alignment, statistics and REPAIR passes (augmented,
    with a fixed seed, when training was), so every pass sees exactly the same inputs."""
    g = torch.Generator().manual_seed(cfg.seed)
    chunks = x.split(cfg.stats_batch_size)
    return [(augment(c, fill, g) if cfg.augment else c).to(device) for c in chunks]


# --- networks and training ------------------------------------------------------------------------


def build_model(cfg: RepairConfig, channels: int, classes: int) -> nn.Sequential:
    """An MLP (``companion.nn.MLP``: Flatten, then Linear-ReLU blocks) or a VGG without
    normalization layers (the official ``VGG``), both plain ``nn.Sequential`` stacks."""
    if cfg.arch == "mlp":
        return MLP(channels * cfg.size**2, [cfg.width] * cfg.depth, classes)
    layers: list[nn.Module] = []
    c = channels
    for item in VGG[cfg.arch]:
        if item == "M":
            layers.append(nn.MaxPool2d(2))
        else:
            layers += [nn.Conv2d(c, item * cfg.width, 3, padding=1), nn.ReLU()]
            c = item * cfg.width
    layers += [nn.Flatten(), nn.Linear(c * (cfg.size // 32) ** 2, classes)]
    return nn.Sequential(*layers)


def lr_factor(cfg: RepairConfig, step: int) -> float:
    """Linear warm-up from 0 over ``warmup · steps``, then linear decay to 0 (official)."""
    warm = cfg.warmup * cfg.steps
    if step < warm:
        return step / warm
    return max(0.0, (cfg.steps - step) / (cfg.steps - warm))


def train_endpoint(fabric, cfg: RepairConfig, seed: int, folder: Path, resume: bool) -> float:
    """Train one endpoint network from ``seed`` and save its weights to ``folder/model.pt``;
    returns the training time in seconds."""
    seed_everything(seed)
    train_x, train_y, _, _, classes, fill = load_data(cfg.dataset, cfg.data_root, cfg.size)
    net = build_model(cfg, train_x.shape[1], classes)
    optimizer = torch.optim.SGD(
        net.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(cfg, s))
    model, optimizer = fabric.setup(net, optimizer)
    batches = StepBatches(
        (train_x, train_y), cfg.batch_size, seed, fabric.global_rank, fabric.world_size
    )
    if cfg.augment:
        batches = AugmentedBatches(batches, fill, seed)
    start = time.perf_counter()
    fit(
        fabric,
        model,
        optimizer,
        batches,
        cross_entropy_step,
        steps=cfg.steps,
        scheduler=scheduler,
        checkpoint=folder / "checkpoint.ckpt" if cfg.checkpoint_every else None,
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        desc=f"seed {seed}",
    )
    if fabric.is_global_zero:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / "model.pt.tmp"
        torch.save({k: v.cpu() for k, v in net.state_dict().items()}, tmp)
        tmp.replace(folder / "model.pt")
    fabric.barrier()
    return time.perf_counter() - start


# --- the merge ------------------------------------------------------------------------------------


def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor, device) -> dict[str, float]:
    """Mean cross-entropy and accuracy on ``(x, y)``."""
    model.eval()
    loss = correct = 0.0
    with torch.no_grad():
        for xb, yb in zip(x.split(1000), y.split(1000)):
            out = model(xb.to(device)).float()
            yb = yb.to(device)
            loss += F.cross_entropy(out, yb, reduction="sum").item()
            correct += (out.argmax(-1) == yb).sum().item()
    return {"test_loss": loss / len(y), "test_acc": correct / len(y)}


def layer_names(model: nn.Sequential, layers: list[int]) -> list[str]:
    """``conv1``, ``fc2``, ..., and ``logits`` for the last layer."""
    last = weighted_layers(model)[-1]
    return [
        "logits" if i == last else f"{'conv' if isinstance(model[i], nn.Conv2d) else 'fc'}{k + 1}"
        for k, i in enumerate(layers)
    ]


def std_ratios(model, batches, layers, stats_a, stats_b, alpha: float) -> list[float]:
    """Per layer: mean over units of the merged net's std over the mean of the endpoints'
    interpolated std (1 − α)σ_A + ασ_B. 1 means no collapse; averaging over units first makes
    the ratio independent of the units' order."""
    stats = activation_stats(model, batches, layers)
    return [
        (stats[i][1].mean() / ((1 - alpha) * stats_a[i][1] + alpha * stats_b[i][1]).mean()).item()
        for i in layers
    ]


def merge(cfg: RepairConfig, model_a: nn.Sequential, model_b: nn.Sequential, device) -> dict:
    """Align, interpolate and REPAIR over the α grid; returns the result's fields."""
    train_x, _, test_x, test_y, _, fill = load_data(cfg.dataset, cfg.data_root, cfg.size)
    batches = stats_batches(cfg, train_x, fill, device)
    model_a, model_b = model_a.to(device).eval(), model_b.to(device).eval()
    model_bp, perms, corrs = align(model_a, model_b, batches)
    layers = weighted_layers(model_a)
    repaired = layers if cfg.repair_head else layers[:-1]
    stats_a = activation_stats(model_a, batches, repaired)
    stats_b = activation_stats(model_b, batches, repaired)
    stats_bp = activation_stats(model_bp, batches, repaired)

    alphas = np.linspace(0, 1, cfg.num_alphas).round(6).tolist()
    curves = {m: {"test_loss": [], "test_acc": []} for m in METHODS}
    ratios = {m: [] for m in METHODS}
    for alpha in alphas:
        permuted = interpolate(model_a, model_bp, alpha)
        nets = {
            "naive": (interpolate(model_a, model_b, alpha), stats_b),
            "permuted": (permuted, stats_bp),
            "repair": (
                repair(permuted, repair_targets(stats_a, stats_bp, alpha), batches),
                stats_bp,
            ),
        }
        for method, (net, stats_end) in nets.items():
            for metric, value in evaluate(net, test_x, test_y, device).items():
                curves[method][metric].append(value)
            ratios[method].append(std_ratios(net, batches, repaired, stats_a, stats_end, alpha))
    return {
        "alphas": alphas,
        "layers": layer_names(model_a, repaired),
        "endpoints": {
            "a": evaluate(model_a, test_x, test_y, device),
            "b": evaluate(model_b, test_x, test_y, device),
            "b_permuted": evaluate(model_bp, test_x, test_y, device),
        },
        "curves": curves,
        "n_test": len(test_y),
        "std_ratio": ratios,
        "correlation": {
            "identity": [c.diagonal().mean().item() for c in corrs],
            "matched": [c[torch.arange(len(p)), p].mean().item() for c, p in zip(corrs, perms)],
        },
    }


def run(cfg: RepairConfig, out_dir: str | Path | None = None, resume: bool = False) -> RepairResult:
    """Train networks A (seed 2·seed) and B (seed 2·seed + 1), then merge them three ways.

    With ``out_dir``, each network's weights go to ``<out_dir>/model_{a,b}/model.pt`` (and
    training checkpoints there when ``checkpoint_every`` is set); ``resume=True`` keeps trained
    networks and continues interrupted training. The merge is recomputed (minutes at most).
    """
    with torch_threads(cfg.threads):
        return _run(cfg, out_dir, resume)


def _run(cfg: RepairConfig, out_dir: str | Path | None, resume: bool) -> RepairResult:
    start = time.perf_counter()
    train_x, _, _, _, classes, _ = load_data(cfg.dataset, cfg.data_root, cfg.size)
    models = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(out_dir) if out_dir is not None else Path(tmp)
        for name, seed in (("a", 2 * cfg.seed), ("b", 2 * cfg.seed + 1)):
            folder = root / f"model_{name}"
            if not (resume and (folder / "model.pt").exists()):
                launch(cfg, train_endpoint, cfg, seed, folder, resume)
            models[name] = build_model(cfg, train_x.shape[1], classes)
            models[name].load_state_dict(torch.load(folder / "model.pt", weights_only=True))
    fields = merge(cfg, models["a"], models["b"], resolve_device(cfg.device))
    result = RepairResult(config=cfg.to_dict(), seconds=time.perf_counter() - start, **fields)
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
