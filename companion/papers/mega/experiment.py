"""The experiment: Mega, Mega without its EMA, and a softmax transformer of the same size,
trained for the same steps on a toy sequence task; then the forward time of one Mega layer
against sequence length, with full and with chunked attention (Mega-chunk).

The task (``motif_task``): a sequence of ``seq_len`` random background tokens holds the tokens
0, 1, …, m−1 once each. The label is 1 when they stand next to each other in that order (the
motif, anywhere in the sequence) and 0 when they are scattered. A bag of tokens cannot tell the
two classes apart; the model has to relate neighbouring positions wherever they are in a long
sequence and carry that evidence to a pooled decision.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from companion.core import (
    Config,
    Every,
    Result,
    StepBatches,
    fit,
    resolve_device,
    seed_everything,
    torch_threads,
    train_arms,
)
from companion.errors import CompanionError, unknown
from companion.nn import cross_entropy_step
from companion.nn.vit import Attention, Block, MultiHeadSelfAttention
from companion.papers.mega.method import (
    ATTENTIONS,
    MegaClassifier,
    MegaLayer,
    RelativePositionBias,
    ema_recurrence,
)

ARMS = ("mega", "mega_no_ema", "transformer")


@dataclasses.dataclass(frozen=True)
class MegaConfig(Config):
    """What to train and time. Sizes change between presets; the algorithm never does."""

    seq_len: int = 64
    vocab: int = 8  # tokens 0..motif_len−1 are the motif, the rest background
    motif_len: int = 3
    n_train: int = 2048
    n_test: int = 256
    embed_dim: int = 32  # d
    zdim: int = 16  # z: width of the shared representation Z (queries and keys)
    hdim: int = 64  # h: width of the values
    ndim: int = 8  # n: EMA components per channel
    depth: int = 2
    ffn_dim: int = 64
    attention: str = "laplace"  # laplace | softmax
    chunk_size: int = -1  # training: -1 = full attention (the sequences are short)
    transformer_heads: int = 4
    arms: tuple[str, ...] = ARMS
    lr: float = 3e-3
    weight_decay: float = 0.01
    batch_size: int = 32
    steps: int = 400
    eval_every: int = 25
    checkpoint_every: int = 0
    # CPU threads for torch inside run (0: leave torch's setting). These models are small: one
    # thread is as fast, reproducible, and on a busy 2-core machine two were 20x slower
    threads: int = 1
    # timing of one Mega layer's forward pass, full against chunked attention; batch × length
    # of at least 2048 tokens keeps the activations out of the CPU's L2 cache (smaller inputs
    # run disproportionately fast and would bend the fitted slope)
    timing_lengths: tuple[int, ...] = (512, 1024, 2048, 4096)
    timing_full_max: int = 2048  # full attention is timed up to this length only (L² cost)
    timing_chunk: int = 64
    timing_batch: int = 4
    timing_repeats: int = 5

    def validate(self) -> None:
        for arm in self.arms:
            if arm not in ARMS:
                raise unknown("arm", arm, ARMS)
        if self.attention not in ATTENTIONS:
            raise unknown("attention", self.attention, ATTENTIONS)
        if self.lr <= 0 or self.steps < 1 or self.batch_size < 1:
            raise CompanionError(
                f"lr, steps and batch_size must be positive, got lr={self.lr}, "
                f"steps={self.steps}, batch_size={self.batch_size}"
            )
        if not 2 <= self.motif_len < self.vocab or self.motif_len * 2 > self.seq_len:
            raise CompanionError(
                f"motif_len {self.motif_len} needs 2 <= motif_len < vocab ({self.vocab}) and "
                f"2·motif_len <= seq_len ({self.seq_len})"
            )
        if self.chunk_size > 0 and self.seq_len % self.chunk_size:
            raise CompanionError(
                f"seq_len {self.seq_len} is not divisible by chunk_size {self.chunk_size}"
            )
        bad = [n for n in self.timing_lengths if n % self.timing_chunk]
        n_full = sum(n <= self.timing_full_max for n in self.timing_lengths)
        if n_full < 3 or bad or list(self.timing_lengths) != sorted(self.timing_lengths):
            raise CompanionError(
                f"timing_lengths need increasing lengths, at least three of them <= "
                f"timing_full_max {self.timing_full_max}, each divisible by timing_chunk "
                f"{self.timing_chunk}; not divisible: {bad}"
            )
        if self.threads < 0:
            raise CompanionError(f"threads must be >= 0 (0: torch's default), got {self.threads}")
        if self.embed_dim % self.transformer_heads:
            raise CompanionError(
                f"embed_dim {self.embed_dim} is not divisible by transformer_heads "
                f"{self.transformer_heads}"
            )


PRESETS: dict[str, MegaConfig] = {
    "smoke": MegaConfig(
        seq_len=32,
        n_train=256,
        n_test=128,
        embed_dim=16,
        zdim=8,
        hdim=16,
        ndim=4,
        ffn_dim=32,
        steps=10,
        eval_every=5,
        timing_lengths=(64, 128, 256),
        timing_full_max=256,
        timing_chunk=32,
        timing_batch=1,
        timing_repeats=3,
    ),
    "notebook": MegaConfig(),
    # Paper-like scale on one GPU: LRA-length sequences (Mega-chunk with c = 128 as in the
    # paper's LRA runs), a wider and deeper model, bf16 mixed precision.
    "full": MegaConfig(
        seq_len=2048,
        vocab=16,
        motif_len=4,
        n_train=50_000,
        n_test=5_000,
        embed_dim=128,
        zdim=64,
        hdim=256,
        ndim=16,
        depth=4,
        ffn_dim=256,
        chunk_size=128,
        transformer_heads=4,
        lr=1e-3,
        batch_size=32,
        steps=20_000,
        eval_every=1000,
        checkpoint_every=1000,
        timing_lengths=(1024, 2048, 4096, 8192, 16384),
        timing_full_max=4096,
        timing_chunk=128,
        timing_batch=4,
        precision="bf16-mixed",
        threads=0,
    ),
}


# --------------------------------------------------------------------------------- the task
def motif_task(
    n: int, seq_len: int, vocab: int, motif_len: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(tokens ``[n, seq_len]``, labels ``[n]``): see the module docstring. Background tokens are
    drawn from ``motif_len .. vocab−1``; each sequence holds 0..motif_len−1 once each, in order
    at consecutive positions (label 1) or at random positions that are not (label 0)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(motif_len, vocab, (n, seq_len), generator=g)
    y = torch.randint(0, 2, (n,), generator=g)
    pos = torch.rand(n, seq_len, generator=g).argsort(dim=1)[:, :motif_len]
    start = torch.randint(0, seq_len - motif_len + 1, (n,), generator=g)
    pos[y == 1] = start[y == 1, None] + torch.arange(motif_len)
    while True:  # scattered positions that happen to form the motif: draw them again
        bad = (y == 0) & ((pos[:, 1:] - pos[:, :-1]) == 1).all(dim=1)
        if not bad.any():
            break
        pos[bad] = torch.rand(int(bad.sum()), seq_len, generator=g).argsort(1)[:, :motif_len]
    x.scatter_(1, pos, torch.arange(motif_len).expand(n, motif_len))
    return x, y


# ------------------------------------------------------------------------------- the models
class RelBiasSelfAttention(MultiHeadSelfAttention):
    """Multi-head softmax attention with Mega's position encoding: the same learned bias per
    relative offset (:class:`RelativePositionBias`, shared by the heads as Mega's single head
    has one) added to the scores, softmax(QKᵀ/√d_head + b_rel) V."""

    def __init__(self, dim, heads, *, max_positions: int, **kwargs):
        super().__init__(dim, heads, **kwargs)
        self.rel_pos_bias = RelativePositionBias(max_positions)

    def forward(self, x: torch.Tensor, return_attention: bool = False):
        q, k, v = (self.split_heads(f(x)) for f in (self.q, self.k, self.v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim) + self.rel_pos_bias(x.shape[1])
        probs = scores.softmax(dim=-1)
        out = self.proj((self.dropout(probs) @ v).transpose(1, 2).reshape(x.shape))
        return (out, Attention(scores, probs)) if return_attention else out


class SoftmaxTransformer(nn.Module):
    """The baseline: token embedding, pre-norm softmax blocks (``companion.nn.vit.Block``)
    whose attention carries the same relative-position bias as Mega's (and, as Mega, no
    absolute positions), Norm → mean pool → linear, as the Mega classifier. Position enters
    all three arms the same way, so only the EMA (and the gating) tells them apart."""

    def __init__(self, vocab, classes, seq_len, dim, depth, heads, mlp_hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        attention = functools.partial(RelBiasSelfAttention, max_positions=seq_len)
        self.blocks = nn.ModuleList(
            Block(dim, heads, mlp_ratio=(mlp_hidden + 0.5) / dim, attention=attention)
            for _ in range(depth)
        )
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x).mean(dim=1))


def n_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def build_mega(cfg: MegaConfig, use_ema: bool = True) -> MegaClassifier:
    return MegaClassifier(
        cfg.vocab,
        2,
        cfg.embed_dim,
        cfg.zdim,
        cfg.hdim,
        cfg.ndim,
        cfg.depth,
        cfg.ffn_dim,
        cfg.attention,
        cfg.chunk_size,
        cfg.seq_len,
        use_ema,
    )


def matched_mlp_hidden(cfg: MegaConfig) -> int:
    """The transformer's MLP width that makes its parameter count closest to Mega's."""
    target = n_params(build_mega(cfg))
    one = n_params(
        SoftmaxTransformer(
            cfg.vocab, 2, cfg.seq_len, cfg.embed_dim, cfg.depth, cfg.transformer_heads, 1
        )
    )
    per_unit = cfg.depth * (2 * cfg.embed_dim + 1)  # fc1 weight + bias, fc2 weight
    return max(1, 1 + round((target - one) / per_unit))


def build_model(cfg: MegaConfig, arm: str) -> nn.Module:
    if arm not in ARMS:
        raise unknown("arm", arm, ARMS)
    if arm == "transformer":
        return SoftmaxTransformer(
            cfg.vocab,
            2,
            cfg.seq_len,
            cfg.embed_dim,
            cfg.depth,
            cfg.transformer_heads,
            matched_mlp_hidden(cfg),
        )
    return build_mega(cfg, use_ema=arm == "mega")


# ------------------------------------------------------------------------------- the results
@dataclasses.dataclass
class ArmResult(Result):
    arm: str
    params: int
    loss_steps: list[int]
    loss: list[float]
    eval_steps: list[int]
    test_accuracy_curve: list[float]
    test_accuracy: float
    kernels: list[list[float]]  # EMA arm: layer 0's learned kernel K_d[l], [d][l]; else []
    kernels_init: list[list[float]]  # the same kernels at initialization
    fft_vs_recurrence: float  # EMA arm: max |EMA by FFT − by recurrence| on test inputs
    seconds: float


@dataclasses.dataclass
class MegaResult(Result):
    """Three trained arms and the timing of full against chunked attention."""

    config: dict
    arms: dict[str, ArmResult]
    timing_lengths: list[int]
    full_seconds: list[float]  # median forward time of one Mega layer, full attention, at
    # the first len(full_seconds) lengths (those up to timing_full_max)
    chunk_seconds: list[float]  # the same with chunked attention (Mega-chunk)

    @property
    def full_slope(self) -> float:
        return loglog_slope(self.timing_lengths[: len(self.full_seconds)], self.full_seconds)

    @property
    def chunk_slope(self) -> float:
        return loglog_slope(self.timing_lengths, self.chunk_seconds)


def loglog_slope(lengths, seconds) -> float:
    """Least-squares slope of log(time) against log(length): 1 linear, 2 quadratic."""
    return float(np.polyfit(np.log(lengths), np.log(seconds), 1)[0])


# ------------------------------------------------------------------------------ training
@torch.no_grad()
def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch: int = 512) -> float:
    """Test accuracy in float32 (the unwrapped model, autocast off) whatever the precision."""
    module = getattr(model, "module", model)
    was = module.training
    module.eval()
    correct = 0
    with torch.autocast(x.device.type, enabled=False):
        for xb, yb in zip(x.split(batch), y.split(batch)):
            correct += (module(xb).argmax(-1) == yb).sum().item()
    module.train(was)
    return correct / len(y)


def layer0_kernels(model: nn.Module, length: int) -> list[list[float]]:
    module = getattr(model, "module", model)
    if not isinstance(module, MegaClassifier) or module.layers[0].move is None:
        return []
    with torch.no_grad():
        k = module.layers[0].move.kernel(length).float().cpu()
    return [[round(v, 6) for v in row] for row in k.tolist()]


@torch.no_grad()
def fft_vs_recurrence(model: nn.Module, x: torch.Tensor) -> float:
    """Max |EMA by FFT − EMA by the recurrence| on layer 0's normed embeddings, float32."""
    module = getattr(model, "module", model)
    if not isinstance(module, MegaClassifier) or module.layers[0].move is None:
        return 0.0
    with torch.autocast(x.device.type, enabled=False):
        layer = module.layers[0]
        h = layer.norm(module.embed(x[:16]).float())
        return (layer.move.ema(h) - ema_recurrence(layer.move, h)).abs().max().item()


