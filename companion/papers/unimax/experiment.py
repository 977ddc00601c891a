"""The experiment, in two parts.

1. **The corpus** (no training): temperature sampling and UniMax on per-language corpus sizes
   (the fit to the paper's numbers, or real counts from ``counts_path``) at a character budget
   C: sampling probabilities and epochs per language.
2. **A toy multilingual training run**: ``languages`` synthetic languages, each a next-token
   distribution over a shared vocabulary with a shared component and a language-specific one,
   p_l(next | token) = softmax(β · (S[token] + γ · A_l[token])). Their corpora fall
   geometrically from ``largest`` to ``smallest`` examples. One small model (language and token
   embeddings, an MLP) is trained on the mixture for ``steps × batch_size`` examples, once with
   temperature sampling and once with UniMax at the same budget, from the same initial weights.
   Held-out loss is the exact expected cross-entropy under each language's true distribution;
   training loss is measured on (up to ``train_eval_size`` of) each language's training set.
   A language seen for many epochs can memorize its few examples: its held-out loss rises while
   its training loss falls.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from companion.core import (
    Config,
    Every,
    Result,
    fit,
    seed_everything,
    torch_threads,
    train_arms,
)
from companion.errors import CompanionError
from companion.nn import MLP, cross_entropy_step
from companion.papers.unimax.corpus import geometric_sizes, load_counts, paper_fit
from companion.papers.unimax.method import (
    epochs_per_language,
    max_budget,
    temperature_sampling,
    unimax,
)

METHODS = ("temperature", "unimax")


@dataclasses.dataclass(frozen=True)
class UniMaxConfig(Config):
    """The corpus analysis (budget in characters) and the toy run (budget in examples)."""

    # sampling, shared by both parts
    tau: float = 3.33  # temperature τ of the baseline (mT5: α = 1/τ = 0.3)
    max_epochs: float = 4.0  # N: UniMax's cap on epochs per language
    # part 1: the corpus
    counts_path: str = ""  # "" = Zipf–Mandelbrot fit to the paper's numbers; else CSV/JSON
    budget_chars: float = 4e12  # C for the corpus, in characters
    # part 2: the toy run (budget C = steps × batch_size examples)
    languages: int = 12
    largest: int = 16384  # examples in the largest language's corpus
    smallest: int = 32  # ... and in the smallest
    vocab: int = 32
    sharpness: float = 1.5  # β: larger = lower-entropy languages
    specificity: float = 0.6  # γ: how far each language is from the shared component
    embed_dim: int = 16
    hidden: int = 128
    lr: float = 3e-3
    batch_size: int = 128
    steps: int = 400
    eval_every: int = 40
    train_eval_size: int = 512  # training examples per language for the training loss
    checkpoint_every: int = 0

    @property
    def toy_budget(self) -> int:
        """C of the toy run, in examples (one example = one next-token prediction)."""
        return self.steps * self.batch_size

    def toy_sizes(self) -> np.ndarray:
        return geometric_sizes(self.languages, self.largest, self.smallest)

    def validate(self) -> None:
        if not self.tau > 0 or not self.max_epochs > 0 or not self.budget_chars > 0:
            raise CompanionError(
                f"tau, max_epochs and budget_chars must be positive, got tau={self.tau}, "
                f"max_epochs={self.max_epochs}, budget_chars={self.budget_chars}"
            )
        if self.languages < 2 or self.vocab < 2 or not self.largest >= self.smallest >= 1:
            raise CompanionError(
                f"need languages >= 2, vocab >= 2 and largest >= smallest >= 1; got "
                f"languages={self.languages}, vocab={self.vocab}, largest={self.largest}, "
                f"smallest={self.smallest}"
            )
        for key in ("steps", "batch_size", "eval_every", "train_eval_size", "embed_dim", "hidden"):
            if getattr(self, key) < 1:
                raise CompanionError(f"{key} must be >= 1, got {getattr(self, key)}")
        if self.lr <= 0:
            raise CompanionError(f"lr must be positive, got {self.lr}")
        total = int(self.toy_sizes().sum())
        if self.toy_budget > self.max_epochs * total:
            raise CompanionError(
                f"toy budget steps × batch_size = {self.steps} × {self.batch_size} = "
                f"{self.toy_budget} examples exceeds N·Σn = {self.max_epochs:g} × {total} = "
                f"{self.max_epochs * total:g}: UniMax cannot spend it within N epochs; lower "
                f"steps or batch_size, or raise max_epochs or the corpus sizes"
            )
        if not self.counts_path:
            _, counts = paper_fit()
            cap = max_budget(counts, self.max_epochs)
            if self.budget_chars > cap:
                raise CompanionError(
                    f"budget_chars C={self.budget_chars:.4g} exceeds N·Σc = {self.max_epochs:g} "
                    f"× {counts.sum():.4g} = {cap:.4g} characters of the corpus fit; lower "
                    f"budget_chars or raise max_epochs"
                )


PRESETS: dict[str, UniMaxConfig] = {
    "smoke": UniMaxConfig(
        languages=6,
        largest=2048,
        smallest=32,
        vocab=16,
        hidden=32,
        batch_size=64,
        steps=30,
        eval_every=10,
        train_eval_size=64,
    ),
    "notebook": UniMaxConfig(),
    # The corpus part at the paper's scale (107 languages, 29T characters; real counts with
    # --set counts_path=...), and a larger toy run for one GPU. The paper's own pretraining
    # (umT5 models up to 13B parameters) is far beyond this package.
    "full": UniMaxConfig(
        languages=32,
        largest=2**20,
        smallest=64,
        vocab=256,
        embed_dim=64,
        hidden=512,
        lr=1e-3,
        batch_size=512,
        steps=20_000,
        eval_every=500,
        train_eval_size=2048,
        checkpoint_every=2000,
    ),
}


@dataclasses.dataclass
class CorpusResult(Result):
    """Part 1: sampling distributions on the corpus at budget C (characters)."""

    source: str  # "fit" or the counts file
    names: list[str]
    counts: list[float]  # c_l, characters, largest first
    budget: float  # C
    max_epochs: float  # N
    tau: float
    temperature: list[float]  # p_l
    unimax: list[float]  # p_l

    def epochs(self, method: str) -> np.ndarray:
        probs = self.temperature if method == "temperature" else self.unimax
        return epochs_per_language(probs, self.counts, self.budget)


@dataclasses.dataclass
class ArmResult(Result):
    """Part 2: one sampling method in the toy run."""

    method: str
    probs: list[float]  # p_l over the toy languages
    allocation: list[int]  # U_l: examples of language l in the training stream
    epochs: list[float]  # U_l / n_l
    loss_steps: list[int]
    loss: list[float]
    eval_steps: list[int]
    held_out: list[list[float]]  # [language][evaluation]: expected cross-entropy (nats)
    train: list[list[float]]  # [language][evaluation]: cross-entropy on its training set
    seconds: float


@dataclasses.dataclass
class UniMaxResult(Result):
    config: dict
    corpus: CorpusResult
    sizes: list[int]  # n_l of the toy languages, largest first
    entropy: list[float]  # the best possible held-out loss of each toy language (nats)
    budget: int  # the toy's C, in examples
    arms: dict[str, ArmResult]


def analyse_corpus(cfg: UniMaxConfig) -> CorpusResult:
    """Temperature sampling and UniMax on the corpus sizes at ``cfg.budget_chars``."""
    if cfg.counts_path:
        names, counts = load_counts(cfg.counts_path)
        source = cfg.counts_path
    else:
        names, counts = paper_fit()
        source = "fit"
    return CorpusResult(
        source=source,
        names=names,
        counts=counts.tolist(),
        budget=cfg.budget_chars,
        max_epochs=cfg.max_epochs,
        tau=cfg.tau,
        temperature=temperature_sampling(counts, cfg.tau).tolist(),
        unimax=unimax(counts, cfg.budget_chars, cfg.max_epochs).tolist(),
    )


@dataclasses.dataclass
class ToyLanguages:
    """The synthetic languages: true next-token distributions and sampled training sets."""

    sizes: np.ndarray  # n_l
    probs: torch.Tensor  # [L, V, V]: p_l(next | token)
    tokens: list[torch.Tensor]  # per language: current tokens of its training examples
    targets: list[torch.Tensor]  # per language: the next tokens

    @property
    def entropy(self) -> torch.Tensor:
        """The least possible held-out loss of each language (nats)."""
        return entropy_of(self.probs)


def true_distributions(cfg: UniMaxConfig, g: torch.Generator) -> torch.Tensor:
    """p_l(next | token) = softmax(β (S[token] + γ A_l[token])): [L, V, V]. S is shared by all
    languages, A_l is language l's own."""
    L, V = cfg.languages, cfg.vocab
    shared = torch.randn(V, V, generator=g)
    own = torch.randn(L, V, V, generator=g)
    return torch.softmax(cfg.sharpness * (shared + cfg.specificity * own), dim=-1)


