"""The experiment: three ways to lay out a high-rate time series on a 2-D map, compared on the
same data, with the same encoder and the same SOM.

* ``som_cpc``: CPC and the SOM trained jointly, L = L_InfoNCE + β (L_commit + L_SOM) (the paper).
* ``cpc_then_som``: CPC alone for ``steps`` steps, then the same SOM losses on the frozen
  features for another ``steps`` steps (the paper's "DL features followed by a SOM" baseline).
* ``ae_som``: an autoencoder and the SOM trained jointly, L = L_MSE + β (L_commit + L_SOM) (a
  DESOM-like baseline, the paper's deep-SOM comparison).

Every arm starts from the same encoder and codebook (same seed), sees the same batches and uses
the same neighbourhood schedule; ``cpc_then_som`` trains the encoder for exactly as many steps
as ``som_cpc`` (the control that removes only the joint training). The maps are measured on
held-out sequences with the paper's synthetic-data metrics (smoothness, topographic error, the
frequency error of node labels taken from the training windows; purity and NMI beside them),
in float32.
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
    Result,
    StepBatches,
    fit,
    seed_everything,
    torch_threads,
    train_arms,
)
from companion.errors import CompanionError, unknown
from companion.papers.som_cpc.method import (
    SOM,
    ConvEncoder1D,
    commitment_loss,
    contingency,
    cpc_loss,
    label_error,
    make_regime_signals,
    nmi,
    node_labels,
    purity,
    sigma_schedule,
    smoothness,
    som_loss,
    topographic_error,
)

METHODS = ("som_cpc", "cpc_then_som", "ae_som")
LABELS = {"som_cpc": "SOM-CPC", "cpc_then_som": "CPC, then SOM", "ae_som": "AE + SOM"}


@dataclasses.dataclass(frozen=True)
class SOMCPCConfig(Config):
    """What to train and how. Sizes change between presets; the algorithm never does."""

    # data: ``n_sequences`` signals of ``windows`` one-second windows of ``window`` samples
    n_sequences: int = 40
    windows: int = 60
    window: int = 64
    regime_freqs: tuple[float, ...] = (4.0, 8.0, 13.0, 20.0)  # Hz, one per regime
    band: float = 1.5  # the frequency random-walks within f_r ± band
    switch_prob: float = 0.1  # per window: mean dwell time 10 windows
    noise: float = 0.3
    test_fraction: float = 0.25  # held-out sequences, where the maps are measured
    # True: measure on a validation split of the *training* sequences (their first
    # test_fraction), train on the rest; the held-out sequences are never used (select_beta)
    validation: bool = False
    # encoder (official ConvEncoder1D, smaller) and SOM
    channels: tuple[int, ...] = (8, 16, 16)
    kernels: tuple[int, ...] = (9, 7, 3)
    pools: tuple[int, ...] = (4, 4, 4)
    dropout: float = 0.1
    som_side: int = 6
    sigma_end: float = 1.0  # σ decays from som_side // 2 to this
    # CPC
    pos_samples: int = 3  # K future windows predicted from each anchor
    neg_samples: int = 3  # negatives per positive
    # Weight of L_commit + L_SOM against the InfoNCE averaged over the K steps (the paper-time
    # official code; the 2024 code sums them, which needs K times this β for the same balance).
    # The official yml uses 1e-5 over ~350,000 steps; over a few hundred steps that leaves the
    # encoder to CPC alone. The value is chosen by ``select_beta`` on a validation split of the
    # training sequences at seed 0, from BETA_GRID, before any test result is looked at: the
    # lowest validation topographic error of SOM-CPC among the β whose SOM terms reach
    # SOM_SHARE of the loss (the notebook prints the selection).
    beta: float = 0.1
    methods: tuple[str, ...] = METHODS
    lr: float = 1e-3
    # Adam learning rate of the codebook. Official: the same as lr, over ~350,000 steps; Adam
    # moves a weight by about lr per step, so a run of a few hundred steps gives the codebook a
    # larger one to let it travel as far as the features it must follow.
    som_lr: float = 0.02
    batch_size: int = 64
    steps: int = 200
    checkpoint_every: int = 0
    threads: int = 1  # CPU threads while training (0: leave torch's setting); tiny convolutions

    def validate(self) -> None:
        for m in self.methods:
            if m not in METHODS:
                raise unknown("method", m, METHODS)
        if self.lr <= 0 or self.steps < 1 or self.batch_size < 1:
            raise CompanionError(
                f"lr, steps and batch_size must be positive, got lr={self.lr}, "
                f"steps={self.steps}, batch_size={self.batch_size}"
            )
        if self.batch_size % (self.neg_samples + 1):
            raise CompanionError(
                f"batch_size {self.batch_size} must be a multiple of neg_samples + 1 = "
                f"{self.neg_samples + 1} (each positive meets exactly neg_samples negatives)"
            )
        if len(self.regime_freqs) < 2:
            raise CompanionError(f"regime_freqs needs at least 2 regimes, got {self.regime_freqs}")
        if self.windows <= self.pos_samples:
            raise CompanionError(
                f"windows {self.windows} must exceed pos_samples {self.pos_samples}"
            )
        if self.som_side < 2 or self.som_side // 2 < self.sigma_end:
            raise CompanionError(
                f"som_side {self.som_side} needs som_side // 2 >= sigma_end {self.sigma_end}"
            )


BETA_GRID = (1e-3, 0.03, 0.1, 0.3, 1.0)  # the candidates of select_beta
SOM_SHARE = 0.01  # the notebook's own threshold: β (L_commit + L_SOM) ≥ 1 % of L_InfoNCE

PRESETS: dict[str, SOMCPCConfig] = {
    "smoke": SOMCPCConfig(n_sequences=8, windows=12, batch_size=32, steps=8, som_side=4),
    "notebook": SOMCPCConfig(),
    # Five times the notebook's steps (≈ 30 s per seed on one core): does the joint map catch up
    # with the post-hoc one once the features have time to settle? Same data and sizes; β
    # chosen by the same rule (select_beta on the medium run's validation split, seed 0), the
    # codebook's learning rate no larger than the notebook's:
    # som_lr × steps as the notebook's (the codebook travels as far): 0.02 × 200 / 1000.
    "medium": SOMCPCConfig(steps=1000, beta=0.1, som_lr=0.004),
    # Paper scale (official synthetic run): 200 sequences of 300 s at 128 Hz, 1-s windows,
    # encoder 16-32-64-128 (kernels 9/7/3/3, pools 4/4/4/2), 10×10 SOM, σ_end 2, K = 3 and
    # 3 negatives, Adam 1e-3, batch 128, ≈ 1000 epochs.
    "full": SOMCPCConfig(
        n_sequences=200,
        windows=300,
        window=128,
        regime_freqs=(5.0, 12.0, 24.0, 40.0),
        band=3.0,
        channels=(16, 32, 64, 128),
        kernels=(9, 7, 3, 3),
        pools=(4, 4, 4, 2),
        som_side=10,
        sigma_end=2.0,
        som_lr=1e-3,
        beta=1e-5,  # the official yml's multiplier, over the official number of steps
        batch_size=128,
        steps=350_000,
        checkpoint_every=5000,
    ),
}


@dataclasses.dataclass
class ArmResult(Result):
    """One arm: its training curve and its map, measured on the held-out sequences."""

    method: str
    loss_steps: list[int]
    loss: list[float]
    sigma: list[float]  # neighbourhood width at each logged step
    purity: float
    nmi: float
    smoothness: float  # mean grid distance between consecutive windows' nodes
    topographic_error: float  # share of windows whose 1st and 2nd nodes are not grid neighbours
    quantization: float  # mean ‖z − e_k*‖² over the features' total variance (0: on the map)
    freq_error: float  # MSE (Hz²) of the frequency predicted by the node label (training medians)
    infonce_end: float | None  # InfoNCE (averaged over K) over the last tenth of CPC training
    # SOM-CPC only: β (L_commit + L_SOM) / L_InfoNCE over the last tenth of training
    som_share: float | None
    node_regimes: list[list[int]]  # [node][regime]: held-out windows per node and regime
    node_freq: list[float | None]  # mean frequency (Hz) of held-out windows per node (None: none)
    trajectory: list[int]  # nodes visited by the first held-out sequence
    trajectory_regimes: list[int]
    seconds: float


@dataclasses.dataclass
class SOMCPCResult(Result):
    config: dict
    side: int
    regime_freqs: list[float]
    arms: dict[str, ArmResult]


def load_data(cfg: SOMCPCConfig) -> dict[str, torch.Tensor]:
    """Windows [S, T, 1, L], regimes [S, T] and frequencies [S, T], split by sequence."""
    x, regime, freq = make_regime_signals(
        cfg.n_sequences,
        cfg.windows,
        cfg.window,
        cfg.regime_freqs,
        cfg.band,
        cfg.switch_prob,
        cfg.noise,
        seed=cfg.seed,
    )
    windows = torch.from_numpy(x).view(cfg.n_sequences, cfg.windows, 1, cfg.window)
    n_test = max(1, round(cfg.test_fraction * cfg.n_sequences))
    regime, freq = torch.from_numpy(regime), torch.from_numpy(freq)
    if cfg.validation:  # drop the held-out sequences; hold out part of the training ones
        windows, regime, freq = windows[n_test:], regime[n_test:], freq[n_test:]
        n_test = max(1, round(cfg.test_fraction * len(windows)))
    return {
        "train": windows[n_test:],
        "test": windows[:n_test],
        "test_regime": regime[:n_test],
        "test_freq": freq[:n_test],
        "train_freq": freq[n_test:],
    }


class SOMCPCModel(nn.Module):
    """Encoder, K linear predictors W_k (no bias, as the official ``Classifier``), a decoder
    (used by ``ae_som`` only) and the SOM. An arm trains the parts its loss reaches."""

    def __init__(self, cfg: SOMCPCConfig):
        super().__init__()
        self.encoder = ConvEncoder1D(cfg.window, cfg.channels, cfg.kernels, cfg.pools, cfg.dropout)
        d = self.encoder.z_dim
        self.predictors = nn.ModuleList(nn.Linear(d, d, bias=False) for _ in range(cfg.pos_samples))
        self.decoder = nn.Sequential(
            nn.Linear(d, 4 * cfg.window), nn.LeakyReLU(), nn.Linear(4 * cfg.window, cfg.window)
        )
        self.som = SOM(cfg.som_side, d)


def build_model(cfg: SOMCPCConfig) -> SOMCPCModel:
    return SOMCPCModel(cfg)


def som_terms(som: SOM, z: torch.Tensor, sigma: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(L_commit, L_SOM) of a batch of features, in float32."""
    k = som.bmu(z.detach())
    z = z.float()
    h = som.neighbourhood(k, sigma)
    return commitment_loss(z, som.codebook, k), som_loss(z, som.codebook, h)


