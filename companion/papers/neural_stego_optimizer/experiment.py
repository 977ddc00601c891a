"""The experiment: train LISO (T learned steps) and a one-step encoder, each jointly with its own
decoder (``liso/models.py``: one Adam optimizer over encoder and decoder), then hide fresh random
messages in held-out images and compare, after quantizing every image to 8 bits:

* LISO's iterates x_1..x_T (best iterate kept per image, as ``train_bits.py`` does);
* gradient descent and Adam on the pixels against LISO's trained decoder, held fixed, for
  ``baseline_iters`` steps, each at the step size of a small grid that does best at a PSNR at
  least LISO's (equal image quality);
* the one-step encoder (LISO's architecture with T = 1, its own decoder).

Evaluation runs every network in eval mode (BatchNorm uses its running statistics), so each
image is encoded and decoded on its own; the official code never calls ``.eval()``.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import torch
from torch import nn

from companion.core import Config, Result, fit, seed_everything, train_arms
from companion.errors import CompanionError, unknown
from companion.papers.neural_stego_optimizer.method import (
    Decoder,
    LISOEncoder,
    bit_error,
    optimize_image,
    psnr,
    quantize,
    select_best_iterate,
    sequence_loss,
)

ARMS = ("liso", "one_step")
BASELINES = ("gd", "adam")
DATASETS = ("mnist_subset", "digits", "cifar10")


@dataclasses.dataclass(frozen=True)
class StegoConfig(Config):
    """What to train and how. Sizes change between presets; the algorithm never does."""

    dataset: str = "mnist_subset"
    data_root: str = ""  # cifar10: the extracted python release
    image_size: int = 16
    bits: int = 1  # bits per pixel (the message has bits × H × W entries)
    hidden: int = 16  # decoder width and context channels (split into GRU state and context)
    motion_hidden: int = 16
    motion_out: int = 32
    iters: int = 4  # T: learned steps while training (official 15)
    step_size: float = 1.0  # η while training (official 1.0)
    eval_iters: int = 0  # 0: the training T (official evaluation: 150)
    eval_step_size: float = 0.0  # 0: the training η (what the official evaluation runs, see full)
    gamma: float = 0.8
    mse_weight: float = 1.0
    lr: float = 2e-3
    batch_size: int = 8
    steps: int = 200
    arms: tuple[str, ...] = ARMS
    eval_images: int = 64
    baselines: tuple[str, ...] = BASELINES
    baseline_iters: int = 16  # pixel-space optimizers run this many steps (4 T)
    gd_lrs: tuple[float, ...] = (0.056, 0.1, 0.18, 0.32, 0.56, 1.0)
    adam_lrs: tuple[float, ...] = (0.0056, 0.01, 0.018, 0.032, 0.056, 0.1)
    checkpoint_every: int = 0

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        for arm in self.arms:
            if arm not in ARMS:
                raise unknown("arm", arm, ARMS)
        for b in self.baselines:
            if b not in BASELINES:
                raise unknown("baseline", b, BASELINES)
        if "liso" not in self.arms:
            raise CompanionError("arms must include 'liso' (the baselines use its decoder)")
        if self.hidden % 2:
            raise CompanionError(f"hidden must be even, got {self.hidden}")
        if self.baseline_iters < self.test_iters:
            raise CompanionError(
                f"baseline_iters ({self.baseline_iters}) must be at least LISO's evaluation "
                f"steps ({self.test_iters})"
            )
        if min(self.iters, self.steps, self.batch_size, self.bits, self.eval_images) < 1:
            raise CompanionError(
                "iters, steps, batch_size, bits and eval_images must be positive, got "
                f"{self.iters}, {self.steps}, {self.batch_size}, {self.bits}, {self.eval_images}"
            )

    @property
    def test_iters(self) -> int:
        return self.eval_iters or self.iters

    @property
    def test_step_size(self) -> float:
        return self.eval_step_size or self.step_size


PRESETS: dict[str, StegoConfig] = {
    "smoke": StegoConfig(
        image_size=12,
        hidden=8,
        motion_hidden=8,
        motion_out=16,
        iters=3,
        steps=15,
        batch_size=8,
        eval_images=16,
        baseline_iters=6,
        gd_lrs=(0.1, 1.0),
        adam_lrs=(0.01, 0.1),
    ),
    "notebook": StegoConfig(),
    # Paper-scale settings of train_bits.py (hidden 32, T = 15, η = 1, Adam 1e-4, batch 2,
    # test T = 150) on 32×32 colour images at 3 bits per pixel. train_bits.py sets
    # --test-step-size 0.1 on the encoder, but BasicEncoder.forward steps by a local
    # ``step_size = 1.0`` and never reads it: the official evaluation runs at η = 1, and so does
    # this preset (eval_step_size 0 = the training η).
    "full": StegoConfig(
        dataset="cifar10",
        data_root="data/cifar-10-batches-py",
        image_size=32,
        bits=3,
        hidden=32,
        motion_hidden=32,
        motion_out=64,
        iters=15,
        step_size=1.0,
        eval_iters=150,
        lr=1e-4,
        batch_size=16,
        steps=50_000,
        eval_images=1000,
        baseline_iters=600,
        checkpoint_every=1000,
    ),
}


@dataclasses.dataclass
class ArmResult(Result):
    """One trained encoder/decoder pair: its training curve and its evaluation."""

    arm: str
    loss: list[float]
    accuracy: list[float]  # training bit accuracy of the last iterate (unquantized)
    error_curve: list[float]  # mean bit error (quantized) of iterate t = 1..T
    psnr_curve: list[float]  # mean PSNR (dB) of iterate t
    best_error_curve: list[float]  # mean error of the iterate kept among the first t
    best_psnr_curve: list[float]
    error: float  # of the kept iterate among all T
    psnr: float
    zero_error_share: float  # share of images decoded without a single wrong bit
    seconds: float
    baselines: dict  # LISO arm only: name -> BaselineResult as a dict (on its fixed decoder)
    example: dict  # LISO arm only: one cover, its kept stego image and the message (lists)


@dataclasses.dataclass
class BaselineResult(Result):
    """A pixel-space optimizer on LISO's fixed decoder, at each step size of its grid."""

    method: str
    lrs: list[float]
    best_error_curve: list[list[float]]  # [lr][t]: mean error of the kept iterate among first t
    best_psnr_curve: list[list[float]]

    def matched(self, t: int, psnr_floor: float) -> int | None:
        """Equal image quality: the step size with the lowest error after ``t`` steps among those
        whose PSNR then is at least ``psnr_floor``; None when no step size reaches it."""
        ok = [i for i in range(len(self.lrs)) if self.best_psnr_curve[i][t - 1] >= psnr_floor]
        return min(ok, key=lambda i: self.best_error_curve[i][t - 1]) if ok else None


