"""The experiment: Hrrformer against a same-size softmax Transformer.

Three measurements, one ``run``:

1. *Cost*: forward time (median of repeats) and peak memory of one attention layer against the
   sequence length T, random inputs, batch 1 (the paper's Fig. 1 / Table 4 in miniature).
2. *Accuracy*: both models, and the no-mixing control (attention output zeroed), trained with
   the same steps, batches and optimizer on a task that needs token mixing (``sort`` here: the
   control, which sees only its own token and position, stays far below; ``majority`` is *not*
   such a task, since the mean over the sequence before the head already sees the bag of
   tokens; ``lra_image`` at paper scale: CIFAR-10 as sequences of 1024 grey-level pixels, the
   LRA Image task the official code trains on).
3. *Token mixing*: the same three arms trained on ``reverse``, a task where every output
   position needs the token of another position. In Hrrformer, position t's output is
   w_t · v_t, its own value times one weight per head, so other tokens reach it only through
   that scalar; ``critique_depths`` trains deeper Hrrformers on it too (``task_depths`` on
   the accuracy task), ``baseline_depth`` trains softmax and the control at that depth as
   well (so a deep Hrrformer meets a softmax model of its own depth), and ``early_fraction``
   has the claims compare the gap to softmax part way through training with the gap at the
   end (the ``medium`` preset: does it close?).
Every arm records its test accuracy every ``eval_every`` steps (a learning curve).
"""

from __future__ import annotations

import dataclasses
import functools
import statistics
import time
import weakref
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

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
from companion.errors import CompanionError, unknown
from companion.papers.hrrformer.method import ATTENTIONS, SelfAttention, SequenceModel

TASKS = ("sort", "majority", "lra_image")
SEQ2SEQ = ("sort", "reverse")  # one target per position (no mean over the sequence)
CRITIQUE_TASKS = ("reverse",)
TIMED = ("hrr", "softmax")  # the control has no attention to time


