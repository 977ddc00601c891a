"""The experiment: one score network per diffusion on 2-D toy data, trained on the negative
ELBO, then each arm's test ELBO in bits per dimension with the same estimator.

Arms: ``vpsde`` (K = 1), ``cld`` (K = 2, fixed critically damped Langevin), ``learned``
(K = 2, (Q, D) trained jointly with the score network) and the control ``learned_frozen``
(the learned arm's random initial (Q, D), never updated: it removes only the learning of the
diffusion). All arms: same score network, steps, batches, optimizer and ELBO estimator.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import torch
from torch import nn

from companion.core import Config, Result, StepBatches, fit, seed_everything, train_arms
from companion.errors import CompanionError, unknown
from companion.papers.multivariate_diffusion.method import (
    ScoreNet,
    elbo,
    exact_gaussian_eps_model,
    gaussian_elbo_closed_form,
    make_diffusion,
    moments_by_ode,
)

ARMS = ("vpsde", "cld", "learned", "learned_frozen")
DATASETS = ("moons", "gaussians", "gaussian")
IMPORTANCE = ("vp", "log", "uniform")


@dataclasses.dataclass(frozen=True)
class MDMConfig(Config):
    """What to train and how. Sizes change between presets; the algorithm never does."""

    dataset: str = "moons"
    n_train: int = 4000
    n_test: int = 1000
    arms: tuple[str, ...] = ARMS
    n_vars: int = 2  # K of the learned arms (the official configs' default)
    gamma: float = 2.0  # CLD friction: critical damping for unit mass
    beta0: float = 0.1
    beta1: float = 10.0
    t_min: float = 1e-3
    init_aux_var: float = 0.01
    importance: str = "vp"  # the official VP importance density (mdm/utils/importance_sampling.py)
    hidden: int = 128
    depth: int = 3
    lr: float = 2e-3
    batch_size: int = 256
    steps: int = 1000
    grad_clip: float | None = 2.0
    eval_repeats: int = 30  # independent (s, ε) draws per test point in the test ELBO
    premise_samples: int = 20000  # Gaussian-data check of the estimator against its closed form
    checkpoint_every: int = 0

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        for a in self.arms:
            if a not in ARMS:
                raise unknown("arm", a, ARMS)
        if self.importance not in IMPORTANCE:
            raise unknown("importance", self.importance, IMPORTANCE)
        if self.n_vars < 2:
            raise CompanionError(f"n_vars must be >= 2 (one auxiliary variable), got {self.n_vars}")
        if not 0 < self.t_min < 1:
            raise CompanionError(f"t_min must be in (0, 1), got {self.t_min}")
        if self.lr <= 0 or self.steps < 1 or self.batch_size < 1 or self.eval_repeats < 1:
            raise CompanionError(
                f"lr, steps, batch_size and eval_repeats must be positive, got lr={self.lr}, "
                f"steps={self.steps}, batch_size={self.batch_size}, "
                f"eval_repeats={self.eval_repeats}"
            )


PRESETS: dict[str, MDMConfig] = {
    "smoke": MDMConfig(
        n_train=256, n_test=100, hidden=32, depth=2, steps=30, eval_repeats=2, premise_samples=1000
    ),
    "notebook": MDMConfig(),
    # A stored larger run (data/runs/multivariate_diffusion/medium.json): 4x the training steps
    # and a wider score network, so that the score fit, not the budget, limits every arm's ELBO.
    "medium": MDMConfig(hidden=192, steps=4000),
    # The paper's models are U-Nets on images; here its 2-D setting at a larger size: a wider,
    # deeper score network, 20k steps, the official batch 128 → 512 and many more ELBO draws.
    "full": MDMConfig(
        n_train=100_000,
        n_test=10_000,
        hidden=512,
        depth=4,
        lr=2e-4,
        batch_size=512,
        steps=20_000,
        eval_repeats=200,
        premise_samples=200_000,
        checkpoint_every=1000,
    ),
}


def make_data(name: str, n: int, seed: int) -> torch.Tensor:
    """2-D toy data, standardized: two moons (scikit-learn's generator, noise 0.05), a ring of
    8 Gaussians, or one Gaussian N(0, diag(0.5, 2)) (whose ELBO has a closed form)."""
    g = torch.Generator().manual_seed(seed)
    if name == "moons":
        from sklearn.datasets import make_moons

        x, _ = make_moons(n, noise=0.05, random_state=seed)
        x = torch.tensor(x, dtype=torch.float32)
        return (x - torch.tensor([0.5, 0.25])) / torch.tensor([0.87, 0.5])
    if name == "gaussians":
        k = torch.randint(0, 8, (n,), generator=g).float() * (2 * math.pi / 8)
        centers = torch.stack([torch.cos(k), torch.sin(k)], 1) * 1.4
        return centers + 0.1 * torch.randn(n, 2, generator=g)
    return torch.randn(n, 2, generator=g) * GAUSSIAN_VAR.sqrt()


GAUSSIAN_VAR = torch.tensor([0.5, 2.0])


class MDMModel(nn.Module):
    """A diffusion and its score network, trained together (the diffusion only if learned)."""

    def __init__(self, cfg: MDMConfig, arm: str):
        super().__init__()
        spec = "learned" if arm.startswith("learned") else arm
        self.diffusion = make_diffusion(
            spec, cfg.n_vars, cfg.gamma, cfg.beta0, cfg.beta1, cfg.init_aux_var
        )
        if arm == "learned_frozen":
            self.diffusion.requires_grad_(False)
        self.score = ScoreNet(2, self.diffusion.K, cfg.hidden, cfg.depth)

    def elbo(self, x: torch.Tensor, cfg: MDMConfig) -> torch.Tensor:
        return elbo(self.diffusion, self.score, x, cfg.t_min, 1.0, cfg.importance)


@dataclasses.dataclass
class ArmResult(Result):
    arm: str
    loss_steps: list[int]
    loss: list[float]  # training −ELBO in nats per dimension
    test_bpd: float
    test_bpd_se: float  # standard error of test_bpd over the test points
    point_bpd: list[float]  # per test point, averaged over its eval_repeats draws of (s, ε)
    Q: list[list[float]]
    D: list[list[float]]
    Q_init: list[list[float]]
    D_init: list[list[float]]
    seconds: float


@dataclasses.dataclass
class MDMResult(Result):
    config: dict
    arms: dict[str, ArmResult]
    premise: dict[str, list[float]]  # arm -> [MC ELBO, its SE, closed form] on Gaussian data
    kernel_error: float  # max |expm kernel − RK4 moment ODEs| over arms


def _matrix(t: torch.Tensor) -> list[list[float]]:
    return [[round(v, 6) for v in row] for row in t.detach().double().tolist()]


@torch.no_grad()
def test_bpd(model: MDMModel, x: torch.Tensor, cfg: MDMConfig) -> list[float]:
    """Bits per dimension of each test point, averaged over ``eval_repeats`` draws of (s, ε).
    Every arm is evaluated on the same points (so differences between arms are paired)."""
    values = torch.stack([model.elbo(x, cfg) for _ in range(cfg.eval_repeats)]).mean(0)
    return [round(v, 5) for v in (-values / (x.shape[1] * math.log(2))).tolist()]


def train_arm(fabric, cfg: MDMConfig, arm: str, folder: Path | None, resume: bool) -> ArmResult:
    seed_everything(cfg.seed)
    train = make_data(cfg.dataset, cfg.n_train, cfg.seed)
    test = make_data(cfg.dataset, cfg.n_test, 10_000 + cfg.seed)
    seed_everything(cfg.seed)  # every arm: the same score-network initial weights
    model = MDMModel(cfg, arm)
    if arm.startswith("learned"):  # the same random initial (Q, D) for learned and its control
        seed_everything(cfg.seed + 1)
        model.diffusion = make_diffusion(
            "learned", cfg.n_vars, cfg.gamma, cfg.beta0, cfg.beta1, cfg.init_aux_var
        )
        model.diffusion.requires_grad_(arm == "learned")
    Q0, D0 = _matrix(model.diffusion.Q()), _matrix(model.diffusion.D())
    # one learning rate for the score network and, in the learned arm, (Q, D) (official code)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(params, lr=cfg.lr)
    model, optimizer = fabric.setup(model, optimizer)
    batches = StepBatches((train,), cfg.batch_size, cfg.seed, fabric.global_rank, fabric.world_size)

    def step_fn(m, batch):
        x = batch[0]
        loss = -getattr(m, "module", m).elbo(x, cfg).mean() / x.shape[1]
        return loss.float(), {}

    start = time.perf_counter()
    history = fit(
        fabric,
        model,
        optimizer,
        batches,
        step_fn,
        steps=cfg.steps,
        grad_clip=cfg.grad_clip,
        checkpoint=folder / "checkpoint.ckpt" if folder else None,
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        stop_on_nonfinite=False,
        desc=arm,
    )
    seconds = time.perf_counter() - start
    module = getattr(model, "module", model).eval()
    torch.manual_seed(cfg.seed + 20_000)  # the same evaluation draws for every arm
    points = test_bpd(module, test, cfg)
    bpd = sum(points) / len(points)
    se = float(torch.tensor(points).std() / math.sqrt(len(points)))
    return ArmResult(
        arm=arm,
        loss_steps=history.steps("loss"),
        loss=history.values("loss"),
        test_bpd=bpd,
        test_bpd_se=se,
        point_bpd=points,
        Q=_matrix(module.diffusion.Q()),
        D=_matrix(module.diffusion.D()),
        Q_init=Q0,
        D_init=D0,
        seconds=seconds,
    )


def diffusion_of(cfg: MDMConfig, arm: ArmResult):
    """The arm's final diffusion, rebuilt from the stored (Q, D)."""
    from companion.papers.multivariate_diffusion.method import Diffusion

    return Diffusion(
        len(arm.Q),
        torch.tensor(arm.Q),
        torch.tensor(arm.D),
        cfg.beta0,
        cfg.beta1,
        cfg.init_aux_var,
    )


def premise_checks(cfg: MDMConfig, arms: dict[str, ArmResult]):
    """On Gaussian data with the exact score: the ELBO estimator against its closed form, and
    the expm kernel against RK4 on the moment ODEs, for each arm's final diffusion."""
    torch.manual_seed(cfg.seed + 30_000)
    x = make_data("gaussian", cfg.premise_samples, cfg.seed + 40_000)
    premise, kernel_error = {}, 0.0
    for name, arm in arms.items():
        dif = diffusion_of(cfg, arm)
        with torch.no_grad():
            e = elbo(
                dif, exact_gaussian_eps_model(dif, GAUSSIAN_VAR), x, cfg.t_min, 1.0, cfg.importance
            )
        closed = gaussian_elbo_closed_form(dif, GAUSSIAN_VAR, cfg.t_min)
        premise[name] = [float(e.mean()), float(e.std() / math.sqrt(len(e))), closed]
        M, S = dif.transition(torch.tensor([0.5], dtype=torch.float64))
        M2, S2 = moments_by_ode(dif, 0.5, steps=200)
        kernel_error = max(
            kernel_error, (M[0] - M2).abs().max().item(), (S[0] - S2).abs().max().item()
        )
    return premise, kernel_error


def run(cfg: MDMConfig, out_dir: str | Path | None = None, resume: bool = False) -> MDMResult:
    """Train every arm in ``cfg.arms``; with ``out_dir``, checkpoint and write results."""
    arms = train_arms(cfg, cfg.arms, out_dir, resume, ArmResult, train_arm)
    premise, kernel_error = premise_checks(cfg, arms)
    result = MDMResult(config=cfg.to_dict(), arms=arms, premise=premise, kernel_error=kernel_error)
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
