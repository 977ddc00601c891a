"""SOM-CPC: the full preset at reduced steps (tiny on CPU, bounded on GPU). Its data is
generated from the seed, as the official synthetic data is, so there is nothing to download."""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F

from companion.core.fullscale import FullCheck, count_flops

DATA = (
    "nothing to download: 200 sequences of 300 s at 128 Hz (sinusoids whose frequency "
    "random-walks inside the band of a switching regime), generated from the seed like the "
    "official synthetic data (preprocessing/synthetic_data_main.py)"
)
HARDWARE = (
    "one GPU or a few CPU cores (estimate: a 4-layer 1-D CNN encoder of 35 k parameters, "
    "228 k with the predictors, decoder and codebook, on 128-sample windows, batch 128 × 4 "
    "windows, a 10 × 10 SOM; well under 1 GB)"
)
REPORTED = (
    "on the synthetic random-walk sinusoids (10 × 10 SOM), SOM-CPC's map is smoother and "
    "predicts the frequency better than CPC features followed by PCA, k-means or a SOM, and "
    "than SOM-VAE and DESOM (paper Sec. 5.1); the same ordering on sleep staging and audio"
)
STEPS_KEY = "steps"


def _cost(cfg, kind: str) -> float:
    """FLOPs of one forward+backward of ``kind`` ("cpc", "ae", "som") at ``cfg.batch_size``."""
    from companion.papers.som_cpc.experiment import build_model, som_terms
    from companion.papers.som_cpc.method import cpc_loss

    b, k = cfg.batch_size, cfg.pos_samples
    with torch.device("meta"):
        model = build_model(cfg)
        windows = b * (1 + k) if kind == "cpc" else b
        x = torch.empty(windows, 1, cfg.window)

    def step():
        z = model.encoder(x)
        if kind == "cpc":
            zf = z[b:].view(b, k, -1).transpose(0, 1)
            loss = cpc_loss(model.predictors, z[:b], zf, cfg.neg_samples)
        elif kind == "ae":
            loss = F.mse_loss(model.decoder(z), x.flatten(1))
        else:
            loss = 0.0
        commit, neigh = som_terms(model.som, z[:b], 1.0)
        (loss + commit + neigh).backward()

    return count_flops(step)


def flops_per_step(cfg) -> float:
    """FLOPs per unit of ``steps`` over every arm in ``cfg.methods``: SOM-CPC one CPC step
    (B anchors and B·K futures through the encoder, K predictors, the SOM); CPC-then-SOM one CPC
    step and one SOM step on frozen features (its run is 2 × steps long); AE + SOM one
    autoencoder step. The held-out measurement is left out."""
    total = 0.0
    for method in cfg.methods:
        if method == "som_cpc":
            total += _cost(cfg, "cpc")
        elif method == "cpc_then_som":
            total += _cost(cfg, "cpc") + _cost(cfg, "som")
        else:
            total += _cost(cfg, "ae")
    return total


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run: ``steps`` per arm, twice that for CPC-then-SOM."""
    return sum(2 * cfg.steps if m == "cpc_then_som" else cfg.steps for m in cfg.methods)


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 8 sequences of 12 s (the preset's 128-Hz windows, encoder and 10 × 10 SOM),
    batch 16, 4 steps per arm with a checkpoint every 2. ``gpu``: the preset's data and
    batch, 300 steps per arm. Nothing is written to ``data_dir``: the data is generated."""
    if scale == "tiny":
        overrides = dict(n_sequences=8, windows=12, batch_size=16, steps=4, checkpoint_every=2)
        return FullCheck(overrides, STEPS_KEY, "generated: 8 sequences of 12 one-second windows")
    overrides = dict(steps=300, checkpoint_every=100)
    return FullCheck(overrides, STEPS_KEY, "generated: 200 sequences of 300 s at 128 Hz")
