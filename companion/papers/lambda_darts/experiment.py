"""The experiment: a first-order DARTS search and a Λ-DARTS search on the same data, from the
same initial weights, logging per step the layer alignment Λ, the softmax mass on parameter-free
operations and each cell's pull toward skip connections; then each derived (discrete)
architecture is retrained from scratch and tested.

One search step (official ``train_search.py``, ``train``): (1) the architecture step, first-order:
α ← Adam(∂L_val/∂α) on a validation batch; (2) the weight step on a training batch with the
mixing weights fixed to softmax(α): gradient of L_train plus, for Λ-DARTS, λ_t·(−∇_θ Λ), with
λ_t = λ·epoch/(epochs − 1); clip to norm 5; SGD with momentum and cosine learning rate.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from companion.core import (
    Config,
    Result,
    StepBatches,
    fit,
    resolve_device,
    seed_everything,
    torch_threads,
    train_arms,
)
from companion.errors import CompanionError, unknown
from companion.papers.lambda_darts.method import (
    ALL_PRIMITIVES,
    PRIMITIVES,
    SearchNetwork,
    derive_genotype,
    genotype_weights,
    lambda_darts_gradients,
    parameter_free_mass,
    validation_gradients,
)

METHODS = ("darts", "lambda_darts")
DATASETS = ("digits", "mnist_subset", "cifar10")


@dataclasses.dataclass(frozen=True)
class LambdaDartsConfig(Config):
    """What to search and how. Sizes change between presets; the algorithm never does."""

    # float64 on the CPU: the search is chaotic (λ amplifies it), and float32 rounding, which
    # differs between CPUs (vectorised kernels), ends the Λ-DARTS search elsewhere; in float64,
    # with the portable initialisation of ``method.portable_init``, every CPU gives the same run
    precision: str = "64-true"
    dataset: str = "digits"
    data_root: str = ""  # cifar10: the extracted python release
    image_size: int = 8
    channels: int = 4  # C: channels of one node
    layers: int = 6  # normal cells
    steps: int = 2  # intermediate nodes per cell
    primitives: tuple[str, ...] = PRIMITIVES
    methods: tuple[str, ...] = METHODS
    epochs: int = 10
    batch_size: int = 96
    lr: float = 0.025  # SGD, cosine to lr_min
    lr_min: float = 0.001
    momentum: float = 0.9
    weight_decay: float = 3e-4
    arch_lr: float = 1.2e-2  # Adam, betas (0.5, 0.999); the paper: 3e-4 over 50 epochs
    arch_weight_decay: float = 1e-3
    grad_clip: float = 5.0
    lambda_: float = 4.0  # λ, ramped linearly over the epochs (paper 0.125–0.25 over 50 epochs)
    epsilon_0: float = 1e-3
    retrain_epochs: int = 10
    retrain_lr: float = 0.025
    checkpoint_every: int = 0
    threads: int = 1  # CPU threads: one, so that a run is the same in the notebook and in
    # ``companion claims`` (the search is chaotic; two threads sum in another order); 0: as is

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        for m in self.methods:
            if m not in METHODS:
                raise unknown("method", m, METHODS)
        for p in self.primitives:
            if p not in ALL_PRIMITIVES:
                raise unknown("operation", p, ALL_PRIMITIVES)
        if self.epochs < 2 or self.layers < 2 or self.batch_size < 1:
            raise CompanionError(
                f"epochs and layers must be >= 2 and batch_size >= 1, got epochs={self.epochs}, "
                f"layers={self.layers}, batch_size={self.batch_size}"
            )


PRESETS: dict[str, LambdaDartsConfig] = {
    "smoke": LambdaDartsConfig(channels=2, layers=2, epochs=2, batch_size=128, retrain_epochs=1),
    # Six cells (deeper than the brief's four, so that the cells near the output can outvote
    # the others), no pooling, α's learning rate and λ large enough to act within 10 epochs.
    "notebook": LambdaDartsConfig(),
    # Ten times the notebook's search, the same algorithm and per-step settings: 100 epochs of 5
    # steps, so that α's Adam budget, arch_lr × α-steps = 1.2e-2 × 500 ≈ 6, matches the official
    # schedule's 3e-4 × 50 epochs × 390 steps ≈ 5.9 (the notebook's is a tenth of it); λ keeps
    # its linear ramp over the (longer) search. The derived cells are retrained 3 times longer.
    "medium": LambdaDartsConfig(epochs=100, retrain_epochs=30),
    # Paper scale (CIFAR-10, 8 cells, C=16, 50 epochs, the full operation set). The toy network
    # has no reduction cells.
    "full": LambdaDartsConfig(
        dataset="cifar10",
        data_root="data/cifar-10-batches-py",
        image_size=32,
        channels=16,
        layers=8,
        steps=4,
        primitives=ALL_PRIMITIVES,
        epochs=50,
        batch_size=64,
        arch_lr=3e-4,
        lambda_=0.125,
        epsilon_0=1e-4,
        retrain_epochs=50,
        checkpoint_every=500,
        precision="32-true",  # a GPU: float32 as the paper
    ),
}


@dataclasses.dataclass
class ArmResult(Result):
    """One search (DARTS or Λ-DARTS) and its retrained architecture."""

    method: str
    epochs: int
    alignment: list[float]  # [epoch]: mean Λ of the weight steps' training-batch gradients
    # (the Λ the regulariser raises; the official code's ``train_corr``)
    alignment_valid: list[float]  # [epoch]: mean Λ of the architecture steps' validation-batch
    # gradients (the cells' votes on α; the official code's ``valid_corr``)
    skip_mass_start: float  # softmax mass of skip_connect, mean over edges, before the search
    skip_mass: list[float]  # [epoch]: softmax mass of skip_connect, mean over edges (end of epoch)
    free_mass: list[float]  # [epoch]: mass of all parameter-free ops but none
    skip_pull: list[list[float]]  # [cell][epoch]: share of cell ℓ's push on α toward skip,
    # from the validation-batch gradients of the architecture step
    search_loss: list[float]  # [epoch]
    weights: list[list[float]]  # final softmax(α) [edge][op]
    genotype: list[list]  # [(op, input), ...]
    parameter_free_edges: int  # edges of the derived cell with a parameter-free op
    retrain_accuracy: float
    seconds: float


@dataclasses.dataclass
class LambdaDartsResult(Result):
    config: dict
    arms: dict[str, ArmResult]


def load_data(cfg: LambdaDartsConfig):
    """(train, test, channels, classes) as tensors."""
    from companion import data

    if cfg.dataset in ("digits", "mnist_subset"):
        splits = data.load(cfg.dataset, image_size=cfg.image_size, seed=0)
        return splits.train.tensors, splits.test.tensors, 1, splits.num_classes
    train = data.load_cifar(cfg.data_root, "cifar10", "train").tensors
    test = data.load_cifar(cfg.data_root, "cifar10", "test").tensors
    return train, test, 3, 10


class DartsOptimizer(torch.optim.Optimizer):
    """Both optimizers of a search in one (so a checkpoint holds both states): ``step()`` is the
    weight step (SGD with momentum and L2 decay, as ``torch.optim.SGD``) on the "sgd" group,
    ``arch_step()`` the architecture step (Adam with L2 decay, as ``torch.optim.Adam``) on the
    "adam" group."""

    def __init__(self, weights, alpha, cfg: LambdaDartsConfig):
        groups = [
            dict(
                params=list(weights),
                kind="sgd",
                lr=cfg.lr,
                momentum=cfg.momentum,
                weight_decay=cfg.weight_decay,
            ),
            dict(
                params=[alpha],
                kind="adam",
                lr=cfg.arch_lr,
                betas=(0.5, 0.999),
                eps=1e-8,
                weight_decay=cfg.arch_weight_decay,
            ),
        ]
        super().__init__(groups, {})

    @torch.no_grad()
    def _update(self, kind: str) -> None:
        for group in self.param_groups:
            if group["kind"] != kind:
                continue
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad + group["weight_decay"] * p
                state = self.state[p]
                if kind == "sgd":
                    if "momentum_buffer" not in state:
                        state["momentum_buffer"] = g.clone()
                    else:
                        state["momentum_buffer"].mul_(group["momentum"]).add_(g)
                    p.add_(state["momentum_buffer"], alpha=-group["lr"])
                else:
                    b1, b2 = group["betas"]
                    if "step" not in state:
                        state["step"] = torch.zeros(())
                        state["exp_avg"] = torch.zeros_like(p)
                        state["exp_avg_sq"] = torch.zeros_like(p)
                    state["step"] += 1
                    t = state["step"].item()
                    state["exp_avg"].mul_(b1).add_(g, alpha=1 - b1)
                    state["exp_avg_sq"].mul_(b2).addcmul_(g, g, value=1 - b2)
                    denom = (state["exp_avg_sq"] / (1 - b2**t)).sqrt().add_(group["eps"])
                    p.addcdiv_(state["exp_avg"], denom, value=-group["lr"] / (1 - b1**t))

    def step(self, closure=None):
        self._update("sgd")

    def arch_step(self) -> None:
        self._update("adam")


def skip_pull(cell_grads: list[torch.Tensor], weights: torch.Tensor, skip: int) -> list[float]:
    """Each cell's share of the descent direction of α_skip: with w = softmax(α), cell ℓ
    contributes −w_skip·(g_ℓ,skip − Σ_k w_k g_ℓ,k) per edge; the shares over cells sum to 1
    in absolute value."""
    pulls = []
    for g in cell_grads:
        push = -(weights[:, skip] * (g[:, skip] - (weights * g).sum(dim=1))).sum()
        pulls.append(push.item())
    total = sum(abs(p) for p in pulls) or 1.0
    return [p / total for p in pulls]


def _surrogate(params, grads, loss):
    """A scalar whose value is ``loss`` and whose gradient in ``params`` is ``grads``: the core
    training loop calls backward on what the step returns."""
    s = sum((g.detach() * p).sum() for p, g in zip(params, grads))
    return s - s.detach() + loss


def search(fabric, cfg: LambdaDartsConfig, method: str, folder: Path | None, resume: bool):
    """One search under Fabric; returns the model and its per-step history."""
    seed_everything(cfg.seed)
    train, _, channels, classes = load_data(cfg)
    g = torch.Generator().manual_seed(cfg.seed)
    order = torch.randperm(len(train[0]), generator=g)
    half = len(order) // 2  # train_portion 0.5: weights on one half, α on the other
    search_train = tuple(t[order[:half]] for t in train)
    search_val = tuple(t[order[half:]] for t in train)
    model = SearchNetwork(channels, classes, cfg.channels, cfg.layers, cfg.steps, 2, cfg.primitives)
    optimizer = DartsOptimizer(model.weight_parameters(), model.alpha, cfg)
    tb = StepBatches(search_train, cfg.batch_size, cfg.seed, fabric.global_rank, fabric.world_size)
    vb = StepBatches(
        search_val, cfg.batch_size, cfg.seed + 1, fabric.global_rank, fabric.world_size
    )
    per_epoch = tb.steps_per_epoch
    total = cfg.epochs * per_epoch

    def cosine(s: int) -> float:
        progress = (s // per_epoch) / cfg.epochs
        return (
            cfg.lr_min + 0.5 * (cfg.lr - cfg.lr_min) * (1 + math.cos(math.pi * progress))
        ) / cfg.lr

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, [cosine, lambda s: 1.0])
    skip = cfg.primitives.index("skip_connect") if "skip_connect" in cfg.primitives else None
    with torch.no_grad():
        start_w = F.softmax(model.alpha, dim=-1)
        skip_start = start_w[:, skip].mean().item() if skip is not None else 0.0
    model, optimizer = fabric.setup(model, optimizer)
    net = model.module if hasattr(model, "module") else model
    inner = optimizer.optimizer if hasattr(optimizer, "optimizer") else optimizer
    lam = cfg.lambda_ if method == "lambda_darts" else 0.0

    def step_fn(_model, batch):
        x, y, xv, yv = batch
        x, xv = x.to(net.alpha.dtype), xv.to(net.alpha.dtype)  # float64 under precision 64-true
        # (1) architecture step, first order, on a validation batch; the per-cell gradients
        # of this loss (the cells' votes on α that the step actually follows) are logged too:
        # their alignment is the official code's ``valid_corr``, their skip shares the pull
        w_v = F.softmax(net.alpha, dim=-1).detach()
        grad_alpha, alignment_v, cell_grads_v = validation_gradients(net, F.cross_entropy, xv, yv)
        net.alpha.grad = grad_alpha
        inner.arch_step()
        net.alpha.grad = None
        # (2) weight step on a training batch, mixing weights fixed to softmax(α)
        epoch = scheduler.last_epoch // per_epoch
        lam_t = lam * epoch / (cfg.epochs - 1)
        w = F.softmax(net.alpha, dim=-1).detach()
        loss, grads, alignment, _train_cell_grads = lambda_darts_gradients(
            net, F.cross_entropy, x, y, lam_t, cfg.epsilon_0, w
        )
        metrics = {
            "alignment": alignment.item(),
            "alignment_valid": alignment_v.item(),
            "free_mass": parameter_free_mass(w, cfg.primitives),
        }
        if skip is not None:
            metrics["skip_mass"] = w[:, skip].mean().item()
            for i, share in enumerate(skip_pull(cell_grads_v, w_v, skip)):
                metrics[f"skip_pull/{i}"] = share
        return _surrogate(net.weight_parameters(), grads, loss), metrics

    start = time.perf_counter()
    history = fit(
        fabric,
        model,
        optimizer,
        lambda s: tb(s) + vb(s),
        step_fn,
        steps=total,
        grad_clip=cfg.grad_clip,
        scheduler=scheduler,
        checkpoint=folder / "search.ckpt" if folder else None,
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        desc=f"search {method}",
    )
    return net, history, per_epoch, time.perf_counter() - start, skip_start


def retrain(fabric, cfg: LambdaDartsConfig, gene, folder: Path | None, resume: bool) -> float:
    """Train the derived architecture from scratch on the whole training split; test accuracy."""
    seed_everything(cfg.seed + 7)
    train, test, channels, classes = load_data(cfg)
    model = SearchNetwork(channels, classes, cfg.channels, cfg.layers, cfg.steps, 2, cfg.primitives)
    fixed = genotype_weights(gene, cfg.primitives, cfg.steps)
    params = model.weight_parameters()
    batches = StepBatches(
        train, cfg.batch_size, cfg.seed + 2, fabric.global_rank, fabric.world_size
    )
    total = cfg.retrain_epochs * batches.steps_per_epoch
    optimizer = torch.optim.SGD(params, lr=cfg.retrain_lr, momentum=0.9, weight_decay=3e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, max(1, total))
    model, optimizer = fabric.setup(model, optimizer)
    net = model.module if hasattr(model, "module") else model
    fixed = fabric.to_device(fixed).to(net.alpha.dtype)

    def step_fn(m, batch):
        x, y = batch
        return F.cross_entropy(m(x.to(fixed.dtype), weights=fixed), y), {}

    fit(
        fabric,
        model,
        optimizer,
        batches,
        step_fn,
        steps=total,
        grad_clip=cfg.grad_clip,
        scheduler=scheduler,
        checkpoint=folder / "retrain.ckpt" if folder else None,
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        desc="retrain",
    )
    net.eval()
    correct = 0
    with torch.no_grad():
        for xb, yb in zip(test[0].split(512), test[1].split(512)):
            pred = net(fabric.to_device(xb).to(fixed.dtype), weights=fixed).argmax(-1).cpu()
            correct += (pred == yb).sum().item()
    return correct / len(test[1])


def _per_epoch(history, name: str, per_epoch: int, epochs: int, last: bool = False) -> list[float]:
    steps, values = history.steps(name), history.values(name)
    out = []
    for e in range(epochs):
        vals = [v for s, v in zip(steps, values) if s // per_epoch == e]
        out.append(vals[-1] if last else sum(vals) / len(vals))
    return out


def train_arm(fabric, cfg: LambdaDartsConfig, method: str, folder: Path | None, resume: bool):
    net, history, per_epoch, seconds, skip_start = search(fabric, cfg, method, folder, resume)
    weights = F.softmax(net.alpha.detach().float(), dim=-1).cpu()
    gene = derive_genotype(weights, cfg.primitives, cfg.steps)
    free = sum(1 for op, _ in gene if op in ("skip_connect", "avg_pool_3x3", "max_pool_3x3"))
    start = time.perf_counter()
    accuracy = retrain(fabric, cfg, gene, folder, resume)
    has_skip = "skip_connect" in cfg.primitives
    return ArmResult(
        method=method,
        epochs=cfg.epochs,
        skip_mass_start=skip_start,
        alignment=_per_epoch(history, "alignment", per_epoch, cfg.epochs),
        alignment_valid=_per_epoch(history, "alignment_valid", per_epoch, cfg.epochs),
        skip_mass=_per_epoch(history, "skip_mass", per_epoch, cfg.epochs, True) if has_skip else [],
        free_mass=_per_epoch(history, "free_mass", per_epoch, cfg.epochs, True),
        skip_pull=[
            _per_epoch(history, f"skip_pull/{i}", per_epoch, cfg.epochs) for i in range(cfg.layers)
        ]
        if has_skip
        else [],
        search_loss=_per_epoch(history, "loss", per_epoch, cfg.epochs),
        weights=[[round(v, 6) for v in row] for row in weights.tolist()],
        genotype=[[op, j] for op, j in gene],
        parameter_free_edges=free,
        retrain_accuracy=accuracy,
        seconds=seconds + time.perf_counter() - start,
    )


def run(
    cfg: LambdaDartsConfig, out_dir: str | Path | None = None, resume: bool = False
) -> LambdaDartsResult:
    """Search and retrain every arm in ``cfg.methods``; with ``out_dir``, checkpoint and write
    results (``resume=True`` keeps finished arms and continues an interrupted one)."""
    cfg.validate()
    with torch_threads(cfg.threads, resolve_device(cfg.device)):
        arms = train_arms(cfg, cfg.methods, out_dir, resume, ArmResult, train_arm)
    result = LambdaDartsResult(config=cfg.to_dict(), arms=arms)
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