def make_step(cfg: SOMCPCConfig, method: str, train: torch.Tensor):
    """The arm's ``step_fn(model, batch)``; a batch is (sequence index, time index, step)."""
    sigma_start = float(cfg.som_side // 2)
    offsets = torch.arange(1, cfg.pos_samples + 1, device=train.device)

    def step(model, batch):
        s, t, step_index = batch
        m = getattr(model, "module", model)
        step_index = int(step_index[0])
        anchors = train[s, t]  # [B, 1, L]
        if method == "cpc_then_som" and step_index >= cfg.steps:  # stage 2: SOM on frozen CPC
            progress = (step_index - cfg.steps) / max(1, cfg.steps - 1)
            sigma = sigma_schedule(progress, sigma_start, cfg.sigma_end)
            m.encoder.train()  # as the official post-hoc SOM: model.train() (dropout on), frozen
            with torch.no_grad():
                z = m.encoder(anchors)
            commit, neigh = som_terms(m.som, z, sigma)
            return commit + neigh, {"commit": commit.item(), "som": neigh.item(), "sigma": sigma}
        sigma = sigma_schedule(step_index / max(1, cfg.steps - 1), sigma_start, cfg.sigma_end)
        if method == "ae_som":
            z = m.encoder(anchors)
            recon = F.mse_loss(m.decoder(z).float(), anchors.flatten(1).float())
            commit, neigh = som_terms(m.som, z, sigma)
            loss = recon + cfg.beta * (commit + neigh)
            return loss, {"recon": recon.item(), "commit": commit.item(), "sigma": sigma}
        futures = train[s[:, None], t[:, None] + offsets]  # [B, K, 1, L]
        b, k = futures.shape[:2]
        z_all = m.encoder(torch.cat([anchors, futures.flatten(0, 1)]))
        z, z_fut = z_all[:b], z_all[b:].view(b, k, -1).transpose(0, 1)
        nce = cpc_loss(m.predictors, z.float(), z_fut.float(), cfg.neg_samples)
        if method == "cpc_then_som":  # stage 1: CPC alone
            return nce, {"infonce": nce.item(), "sigma": sigma_start}
        commit, neigh = som_terms(m.som, z, sigma)
        loss = nce + cfg.beta * (commit + neigh)
        share = cfg.beta * (commit.item() + neigh.item()) / max(nce.item(), 1e-12)
        return loss, {
            "infonce": nce.item(),
            "commit": commit.item(),
            "share": share,
            "sigma": sigma,
        }

    return step


class _WithStep:
    """StepBatches of (sequence, time) anchor indices, with the step index appended (σ is a
    function of the step, so a resumed run uses the same σ as an uninterrupted one)."""

    def __init__(self, batches: StepBatches):
        self.batches = batches

    def __call__(self, step: int):
        s, t = self.batches(step)
        return s, t, torch.full((len(s),), step, dtype=torch.long)


@torch.no_grad()
def measure_map(model: SOMCPCModel, data: dict, side: int, n_regimes: int) -> dict:
    """The map on the held-out sequences, in float32 with dropout off."""
    model = getattr(model, "module", model).eval()
    test = data["test"]
    device = next(model.parameters()).device
    s, t = test.shape[:2]
    with torch.autocast(device.type, enabled=False):
        z = model.encoder(test.flatten(0, 1).to(device).float())
        dist = model.som.distances(z).cpu().numpy()
    bmus = dist.argmin(1)
    regimes = data["test_regime"].flatten().numpy()
    table = contingency(regimes, bmus, n_regimes, side * side)
    freq = data["test_freq"].flatten().numpy()
    with torch.autocast(device.type, enabled=False):
        z_train = model.encoder(data["train"].flatten(0, 1).to(device).float())
        train_bmus = model.som.bmu(z_train).cpu().numpy()
    labels = node_labels(train_bmus, data["train_freq"].flatten().numpy(), side)
    hits = np.bincount(bmus, minlength=side * side)
    node_freq = np.bincount(bmus, weights=freq, minlength=side * side) / np.maximum(hits, 1)
    return {
        "purity": purity(table),
        "nmi": nmi(table),
        "smoothness": smoothness(bmus.reshape(s, t), side),
        "topographic_error": topographic_error(dist, side),
        "freq_error": label_error(labels, bmus, freq),
        "quantization": float(dist.min(1).mean() / z.float().var(0).sum().clamp_min(1e-12)),
        "node_regimes": table.tolist(),
        "node_freq": [round(float(f), 3) if h else None for f, h in zip(node_freq, hits)],
        "trajectory": bmus.reshape(s, t)[0].tolist(),
        "trajectory_regimes": data["test_regime"][0].tolist(),
    }


def train_arm(fabric, cfg: SOMCPCConfig, method: str, folder: Path | None, resume: bool):
    """Train one arm under Fabric and measure its map."""
    data = load_data(cfg)
    seed_everything(cfg.seed)  # the same initial encoder and codebook for every arm
    model = build_model(cfg)
    rest = [p for name, p in model.named_parameters() if not name.startswith("som.")]
    optimizer = torch.optim.Adam(
        [{"params": rest}, {"params": model.som.parameters(), "lr": cfg.som_lr}], lr=cfg.lr
    )
    model, optimizer = fabric.setup(model, optimizer)
    train = fabric.to_device(data["train"])
    n_train, windows = train.shape[:2]
    anchors = windows - cfg.pos_samples  # an anchor needs K future windows
    s_idx = torch.arange(n_train).repeat_interleave(anchors)
    t_idx = torch.arange(anchors).repeat(n_train)
    batches = _WithStep(
        StepBatches((s_idx, t_idx), cfg.batch_size, cfg.seed, fabric.global_rank, fabric.world_size)
    )
    steps = 2 * cfg.steps if method == "cpc_then_som" else cfg.steps
    start = time.perf_counter()
    with torch_threads(cfg.threads, fabric.device):
        history = fit(
            fabric,
            model,
            optimizer,
            batches,
            make_step(cfg, method, train),
            steps=steps,
            checkpoint=folder / "checkpoint.ckpt" if folder else None,
            checkpoint_every=cfg.checkpoint_every,
            resume=resume,
            desc=LABELS[method],
        )
        seconds = time.perf_counter() - start
        measured = measure_map(model, data, cfg.som_side, len(cfg.regime_freqs))

    def tail_mean(name: str) -> float | None:
        values = history.values(name)
        return float(np.mean(values[-max(1, len(values) // 10) :])) if values else None

    return ArmResult(
        method=method,
        infonce_end=tail_mean("infonce"),
        som_share=tail_mean("share"),
        loss_steps=history.steps("loss"),
        loss=history.values("loss"),
        sigma=history.values("sigma"),
        seconds=seconds,
        **measured,
    )


def run(cfg: SOMCPCConfig, out_dir: str | Path | None = None, resume: bool = False) -> SOMCPCResult:
    """Train every arm in ``cfg.methods``; with ``out_dir``, checkpoint and write results.

    ``resume=True`` keeps arms that finished (``<out_dir>/<method>/arm.json``) and continues an
    interrupted arm from its last checkpoint.
    """
    arms = train_arms(cfg, cfg.methods, out_dir, resume, ArmResult, train_arm)
    result = SOMCPCResult(
        config=cfg.to_dict(),
        side=cfg.som_side,
        regime_freqs=list(cfg.regime_freqs),
        arms=arms,
    )
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result


def beta_sweep(cfg: SOMCPCConfig, betas: tuple[float, ...]) -> dict[float, ArmResult]:
    """SOM-CPC alone, once per weight β of the SOM terms (same seed, data and steps): how the
    map changes as the SOM terms go from negligible to dominant."""
    return {b: run(cfg.replace(beta=b, methods=("som_cpc",))).arms["som_cpc"] for b in betas}


def select_beta(
    cfg: SOMCPCConfig, grid: tuple[float, ...] = BETA_GRID
) -> tuple[float, dict[float, ArmResult]]:
    """Choose β before any test result is seen: SOM-CPC alone at each β of ``grid``, trained on
    part of the training sequences and measured on the rest (``validation=True``; the held-out
    sequences are never touched). The pre-stated rule: among the β whose SOM terms reach
    ``SOM_SHARE`` of the loss (the mechanism is on), the one with the lowest validation
    topographic error; if none reaches it, the largest β of the grid.
    Returns (the chosen β, the validation runs by β)."""
    val = cfg.replace(validation=True, methods=("som_cpc",))
    runs = {b: run(val.replace(beta=b)).arms["som_cpc"] for b in grid}
    engaged = [b for b in grid if (runs[b].som_share or 0.0) >= SOM_SHARE]
    if not engaged:
        return max(grid), runs
    return min(engaged, key=lambda b: runs[b].topographic_error), runs
