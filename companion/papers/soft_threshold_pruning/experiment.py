"""The experiment: an MLP trained from scratch while it is pruned to a target sparsity, once per
threshold schedule, at equal final sparsity.

Arms (names from :data:`method.SCHEDULES`):

* ``lats``: the derived scheduler, D_t = λ Σ_{s<t} η_s with the run's actual learning rates
  (constant L1 coefficient λ);
* ``s_lats``: its closed form for a cosine learning rate, D_t = D (x + sin(πx)/π);
* ``fixed``: D from step 0, applied to the initial weights (magnitude pruning at init);
* ``linear``: D_t = D x;
* ``linear_early``: D_t = D min(1, 2x), a control that prunes at least as early as LATS at
  every step but without its constant λ (λ_t = ΔD/η_t grows in the first half, then is 0);
* ``gmp``: gradual magnitude pruning, cubic sparsity schedule, ending at ``gmp_end``, every
  layer pruned to the same rate (uniform allocation);
* ``gmp_global``: the same schedule with one magnitude ranking over all layers (global
  allocation, like the single threshold of the soft-threshold arms).

Every arm starts from the same initial weights and sees the same batches. For the soft-threshold
arms the final threshold D (one for all layers, as in the official code) is found by a bracketed
search on the final sparsity (:func:`next_threshold`): ``search_steps`` full training runs per
arm, the one whose sparsity is closest to ``target_sparsity`` is kept. GMP reaches the target
by construction. The ``fixed`` reference takes D from the initial weights
(:func:`fixed_threshold`), one run.

``fixed`` is a printed reference, not a counted baseline: applied from step 0 to the initial
weights it zeroes whole layers of this MLP (chance accuracy), and the official start (θ₀ =
S_D⁻¹(w₀)) never reaches the target sparsity (the notebook's exercise 3).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from companion.core import (
    Config,
    Result,
    StepBatches,
    fit,
    launch_or_resume,
    seed_everything,
)
from companion.errors import CompanionError, unknown
from companion.papers.soft_threshold_pruning import method as M

DATASETS = ("digits", "cifar10")


@dataclasses.dataclass(frozen=True)
class SoftThresholdConfig(Config):
    """What to train and how. Sizes change between presets; the algorithm never does."""

    dataset: str = "digits"
    data_root: str = ""  # cifar10: the extracted python release
    hidden: tuple[int, ...] = (256, 128)
    schedules: tuple[str, ...] = (  # s_lats ≈ lats
        "lats",
        "fixed",
        "linear",
        "linear_early",
        "gmp",
        "gmp_global",
    )
    target_sparsity: float = 0.97
    lr: float = 0.1
    momentum: float = 0.9
    weight_decay: float = 0.0
    batch_size: int = 128
    steps: int = 330  # ≈ 30 epochs of the 1078 digits training images
    gmp_end: float = 0.75  # GMP reaches its final sparsity at this fraction of training
    search_steps: int = 6  # bisection runs per soft-threshold schedule
    d_low: float = 0.01  # bisection bracket for the final threshold D
    d_high: float = 1.0
    measure_every: int = 10
    checkpoint_every: int = 0
    # > 0: every arm is trained a second time with the steps (and measure_every) scaled by this
    # factor, same target (result.one_factor): the medium preset's one-factor control
    one_factor_steps: float = 0.0

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        for s in self.schedules:
            if s not in M.SCHEDULES:
                raise unknown("schedule", s, M.SCHEDULES)
        if not 0.0 < self.target_sparsity < 1.0:
            raise CompanionError(f"target_sparsity must be in (0, 1), got {self.target_sparsity}")
        if self.lr <= 0 or self.steps < 1 or self.batch_size < 1 or self.search_steps < 1:
            raise CompanionError(
                f"lr, steps, batch_size and search_steps must be positive, got lr={self.lr}, "
                f"steps={self.steps}, batch_size={self.batch_size}, "
                f"search_steps={self.search_steps}"
            )
        if self.one_factor_steps < 0:
            raise CompanionError(f"one_factor_steps must be >= 0, got {self.one_factor_steps}")
        if not 0 < self.d_low < self.d_high:
            raise CompanionError(f"need 0 < d_low < d_high, got {self.d_low}, {self.d_high}")


PRESETS: dict[str, SoftThresholdConfig] = {
    "smoke": SoftThresholdConfig(hidden=(64, 32), steps=40, search_steps=1, measure_every=20),
    "notebook": SoftThresholdConfig(),
    # Stored larger run (companion claims ... --preset medium --seeds 0-2): the paper's claim is
    # about high sparsity, so 99 % instead of 97 %, with 3x the steps (≈ 117 epochs) for the
    # network to adapt; same model, data, learning rate and schedules. The same arms are also
    # trained at 99 % with the notebook's 330 steps (one_factor_steps = 1/3), so that the effect
    # of the target can be told from that of the steps. The early-ramp control is left out here
    # (it costs a quarter of the run; it is counted at the notebook preset). Eight search runs
    # instead of six: at 99 % with 330 steps the first trials of the bracket zero the whole
    # network (sparsity 1), so six runs do not bring the density within the premise's 10 %.
    # About 2 min CPU per seed.
    "medium": SoftThresholdConfig(
        target_sparsity=0.99,
        steps=990,
        measure_every=30,
        one_factor_steps=1 / 3,
        search_steps=8,
        schedules=("lats", "fixed", "linear", "gmp", "gmp_global"),
    ),
    # Larger scale: a wider MLP on CIFAR-10 (the paper: ResNet-50 on ImageNet, see fullscale).
    "full": SoftThresholdConfig(
        dataset="cifar10",
        data_root="data/cifar-10-batches-py",
        hidden=(1024, 512),
        lr=0.05,
        batch_size=256,
        steps=19_500,  # 100 epochs
        search_steps=6,
        measure_every=500,
        checkpoint_every=1000,
    ),
}


@dataclasses.dataclass
class ArmResult(Result):
    """One training run at one final threshold (or GMP sparsity)."""

    schedule: str
    final_threshold: float  # D (soft schedules) or the final prune rate (gmp)
    sparsity: float  # fraction of zero weights the network computes with
    layer_sparsity: list[float]
    test_accuracy: float
    measure_steps: list[int]
    threshold: list[float]  # D_t (soft) or prune rate (gmp) at the measured steps
    sparsity_curve: list[float]
    loss_steps: list[int]
    loss: list[float]
    seconds: float


@dataclasses.dataclass
class SoftThresholdResult(Result):
    config: dict
    lrs: list[float]  # η_t of every step
    arms: dict[str, ArmResult]  # the kept run per schedule
    search: dict[str, list[list[float]]]  # schedule -> [[D, sparsity, accuracy], ...]
    dense_accuracy: float
    ista: dict[str, list[float]]  # :func:`ista_comparison`
    curves: dict[str, list[float]]  # schedule -> D_t / D_T (gmp: prune rate) for t = 0..steps
    # the same arms at round(steps · one_factor_steps) steps, same target (None when 0)
    one_factor: SoftThresholdResult | None = None


class PrunableMLP(nn.Module):
    """Flatten → [prunable linear → ReLU]* → prunable linear. The ``step`` buffer counts
    optimizer steps, so the schedule position is saved in checkpoints with the weights."""

    def __init__(self, sizes: list[int], layer: type[nn.Linear]):
        super().__init__()
        self.layers = nn.ModuleList(layer(a, b) for a, b in zip(sizes[:-1], sizes[1:]))
        self.register_buffer("step", torch.zeros((), dtype=torch.long))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.flatten(1)
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = F.relu(x)
        return x


def load_data(cfg: SoftThresholdConfig):
    """(train, test, features, classes) as in-memory tensors."""
    from companion import data

    if cfg.dataset == "digits":
        splits = data.load("digits", image_size=8, seed=0)
        train, test = splits.train.tensors, splits.test.tensors
        return train, test, train[0][0].numel(), splits.num_classes
    train = data.load_cifar(cfg.data_root, "cifar10", "train").tensors
    test = data.load_cifar(cfg.data_root, "cifar10", "test").tensors
    return train, test, train[0][0].numel(), 10


def lr_at(cfg: SoftThresholdConfig, step: int) -> float:
    """Cosine learning rate per step, from ``lr`` to 0 (no warm-up: S-LATS assumes pure cosine)."""
    return cfg.lr * 0.5 * (1 + math.cos(math.pi * step / cfg.steps))


@functools.lru_cache(maxsize=8)
def _lats_sums(lr: float, steps: int) -> tuple[tuple[float, ...], float]:
    """Σ_{s<t} η_s for t = 0..steps, and Σ η_s over the run: computed once per (lr, steps), so
    that LATS costs O(1) per training step (the same numbers as summing afresh every step)."""
    cfg = SoftThresholdConfig(lr=lr, steps=steps)
    lrs = [lr_at(cfg, s) for s in range(steps)]
    return tuple(M.lats_thresholds(lrs, 1.0)), sum(lrs)


def schedule_value(cfg: SoftThresholdConfig, schedule: str, final: float, step: int) -> float:
    """D_t for a soft schedule, the prune rate for ``gmp``/``gmp_global``, before step ``step``."""
    if schedule in M.MAGNITUDE_SCHEDULES:
        return M.gmp_sparsity(step / max(1, cfg.gmp_end * cfg.steps), final)
    if schedule == "lats":  # D_t = D · Σ_{s<t} η_s / Σ_s η_s
        partial, total = _lats_sums(cfg.lr, cfg.steps)
        return final * partial[step] / total
    return final * M.threshold_fraction(schedule, step / cfg.steps)


def apply_schedule(model: nn.Module, cfg: SoftThresholdConfig, schedule: str, final: float):
    module = getattr(model, "module", model)
    value = schedule_value(cfg, schedule, final, int(module.step))
    if schedule == "gmp":
        M.set_prune_rate(module, value)
    elif schedule == "gmp_global":
        M.set_global_prune_rate(module, value)
    else:
        M.set_threshold(module, value)
    return value


def build_model(cfg: SoftThresholdConfig, schedule: str, features: int, classes: int, final):
    """Same initial θ₀ for every arm (seeded). ``fixed`` thresholds θ₀ at D from step 0.

    The official code, without ``--gradual``, stores θ₀ = S_D⁻¹(w₀) instead, so that nothing is
    pruned at step 0; with a constant D nothing then pushes weights into the dead zone (λ = 0
    after the first step) and the target sparsity is out of reach, so this arm starts at θ₀."""
    seed_everything(cfg.seed)
    layer = M.MagnitudeLinear if schedule in M.MAGNITUDE_SCHEDULES else M.SoftThresholdLinear
    model = PrunableMLP([features, *cfg.hidden, classes], layer)
    apply_schedule(model, cfg, schedule, final)
    return model


@torch.no_grad()
def fixed_threshold(cfg: SoftThresholdConfig) -> float:
    """The ``fixed`` arm's D without a search: the ``target_sparsity`` quantile of |θ₀| over all
    layers, so that exactly the target share of the initial weights is zeroed at step 0.

    The arm is a printed reference, not a counted baseline; a bisection (``search_steps`` full
    runs) would cost a quarter of the notebook's run. Its final sparsity moves a little from the
    target during training (weights cross D in both directions) and is printed, not required."""
    _, _, features, classes = load_data(cfg)
    model = build_model(cfg, "fixed", features, classes, 0.0)
    mags = torch.cat([m.weight.abs().flatten() for m in M.prunable_layers(model)])
    k = max(1, math.ceil(cfg.target_sparsity * mags.numel()))
    return float(mags.kthvalue(k).values)


@torch.no_grad()
def evaluate(model: nn.Module, test, device, batch_size: int = 1024) -> float:
    model = getattr(model, "module", model).eval()
    correct = 0
    for x, y in zip(test[0].split(batch_size), test[1].split(batch_size)):
        with torch.autocast(torch.device(device).type, enabled=False):
            correct += (model(x.to(device).float()).argmax(-1).cpu() == y).sum().item()
    return correct / len(test[1])


def train_arm(fabric, cfg: SoftThresholdConfig, schedule: str, final: float, folder, resume):
    """Train one run under Fabric with the threshold (or prune rate) moved every step."""
    train, test, features, classes = load_data(cfg)
    model = build_model(cfg, schedule, features, classes, final)
    optimizer = torch.optim.SGD(
        model.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_at(cfg, s) / cfg.lr)
    model, optimizer = fabric.setup(model, optimizer)
    batches = StepBatches(train, cfg.batch_size, cfg.seed, fabric.global_rank, fabric.world_size)

    def step_fn(model, batch):
        value = apply_schedule(model, cfg, schedule, final)
        x, y = batch
        logits = model(x)
        getattr(model, "module", model).step += 1
        return F.cross_entropy(logits, y), {"threshold": value}

    def measure(step, model):
        return {"sparsity": M.sparsity(getattr(model, "module", model))}

    from companion.core import Every

    start = time.perf_counter()
    history = fit(
        fabric,
        model,
        optimizer,
        batches,
        step_fn,
        steps=cfg.steps,
        scheduler=scheduler,
        callbacks=[Every(cfg.measure_every, measure)],
        checkpoint=folder / "checkpoint.ckpt" if folder else None,
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        desc=f"{schedule} {final:.4g}",
    )
    seconds = time.perf_counter() - start
    module = getattr(model, "module", model)
    apply_schedule(model, cfg, schedule, final)  # step == steps: D_T (or the final prune rate)
    steps = history.steps("sparsity")
    thresholds = dict(zip(history.steps("threshold"), history.values("threshold")))
    return ArmResult(
        schedule=schedule,
        final_threshold=final,
        sparsity=M.sparsity(module),
        layer_sparsity=[M.sparsity(m) for m in M.prunable_layers(module)],
        test_accuracy=evaluate(model, test, fabric.device),
        measure_steps=steps,
        threshold=[thresholds[s] for s in steps],
        sparsity_curve=history.values("sparsity"),
        loss_steps=history.steps("loss"),
        loss=history.values("loss"),
        seconds=seconds,
    )


def ista_comparison(steps: int = 60, lam: float = 0.05, seed: int = 0) -> dict[str, list[float]]:
    """Soft-threshold reparameterisation (SGD on θ, D_t = λΣη) against proximal gradient
    descent on ½‖Aw − b‖² + λ‖w‖₁, step by step, in float64, with a cosine learning rate.

    ``stable``: the solution is far from zero, no weight enters the dead zone: the iterates
    agree to rounding. ``sparse``: a sparse solution; the largest gap over the coordinates that
    are active and keep their sign (0 up to rounding: the one-step equivalence) and over all
    coordinates (the dead zone's memory in θ, which ISTA does not have).
    """
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(30, 8, generator=g, dtype=torch.float64) / 30**0.5
    lrs = [0.25 * (1 + math.cos(math.pi * s / steps)) for s in range(steps)]
    thresholds = M.lats_thresholds(lrs, lam)
    out: dict[str, list[float]] = {"lrs": lrs, "thresholds": thresholds}
    for name, w_true in (
        ("stable", torch.tensor([2.0, -1.5, 1.0, -2.5, 1.2, 3.0, -1.8, 1.4], dtype=torch.float64)),
        ("sparse", torch.tensor([2.0, 0.0, 0.0, -1.5, 0.0, 0.05, 0.0, 1.0], dtype=torch.float64)),
    ):
        b = a @ w_true

        def grad(w, b=b):
            return a.T @ (a @ w - b)

        w0 = torch.randn(8, generator=g, dtype=torch.float64).sign() * 0.5
        if name == "stable":
            w0 = w_true.sign() * 0.5
        ws_ista = M.ista(grad, w0, lrs, lam)
        ws_rep, thetas = M.reparam_sgd(grad, w0, lrs, thresholds)
        gap_all, gap_active = [], []
        for t in range(steps + 1):
            gap_all.append(float((ws_ista[t] - ws_rep[t]).abs().max()))
        for t, lr in enumerate(lrs):  # one ISTA step from the reparameterised iterate
            step = M.prox_l1(ws_rep[t] - lr * grad(ws_rep[t]), lr * lam)
            v = ws_rep[t] - lr * grad(ws_rep[t])
            active = (ws_rep[t] != 0) & (v.sign() == ws_rep[t].sign())
            diff = (step - ws_rep[t + 1]).abs()[active]
            gap_active.append(float(diff.max()) if len(diff) else 0.0)
        out[f"{name}_gap"] = gap_all
        out[f"{name}_one_step_gap"] = gap_active
        out[f"{name}_zeros"] = [float((w == 0).sum()) for w in ws_rep]
    return out


def next_threshold(lo: float, hi: float, s_lo: float | None, s_hi: float | None, target: float):
    """The next D to try inside the bracket [lo, hi] (sparsity below the target at lo, at or
    above it at hi). While an end is unmeasured: the geometric midpoint (bisection). Once both
    ends are measured: the point where the line through (log D, log density) at the two ends
    reaches the target density 1 − target (density falls about as a power of D), kept inside
    the middle 80 % of the bracket in log D so that the search cannot stall at one end."""
    mid = math.sqrt(lo * hi)
    if s_lo is None or s_hi is None or not s_lo < target <= s_hi or s_hi >= 1.0:
        return mid
    a, b = math.log(lo), math.log(hi)
    y_lo, y_hi, y = math.log(1 - s_lo), math.log(1 - s_hi), math.log(1 - target)
    x = a + (b - a) * (y_lo - y) / (y_lo - y_hi)
    return math.exp(min(max(x, a + 0.1 * (b - a)), b - 0.1 * (b - a)))


def run(
    cfg: SoftThresholdConfig, out_dir: str | Path | None = None, resume: bool = False
) -> SoftThresholdResult:
    """Every schedule in ``cfg.schedules`` at equal final sparsity, plus a dense reference."""

    def one(name: str, schedule: str, final: float) -> ArmResult:
        folder = Path(out_dir) / name if out_dir is not None else None
        return launch_or_resume(
            cfg, folder, resume, ArmResult, train_arm, cfg, schedule, final, folder, resume
        )

    dense = one("dense", "fixed", 0.0)
    arms, search = {}, {}
    for schedule in cfg.schedules:
        if schedule in M.MAGNITUDE_SCHEDULES or schedule == "fixed":
            final = fixed_threshold(cfg) if schedule == "fixed" else cfg.target_sparsity
            arms[schedule] = a = one(schedule, schedule, final)
            search[schedule] = [[a.final_threshold, a.sparsity, a.test_accuracy]]
            continue
        lo, hi, s_lo, s_hi, tried = cfg.d_low, cfg.d_high, None, None, []
        for i in range(cfg.search_steps):
            d = next_threshold(lo, hi, s_lo, s_hi, cfg.target_sparsity)
            arm = one(f"{schedule}/d{i}", schedule, d)
            tried.append(arm)
            if arm.sparsity < cfg.target_sparsity:
                lo, s_lo = d, arm.sparsity
            else:
                hi, s_hi = d, arm.sparsity
        arms[schedule] = min(tried, key=lambda a: abs(a.sparsity - cfg.target_sparsity))
        search[schedule] = [[a.final_threshold, a.sparsity, a.test_accuracy] for a in tried]
    result = SoftThresholdResult(
        config=cfg.to_dict(),
        lrs=[lr_at(cfg, s) for s in range(cfg.steps)],
        arms=arms,
        search=search,
        dense_accuracy=dense.test_accuracy,
        ista=ista_comparison(),
        curves={
            k: [schedule_value(cfg, k, 1.0, t) for t in range(cfg.steps + 1)] for k in M.SCHEDULES
        },
    )
    if cfg.one_factor_steps > 0:
        f = cfg.one_factor_steps
        short = cfg.replace(
            steps=max(1, round(cfg.steps * f)),
            measure_every=max(1, round(cfg.measure_every * f)),
            one_factor_steps=0.0,
        )
        folder = Path(out_dir) / "one_factor" if out_dir is not None else None
        result.one_factor = run(short, folder, resume)
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