def train_arm(fabric, cfg: MegaConfig, arm: str, folder: Path | None, resume: bool) -> ArmResult:
    """Train one arm under Fabric; every arm starts from the same seed and sees the same batches."""
    x_train, y_train = motif_task(cfg.n_train, cfg.seq_len, cfg.vocab, cfg.motif_len, cfg.seed)
    x_test, y_test = motif_task(
        cfg.n_test, cfg.seq_len, cfg.vocab, cfg.motif_len, 10_000 + cfg.seed
    )
    seed_everything(cfg.seed)
    model = build_model(cfg, arm)
    init_kernels = layer0_kernels(model, cfg.seq_len)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    model, optimizer = fabric.setup(model, optimizer)
    batches = StepBatches(
        (x_train, y_train), cfg.batch_size, cfg.seed, fabric.global_rank, fabric.world_size
    )
    x_test, y_test = fabric.to_device(x_test), fabric.to_device(y_test)
    start = time.perf_counter()
    history = fit(
        fabric,
        model,
        optimizer,
        batches,
        cross_entropy_step,
        steps=cfg.steps,
        callbacks=[Every(cfg.eval_every, lambda s, m: {"test_acc": accuracy(m, x_test, y_test)})],
        checkpoint=folder / "checkpoint.ckpt" if folder else None,
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        desc=arm,
    )
    seconds = time.perf_counter() - start
    return ArmResult(
        arm=arm,
        params=n_params(model),
        loss_steps=history.steps("loss"),
        loss=history.values("loss"),
        eval_steps=history.steps("test_acc"),
        test_accuracy_curve=history.values("test_acc"),
        test_accuracy=accuracy(model, x_test, y_test),
        kernels=layer0_kernels(model, cfg.seq_len),
        kernels_init=init_kernels,
        fft_vs_recurrence=fft_vs_recurrence(model, x_test),
        seconds=seconds,
    )