@dataclasses.dataclass
class StegoResult(Result):
    config: dict
    arms: dict[str, ArmResult]

    @property
    def liso(self) -> ArmResult:
        return self.arms["liso"]

    @property
    def baselines(self) -> dict[str, BaselineResult]:
        return {k: BaselineResult.from_dict(v) for k, v in self.liso.baselines.items()}


class Stego(nn.Module):
    """An encoder and its decoder, trained together as one module. ``forward`` returns the
    training loss, so that the whole step runs inside the (possibly DDP-wrapped) module."""

    def __init__(self, cfg: StegoConfig, channels: int):
        super().__init__()
        self.decoder = Decoder(channels, cfg.bits, cfg.hidden)
        self.encoder = LISOEncoder(
            channels, cfg.bits, cfg.hidden, cfg.motion_hidden, cfg.motion_out
        )

    def forward(
        self, image, message, iters: int, step_size: float, gamma: float, mse_weight: float
    ):
        iterates = self.encoder(image, message, self.decoder, iters, step_size)
        return sequence_loss(iterates, image, message, self.decoder, gamma, mse_weight)


def load_images(cfg: StegoConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """(train, test) covers in [−1, 1], rounded to 8 bits (a cover is an 8-bit image)."""
    from companion import data

    if cfg.dataset in ("mnist_subset", "digits"):
        splits = data.load(cfg.dataset, image_size=cfg.image_size, seed=0)
        train, test = splits.train.tensors[0], splits.test.tensors[0]
    else:
        train = data.load_cifar(cfg.data_root, "cifar10", "train").tensors[0]
        test = data.load_cifar(cfg.data_root, "cifar10", "test").tensors[0]
        if cfg.image_size != train.shape[-1]:
            from companion.data.images import resize

            train, test = resize(train, cfg.image_size), resize(test, cfg.image_size)
    return quantize(train * 2 - 1), quantize(test * 2 - 1)


def random_message(shape, generator: torch.Generator) -> torch.Tensor:
    """Uniform random bits as float 0/1 (``LISO._random_data``)."""
    return torch.randint(0, 2, shape, generator=generator).float()


class MessageBatches:
    """Covers by step index (a seeded permutation per epoch) with fresh random messages drawn
    from a generator seeded by (seed, step): a resumed run sees the same batches and bits."""

    def __init__(self, images: torch.Tensor, cfg: StegoConfig, rank: int = 0, world_size: int = 1):
        self.images, self.cfg, self.rank, self.world = images, cfg, rank, world_size
        self.batch = min(cfg.batch_size, len(images))
        self.per_epoch = max(1, len(images) // self.batch)

    def __call__(self, step: int):
        epoch, index = divmod(step, self.per_epoch)
        g = torch.Generator().manual_seed(self.cfg.seed * 100_003 + epoch)
        rows = torch.randperm(len(self.images), generator=g)[
            index * self.batch : (index + 1) * self.batch
        ][self.rank :: self.world]
        cover = self.images[rows]
        g = torch.Generator().manual_seed(self.cfg.seed * 1_000_003 + step + 7)
        message = random_message((self.batch, self.cfg.bits, *cover.shape[-2:]), g)
        return cover, message[self.rank :: self.world]


def _arm_iters(cfg: StegoConfig, arm: str) -> int:
    return cfg.iters if arm == "liso" else 1


def eval_set(cfg: StegoConfig, test: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The held-out covers and their messages, the same for every arm and baseline.

    The covers are a fixed random subset: test splits keep their rows in index order, which
    for mnist_subset is sorted by digit, so a prefix would hold zeros only."""
    keep = torch.randperm(len(test), generator=torch.Generator().manual_seed(0))
    cover = test[keep[: cfg.eval_images].sort().values]
    g = torch.Generator().manual_seed(cfg.seed + 12_345)
    return cover, random_message((len(cover), cfg.bits, *cover.shape[-2:]), g)


@torch.no_grad()
def score_iterates(decoder, iterates, cover, message):
    """[T, N] bit errors and PSNRs of the quantized iterates (float32, decoder in eval mode)."""
    errors, psnrs = [], []
    for x in iterates:
        xq = quantize(x.float())
        errors.append(bit_error(decoder(xq), message))
        psnrs.append(psnr(xq, cover))
    return torch.stack(errors), torch.stack(psnrs)


def best_curves(errors: torch.Tensor, psnrs: torch.Tensor) -> tuple[list[float], list[float]]:
    """Mean error and PSNR of the iterate kept among the first t, for t = 1..T."""
    out_e, out_p = [], []
    for t in range(1, len(errors) + 1):
        idx = select_best_iterate(errors[:t], psnrs[:t])
        cols = torch.arange(errors.shape[1])
        out_e.append(errors[:t][idx, cols].mean().item())
        out_p.append(psnrs[:t][idx, cols].mean().item())
    return out_e, out_p


def _float32(module: nn.Module) -> nn.Module:
    """The bare float32 module behind Fabric's wrapper, in eval mode (BatchNorm running stats)."""
    return getattr(module, "module", module).float().eval()


def train_arm(fabric, cfg: StegoConfig, arm: str, folder: Path | None, resume: bool):
    """Train one encoder/decoder pair under Fabric, then evaluate it; for LISO, also run the
    pixel-space baselines on its trained decoder and keep one example image."""
    seed_everything(cfg.seed)
    train, test = load_images(cfg)
    channels = train.shape[1]
    model = Stego(cfg, channels)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    model, optimizer = fabric.setup(model, optimizer)
    iters = _arm_iters(cfg, arm)

    def step_fn(model, batch):
        cover, message = batch
        return model(cover, message, iters, cfg.step_size, cfg.gamma, cfg.mse_weight)

    start = time.perf_counter()
    history = fit(
        fabric,
        model,
        optimizer,
        MessageBatches(train, cfg, fabric.global_rank, fabric.world_size),
        step_fn,
        steps=cfg.steps,
        checkpoint=folder / "checkpoint.ckpt" if folder else None,
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        desc=arm,
    )
    seconds = time.perf_counter() - start
    net = _float32(model)
    cover, message = (t.to(fabric.device) for t in eval_set(cfg, test))
    test_iters = cfg.test_iters if arm == "liso" else 1
    with torch.no_grad(), torch.autocast(fabric.device.type, enabled=False):
        iterates = net.encoder(cover, message, net.decoder, test_iters, cfg.test_step_size)
        errors, psnrs = score_iterates(net.decoder, iterates, cover, message)
    best_e, best_p = best_curves(errors, psnrs)
    kept = select_best_iterate(errors, psnrs)
    cols = torch.arange(errors.shape[1])
    kept_err = errors[kept, cols]
    baselines, example = {}, {}
    if arm == "liso":
        for method in cfg.baselines:
            with torch.autocast(fabric.device.type, enabled=False):
                b = run_baseline(cfg, method, net.decoder, cover, message)
            baselines[method] = b.to_dict()
        stego = quantize(torch.stack(iterates)[kept, cols][0])
        example = {
            "cover": cover[0].cpu().tolist(),
            "stego": stego.cpu().tolist(),
            "message": message[0].cpu().tolist(),
        }
    return ArmResult(
        arm=arm,
        loss=history.values("loss"),
        accuracy=history.values("accuracy"),
        error_curve=errors.mean(1).tolist(),
        psnr_curve=psnrs.mean(1).tolist(),
        best_error_curve=best_e,
        best_psnr_curve=best_p,
        error=best_e[-1],
        psnr=best_p[-1],
        zero_error_share=(kept_err == 0).float().mean().item(),
        seconds=seconds,
        baselines=baselines,
        example=example,
    )


def run_baseline(cfg: StegoConfig, method: str, decoder: nn.Module, cover, message):
    """Pixel-space optimization on the fixed decoder for ``baseline_iters`` steps at every step
    size of the method's grid (``gd_lrs`` or ``adam_lrs``); the comparison at equal quality
    picks one afterwards (:meth:`BaselineResult.matched`)."""
    lrs = list(cfg.gd_lrs if method == "gd" else cfg.adam_lrs)
    err_curves, psnr_curves = [], []
    for lr in lrs:
        iterates = optimize_image(decoder, cover, message, cfg.baseline_iters, lr, method)
        errors, psnrs = score_iterates(decoder, iterates, cover, message)
        e, p = best_curves(errors, psnrs)
        err_curves.append(e)
        psnr_curves.append(p)
    return BaselineResult(method, lrs, err_curves, psnr_curves)


def run(cfg: StegoConfig, out_dir: str | Path | None = None, resume: bool = False) -> StegoResult:
    """Train and evaluate every arm in ``cfg.arms`` (LISO also runs the pixel-space baselines on
    its decoder); with ``out_dir``, checkpoint and write results. ``resume=True`` keeps arms that
    finished (``<out_dir>/<arm>/arm.json``) and continues an interrupted one from its
    checkpoint."""
    arms = train_arms(cfg, cfg.arms, out_dir, resume, ArmResult, train_arm)
    result = StegoResult(config=cfg.to_dict(), arms=arms)
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