@dataclasses.dataclass(frozen=True)
class HrrformerConfig(Config):
    """What to train and measure. Sizes change between presets; the algorithm never does."""

    task: str = "sort"  # sort | majority (synthetic) | lra_image (CIFAR-10 pixels, data_root)
    data_root: str = ""
    seq_len: int = 12
    vocab_size: int = 8
    n_train: int = 2000
    n_test: int = 1000
    dim: int = 32
    heads: int = 4
    depth: int = 1
    dropout: float = 0.0
    label_smoothing: float = 0.1  # as the official loss
    lr: float = 3e-3  # Adam (the official code: 1e-3 for 20 epochs)
    # the official learning-rate decay (optax.exponential_decay in image/hrrformer_mgpu.py):
    # lr · lr_decay^(step / lr_decay_every), smooth, never below lr_end; 0: constant (the
    # notebook and medium presets: one shared rate for every arm, and the medium run's first
    # 400 steps stay the notebook's run)
    lr_decay_every: int = 0
    lr_decay: float = 0.95
    lr_end: float = 1e-5
    batch_size: int = 64
    steps: int = 400
    critique_task: str = "reverse"
    critique_len: int = 12
    critique_vocab: int = 8
    critique_steps: int = 400
    critique_depths: tuple[int, ...] = ()  # more Hrrformer depths trained on the critique task
    task_depths: tuple[int, ...] = ()  # more Hrrformer depths trained on the accuracy task
    # softmax and the control also trained at this depth on both tasks (it must be one of the
    # Hrrformer depths on both), so that the deep rows compare like with like; 0: off
    baseline_depth: int = 0
    # also compare the gap to softmax at this fraction of the steps (the eval step nearest to
    # it) with the gap at the end: does more training close it? 0: off
    early_fraction: float = 0.0
    eval_every: int = 50  # test accuracy every this many steps (0: at the end only)
    attentions: tuple[str, ...] = ATTENTIONS
    timing_lengths: tuple[int, ...] = (256, 512, 1024, 2048, 4096)
    hrr_lengths: tuple[int, ...] = ()  # longer ones, timed for Hrrformer only
    # the model's width; at 64 the longest lengths leave the cache and their times jump about
    timing_dim: int = 32
    timing_heads: int = 4
    timing_repeats: int = 3  # at least this many timing rounds ...
    timing_seconds: float = 1.0  # ... and until this much time is spent (at most 50 rounds)
    fit_from: int = 1024  # slopes are fitted on lengths >= this (the asymptotic regime)
    checkpoint_every: int = 0

    def validate(self) -> None:
        if self.task not in TASKS:
            raise unknown("task", self.task, TASKS)
        if self.critique_task not in CRITIQUE_TASKS:
            raise unknown("critique_task", self.critique_task, CRITIQUE_TASKS)
        for kind in self.attentions:
            if kind not in ATTENTIONS:
                raise unknown("attention", kind, ATTENTIONS)
        if self.dim % self.heads or self.timing_dim % self.timing_heads:
            raise CompanionError(
                f"dim {self.dim} (timing_dim {self.timing_dim}) is not divisible by heads "
                f"{self.heads} (timing_heads {self.timing_heads})"
            )
        if min(self.critique_depths + self.task_depths, default=1) < 1 or self.eval_every < 0:
            raise CompanionError(
                f"critique_depths and task_depths must be >= 1 and eval_every >= 0, got "
                f"{self.critique_depths}, {self.task_depths}, {self.eval_every}"
            )
        if self.baseline_depth and not (
            self.baseline_depth in self.task_depths and self.baseline_depth in self.critique_depths
        ):
            raise CompanionError(
                f"baseline_depth {self.baseline_depth} must be one of task_depths "
                f"{self.task_depths} and of critique_depths {self.critique_depths}"
            )
        if not 0.0 <= self.early_fraction < 1.0 or (self.early_fraction and not self.eval_every):
            raise CompanionError(
                f"early_fraction must be in [0, 1) and needs eval_every > 0, got "
                f"{self.early_fraction} (eval_every {self.eval_every})"
            )
        if not 0.0 < self.lr_decay <= 1.0 or self.lr_decay_every < 0:
            raise CompanionError(
                f"lr_decay must be in (0, 1] and lr_decay_every >= 0, got {self.lr_decay}, "
                f"{self.lr_decay_every}"
            )
        if self.lr <= 0 or min(self.steps, self.critique_steps, self.batch_size) < 1:
            raise CompanionError(
                f"lr, steps, critique_steps and batch_size must be positive, got lr={self.lr}, "
                f"steps={self.steps}, critique_steps={self.critique_steps}, "
                f"batch_size={self.batch_size}"
            )
        if sum(n >= self.fit_from for n in self.timing_lengths) < 2:
            raise CompanionError(
                f"fit_from {self.fit_from} leaves fewer than 2 of timing_lengths "
                f"{self.timing_lengths} to fit a slope on"
            )


PRESETS: dict[str, HrrformerConfig] = {
    "smoke": HrrformerConfig(
        seq_len=8,
        n_train=256,
        n_test=128,
        dim=16,
        steps=10,
        critique_steps=10,
        critique_len=8,
        eval_every=5,
        timing_lengths=(128, 256),
        hrr_lengths=(),
        timing_repeats=1,
        timing_seconds=0.0,
        fit_from=128,
    ),
    "notebook": HrrformerConfig(),
    # The critique against training length and depth: 4x the notebook's steps (its step 400
    # is the notebook's run: same seed, batches and constant learning rate), Hrrformers of 2
    # and 3 layers beside the 1-layer arms, and softmax and the control at 3 layers too, on
    # sort and on reverse. ~3.5 min CPU per seed.
    "medium": HrrformerConfig(
        steps=1600,
        critique_steps=1600,
        critique_depths=(2, 3),
        task_depths=(2, 3),
        baseline_depth=3,
        eval_every=50,
        early_fraction=0.25,
    ),
    # Paper scale: LRA Image (CIFAR-10 grey levels, T = 1024), the official image settings
    # (d = 256, 4 heads, 3 layers, dropout 0.1, Adam 1e-3), ~20 epochs of batch 32.
    "full": HrrformerConfig(
        task="lra_image",
        data_root="data/cifar-10-batches-py",
        seq_len=1024,
        vocab_size=256,
        dim=256,
        heads=4,
        depth=3,
        dropout=0.1,
        lr=1e-3,
        lr_decay_every=60_000 // 32,  # official: (50,000 + 10,000) // batch size, "an epoch"
        batch_size=32,
        steps=31_250,
        critique_len=64,
        critique_vocab=16,
        critique_steps=5000,
        eval_every=1000,
        timing_lengths=(1024, 2048, 4096, 8192, 16384),
        hrr_lengths=(32768, 65536, 131072),
        timing_dim=256,
        timing_repeats=10,
        fit_from=2048,
        checkpoint_every=1000,
        precision="bf16-mixed",
    ),
}


