"""The experiment: the prequential description length of one dataset, in a few fixed orders,
by block-wise estimation, online learning without replay and online learning with replay, all
at the same number of gradient steps, and the replay run's own predictions forward-calibrated.

Held equal across the three trained arms, per order: the data order, the network and its
initial weights, the optimizer (Adam, same learning rate), the minibatch size and the total
number of gradient steps ``(minibatches − 1) × (1 + replay_steps)``. Online without replay spends
its ``1 + replay_steps`` steps on each new minibatch; block-wise shares them among its fits in
proportion to each prefix's size. Calibration trains nothing: it recodes the replay arm's
encode-time logits.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import numpy as np
import torch

from companion.core import Config, Result, seed_everything, torch_threads
from companion.errors import CompanionError, unknown
from companion.papers.prequential_mdl.method import (
    MLP,
    block_boundaries,
    blockwise_code_length,
    forward_calibrated_bits,
    hindsight_calibrated_bits,
    online_code_length,
    split_budget,
    uniform_code_bits,
)

DATASETS = ("digits", "mnist_subset", "cifar10")
ARMS = ("blockwise", "online", "online_replay", "replay_calibrated")
LABELS = {
    "blockwise": "block-wise",
    "online": "online, no replay",
    "online_replay": "online + replay",
    "replay_calibrated": "online + replay, forward-calibrated",
}


@dataclasses.dataclass(frozen=True)
class PrequentialConfig(Config):
    """What to encode and how. Sizes change between presets; the algorithm never does."""

    dataset: str = "digits"
    data_root: str = ""  # cifar10: the extracted python release
    max_examples: int = 0  # 0: every example of the dataset (train + val + test splits)
    hidden: tuple[int, ...] = (128,)  # () is logistic regression
    batch_size: int = 16
    replay_steps: int = 2  # extra steps per minibatch on uniformly replayed past examples
    lrs: tuple[float, ...] = (3e-3, 1e-2, 3e-2)  # every arm is run at each; its code picks the best
    growth: float = 2.0  # block-wise split points grow geometrically from one minibatch
    calib_window: int = 10  # forward calibration fits β on this many minibatches before
    num_orders: int = 3  # data orders seed, seed+1, ...: the description length depends on it
    threads: int = 1
    precision: str = "64-true"  # CPU presets in float64: the same on every CPU

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        if self.precision not in ("32-true", "64-true"):
            raise CompanionError(f"precision must be 32-true or 64-true, got {self.precision}")
        if self.batch_size < 1 or self.replay_steps < 0 or self.num_orders < 1:
            raise CompanionError(
                "batch_size and num_orders must be >= 1 and replay_steps >= 0, got "
                f"{self.batch_size}, {self.num_orders}, {self.replay_steps}"
            )
        if (
            not self.lrs
            or min(self.lrs) <= 0
            or self.growth <= 1
            or self.calib_window < 1
            or self.max_examples < 0
        ):
            raise CompanionError(
                "lrs > 0, growth > 1, calib_window >= 1 and max_examples >= 0 are required"
            )

    @property
    def seeds(self) -> list[int]:
        return [self.seed + i for i in range(self.num_orders)]

    @property
    def dtype(self) -> torch.dtype:
        return torch.float64 if self.precision == "64-true" else torch.float32


PRESETS: dict[str, PrequentialConfig] = {
    "smoke": PrequentialConfig(max_examples=320, num_orders=1, hidden=(32,), lrs=(3e-3, 1e-2)),
    # all 1,797 digits, an MLP 64-128-10, two orders, three learning rates
    "notebook": PrequentialConfig(num_orders=2),
    # the paper's MNIST/CIFAR-10 scale in spirit: CIFAR-10's 50,000 training images, a wider MLP
    # (the paper used convolutional and residual networks), larger minibatches, float32 on a GPU
    "full": PrequentialConfig(
        dataset="cifar10",
        data_root="data/cifar-10-batches-py",
        hidden=(1024, 1024),
        batch_size=64,
        replay_steps=4,
        lrs=(1e-4, 3e-4, 1e-3),
        calib_window=20,
        num_orders=3,
        threads=8,
        precision="32-true",
        device="auto",
    ),
}


@dataclasses.dataclass
class OrderResult(Result):
    """One data order: per arm the bits of each minibatch (the curves) and the totals."""

    seed: int
    lr: float
    n: int
    num_classes: int
    batch_size: int
    batch_bits: dict[str, list[float]]  # arm -> bits of each minibatch, in order
    steps: dict[str, int]  # arm -> gradient steps spent
    betas: list[float]  # forward calibration's β per minibatch
    hindsight_bits: float  # replay arm with one β fitted on all its logits afterwards (no code)
    boundaries: list[int]  # block-wise split points
    seconds: float

    def total_bits(self, arm: str) -> float:
        return float(sum(self.batch_bits[arm]))


@dataclasses.dataclass
class PrequentialResult(Result):
    config: dict
    uniform_bits: float  # N · log₂ C
    orders: list[OrderResult]

    @property
    def seeds(self) -> list[int]:
        return sorted({o.seed for o in self.orders})

    @property
    def lrs(self) -> list[float]:
        return sorted({o.lr for o in self.orders})

    def at(self, seed: int, lr: float) -> OrderResult:
        return next(o for o in self.orders if o.seed == seed and o.lr == lr)

    def best(self, arm: str, seed: int) -> OrderResult:
        """The run of ``arm`` on order ``seed`` at its best learning rate (shortest code)."""
        runs = [o for o in self.orders if o.seed == seed]
        return min(runs, key=lambda o: o.total_bits(arm))

    def description_length(self, arm: str, seed: int) -> float:
        """Bits of ``arm``'s code on order ``seed``: the shortest over the learning rates plus
        ``log₂ K`` bits that tell the receiver which of the K rates was used."""
        return self.best(arm, seed).total_bits(arm) + math.log2(len(self.lrs))

    def kbits(self, arm: str) -> list[float]:
        """Per order, the description length in kbits (best learning rate, its choice paid)."""
        return [self.description_length(arm, s) / 1000 for s in self.seeds]

    def kbits_at(self, arm: str, lr: float) -> list[float]:
        """Per order, the code length in kbits at one learning rate."""
        return [self.at(s, lr).total_bits(arm) / 1000 for s in self.seeds]


def load_data(cfg: PrequentialConfig) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Every example of the dataset, flattened: ``(x [N, D], y [N], classes)``."""
    from companion import data

    if cfg.dataset == "cifar10":
        train = data.load_cifar(cfg.data_root, "cifar10", "train").tensors
        x, y = train[0].float(), train[1]
    else:
        splits = data.load(cfg.dataset, seed=0)
        parts = [splits.train.tensors, splits.val.tensors, splits.test.tensors]
        x = torch.cat([p[0] for p in parts])
        y = torch.cat([p[1] for p in parts])
    x = x.flatten(1)
    x = (x - x.mean(0)) / (x.std(0) + 1e-3) / 3.0  # inputs standardised (inputs are shared)
    if cfg.max_examples:
        x, y = x[: cfg.max_examples], y[: cfg.max_examples]
    return x, y, int(y.max()) + 1


