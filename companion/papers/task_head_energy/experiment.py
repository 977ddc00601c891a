"""The experiment: a small MLP backbone pretrained on digits 0–4, a fresh head probed for τ
epochs on digits 5–9 (relabelled 0–4), then everything finetuned with one fixed learning rate
and number of epochs for every τ. Per τ: the energy at FT start and how far the features move.

Two more arms, each reaching its energy without the probing schedule that sets it in the
``hp`` arms:

- ``permuted`` (the control): the head probed for the longest τ, ``k`` of its class rows
  (weights and biases) cyclically permuted, for each ``k`` in ``permuted_classes``. The head
  keeps every weight, hence its norm and its directions; only which row belongs to which label
  changes, so the energy at FT start rises with ``k``. With the unpermuted ``hp`` arm at the
  longest τ (``k = 0``) these arms form a ladder of energies at a fixed head: against it
  everything but the energy is held fixed.
- ``head_scale``: τ = 0 with the fresh head's weights scaled. It changes the energy a little and
  the head norm (the "direction" term Vᵀ of ∂L/∂z) a lot: an illustration that the energy is not
  the only factor, not counted as a claim.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from companion.core import Config, Result, seed_everything
from companion.core import results as _results
from companion.data import load_digits
from companion.errors import CompanionError
from companion.papers.task_head_energy.method import average_initial_energy, feature_change


@dataclasses.dataclass(frozen=True)
class EnergyConfig(Config):
    hidden: int = 64
    feature_dim: int = 32
    pretrain_epochs: int = 20
    pretrain_lr: float = 0.1
    hp_epochs: tuple[int, ...] = (0, 1, 2, 4, 8, 16, 64)
    hp_lr: float = 0.2
    head_scales: tuple[float, ...] = (3.0,)  # extra τ = 0 arms with the head init scaled
    permuted_control: bool = True  # the τ_max head with its class rows permuted
    permuted_classes: tuple[int, ...] = (2, 3, 4, 5)  # how many class rows each such arm cycles
    ft_epochs: int = 10
    ft_lr: float = 0.05
    batch_size: int = 64
    num_seeds: int = 3

    def validate(self) -> None:
        if not self.hp_epochs or min(self.hp_epochs) < 0:
            raise CompanionError(f"hp_epochs must be non-negative, got {self.hp_epochs}")
        if self.num_seeds < 1 or self.batch_size < 1 or self.ft_epochs < 1:
            raise CompanionError("num_seeds, batch_size and ft_epochs must be >= 1")
        if self.permuted_control and (
            not self.permuted_classes or not all(2 <= k <= 5 for k in self.permuted_classes)
        ):
            raise CompanionError(
                f"permuted_classes must be class counts in 2..5, got {self.permuted_classes}"
            )

    @property
    def seeds(self) -> list[int]:
        # seed, seed + 1000, ...: the runs of seeds 0-4 never reuse a held-out seed 5-9
        return [self.seed + 1000 * i for i in range(self.num_seeds)]


PRESETS: dict[str, EnergyConfig] = {
    "smoke": EnergyConfig(
        pretrain_epochs=3, hp_epochs=(0, 1, 4), ft_epochs=2, num_seeds=1, head_scales=(3.0,)
    ),
    "notebook": EnergyConfig(),
    "full": EnergyConfig(
        hidden=256,
        feature_dim=128,
        pretrain_epochs=50,
        ft_epochs=30,
        num_seeds=5,
        hp_epochs=(0, 1, 2, 4, 8, 16, 32, 64),
    ),
}


@dataclasses.dataclass
class ArmResult(Result):
    seed: int
    arm: str  # "hp", "permuted" or "head_scale"
    tau: int
    head_scale: float
    energy: float  # AIE at FT start (train set)
    init_loss: float
    init_accuracy: float
    euclidean: float
    cosine: float
    dot: float
    norm: float
    norm0: float
    test_accuracy: float
    head_norm: float = 0.0  # Frobenius norm of the head's weight at FT start
    permuted: int = 0  # how many of the probed head's class rows were cycled (arm "permuted")


@dataclasses.dataclass
class EnergyResult(Result):
    config: dict
    arms: list[ArmResult]
    seconds: float


def _backbone(cfg: EnergyConfig, d_in: int) -> nn.Module:
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(d_in, cfg.hidden),
        nn.ReLU(),
        nn.Linear(cfg.hidden, cfg.feature_dim),
        nn.ReLU(),
    )


def _train(params, model, x, y, epochs, lr, batch, gen):
    opt = torch.optim.SGD(params, lr=lr)
    n = len(x)
    for _ in range(epochs):
        perm = torch.randperm(n, generator=gen)
        for i in range(0, n, batch):
            idx = perm[i : i + batch]
            opt.zero_grad()
            F.cross_entropy(model(x[idx]), y[idx]).backward()
            opt.step()


def _split(ds, lo):
    x, y = ds.tensors
    keep = (y >= lo) & (y < lo + 5)
    return x[keep].flatten(1), y[keep] - lo


def pretrain(cfg: EnergyConfig, seed: int, data):
    """PT on digits 0–4, then a fresh (unprobed) task head for digits 5–9. Returns the
    backbone (pretrained), the fresh head, the downstream train and test splits."""
    seed_everything(seed)
    xp, yp = _split(data.train, 0)
    xd, yd = _split(data.train, 5)
    xt, yt = _split(data.test, 5)
    backbone = _backbone(cfg, xp.shape[1])
    pt_head = nn.Linear(cfg.feature_dim, 5)
    gen = torch.Generator().manual_seed(seed)
    pt = nn.Sequential(backbone, pt_head)
    _train(pt.parameters(), pt, xp, yp, cfg.pretrain_epochs, cfg.pretrain_lr, cfg.batch_size, gen)
    torch.manual_seed(seed + 10_000)
    head0 = nn.Linear(cfg.feature_dim, 5)
    return backbone, head0, (xd, yd), (xt, yt)


def permute_classes(head_state: dict, k: int) -> dict:
    """The head with its first ``k`` class rows (weights and biases) cycled: row ``i < k`` now
    scores class ``i + 1`` (mod ``k``). Every weight is kept, so the head's norm is too."""
    idx = torch.arange(len(head_state["bias"]))
    idx[:k] = idx[:k].roll(1)
    return {name: v[idx].clone() for name, v in head_state.items()}


