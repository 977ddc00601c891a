"""The experiment: federated learning under a bursty backdoor attack, with a robust aggregator
on the server, with and without LeadFL on the benign clients (the paper's Fig. 3 setting at
small scale), plus two reference arms:

* ``double_lr``, the step-matched control: benign clients run plain SGD at twice the learning
  rate, with no LeadFL code. As coded, LeadFL applies the task gradient twice per batch (a step
  of 2η on every batch but the first), so this arm has LeadFL's effective benign step without
  its regularizer and clip.
* ``alpha0``, the ablation that removes only the regularizer: the LeadFL code with α = 0
  (the doubled step and the clip kept, nothing else changed). The regularizer's own effect is
  LeadFL against this arm.
* ``no_attack``, the clean floor: the same run with no attacker ever selected (the burst
  rounds are filled with benign clients). A clean model already predicts the target for some
  triggered images; its attack success rate is the floor a backdoor is measured from.

Every arm starts from the same weights and splits the data the same way; the attacked arms
select the same clients in every round and the attackers do the same in each. The only
difference between the attacked arms is the benign clients' local training.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from pathlib import Path

import torch
from torch import nn

from companion.core import Config, Result, seed_everything, torch_threads, train_arms
from companion.core.federated import AGGREGATORS, Update, iid_split, local_sgd, run_rounds
from companion.data.backdoor import poison, triggered_test_set
from companion.errors import CompanionError, unknown
from companion.nn import SmallCNN
from companion.papers.leadfl.method import bursty_schedule, local_training

DEFENSES = ("none", "leadfl", "alpha0", "double_lr", "no_attack")
DATASETS = ("mnist_subset", "digits", "cifar10")
MODELS = ("mlp", "cnn")
ROBUST = ("coordinate_median", "multi_krum", "trimmed_mean", "geometric_median", "mean")


@dataclasses.dataclass(frozen=True)
class LeadFLConfig(Config):
    """What to simulate. Sizes change between presets; the algorithm never does."""

    dataset: str = "mnist_subset"
    data_root: str = ""  # cifar10: the extracted python release
    image_size: int = 14
    model: str = "mlp"
    hidden: int = 64  # mlp: one hidden layer
    widths: tuple[int, ...] = (16, 32)  # cnn: SmallCNN channel widths
    clients: int = 40
    malicious: int = 10  # official: 25 of 100 clients
    per_round: int = 10  # official: 10 per round
    burst_rounds: tuple[int, ...] = (5, 10, 12)  # official: 0, 10, 12
    burst_malicious: int = 5  # official: 5 of the 10 in a burst round
    attackers_between_bursts: bool = False  # official: True (random selection from all)
    rounds: int = 30
    local_steps: int = 10
    batch_size: int = 32
    lr: float = 0.05
    momentum: float = 0.0
    aggregator: str = "coordinate_median"
    krum_f: int = 5  # multi_krum: the number of attackers it tolerates
    trim: int = 2  # trimmed_mean: values dropped at each end
    defenses: tuple[str, ...] = DEFENSES
    alpha: float = 0.4  # official regular_weight
    q: float = 0.2  # official pert_strength: element-wise gradient clip
    target: int = 8  # official: label 8
    poison_fraction: float = 0.5  # share of an attacker's eligible images stamped
    trigger_size: int = 3
    checkpoint_every: int = 0
    threads: int = 1  # CPU threads (0: leave torch's setting); tiny models run fastest on one

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        if self.model not in MODELS:
            raise unknown("model", self.model, MODELS)
        if self.aggregator not in ROBUST:
            raise unknown("aggregator", self.aggregator, ROBUST)
        for d in self.defenses:
            if d not in DEFENSES:
                raise unknown("defense", d, DEFENSES)
        if not 0 <= self.malicious < self.clients:
            raise CompanionError(
                f"malicious must be in 0..clients-1, got {self.malicious} of {self.clients}"
            )
        if not 0 < self.per_round <= self.clients:
            raise CompanionError(f"per_round must be in 1..{self.clients}, got {self.per_round}")
        if self.rounds < 1 or self.local_steps < 1 or self.batch_size < 1 or self.lr <= 0:
            raise CompanionError(
                "rounds, local_steps, batch_size and lr must be positive, got "
                f"{self.rounds}, {self.local_steps}, {self.batch_size}, {self.lr}"
            )
        if self.alpha < 0 or self.q <= 0:
            raise CompanionError(f"alpha must be >= 0 and q > 0, got {self.alpha}, {self.q}")
        if not 0 <= self.poison_fraction <= 1:
            raise CompanionError(f"poison_fraction must lie in [0, 1], got {self.poison_fraction}")


PRESETS: dict[str, LeadFLConfig] = {
    # digits (8x8) instead of the MNIST subset: it loads in a fraction of the time
    "smoke": LeadFLConfig(
        dataset="digits",
        image_size=8,
        clients=16,
        malicious=4,
        per_round=4,
        burst_rounds=(2, 4),
        burst_malicious=2,
        rounds=8,
        local_steps=4,
        krum_f=1,
        trim=1,
    ),
    "notebook": LeadFLConfig(),
    # The paper's CIFAR-10 setting: 100 clients (25 attackers), 10 per round, bursts of 5
    # attackers at rounds 0, 10, 12 with random selection in between, 10 local epochs of
    # batch 32 on 500 images (160 steps), lr 0.01, Multi-Krum on the server.
    "full": LeadFLConfig(
        dataset="cifar10",
        data_root="data/cifar-10-batches-py",
        image_size=32,
        model="cnn",
        widths=(32, 64, 128),
        clients=100,
        malicious=25,
        per_round=10,
        burst_rounds=(0, 10, 12),
        burst_malicious=5,
        attackers_between_bursts=True,
        rounds=80,
        local_steps=160,
        lr=0.01,
        momentum=0.1,
        aggregator="multi_krum",
        poison_fraction=0.5,
        checkpoint_every=5,
        threads=0,
    ),
}


@dataclasses.dataclass
class ArmResult(Result):
    """One arm: the server's aggregator with (``leadfl``) or without (``none``) LeadFL, LeadFL
    with α = 0 (``alpha0``), the step-matched control (``double_lr``) or the run without
    attackers (``no_attack``)."""

    defense: str
    rounds: list[int]
    clean_accuracy: list[float]  # global model on the clean test set, after each round
    attack_success: list[float]  # share of triggered non-target test images predicted target
    target_rate: list[float]  # share of clean non-target test images predicted as the target
    attackers: list[int]  # attackers among the participants of each round
    regularizer: list[float]  # mean α·R of the benign clients (LeadFL only)
    seconds: float


@dataclasses.dataclass
class LeadFLResult(Result):
    config: dict
    arms: dict[str, ArmResult]

    @property
    def first_burst(self) -> int:
        return min(self.config["burst_rounds"])

    @property
    def last_burst(self) -> int:
        return max(self.config["burst_rounds"])


def load_data(cfg: LeadFLConfig):
    """(train x, train y, test x, test y): images in [0, 1], [N, C, H, W]."""
    return _load_data(cfg.dataset, cfg.data_root, cfg.image_size)


@functools.lru_cache(maxsize=2)
def _load_data(dataset: str, data_root: str, image_size: int):
    from companion import data

    if dataset == "cifar10":
        train = data.load_cifar(data_root, "cifar10", "train").tensors
        test = data.load_cifar(data_root, "cifar10", "test").tensors
        return train[0], train[1], test[0], test[1]
    splits = data.load(dataset, image_size=image_size, seed=0)
    (xtr, ytr), (xte, yte) = splits.train.tensors, splits.test.tensors
    return xtr, ytr, xte, yte


def build_model(cfg: LeadFLConfig, channels: int, classes: int = 10) -> nn.Module:
    """An MLP with one hidden layer, or ``companion.nn.SmallCNN`` (Conv-BN-ReLU blocks)."""
    if cfg.model == "cnn":
        return SmallCNN(channels, classes, widths=cfg.widths)
    d = channels * cfg.image_size**2
    return nn.Sequential(
        nn.Flatten(), nn.Linear(d, cfg.hidden), nn.ReLU(), nn.Linear(cfg.hidden, classes)
    )


def cross_entropy(model: nn.Module, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
    return nn.functional.cross_entropy(model(xb), yb)


def client_data(cfg: LeadFLConfig, x: torch.Tensor, y: torch.Tensor):
    """IID shards of the training set; the first ``cfg.malicious`` shards (a random set of
    clients, since the split is random) are poisoned: a ``poison_fraction`` of their images of
    other classes get the trigger and the label ``target``. Returns (shards, attacker ids)."""
    g = torch.Generator().manual_seed(cfg.seed)
    shards = []
    for c, index in enumerate(iid_split(len(x), cfg.clients, g)):
        xc, yc = x[index], y[index]
        if c < cfg.malicious:
            xc, yc, _ = poison(
                xc,
                yc,
                target=cfg.target,
                fraction=cfg.poison_fraction,
                generator=g,
                size=cfg.trigger_size,
            )
        shards.append((xc, yc))
    return shards, list(range(cfg.malicious))


def make_clients(cfg: LeadFLConfig, shards, attackers, defense: str):
    """One callable per client. Attackers train plainly on their poisoned shard (a data attack:
    the server sees what they computed); benign clients run LeadFL when ``defense`` says so
    (``alpha0``: the same code with α = 0), and plain SGD at twice the learning rate for
    ``double_lr``."""
    bad = set(attackers)

    def client(c: int):
        xc, yc = shards[c]

        def update(model: nn.Module, round_: int, generator: torch.Generator) -> Update:
            if defense in ("leadfl", "alpha0") and c not in bad:
                delta, info, buffers = local_training(
                    model,
                    xc,
                    yc,
                    steps=cfg.local_steps,
                    batch_size=cfg.batch_size,
                    lr=cfg.lr,
                    momentum=cfg.momentum,
                    generator=generator,
                    leadfl=True,
                    alpha=cfg.alpha if defense == "leadfl" else 0.0,
                    q=cfg.q,
                )
                return Update(delta, weight=float(len(yc)), info=info, buffers=buffers)
            # the step-matched control: benign clients take plain SGD steps of 2η
            lr = 2 * cfg.lr if defense == "double_lr" and c not in bad else cfg.lr
            delta, loss, buffers = local_sgd(
                model,
                xc,
                yc,
                cross_entropy,
                steps=cfg.local_steps,
                batch_size=cfg.batch_size,
                lr=lr,
                momentum=cfg.momentum,
                generator=generator,
            )
            return Update(delta, weight=float(len(yc)), info={"loss": loss}, buffers=buffers)

        return update

    return [client(c) for c in range(cfg.clients)]


def aggregator(cfg: LeadFLConfig):
    fn = AGGREGATORS[cfg.aggregator]
    if cfg.aggregator == "multi_krum":
        return lambda m, w: fn(m, w, f=cfg.krum_f)
    if cfg.aggregator == "trimmed_mean":
        return lambda m, w: fn(m, w, b=cfg.trim)
    return fn


@torch.no_grad()
def accuracy_and_asr(model: nn.Module, clean, triggered, target: int, batch_size: int = 1000):
    """(clean test accuracy, attack success rate, target rate), in float32.

    The attack success rate is measured on test images of every class **but** the target,
    stamped with the trigger: the share predicted as ``target``. The target rate is the same
    share on those images *without* the trigger: when it is high too (right after a burst the
    model may predict the target for everything), a high attack success rate is no backdoor."""
    model = getattr(model, "module", model)

    def predict(x):
        return torch.cat([model(xb.float()).argmax(-1) for xb in x.split(batch_size)])

    predicted = predict(clean[0])
    acc = (predicted == clean[1]).float().mean().item()
    others = clean[1] != target
    rate = (predicted[others] == target).float().mean().item()
    asr = (predict(triggered[0]) == target).float().mean().item()
    return acc, asr, rate


def train_arm(fabric, cfg: LeadFLConfig, defense: str, folder: Path | None, resume: bool):
    """Simulate every round of one arm with the shared federated loop and measure it."""
    with torch_threads(cfg.threads, fabric.device):
        return _train_arm(fabric, cfg, defense, folder, resume)


def _train_arm(fabric, cfg: LeadFLConfig, defense: str, folder: Path | None, resume: bool):
    seed_everything(cfg.seed)  # the same initial weights for every arm
    xtr, ytr, xte, yte = load_data(cfg)
    device = fabric.device
    model = build_model(cfg, xtr.shape[1]).to(device)
    shards, attackers = client_data(cfg, xtr, ytr)
    shards = [(xc.to(device), yc.to(device)) for xc, yc in shards]
    clean = (xte.to(device), yte.to(device))
    tx, ty = triggered_test_set(xte, yte, target=cfg.target, size=cfg.trigger_size)
    triggered = (tx.to(device), ty.to(device))
    attacked = defense != "no_attack"
    select = bursty_schedule(
        cfg.clients,
        attackers,
        cfg.per_round,
        cfg.burst_rounds,
        cfg.burst_malicious if attacked else 0,
        attackers_between_bursts=cfg.attackers_between_bursts and attacked,
    )

    def evaluate(round_: int, m: nn.Module) -> dict[str, float]:
        acc, asr, rate = accuracy_and_asr(m, clean, triggered, cfg.target)
        return {"clean_accuracy": acc, "attack_success": asr, "target_rate": rate}

    start = time.perf_counter()
    history = run_rounds(
        fabric,
        model,
        make_clients(cfg, shards, attackers, defense),
        rounds=cfg.rounds,
        seed=cfg.seed,
        select=select,
        byzantine=attackers,
        aggregator=aggregator(cfg),
        evaluate=evaluate,
        checkpoint=folder / "checkpoint.ckpt" if folder else None,
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        desc=defense,
    )
    reg = history.values("client_regularizer") if "client_regularizer" in history.data else []
    return ArmResult(
        defense=defense,
        rounds=history.steps("clean_accuracy"),
        clean_accuracy=history.values("clean_accuracy"),
        attack_success=history.values("attack_success"),
        target_rate=history.values("target_rate"),
        attackers=[int(v) for v in history.values("byzantine")],
        regularizer=reg,
        seconds=time.perf_counter() - start,
    )


def run(cfg: LeadFLConfig, out_dir: str | Path | None = None, resume: bool = False) -> LeadFLResult:
    """Simulate every arm in ``cfg.defenses``; with ``out_dir``, checkpoint and write results.

    ``resume=True`` keeps arms that finished and continues an interrupted arm from its last
    checkpoint (the shared loop restores the model, the round and the history).
    """
    arms = train_arms(cfg, cfg.defenses, out_dir, resume, ArmResult, train_arm)
    result = LeadFLResult(config=cfg.to_dict(), arms=arms)
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
