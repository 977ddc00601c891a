"""The experiment: train a small bottleneck ResNet, then prune it without data and without
fine-tuning, by three saliencies (DFPC, L1, random), once with coupled channels allowed and once
with only uncoupled ones, measuring test accuracy and single-thread CPU latency at every step.

Latency is the thread CPU time (``time.thread_time``) of one forward pass of a fixed batch on one
intra-op thread, the median over rounds in which every model runs once, each round in a different
(seeded, shuffled) order: it counts the work of this thread only, so it changes less than
wall-clock time when other processes share the machine (caches and clock speed still do), and no
model always runs right after the same neighbour. The speed claim's models (the base and DFPC's
two operating points) are measured again, as ratios to the base timed back to back, median over
more rounds.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from pathlib import Path

import torch
from torch import nn

from companion.core import (
    Config,
    Result,
    StepBatches,
    fit,
    launch_or_resume,
    seed_everything,
    torch_threads,
)
from companion.core.fullscale import count_flops
from companion.errors import CompanionError, unknown
from companion.nn import cross_entropy_step
from companion.papers.dfpc.method import (
    SCORINGS,
    BottleneckResNet,
    prune,
    saliencies,
    select_channels,
    select_matched,
    trace_dfcs,
)

DATASETS = ("digits", "mnist_subset", "cifar10")
DROP = 0.05  # the "equal accuracy drop" at which arms are compared: ≤ 5 points below the base
REVERSED = "reversed_dfpc"  # a matched control only: DFPC's scores negated (least important last)


@dataclasses.dataclass(frozen=True)
class DFPCConfig(Config):
    """What to train and how to prune. Sizes change between presets; the algorithm never does."""

    dataset: str = "mnist_subset"
    data_root: str = ""  # cifar10: the extracted python release
    image_size: int = 16
    widths: tuple[int, ...] = (8, 16, 64)  # bottleneck width per stage (blocks output 4×)
    blocks: int = 1  # blocks per stage
    stem: int = 16
    lr: float = 3e-3
    weight_decay: float = 5e-4
    batch_size: int = 128
    steps: int = 150
    scorings: tuple[str, ...] = SCORINGS
    uncoupled_scorings: tuple[str, ...] = ("dfpc",)  # scorings also run on uncoupled channels only
    # allocation-matched controls: DFPC's per-DFC counts (coupled arm), ranked inside each DFC by
    # these scorings instead of DFPC's scores; "reversed_dfpc": DFPC's own scores, most important
    # first (the anti-ranking, the ranking rows' power premise)
    matched_controls: tuple[str, ...] = ("l1", "random", REVERSED)
    # a second network with these widths (the usual doubling per stage), pruned by DFPC with and
    # without coupled channels, for the speed rows; () or equal to widths: none
    doubling_widths: tuple[int, ...] = (8, 16, 32)
    fractions: tuple[float, ...] = (0.02, 0.05, 0.1, 0.2, 0.25, 0.3, 0.4)
    eval_images: int = 500  # test images for the pruned models' accuracy (0: all)
    latency_batch: int = 64
    latency_repeats: int = 7  # rounds over all models (shuffled order per round); the median
    claim_repeats: int = 21  # rounds for the speed claim (base and DFPC's two operating points)
    onednn: bool = False  # measure latency with oneDNN (mkldnn) convolutions
    checkpoint_every: int = 0
    threads: int = 1  # intra-op CPU threads for training and evaluation (0: leave as is)

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        for s in (*self.scorings, *self.uncoupled_scorings):
            if s not in SCORINGS:
                raise unknown("scoring", s, SCORINGS)
        for s in self.matched_controls:
            if s not in (*SCORINGS, REVERSED):
                raise unknown("matched control", s, (*SCORINGS, REVERSED))
        if "dfpc" not in self.scorings or "dfpc" not in self.uncoupled_scorings:
            raise CompanionError("scorings and uncoupled_scorings must contain 'dfpc' (the claim)")
        repeats = min(self.latency_repeats, self.claim_repeats)
        if self.lr <= 0 or self.steps < 1 or self.batch_size < 1 or repeats < 1:
            raise CompanionError(
                "lr, steps, batch_size, latency_repeats and claim_repeats must be positive, got "
                f"lr={self.lr}, steps={self.steps}, batch_size={self.batch_size}, "
                f"latency_repeats={self.latency_repeats}, claim_repeats={self.claim_repeats}"
            )
        if not all(0 < f < 1 for f in self.fractions):
            raise CompanionError(f"fractions must lie in (0, 1), got {self.fractions}")


PRESETS: dict[str, DFPCConfig] = {
    "smoke": DFPCConfig(
        dataset="digits",
        image_size=8,
        widths=(4, 8),
        blocks=1,
        stem=8,
        steps=40,
        batch_size=64,
        fractions=(0.02, 0.1),
        doubling_widths=(),
        latency_batch=32,
        latency_repeats=2,
        claim_repeats=3,
        eval_images=0,
    ),
    "notebook": DFPCConfig(),
    # Paper scale (reduced): a CIFAR-10 bottleneck ResNet trained on one GPU, pruned on the CPU.
    "full": DFPCConfig(
        dataset="cifar10",
        data_root="data/cifar-10-batches-py",
        image_size=32,
        widths=(16, 32, 64),
        blocks=3,
        stem=16,
        lr=1e-3,
        batch_size=256,
        steps=20_000,
        fractions=tuple(round(0.02 * i, 2) for i in range(1, 21)),
        latency_batch=64,
        uncoupled_scorings=SCORINGS,
        doubling_widths=(),  # widths (16, 32, 64) already double per stage
        eval_images=0,
        latency_repeats=9,
        claim_repeats=31,
        checkpoint_every=1000,
        precision="bf16-mixed",
        threads=0,
    ),
}


@dataclasses.dataclass
class Arm(Result):
    """One pruning curve: a saliency, with or without coupled channels. ``matched_<s>``: the
    allocation-matched control (DFPC's per-DFC counts, ranked inside each DFC by ``s``)."""

    scoring: str
    coupled: bool
    fractions: list[float]
    removed: list[int]  # channels removed
    removed_per_dfc: list[list[int]]  # per step: channels removed from each DFC (result.dfcs order)
    accuracy: list[float]
    latency_seconds: list[float]  # thread CPU time of one forward on one thread (median)
    params: list[int]
    flops: list[float]  # convolution and linear FLOPs of one image's forward (shape count)
    operating_point: int  # index of the largest fraction within DROP of the base (-1: none)


@dataclasses.dataclass
class DFPCResult(Result):
    config: dict
    dfcs: list[dict]  # producers, consumers, channels, coupled
    base_accuracy: float
    base_latency_seconds: float
    base_params: int
    base_flops: float
    arms: list[Arm]
    claim_latency_seconds: dict  # {"base", "coupled", "uncoupled"}: per-round thread CPU times of
    # the base and DFPC's operating points, timed back to back (None: no step within DROP)
    train_seconds: float
    prune_seconds: float
    doubling: dict | None = None  # the same for the network at ``doubling_widths`` (DFPC only)

    def doubling_result(self) -> DFPCResult | None:
        """The run at the usual width doubling per stage (None: not run)."""
        return None if self.doubling is None else DFPCResult.from_dict(self.doubling)

    def arm(self, scoring: str, coupled: bool) -> Arm:
        for a in self.arms:
            if a.scoring == scoring and a.coupled == coupled:
                return a
        raise unknown("arm", (scoring, coupled), [(a.scoring, a.coupled) for a in self.arms])


def load_data(cfg: DFPCConfig):
    """(train, test, channels, classes) as tensors."""
    from companion import data

    if cfg.dataset in ("digits", "mnist_subset"):
        splits = data.load(cfg.dataset, image_size=cfg.image_size, seed=0)
        train, test = splits.train.tensors, splits.test.tensors
        return train, test, train[0].shape[1], splits.num_classes
    train = data.load_cifar(cfg.data_root, "cifar10", "train").tensors
    test = data.load_cifar(cfg.data_root, "cifar10", "test").tensors
    return train, test, 3, 10


def build_model(cfg: DFPCConfig, channels: int, classes: int) -> BottleneckResNet:
    return BottleneckResNet(channels, classes, cfg.widths, cfg.blocks, cfg.stem)


@torch.no_grad()
def evaluate(model: nn.Module, test, device, batch_size: int = 500) -> float:
    """Top-1 accuracy in float32 (the unwrapped model, autocast off)."""
    model = getattr(model, "module", model).eval()
    correct = 0
    for x, y in zip(test[0].split(batch_size), test[1].split(batch_size), strict=True):
        with torch.autocast(torch.device(device).type, enabled=False):
            correct += (model(x.to(device).float()).argmax(-1).cpu() == y).sum().item()
    return correct / len(test[1])


@torch.no_grad()
def cpu_latency_seconds(
    models: list[nn.Module], batch: torch.Tensor, repeats: int, onednn: bool = False
) -> list[float]:
    """Thread CPU time (seconds) of one float32 forward of each model on one CPU thread.

    After a warm-up, ``repeats`` rounds each time every model once, each round in its own
    shuffled order (seeded: the same orders on every run), so that a busy moment of the machine,
    or a cache left warm by the model before, touches no model more than the others; each model
    keeps its median time over the rounds.
    """
    models = [m.cpu().float().eval() for m in models]
    times: list[list[float]] = [[] for _ in models]
    g = torch.Generator().manual_seed(0)
    with torch_threads(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the mkldnn switch warns about Intel-GPU TF32
        with torch.backends.mkldnn.flags(enabled=onednn):
            for m in models:
                m(batch)
            for _ in range(repeats):
                for i in torch.randperm(len(models), generator=g).tolist():
                    t = time.thread_time()
                    models[i](batch)
                    times[i].append(time.thread_time() - t)
    return [float(torch.tensor(t).median()) for t in times]


@torch.no_grad()
def paired_latency_seconds(
    models: list[nn.Module], batch: torch.Tensor, repeats: int, onednn: bool = False
) -> list[list[float]]:
    """Per model, the thread CPU times of ``repeats`` rounds in which all models run back to
    back (in a rotating order). Ratios within a round are paired: a disturbance of the machine
    that lasts longer than a round slows both models of a ratio alike and cancels; the median of
    the ratios (``paired_speedup``) discards the rounds that a short one hit.
    """
    models = [m.cpu().float().eval() for m in models]
    times: list[list[float]] = [[] for _ in models]
    with torch_threads(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.backends.mkldnn.flags(enabled=onednn):
            for m in models:
                m(batch)
            for r in range(repeats):
                for k in range(len(models)):
                    i = (k + r) % len(models)
                    t = time.thread_time()
                    models[i](batch)
                    times[i].append(time.thread_time() - t)
    return times


def paired_speedup(base_seconds: list[float], seconds: list[float]) -> float:
    """Median over rounds of base time / model time, timed in the same round."""
    return float(torch.tensor([b / t for b, t in zip(base_seconds, seconds, strict=True)]).median())


@torch.no_grad()
def forward_flops(model: nn.Module, x: torch.Tensor) -> float:
    """FLOPs of one forward pass (matrix products and convolutions, counted from shapes)."""
    return count_flops(model.cpu().float().eval(), x)


def prune_and_measure(cfg: DFPCConfig, model: nn.Module, test, device) -> tuple[dict, list[Arm]]:
    """Every arm's curve for a trained ``model`` (float32, eval mode)."""
    model = model.cpu().float().eval()
    example = test[0][: cfg.latency_batch].float()
    dfcs = trace_dfcs(model, example[:1])
    total = sum(d.channels for d in dfcs)
    if cfg.eval_images:  # a fixed random subset (test sets may be sorted by class)
        keep = torch.randperm(len(test[1]), generator=torch.Generator().manual_seed(0))
        test = (test[0][keep[: cfg.eval_images]], test[1][keep[: cfg.eval_images]])
    base = {
        "accuracy": evaluate(model.to(device), test, device),
        "params": sum(p.numel() for p in model.parameters()),
        "flops": forward_flops(model, example[:1]),
    }
    arms, models = [], [model]
    for scoring in cfg.scorings:
        g = torch.Generator().manual_seed(cfg.seed)
        scores = saliencies(model, dfcs, scoring, g)
        for coupled in (True, False) if scoring in cfg.uncoupled_scorings else (True,):
            arm = Arm(scoring, coupled, list(cfg.fractions), [], [], [], [], [], [], -1)
            for f in cfg.fractions:
                removed = select_channels(scores, dfcs, round(f * total), coupled)
                pruned = prune(model, dfcs, removed)
                arm.removed.append(sum(map(len, removed)))
                arm.removed_per_dfc.append([len(r) for r in removed])
                arm.accuracy.append(evaluate(pruned.to(device), test, device))
                arm.params.append(sum(p.numel() for p in pruned.parameters()))
                arm.flops.append(forward_flops(pruned, example[:1]))
                models.append(pruned)
            arms.append(arm)
    dfpc_arm = next(a for a in arms if a.scoring == "dfpc" and a.coupled)
    matched = []
    for scoring in cfg.matched_controls:  # same shapes as DFPC's arm: its latencies are reused
        if scoring == REVERSED:  # the anti-ranking: DFPC's most important channels go first
            scores = [-s for s in saliencies(model, dfcs, "dfpc")]
        else:
            g = torch.Generator().manual_seed(cfg.seed + 1000)
            scores = saliencies(model, dfcs, scoring, g)
        arm = Arm(f"matched_{scoring}", True, list(cfg.fractions), [], [], [], [], [], [], -1)
        for counts in dfpc_arm.removed_per_dfc:
            removed = select_matched(scores, counts)
            pruned = prune(model, dfcs, removed)
            arm.removed.append(sum(map(len, removed)))
            arm.removed_per_dfc.append([len(r) for r in removed])
            arm.accuracy.append(evaluate(pruned.to(device), test, device))
            arm.params.append(sum(p.numel() for p in pruned.parameters()))
            arm.flops.append(forward_flops(pruned, example[:1]))
        matched.append(arm)
    latency = cpu_latency_seconds(models, example, cfg.latency_repeats, cfg.onednn)
    base["latency"] = latency[0]
    n = len(cfg.fractions)
    for i, arm in enumerate(arms):
        arm.latency_seconds = latency[1 + i * n : 1 + (i + 1) * n]
        ok = [j for j, a in enumerate(arm.accuracy) if a >= base["accuracy"] - DROP]
        arm.operating_point = max(ok, default=-1)
    for arm in matched:
        arm.latency_seconds = list(dfpc_arm.latency_seconds)
        ok = [j for j, a in enumerate(arm.accuracy) if a >= base["accuracy"] - DROP]
        arm.operating_point = max(ok, default=-1)
    # the claim's three models again, with more interleaved rounds (its verdict rests on them)
    chosen = {"base": 0}
    for i, arm in enumerate(arms):
        if arm.scoring == "dfpc" and arm.operating_point >= 0:
            chosen["coupled" if arm.coupled else "uncoupled"] = 1 + i * n + arm.operating_point
    times = paired_latency_seconds(
        [models[j] for j in chosen.values()], example, cfg.claim_repeats, cfg.onednn
    )
    base["claim_latency"] = {"coupled": None, "uncoupled": None} | dict(
        zip(chosen, times, strict=True)
    )
    table = [
        {
            "producers": d.producers,
            "consumers": d.consumers,
            "channels": d.channels,
            "coupled": d.coupled,
        }
        for d in dfcs
    ]
    return {"dfcs": table, **base}, arms + matched


def train_and_prune(fabric, cfg: DFPCConfig, folder: Path | None, resume: bool) -> DFPCResult:
    with torch_threads(cfg.threads, fabric.device):
        return _train_and_prune(fabric, cfg, folder, resume)


def _train(fabric, cfg: DFPCConfig, train, channels, classes, checkpoint, resume):
    seed_everything(cfg.seed)
    model = build_model(cfg, channels, classes)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    model, optimizer = fabric.setup(model, optimizer)
    batches = StepBatches(train, cfg.batch_size, cfg.seed, fabric.global_rank, fabric.world_size)
    fit(
        fabric,
        model,
        optimizer,
        batches,
        cross_entropy_step,
        steps=cfg.steps,
        checkpoint=checkpoint,
        checkpoint_every=cfg.checkpoint_every if checkpoint else 0,
        resume=resume,
        desc="train",
    )
    return getattr(model, "module", model)


def _train_and_prune(fabric, cfg: DFPCConfig, folder: Path | None, resume: bool) -> DFPCResult:
    train, test, channels, classes = load_data(cfg)
    start = time.perf_counter()
    checkpoint = folder / "checkpoint.ckpt" if folder else None
    module = _train(fabric, cfg, train, channels, classes, checkpoint, resume)
    train_seconds = time.perf_counter() - start
    start = time.perf_counter()
    if folder is not None and fabric.is_global_zero:  # the trained network, for later pruning
        torch.save({k: v.float() for k, v in module.state_dict().items()}, folder / "model.pt")
    base, arms = prune_and_measure(cfg, module, test, fabric.device)
    prune_seconds = time.perf_counter() - start
    doubling = None
    if cfg.doubling_widths and tuple(cfg.doubling_widths) != tuple(cfg.widths):
        # the speed rows at the usual width doubling: the same recipe, DFPC's two arms only
        sub = cfg.replace(
            widths=tuple(cfg.doubling_widths),
            doubling_widths=(),
            scorings=("dfpc",),
            uncoupled_scorings=("dfpc",),
            matched_controls=(),
        )
        start = time.perf_counter()
        small = _train(fabric, sub, train, channels, classes, None, False)
        t = time.perf_counter() - start
        start = time.perf_counter()
        b, a = prune_and_measure(sub, small, test, fabric.device)
        doubling = _result(sub, b, a, t, time.perf_counter() - start).to_dict()
    result = _result(cfg, base, arms, train_seconds, prune_seconds)
    result.doubling = doubling
    return result


def _result(cfg, base, arms, train_seconds, prune_seconds) -> DFPCResult:
    return DFPCResult(
        config=cfg.to_dict(),
        dfcs=base["dfcs"],
        base_accuracy=base["accuracy"],
        base_latency_seconds=base["latency"],
        base_params=base["params"],
        base_flops=base["flops"],
        arms=arms,
        claim_latency_seconds=base["claim_latency"],
        train_seconds=train_seconds,
        prune_seconds=prune_seconds,
    )


def load_trained(cfg: DFPCConfig, out_dir: str | Path) -> BottleneckResNet:
    """The network ``run(cfg, out_dir)`` trained (float32, eval mode, on the CPU)."""
    _, _, channels, classes = load_data(cfg)
    model = build_model(cfg, channels, classes)
    model.load_state_dict(torch.load(Path(out_dir) / "model.pt", map_location="cpu"))
    return model.eval()


def run(cfg: DFPCConfig, out_dir: str | Path | None = None, resume: bool = False) -> DFPCResult:
    """Train, prune every arm and measure; with ``out_dir`` checkpoint and write results."""
    folder = Path(out_dir) if out_dir is not None else None
    result = launch_or_resume(
        cfg,
        folder,
        resume,
        DFPCResult,
        train_and_prune,
        cfg,
        folder,
        resume,
        filename="result.json",
    )
    return result