def run_seed(cfg: EnergyConfig, seed: int, data) -> list[ArmResult]:
    backbone, head0, (xd, yd), (xt, yt) = pretrain(cfg, seed, data)
    state = {k: v.clone() for k, v in backbone.state_dict().items()}
    head_state = {k: v.clone() for k, v in head0.state_dict().items()}
    arms = [("hp", t, 1.0, 0) for t in cfg.hp_epochs]
    arms += [("head_scale", 0, s, 0) for s in cfg.head_scales]
    tau_max = max(cfg.hp_epochs)
    if cfg.permuted_control:
        arms += [("permuted", tau_max, 1.0, k) for k in sorted(cfg.permuted_classes)]
    probed = {}  # τ -> head state after probing (the permuted arms reuse τ_max)
    out = []
    for arm, tau, scale, k in arms:
        backbone.load_state_dict(state)
        head = nn.Linear(cfg.feature_dim, 5)
        model = nn.Sequential(backbone, head)
        if arm == "permuted":
            head.load_state_dict(permute_classes(probed[tau], k))
        else:
            head.load_state_dict({k: v * scale for k, v in head_state.items()})
            g = torch.Generator().manual_seed(seed + 1)
            _train(head.parameters(), model, xd, yd, tau, cfg.hp_lr, cfg.batch_size, g)
            if arm == "hp":
                probed[tau] = {k: v.clone() for k, v in head.state_dict().items()}
        with torch.no_grad():
            head_norm = float(head.weight.norm())
            z0 = backbone(xd)
            logits = head(z0)
            energy = average_initial_energy(logits, yd)
            loss0 = float(F.cross_entropy(logits, yd))
            acc0 = float((logits.argmax(1) == yd).float().mean())
        g = torch.Generator().manual_seed(seed + 2)  # same FT batches for every arm
        _train(model.parameters(), model, xd, yd, cfg.ft_epochs, cfg.ft_lr, cfg.batch_size, g)
        with torch.no_grad():
            z = backbone(xd)
            change = feature_change(z0, z)
            test_acc = float((model(xt).argmax(1) == yt).float().mean())
        out.append(
            ArmResult(
                seed=seed,
                arm=arm,
                tau=tau,
                head_scale=scale,
                energy=energy,
                init_loss=loss0,
                init_accuracy=acc0,
                norm0=float(z0.double().norm(dim=1).mean()),
                test_accuracy=test_acc,
                head_norm=head_norm,
                permuted=k,
                **change,
            )
        )
    return out