@dataclasses.dataclass
class ArmResult(Result):
    """One trained model: its training curve and test accuracy (float32)."""

    task: str
    attention: str
    loss_steps: list[int]
    loss: list[float]
    test_accuracy: float
    chance: float
    seconds: float
    depth: int = 1
    eval_steps: list[int] = dataclasses.field(default_factory=list)
    eval_accuracy: list[float] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class CostResult(Result):
    """Forward cost of one attention layer against T (batch 1)."""

    attention: str
    lengths: list[int]
    seconds: list[float]  # median forward time
    peak_bytes: list[int]  # peak bytes of tensors allocated during the forward
    device: str


@dataclasses.dataclass
class HrrformerResult(Result):
    config: dict
    arms: dict[str, ArmResult]  # "<task>/<attention>"; other depths "<task>/<attention>@<depth>"
    costs: dict[str, CostResult]  # "<attention>"; Hrrformer's also at ``hrr_lengths``
    score_matrix_bytes: list[int]  # h·T²·4: one float32 T × T score matrix per head


# ---------------------------------------------------------------------------------- cost


class PeakMemory(TorchDispatchMode):
    """Bytes of tensor storage allocated inside the block, live at the worst moment.

    Every op's outputs pass through ``__torch_dispatch__``: a new storage adds its bytes; a
    storage's bytes are released when the last tensor that came out of an op on it is garbage
    collected (tracked with ``weakref.finalize``). Tensors made before the block (inputs,
    weights) are not counted. Works on any device; on CUDA, ``max_memory_allocated`` agrees.
    """

    def __init__(self):
        super().__init__()
        self.refs: dict[int, int] = {}
        self.size: dict[int, int] = {}
        self.live = self.peak = 0

    def _release(self, ptr: int) -> None:
        self.refs[ptr] -= 1
        if self.refs[ptr] == 0:
            del self.refs[ptr]
            self.live -= self.size.pop(ptr)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if not isinstance(t, torch.Tensor):
                continue
            storage = t.untyped_storage()
            ptr = storage.data_ptr()
            if ptr == 0:
                continue
            if ptr not in self.refs:
                self.refs[ptr], self.size[ptr] = 0, storage.nbytes()
                self.live += storage.nbytes()
                self.peak = max(self.peak, self.live)
            self.refs[ptr] += 1
            weakref.finalize(t, self._release, ptr)
        return out