def encode_order(cfg: PrequentialConfig, x, y, classes: int, seed: int, lr: float) -> OrderResult:
    """Every arm on one order of the data (drawn from ``seed``) at learning rate ``lr``."""
    start_time = time.perf_counter()
    device = torch.device(
        "cuda" if cfg.device in ("auto", "cuda") and torch.cuda.is_available() else "cpu"
    )
    order = torch.from_numpy(np.random.default_rng(10_007 + seed).permutation(len(y)))
    x = x[order].to(device=device, dtype=cfg.dtype)
    y = y[order].to(device)
    n, b = len(y), cfg.batch_size

    def make_model():
        return MLP(x.shape[1], cfg.hidden, classes, seed, cfg.dtype).to(device)

    def make_optimizer(model):
        return torch.optim.Adam(model.parameters(), lr=lr)

    per_batch = max(1, -(-n // b)) - 1  # minibatches followed by training
    budget = per_batch * (1 + cfg.replay_steps)
    bits, steps, logits = {}, {}, {}
    seed_everything(seed)
    model = make_model()
    bits["online"], _, steps["online"] = online_code_length(
        model, make_optimizer(model), x, y, classes, b, steps_on_new=1 + cfg.replay_steps
    )
    model = make_model()
    bits["online_replay"], logits, steps["online_replay"] = online_code_length(
        model,
        make_optimizer(model),
        x,
        y,
        classes,
        b,
        replay_steps=cfg.replay_steps,
        rng=np.random.default_rng(20_011 + seed),
    )
    bits["replay_calibrated"], betas = forward_calibrated_bits(
        logits.cpu(), y.cpu(), b, cfg.calib_window * b, first=min(b, n)
    )
    steps["replay_calibrated"] = steps["online_replay"]
    hindsight = hindsight_calibrated_bits(logits.cpu(), y.cpu(), min(b, n))
    boundaries = block_boundaries(n, min(b, n), cfg.growth)
    bits["blockwise"], _, steps["blockwise"] = blockwise_code_length(
        make_model,
        make_optimizer,
        x,
        y,
        classes,
        b,
        boundaries,
        split_budget(budget, boundaries[:-1]),
        np.random.default_rng(30_011 + seed),
    )
    batch_bits = {
        arm: [round(float(bits[arm][i : i + b].sum()), 4) for i in range(0, n, b)] for arm in ARMS
    }
    return OrderResult(
        seed=seed,
        lr=lr,
        n=n,
        num_classes=classes,
        batch_size=b,
        batch_bits=batch_bits,
        steps=steps,
        betas=[round(v, 4) for v in betas],
        hindsight_bits=round(hindsight, 4),
        boundaries=boundaries,
        seconds=time.perf_counter() - start_time,
    )


def run(
    cfg: PrequentialConfig, out_dir: str | Path | None = None, resume: bool = False
) -> PrequentialResult:
    """Encode the data in ``cfg.num_orders`` orders with every arm at every learning rate of
    ``cfg.lrs``; with ``out_dir``, each finished (order, rate) is written
    (``<out_dir>/order<seed>-lr<lr>.json``) and ``resume=True`` keeps it."""
    cfg.validate()
    x, y, classes = load_data(cfg)
    orders = []
    with torch_threads(cfg.threads):
        for seed, lr in ((s, lr) for s in cfg.seeds for lr in cfg.lrs):
            name = f"order{seed}-lr{lr:g}.json"
            path = Path(out_dir) / name if out_dir is not None else None
            if resume and path is not None and path.exists():
                orders.append(OrderResult.load(path))
                continue
            done = encode_order(cfg, x, y, classes, seed, lr)
            if path is not None:
                done.save(path)
            orders.append(done)
    result = PrequentialResult(
        config=cfg.to_dict(), uniform_bits=uniform_code_bits(len(y), classes), orders=orders
    )
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