def run(cfg: EnergyConfig, out_dir=None, resume: bool = False) -> EnergyResult:
    """All seeds; with ``out_dir`` each finished seed is saved (atomically) and, with
    ``resume``, a saved seed is loaded instead of trained again."""
    start = time.perf_counter()
    data = load_digits(seed=cfg.seed)
    arms = []
    for seed in cfg.seeds:
        path = Path(out_dir) / f"seed_{seed}.json" if out_dir else None
        if path is not None and resume and path.exists():
            arms.extend(ArmResult.from_dict(a) for a in _results.read_json(path))
            continue
        done = run_seed(cfg, seed, data)
        if path is not None:
            _results.write_json(path, [a.to_dict() for a in done])
        arms.extend(done)
    result = EnergyResult(
        config=dataclasses.asdict(cfg), arms=arms, seconds=time.perf_counter() - start
    )
    if out_dir:
        result.save(Path(out_dir) / "result.json")
    return result


def by_seed(result: EnergyResult, arm: str = "hp") -> dict[int, list[ArmResult]]:
    out: dict[int, list[ArmResult]] = {}
    for a in result.arms:
        if a.arm == arm:
            out.setdefault(a.seed, []).append(a)
    return out


def mean_over_seeds(result: EnergyResult, field: str, arm: str = "hp") -> list[float]:
    groups = by_seed(result, arm)
    return list(np.mean([[getattr(a, field) for a in g] for g in groups.values()], axis=0))


def summary(result: EnergyResult) -> str:
    """Per arm, the mean over runs of the energy at FT start, the head's norm and the feature
    change: a text table."""
    rows = []
    for arm in ("hp", "permuted", "head_scale"):
        groups = by_seed(result, arm)
        if not groups:
            continue
        for i, a in enumerate(next(iter(groups.values()))):
            same = [g[i] for g in groups.values()]
            label = {"hp": f"HP τ={a.tau}", "permuted": f"τ={a.tau}, {a.permuted} cycled"}.get(
                arm, f"τ=0 head ×{a.head_scale:g}"
            )
            mean = {f: float(np.mean([getattr(x, f) for x in same])) for f in SUMMARY_FIELDS}
            rows.append((label, mean))
    head = f"{'arm':18s}" + "".join(f"{SUMMARY_FIELDS[f]:>10s}" for f in SUMMARY_FIELDS)
    lines = [head, "-" * len(head)]
    for label, mean in rows:
        lines.append(f"{label:18s}" + "".join(f"{mean[f]:10.3f}" for f in SUMMARY_FIELDS))
    return "\n".join(lines)


SUMMARY_FIELDS = {  # field -> column title
    "energy": "AIE",
    "init_accuracy": "acc₀",
    "head_norm": "‖V‖",
    "euclidean": "‖Δz‖",
    "cosine": "cos dist",
    "dot": "z·z₀",
    "norm": "‖z‖",
    "test_accuracy": "test acc",
}