def _sync(device: str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


@torch.no_grad()
def measure_cost(
    kind: str,
    lengths,
    dim: int,
    heads: int,
    repeats: int,
    device: str = "cpu",
    seed: int = 0,
    min_seconds: float = 0.0,
    max_rounds: int = 50,
) -> CostResult:
    """Median forward time and peak allocated bytes of one attention layer, float32, batch 1.

    On the CPU the layer runs on one thread, timed by that thread's CPU time
    (``time.thread_time``): wall-clock time on a shared machine also counts the moments when
    another process holds the core, which made short forwards look up to ten times slower at
    random. On a GPU: wall-clock time with the device synchronized around each forward.
    Lengths are timed in *rounds*: each round runs every length once, and rounds repeat (at
    least ``repeats``, and until ``min_seconds`` have been spent, at most ``max_rounds``), so a
    burst of load slows one round of every length and the per-length median drops it.
    """
    seed_everything(seed)
    layer = SelfAttention(dim, heads, kind).to(device).eval()
    inputs = [torch.randn(1, n, dim, device=device) for n in lengths]
    times: list[list[float]] = [[] for _ in lengths]
    cpu = torch.device(device).type == "cpu"
    clock = time.thread_time if cpu else time.perf_counter
    with torch_threads(1, device):
        for _ in range(2):  # warm-up rounds: allocator and FFT plans settle at every length
            for x in inputs:
                layer(x)
        spent, rounds = 0.0, 0
        while rounds < repeats or (spent < min_seconds and rounds < max_rounds):
            for i, x in enumerate(inputs):
                _sync(device)
                start = clock()
                layer(x)
                _sync(device)
                times[i].append(clock() - start)
                spent += times[i][-1]
            rounds += 1
        peaks = []
        for x in inputs:
            with PeakMemory() as mem:
                y = layer(x)
                del y
            peaks.append(int(mem.peak))
    seconds = [statistics.median(t) for t in times]
    return CostResult(kind, list(lengths), seconds, peaks, str(device))


def loglog_slope(lengths, values, fit_from: int = 0) -> float:
    """Slope of log(value) against log(T) on lengths >= ``fit_from``: the Theil-Sen estimate,
    the median of the slopes between every pair of points. Unlike least squares it is not
    pulled by one length that a cache cliff or a burst of load made slow (on a CPU, Hrrformer's
    largest tensors leave the core's cache at the longest lengths)."""
    x = np.log(np.asarray(lengths, dtype=float))
    y = np.log(np.asarray(values, dtype=float))
    keep = np.asarray(lengths) >= fit_from  # not exp(x): exp(log 128) is a hair below 128
    x, y = x[keep], y[keep]
    pairs = [(y[j] - y[i]) / (x[j] - x[i]) for i in range(len(x)) for j in range(i + 1, len(x))]
    return float(np.median(pairs))


# ---------------------------------------------------------------------------------- training


def grey_pixels(images: torch.Tensor) -> torch.Tensor:
    """CIFAR images [N, 3, 32, 32] in [0, 1] -> LRA Image tokens [N, 1024]: grey levels 0..255
    (ITU-R 601 luma, as ``tf.image.rgb_to_grayscale`` in the LRA pipeline), row by row."""
    w = torch.tensor([0.2989, 0.5870, 0.1140]).view(1, 3, 1, 1)
    grey = (images * w).sum(1) * 255.0
    return grey.round().clamp(0, 255).long().flatten(1)


def load_task(cfg: HrrformerConfig, task: str):
    """(train, test, vocab, seq_len, classes, pool) for ``task``; tensors (tokens, targets)."""
    from companion import data

    if task == "lra_image":
        train = data.load_cifar(cfg.data_root, "cifar10", "train").tensors
        test = data.load_cifar(cfg.data_root, "cifar10", "test").tensors
        return (
            (grey_pixels(train[0]), train[1]),
            (grey_pixels(test[0]), test[1]),
            256,
            1024,
            10,
            True,
        )
    if task in TASKS:  # majority (a label per sequence) or sort (a target per position)
        n, vocab, classes = cfg.seq_len, cfg.vocab_size, cfg.vocab_size
    else:  # reverse: one target per position
        n, vocab, classes = cfg.critique_len, cfg.critique_vocab, cfg.critique_vocab
    pool = task not in SEQ2SEQ
    train = data.make_sequence_task(task, cfg.n_train, n, vocab, seed=0).tensors
    test = data.make_sequence_task(task, cfg.n_test, n, vocab, seed=1).tensors
    return train, test, vocab, n, classes, pool


def build_model(
    cfg: HrrformerConfig, kind: str, vocab: int, seq_len: int, classes: int, pool, depth=None
):
    depth = cfg.depth if depth is None else depth
    return SequenceModel(
        vocab, seq_len, classes, cfg.dim, cfg.heads, depth, kind, pool, cfg.dropout
    )


def loss_step(model, batch, label_smoothing: float = 0.1):
    """Cross-entropy with label smoothing (official loss); per position for seq2seq targets."""
    tokens, targets = batch
    logits = model(tokens)
    loss = F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]).float(),
        targets.reshape(-1),
        label_smoothing=label_smoothing,
    )
    return loss, {}


@torch.no_grad()
def evaluate(model, test, device, batch_size: int = 256) -> float:
    """Accuracy (per position for seq2seq tasks) in float32 whatever the training precision."""
    model = getattr(model, "module", model).eval()
    correct = total = 0
    for x, y in zip(test[0].split(batch_size), test[1].split(batch_size)):
        with torch.autocast(torch.device(device).type, enabled=False):
            pred = model(x.to(device)).argmax(-1).cpu()
        correct += (pred == y).sum().item()
        total += y.numel()
    return correct / total


