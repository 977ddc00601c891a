"""The experiment: patients from the dosing simulator; CounTS and a black-box classifier trained
on the same series for the same steps; counterfactual explanations for test patients, judged by
re-running the simulator with each patient's exogenous noise.

Two arms are trained (same data, steps, batch, optimizer, width):

* ``counts``: the variational model of :mod:`~companion.papers.counts.method`; it explains
  by abduction, action and prediction (``counts``) and, as the control, by the same search on
  the same model *without abduction* (``no_abduction``: u* = 0 and e_b = 0 for everyone);
* ``blackbox``: an MLP classifier f(a, b), explained by Wachter's gradient search (``wachter``).

Every counterfactual asks, per patient, for the opposite of the outcome the simulator produced
(y′ = 1 − y: the same question for every method; the model's abduction sees only the series x,
never a label), may change the dose only (the mask), and uses the same λ, steps and step size.
The search settings were fixed first; the model's design (a linear outcome head, a finite dose
response) and the preset's sizes were chosen on seeds 0-4 only, seeds 5-9 are held out.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from companion.core import (
    Config,
    Result,
    StepBatches,
    fit,
    launch,
    seed_everything,
    torch_threads,
    train_arms,
)
from companion.errors import CompanionError, unknown
from companion.nn import MLP
from companion.papers.counts.method import (
    CounTS,
    Simulator,
    abduction,
    counts_counterfactual,
    evaluate_counterfactual,
    negative_elbo,
    prediction,
    wachter_counterfactual,
)

ARMS = ("counts", "blackbox")
EXPLAINERS = {"counts": ("counts", "no_abduction"), "blackbox": ("wachter",)}
MASKS = ("all", "first_half")


@dataclasses.dataclass(frozen=True)
class CountsConfig(Config):
    """What to simulate, train and explain. Sizes change between presets; the algorithm never
    does."""

    arms: tuple[str, ...] = ARMS  # which models to train (the claims need both)
    length: int = 24  # T, time steps per series
    confounding: float = 0.8  # k: extra dose per unit of severity (0: no confounding)
    n_train: int = 4000
    n_test: int = 1000
    n_explain: int = 200  # test patients explained by each method
    latent: int = 2  # dimension of u
    lags: int = 8  # L: how many past doses the model's vital sign responds to
    hidden: int = 64
    sigma: float = 0.5  # σ of the Gaussian likelihoods of a and b
    lr: float = 3e-3
    batch_size: int = 128
    steps: int = 2500  # per arm
    mask: str = "all"  # where the dose may change: every step, or the first half only
    cf_lambda: float = 0.5  # λ: weight of the L1 size of the action
    cf_steps: int = 200
    cf_lr: float = 0.05
    n_examples: int = 8  # patients whose series are stored for the figures
    log_every: int = 10
    checkpoint_every: int = 0
    threads: int = 1  # CPU threads (small models are fastest on one); 0: leave torch's setting

    def validate(self) -> None:
        for arm in self.arms:
            if arm not in ARMS:
                raise unknown("arm", arm, ARMS)
        if self.mask not in MASKS:
            raise unknown("mask", self.mask, MASKS)
        if self.length < 4:
            raise CompanionError(f"length must be >= 4, got {self.length}")
        if self.lags >= self.length:
            raise CompanionError(f"lags ({self.lags}) must be below length ({self.length})")
        keys = ("n_train", "n_test", "n_explain", "latent", "lags", "hidden", "batch_size", "steps")
        for key in keys:
            if getattr(self, key) < 1:
                raise CompanionError(f"{key} must be >= 1, got {getattr(self, key)}")
        if self.n_explain > self.n_test:
            raise CompanionError(
                f"n_explain ({self.n_explain}) cannot exceed n_test ({self.n_test})"
            )
        if self.lr <= 0 or self.cf_lr <= 0 or self.sigma <= 0 or self.cf_lambda < 0:
            raise CompanionError(
                f"lr, cf_lr and sigma must be positive and cf_lambda >= 0, got lr={self.lr}, "
                f"cf_lr={self.cf_lr}, sigma={self.sigma}, cf_lambda={self.cf_lambda}"
            )
        if self.cf_steps < 0:
            raise CompanionError(f"cf_steps must be >= 0, got {self.cf_steps}")

    @property
    def simulator(self) -> Simulator:
        return Simulator(length=self.length, confounding=self.confounding)


PRESETS: dict[str, CountsConfig] = {
    "smoke": CountsConfig(
        n_train=200, n_test=100, n_explain=20, hidden=16, steps=30, cf_steps=15, log_every=5
    ),
    "notebook": CountsConfig(),
    # Larger scale: 50x the patients, 4x longer series, a wider model and 10x the steps. The
    # paper's own datasets and sizes were not available (module docstring of method.py).
    "full": CountsConfig(
        length=96,
        n_train=100_000,
        n_test=10_000,
        n_explain=2000,
        latent=4,
        hidden=256,
        batch_size=512,
        steps=15_000,
        cf_steps=500,
        log_every=50,
        checkpoint_every=1000,
        threads=0,
    ),
}


@dataclasses.dataclass
class ExplainerResult(Result):
    """One explanation method on the explained test patients, judged by the simulator."""

    method: str
    validity: float  # true outcome under the action = target
    model_validity: float  # the method's own model says it reaches the target
    cf_error: float  # mean |claimed b′ − true b′|
    action_l1: float  # mean |a′ − a|
    dose_change: list[float]  # per patient: mean (a′ − a) over time
    valid: list[bool]  # per patient: true outcome reaches the target
    examples: dict[str, list[list[float]]]  # dose, vital, true_vital: [example][t]


@dataclasses.dataclass
class ArmResult(Result):
    """One trained model: its training curve, test accuracy and explanations."""

    arm: str
    loss_steps: list[int]
    loss: list[float]
    test_accuracy: float
    explainers: dict[str, ExplainerResult]
    seconds: float
    abduction_error: float | None = None  # counts: max |f_b(a, u*) + e_b − b| (should be 0)


@dataclasses.dataclass
class CountsResult(Result):
    config: dict
    targets: list[float]  # y′ = 1 − y per explained patient (the opposite of the true outcome)
    factual: dict[str, list[list[float]]]  # dose, vital of the stored examples
    arms: dict[str, ArmResult]

    def explainer(self, name: str) -> ExplainerResult:
        for arm in self.arms.values():
            if name in arm.explainers:
                return arm.explainers[name]
        raise CompanionError(f"unknown explainer {name!r}; valid: counts, no_abduction, wachter")


# ---------------------------------------------------------------- data
@dataclasses.dataclass
class Data:
    train: tuple[torch.Tensor, torch.Tensor]
    test: tuple[torch.Tensor, torch.Tensor]
    noise: dict[str, torch.Tensor]  # exogenous noise of the explained patients
    explain: torch.Tensor  # their series [n_explain, 2, T]
    explain_y: torch.Tensor  # their factual outcomes [n_explain]


def make_data(cfg: CountsConfig) -> Data:
    """Train and test patients from the simulator (seeded by ``cfg.seed``); the first
    ``n_explain`` test patients are explained, with their exogenous noise kept."""
    sim = cfg.simulator
    g = torch.Generator().manual_seed(10_007 * cfg.seed + 1)
    x_train, y_train, _ = sim.sample(cfg.n_train, g)
    x_test, y_test, noise = sim.sample(cfg.n_test, g)
    k = cfg.n_explain
    return Data(
        (x_train, y_train),
        (x_test, y_test),
        {key: v[:k] for key, v in noise.items()},
        x_test[:k],
        y_test[:k],
    )


def action_mask(cfg: CountsConfig) -> torch.Tensor:
    """m [T]: 1 where the dose may change."""
    m = torch.ones(cfg.length)
    if cfg.mask == "first_half":
        m[cfg.length // 2 :] = 0
    return m


def build_model(cfg: CountsConfig, arm: str) -> torch.nn.Module:
    if arm == "counts":
        return CounTS(cfg.length, cfg.latent, cfg.hidden, cfg.sigma, cfg.lags)
    if arm == "blackbox":
        return MLP(2 * cfg.length, (cfg.hidden, cfg.hidden), 1)
    raise unknown("arm", arm, ARMS)


def predict_logit(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    return model.predict(x) if isinstance(model, CounTS) else model(x).squeeze(-1)


def _step(model, batch):
    x, y = batch
    module = getattr(model, "module", model)  # Fabric's wrapper -> the model itself
    if isinstance(module, CounTS):
        loss, parts = negative_elbo(module, x, y)
        return loss, {k: v.item() for k, v in parts.items()}
    loss = F.binary_cross_entropy_with_logits(model(x).squeeze(-1), y)
    return loss, {}


def _examples(cf, true_vital, n) -> dict[str, list[list[float]]]:
    return {
        "dose": cf.dose[:n].tolist(),
        "vital": cf.vital[:n].tolist(),
        "true_vital": true_vital[:n].tolist(),
    }


def explain(cfg: CountsConfig, model, method: str, data: Data, target: torch.Tensor):
    """The counterfactuals of one method for the explained patients, judged by the simulator."""
    mask, sim = action_mask(cfg), cfg.simulator
    args = (data.explain, target, mask, cfg.cf_lambda, cfg.cf_steps, cfg.cf_lr)
    if method == "wachter":
        cf = wachter_counterfactual(model, *args)
    else:
        cf = counts_counterfactual(model, *args, use_posterior=method == "counts")
    scores = evaluate_counterfactual(sim, data.explain, cf, target, data.noise)
    true_x, true_y = sim.counterfactual(cf.dose, data.noise)
    return ExplainerResult(
        method=method,
        **scores,
        dose_change=[round(v, 5) for v in (cf.dose - data.explain[:, 0]).mean(-1).tolist()],
        valid=(true_y == target).tolist(),
        examples=_examples(cf, true_x[:, 1], cfg.n_examples),
    )


def train_model(fabric, cfg: CountsConfig, arm: str, folder: Path | None, resume: bool):
    """Train one model under Fabric; returns (the unwrapped model on the CPU in eval mode, its
    training history, the data)."""
    data = make_data(cfg)
    seed_everything(cfg.seed)
    model = build_model(cfg, arm)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    model, optimizer = fabric.setup(model, optimizer)
    batches = StepBatches(
        data.train, cfg.batch_size, cfg.seed, fabric.global_rank, fabric.world_size
    )
    history = fit(
        fabric,
        model,
        optimizer,
        batches,
        _step,
        steps=cfg.steps,
        log_every=cfg.log_every,
        checkpoint=folder / "checkpoint.ckpt" if folder else None,
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        desc=arm,
    )
    module = getattr(model, "module", model).cpu().float().eval()
    return module, history, data


def _model_only(fabric, cfg: CountsConfig, arm: str):
    with torch_threads(cfg.threads, fabric.device):
        return train_model(fabric, cfg, arm, None, False)[0]


def fit_model(cfg: CountsConfig, arm: str = "counts") -> torch.nn.Module:
    """The trained model of one arm, exactly as :func:`run` trains it (same data, seed and
    steps), for a notebook to explain patients with."""
    if arm not in ARMS:
        raise unknown("arm", arm, ARMS)
    return launch(cfg, _model_only, cfg, arm)


def train_arm(fabric, cfg: CountsConfig, arm: str, folder: Path | None, resume: bool):
    """Train one model, then explain the test patients with it (on the CPU)."""
    with torch_threads(cfg.threads, fabric.device):
        start = time.perf_counter()
        module, history, data = train_model(fabric, cfg, arm, folder, resume)
        with torch.no_grad():
            x, y = data.test
            accuracy = ((predict_logit(module, x) > 0).float() == y).float().mean().item()
        target = 1.0 - data.explain_y
        abduction_error = None
        if arm == "counts":
            with torch.no_grad():
                u, e_b = abduction(module, data.explain)
                vital, _ = prediction(module, data.explain[:, 0], u, e_b)
                abduction_error = (vital - data.explain[:, 1]).abs().max().item()
        explainers = {m: explain(cfg, module, m, data, target) for m in EXPLAINERS[arm]}
    return ArmResult(
        arm=arm,
        loss_steps=history.steps("loss"),
        loss=history.values("loss"),
        test_accuracy=accuracy,
        explainers=explainers,
        seconds=time.perf_counter() - start,
        abduction_error=abduction_error,
    )


def run(cfg: CountsConfig, out_dir: str | Path | None = None, resume: bool = False) -> CountsResult:
    """Train both arms and explain; with ``out_dir``, checkpoint and write results.

    ``resume=True`` keeps arms that finished (``<out_dir>/<arm>/arm.json``) and continues an
    interrupted arm from its last checkpoint.
    """
    arms = train_arms(cfg, cfg.arms, out_dir, resume, ArmResult, train_arm)
    data = make_data(cfg)
    n = cfg.n_examples
    result = CountsResult(
        config=cfg.to_dict(),
        targets=(1.0 - data.explain_y).tolist(),
        factual={"dose": data.explain[:n, 0].tolist(), "vital": data.explain[:n, 1].tolist()},
        arms=arms,
    )
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