def make_languages(cfg: UniMaxConfig) -> ToyLanguages:
    """The toy languages and their corpora: n_l (token, next token) pairs of language l, the
    current token uniform over the vocabulary and the next one drawn from p_l."""
    g = torch.Generator().manual_seed(cfg.seed)
    probs = true_distributions(cfg, g)
    sizes = cfg.toy_sizes()
    tokens, targets = [], []
    for lang, n in enumerate(sizes.tolist()):
        cur = torch.randint(cfg.vocab, (n,), generator=g)
        nxt = torch.empty(n, dtype=torch.long)
        for v in range(cfg.vocab):  # per current token: avoids an n × V probability matrix
            rows = (cur == v).nonzero().squeeze(1)
            if len(rows):
                nxt[rows] = torch.multinomial(probs[lang, v], len(rows), True, generator=g)
        tokens.append(cur)
        targets.append(nxt)
    return ToyLanguages(sizes, probs, tokens, targets)


def entropy_of(probs: torch.Tensor) -> torch.Tensor:
    """Expected entropy of the next token (uniform current token): the least held-out loss."""
    return -(probs * probs.clamp_min(1e-30).log()).sum(-1).mean(-1)


class NextTokenModel(nn.Module):
    """q(next | language, token): the two embeddings, concatenated, then an MLP to logits."""

    def __init__(self, languages: int, vocab: int, embed_dim: int, hidden: int):
        super().__init__()
        self.language = nn.Embedding(languages, embed_dim)
        self.token = nn.Embedding(vocab, embed_dim)
        self.mlp = MLP(2 * embed_dim, [hidden], vocab, activation=nn.GELU)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` [B, 2]: (language, current token) → logits [B, vocab]."""
        return self.mlp(torch.cat([self.language(x[:, 0]), self.token(x[:, 1])], dim=-1))


def allocate(budgets: np.ndarray, total: int, caps: np.ndarray) -> np.ndarray:
    """Integer U_l summing to ``total``, proportional to ``budgets``, never above ``caps``.

    Largest-remainder rounding: floor everything, then hand the missing units, one per language
    and pass, to the largest fractional parts among languages still below their cap. (UniMax's
    budgets already respect the caps, so only rounding units move.)
    """
    caps = np.asarray(caps, dtype=np.int64)
    if caps.sum() < total:
        raise CompanionError(f"cannot allocate {total} within caps summing to {caps.sum()}")
    raw = np.asarray(budgets, dtype=np.float64) / np.sum(budgets) * total
    base = np.minimum(np.floor(raw + 1e-9).astype(np.int64), caps)
    order = np.argsort(-(raw - base), kind="stable")
    left = total - int(base.sum())
    while left > 0:
        for lang in order:
            if left > 0 and base[lang] < caps[lang]:
                base[lang] += 1
                left -= 1
    return base


def arm_allocation(cfg: UniMaxConfig, method: str, sizes: np.ndarray):
    """(p_l, integer U_l) of a sampling method on the toy corpora at the toy budget."""
    C = cfg.toy_budget
    if method == "temperature":
        probs = temperature_sampling(sizes, cfg.tau)
        caps = np.full(len(sizes), C)
    else:
        probs = unimax(sizes, C, cfg.max_epochs)
        caps = np.floor(cfg.max_epochs * sizes + 1e-9).astype(np.int64)  # never above N epochs
    return probs, allocate(probs, C, caps)


class MixtureBatches:
    """The training stream as a pure function of the step (resumable, like ``StepBatches``).

    Language l contributes U_l examples: its corpus in fresh random orders, repeated as often as
    needed (⌈U_l / n_l⌉ passes, the last one cut short). All languages' examples are then mixed in
    one random order; step s takes rows [s·B, (s+1)·B), and rank r of w every w-th of those.
    """

    def __init__(self, langs: ToyLanguages, allocation, batch_size, seed, rank=0, world_size=1):
        if batch_size % world_size:
            raise CompanionError(f"batch_size {batch_size} is not divisible by {world_size} ranks")
        g = torch.Generator().manual_seed(seed * 100_003 + 1)
        lang_ids, tokens, targets = [], [], []
        for lang, (u, n) in enumerate(zip(allocation.tolist(), langs.sizes.tolist())):
            passes = -(-u // n)
            rows = torch.cat([torch.randperm(n, generator=g) for _ in range(passes)])[:u]
            lang_ids.append(torch.full((u,), lang, dtype=torch.int32))
            tokens.append(langs.tokens[lang][rows].int())
            targets.append(langs.targets[lang][rows].int())
        order = torch.randperm(int(allocation.sum()), generator=g)
        self.lang = torch.cat(lang_ids)[order]
        self.tokens = torch.cat(tokens)[order]
        self.targets = torch.cat(targets)[order]
        self.batch_size, self.rank, self.world_size = batch_size, rank, world_size

    def __call__(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        rows = slice(step * self.batch_size, (step + 1) * self.batch_size)
        x = torch.stack([self.lang[rows], self.tokens[rows]], dim=1).long()
        y = self.targets[rows].long()
        return x[self.rank :: self.world_size], y[self.rank :: self.world_size]


@torch.no_grad()
def language_losses(
    model: nn.Module, langs: ToyLanguages, train_eval_size: int
) -> dict[str, float]:
    """Per language: held-out loss (exact, every current token weighted equally) and the loss
    on its first ``train_eval_size`` training examples."""
    device = next(model.parameters()).device
    L, V = langs.probs.shape[:2]
    grid = torch.stack([torch.arange(L).repeat_interleave(V), torch.arange(V).repeat(L)], dim=1).to(
        device
    )
    logq = F.log_softmax(model(grid).float(), dim=-1).view(L, V, V).cpu()
    held_out = -(langs.probs * logq).sum(-1).mean(-1)  # E_token E_next~p_l[−log q]
    out = {f"held_out/{lang}": held_out[lang].item() for lang in range(L)}
    for lang in range(L):
        cur = langs.tokens[lang][:train_eval_size]
        x = torch.stack([torch.full_like(cur, lang), cur], dim=1).to(device)
        y = langs.targets[lang][:train_eval_size].to(device)
        out[f"train/{lang}"] = F.cross_entropy(model(x).float(), y).item()
    return out


def train_arm(fabric, cfg: UniMaxConfig, method: str, folder: Path | None, resume: bool):
    """Train the toy model on the mixture that ``method`` samples; measure every language."""
    langs = make_languages(cfg)
    probs, allocation = arm_allocation(cfg, method, langs.sizes)
    seed_everything(cfg.seed)  # the same initial weights for both methods
    model = NextTokenModel(cfg.languages, cfg.vocab, cfg.embed_dim, cfg.hidden)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    model, optimizer = fabric.setup(model, optimizer)
    batches = MixtureBatches(
        langs, allocation, cfg.batch_size, cfg.seed, fabric.global_rank, fabric.world_size
    )
    start = time.perf_counter()
    with torch_threads(1, fabric.device):
        history = fit(
            fabric,
            model,
            optimizer,
            batches,
            cross_entropy_step,
            steps=cfg.steps,
            callbacks=[
                # the module without Fabric's autocast: float32 whatever the precision
                Every(
                    cfg.eval_every,
                    lambda s, m: language_losses(m.module, langs, cfg.train_eval_size),
                )
            ],
            checkpoint=folder / "checkpoint.ckpt" if folder else None,
            checkpoint_every=cfg.checkpoint_every,
            resume=resume,
            desc=method,
        )
    return ArmResult(
        method=method,
        probs=probs.tolist(),
        allocation=allocation.tolist(),
        epochs=(allocation / langs.sizes).tolist(),
        loss_steps=history.steps("loss"),
        loss=history.values("loss"),
        eval_steps=history.steps("held_out/0"),
        held_out=[history.values(f"held_out/{lang}") for lang in range(cfg.languages)],
        train=[history.values(f"train/{lang}") for lang in range(cfg.languages)],
        seconds=time.perf_counter() - start,
    )


def run(cfg: UniMaxConfig, out_dir: str | Path | None = None, resume: bool = False) -> UniMaxResult:
    """The corpus analysis, then the toy run for both methods; with ``out_dir``, checkpoints and
    results. ``resume=True`` keeps finished arms (``<out_dir>/<method>/arm.json``) and continues
    an interrupted arm from its last checkpoint."""
    corpus = analyse_corpus(cfg)
    arms = train_arms(cfg, METHODS, out_dir, resume, ArmResult, train_arm)
    probs = true_distributions(cfg, torch.Generator().manual_seed(cfg.seed))  # as in the arms
    result = UniMaxResult(
        config=cfg.to_dict(),
        corpus=corpus,
        sizes=cfg.toy_sizes().tolist(),
        entropy=entropy_of(probs).tolist(),
        budget=cfg.toy_budget,
        arms=arms,
    )
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