def lr_schedule(optimizer, cfg: HrrformerConfig):
    """The official exponential decay, stepped once per optimizer step (None: constant lr)."""
    if not cfg.lr_decay_every:
        return None
    floor = cfg.lr_end / cfg.lr

    def factor(step: int) -> float:
        return max(cfg.lr_decay ** (step / cfg.lr_decay_every), floor)

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def train_arm(
    fabric, cfg: HrrformerConfig, task: str, kind: str, folder, resume, depth=None
) -> ArmResult:
    """Train one model under Fabric (any device, DDP, precision) and measure it; ``depth``
    (default ``cfg.depth``) sets its number of layers."""
    depth = cfg.depth if depth is None else depth
    seed_everything(cfg.seed)
    train, test, vocab, seq_len, classes, pool = load_task(cfg, task)
    model = build_model(cfg, kind, vocab, seq_len, classes, pool, depth)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    model, optimizer = fabric.setup(model, optimizer)
    scheduler = lr_schedule(optimizer, cfg)
    batches = StepBatches(train, cfg.batch_size, cfg.seed, fabric.global_rank, fabric.world_size)
    steps = cfg.critique_steps if task in CRITIQUE_TASKS else cfg.steps
    start = time.perf_counter()
    eval_batch = max(cfg.batch_size, 64)
    callbacks = (
        [
            Every(
                cfg.eval_every,
                lambda step, m: {"accuracy": evaluate(m, test, fabric.device, eval_batch)},
            )
        ]
        if cfg.eval_every
        else []
    )
    with torch_threads(1, fabric.device):
        history = fit(
            fabric,
            model,
            optimizer,
            batches,
            functools.partial(loss_step, label_smoothing=cfg.label_smoothing),
            steps=steps,
            checkpoint=folder / "checkpoint.ckpt" if folder else None,
            checkpoint_every=cfg.checkpoint_every,
            resume=resume,
            callbacks=callbacks,
            scheduler=scheduler,
            desc=f"{task} {kind}",
        )
        accuracy = evaluate(model, test, fabric.device, batch_size=eval_batch)
    return ArmResult(
        task=task,
        attention=kind,
        loss_steps=history.steps("loss"),
        loss=history.values("loss"),
        test_accuracy=accuracy,
        chance=1.0 / classes,
        seconds=time.perf_counter() - start,
        depth=depth,
        eval_steps=history.steps("accuracy") if cfg.eval_every else [],
        eval_accuracy=history.values("accuracy") if cfg.eval_every else [],
    )


def run(
    cfg: HrrformerConfig, out_dir: str | Path | None = None, resume: bool = False
) -> HrrformerResult:
    """Train every (task, attention) arm, then measure cost against T; with ``out_dir``,
    checkpoint and write results (``resume=True`` keeps finished arms and continues one)."""
    from companion.core import resolve_device

    todo = [(task, kind, None) for task in (cfg.task, cfg.critique_task) for kind in cfg.attentions]
    todo += [(cfg.task, "hrr", d) for d in cfg.task_depths if d != cfg.depth]
    todo += [(cfg.critique_task, "hrr", d) for d in cfg.critique_depths if d != cfg.depth]
    if cfg.baseline_depth and cfg.baseline_depth != cfg.depth:
        todo += [
            (task, kind, cfg.baseline_depth)
            for task in (cfg.task, cfg.critique_task)
            for kind in cfg.attentions
            if kind != "hrr"
        ]
    arms = {}
    for task, kind, depth in todo:
        name = f"{task}/{kind}" + (f"@{depth}" if depth is not None else "")
        folder = Path(out_dir) / name.replace("@", "-") if out_dir is not None else None
        arms[name] = launch_or_resume(
            cfg, folder, resume, ArmResult, train_arm, cfg, task, kind, folder, resume, depth
        )
    device = resolve_device(cfg.device)
    costs = {
        kind: measure_cost(
            kind,
            cfg.timing_lengths + (cfg.hrr_lengths if kind == "hrr" else ()),
            cfg.timing_dim,
            cfg.timing_heads,
            cfg.timing_repeats,
            device,
            cfg.seed,
            cfg.timing_seconds,
        )
        for kind in cfg.attentions
        if kind in TIMED
    }
    score_bytes = [cfg.timing_heads * n * n * 4 for n in cfg.timing_lengths]
    result = HrrformerResult(cfg.to_dict(), arms, costs, score_bytes)
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