# -------------------------------------------------------------------------------- timing
@torch.no_grad()
def time_layer(cfg: MegaConfig, chunk_size: int, lengths, device: str = "cpu") -> list[float]:
    """Median forward time (s) of one Mega layer (float32, eval) at each length.

    On the CPU the layer runs on one thread, timed by that thread's CPU time
    (``time.thread_time``), so another process holding the core (a second test worker, a busy
    laptop) does not bend the slope; on a GPU, wall-clock time with the device synchronized."""
    seed_everything(cfg.seed)
    layer = (
        MegaLayer(
            cfg.embed_dim,
            cfg.zdim,
            cfg.hdim,
            cfg.ndim,
            cfg.attention,
            chunk_size,
            max(lengths),
        )
        .to(device)
        .eval()
    )
    cuda = device.startswith("cuda")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    clock = time.perf_counter if cuda else time.thread_time
    out = []
    with torch_threads(1, device):
        for length in lengths:
            x = torch.randn(cfg.timing_batch, length, cfg.embed_dim, device=device)
            layer(x)  # warm-up
            times = []
            for _ in range(cfg.timing_repeats):
                sync()
                t0 = clock()
                layer(x)
                sync()
                times.append(clock() - t0)
            out.append(float(np.median(times)))
    return out


def run(cfg: MegaConfig, out_dir: str | Path | None = None, resume: bool = False) -> MegaResult:
    """Train every arm in ``cfg.arms``, then time full against chunked attention. With
    ``out_dir``: checkpoints, one ``arm.json`` per finished arm, and ``result.json``."""
    device = resolve_device(cfg.device)
    with torch_threads(cfg.threads, device):
        arms = train_arms(cfg, cfg.arms, out_dir, resume, ArmResult, train_arm)
        lengths = list(cfg.timing_lengths)
        result = MegaResult(
            config=cfg.to_dict(),
            arms=arms,
            timing_lengths=lengths,
            full_seconds=time_layer(
                cfg, -1, [n for n in lengths if n <= cfg.timing_full_max], device
            ),
            chunk_seconds=time_layer(cfg, cfg.timing_chunk, lengths, device),
        )
        if out_dir is not None:
            result.save(Path(out_dir) / "result.json")
    return result
