"""SOM-CPC's pieces: the synthetic high-rate data, the CPC encoder and scores, the SOM layer with
its Gaussian neighbourhood and two losses, and the paper's map metrics.

Paper: Huijben, Nijdam, Overeem, van Gilst, van Sloun, "SOM-CPC: Unsupervised Contrastive
Learning with Self-Organizing Maps for Structured Representations of High-Rate Time Series",
ICML 2023 (Sec. 3). Official code: github.com/IamHuijben/SOM-CPC, files
``models/SOM_CPC/model_class.py`` (the forward pass), ``modules/SOM.py`` (``SOMQuantizer``,
``GaussianNeighbourhood``), ``losses/contrastive_losses.py`` (``InfoNCELoss``),
``losses/SOM_losses.py`` (``commitment_loss``, ``SOM_loss``) and
``preprocessing/synthetic_data_main.py`` (the random-walk-frequency sinusoids).

The total loss of SOM-CPC (paper Sec. 3.3) is

    L = L_InfoNCE + β (L_commit + L_SOM),

with L_InfoNCE the CPC loss on the encoder's continuous z (Sec. 3.1), L_commit pulling z and its
best-matching codebook vector together (gradients reach both), and L_SOM pulling the
neighbours of the best-matching node towards z (z detached, so only the map moves).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from companion.errors import CompanionError
from companion.nn.contrastive import info_nce

# ---------------------------------------------------------------------------------------------
# Data: sinusoids whose frequency random-walks inside the band of a switching regime
# ---------------------------------------------------------------------------------------------


def make_regime_signals(
    n_sequences: int,
    windows: int,
    window: int,
    regime_freqs: tuple[float, ...],
    band: float,
    switch_prob: float,
    noise: float,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n_sequences`` signals of ``windows`` windows of ``window`` samples (one window = one
    second, so the sampling rate is ``window`` Hz).

    The official synthetic data (``preprocessing/synthetic_data_main.py``) is a sinusoid whose
    frequency random-walks (±0.1 Hz steps, each with probability 0.1 per sample). Here the walk
    stays inside the band ``f_r ± band`` of a *regime* r, and the regime switches at window
    boundaries with probability ``switch_prob`` (a Markov chain, a new regime drawn uniformly
    among the others): the regime is the slow, predictable factor the map should lay out.
    The phase integrates the frequency, so the signal is continuous across windows.

    Returns ``x`` float32 [S, windows·window], ``regime`` int64 [S, windows] and ``freq``
    float32 [S, windows] (mean frequency of each window, Hz).
    """
    rng = np.random.default_rng(seed)
    n_reg = len(regime_freqs)
    regime = np.empty((n_sequences, windows), dtype=np.int64)
    regime[:, 0] = rng.integers(0, n_reg, n_sequences)
    for t in range(1, windows):
        switch = rng.random(n_sequences) < switch_prob
        other = (regime[:, t - 1] + rng.integers(1, n_reg, n_sequences)) % n_reg
        regime[:, t] = np.where(switch, other, regime[:, t - 1])
    n = windows * window
    steps = rng.choice([-0.1, 0.1], size=(n_sequences, n)) * (rng.random((n_sequences, n)) < 0.1)
    walk = np.cumsum(steps, axis=1) + rng.uniform(-band, band, (n_sequences, 1))
    offset = band - np.abs(np.mod(walk + band, 4 * band) - 2 * band)  # reflected into ±band
    centre = np.asarray(regime_freqs, dtype=np.float64)[np.repeat(regime, window, axis=1)]
    f = centre + offset
    phase = 2 * np.pi * np.cumsum(f, axis=1) / window + rng.uniform(0, 2 * np.pi, (n_sequences, 1))
    x = np.sin(phase) + noise * rng.standard_normal((n_sequences, n))
    freq = f.reshape(n_sequences, windows, window).mean(-1)
    return x.astype(np.float32), regime, freq.astype(np.float32)


# ---------------------------------------------------------------------------------------------
# CPC (Sec. 3.1): encoder, one linear predictor per future step, InfoNCE
# ---------------------------------------------------------------------------------------------


class ConvEncoder1D(nn.Module):
    """Window [B, 1, L] -> z [B, channels[-1]]: Conv1d (same padding) -> LeakyReLU -> max-pool
    -> dropout, per layer, as the official ``ConvEncoder1D`` (synthetic run: channels
    16-32-64-128, kernels 9/7/3/3, pools 4/4/4/2, dropout 0.1 after all but the last layer).
    The pools must reduce the window to length 1."""

    def __init__(
        self,
        window: int,
        channels: tuple[int, ...],
        kernels: tuple[int, ...],
        pools: tuple[int, ...],
        dropout: float = 0.1,
    ):
        super().__init__()
        if not len(channels) == len(kernels) == len(pools):
            raise CompanionError(
                f"channels, kernels and pools need the same length, got {len(channels)}, "
                f"{len(kernels)}, {len(pools)}"
            )
        if math.prod(pools) != window:
            raise CompanionError(
                f"the product of pools {pools} must equal the window length {window}"
            )
        layers: list[nn.Module] = []
        c = 1
        for i, (w, k, p) in enumerate(zip(channels, kernels, pools)):
            layers += [nn.Conv1d(c, w, k, padding=k // 2), nn.LeakyReLU(), nn.MaxPool1d(p)]
            if dropout and i < len(channels) - 1:
                layers.append(nn.Dropout(dropout))
            c = w
        self.net = nn.Sequential(*layers)
        self.z_dim = c

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def cpc_scores(prediction: torch.Tensor, z_future: torch.Tensor, neg_samples: int) -> torch.Tensor:
    """Scores [B, B] of the predictions W_k c_t [B, d] against the true futures z_{t+k} [B, d]:
    f_k = exp(z_{t+k}ᵀ W_k c_t) (paper Eq. 1, temperature 1 as in the official config).

    Row i's positive is its own future (the diagonal). Its negatives are the futures of the
    other ``neg_samples`` anchors in its group of ``neg_samples + 1`` consecutive rows of the
    (shuffled) batch, random windows like the official "naive" negative sampling; the rest of
    the row is −∞, so exactly ``neg_samples`` negatives enter each softmax.
    """
    scores = prediction @ z_future.T
    group = torch.arange(len(scores), device=scores.device) // (neg_samples + 1)
    return scores.masked_fill(group[:, None] != group[None, :], float("-inf"))


def cpc_loss(
    predictors: nn.ModuleList, c: torch.Tensor, z_futures: torch.Tensor, neg_samples: int
) -> torch.Tensor:
    """InfoNCE *averaged* over the K future steps (a 1/K weight per step) and over the batch:
    ``z_futures`` [K, B, d] holds z_{t+1..t+K} of each anchor c_t [B, d]. Chance level is
    log(N+1).

    Two versions of the official code differ here. The ICML-time release (commit 13782a8,
    2023-05-09, ``losses/contrastive_losses.py`` lines 38 and 105) weighs each future step by
    1/K, which is followed here; a 2024 cleanup (commit b790350) sums the K steps instead
    (``torch.sum(loss_per_future_step, dim=-1)``). Both sum over the batch and divide by the
    batch size in ``experiments/run.py``, as the commitment and SOM losses are. The sum is K
    times this loss, so a weight β here acts as K·β would under the sum (the factor K on β).
    The full preset's β = 1e-5 is the yml's value under the paper-time 1/K average."""
    losses = [
        info_nce(cpc_scores(w_k(c), z_futures[k], neg_samples)) for k, w_k in enumerate(predictors)
    ]
    return torch.stack(losses).mean()


# ---------------------------------------------------------------------------------------------
# The SOM layer (Sec. 3.2): codebook on a grid, Gaussian neighbourhood, two losses
# ---------------------------------------------------------------------------------------------


class SOM(nn.Module):
    """A ``side × side`` self-organizing map in the latent space: codebook e_j ∈ R^d, node j at
    grid position (j // side, j % side). Initialized U(±√(1/d)) as the official
    ``SOMQuantizer``."""

    def __init__(self, side: int, z_dim: int):
        super().__init__()
        self.side = side
        bound = math.sqrt(1 / z_dim)
        self.codebook = nn.Parameter(torch.empty(side * side, z_dim).uniform_(-bound, bound))
        j = torch.arange(side * side)
        self.register_buffer("grid", torch.stack([j // side, j % side], 1).float())

    def distances(self, z: torch.Tensor) -> torch.Tensor:
        """Squared Euclidean distances ‖z_i − e_j‖² [B, N]."""
        return torch.cdist(z.float(), self.codebook.float()).pow(2)

    def bmu(self, z: torch.Tensor) -> torch.Tensor:
        """Best-matching unit k*(z) = argmin_j ‖z − e_j‖² [B]."""
        return self.distances(z).argmin(-1)

    def neighbourhood(self, k: torch.Tensor, sigma: float, omit_center: bool = True):
        """h_j = exp(−d²_grid(j, k*) / (2σ²)) [B, N]; with ``omit_center`` the weight of k*
        itself is 0, since the commitment loss covers it (official ``omit_center_weight``)."""
        d2 = (self.grid[None, :, :] - self.grid[k][:, None, :]).pow(2).sum(-1)
        h = torch.exp(-d2 / (2 * sigma**2))
        if omit_center:
            h = h.masked_fill(d2 == 0, 0.0)
        return h


def commitment_loss(z: torch.Tensor, codebook: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """L_commit = mean over the batch of mean_f (e_{k*} − z)²: gradients reach the encoder *and*
    the codebook (official ``commitment_loss``, ``detach_from_encoder=False``)."""
    return (codebook[k] - z).pow(2).mean(-1).mean()


def som_loss(z: torch.Tensor, codebook: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """L_SOM = mean over the batch of Σ_j h_j · mean_f (e_j − sg(z))²: z is detached, so only
    the neighbours move towards the sample (official ``SOM_loss``, ``detach_from_encoder``)."""
    d = (codebook[None, :, :] - z.detach()[:, None, :]).pow(2).mean(-1)  # [B, N]
    return (h * d).sum(-1).mean()


def sigma_schedule(progress: float, sigma_start: float, sigma_end: float) -> float:
    """σ decays exponentially from ``sigma_start`` (official: √N // 2, the grid's radius) to
    ``sigma_end`` as ``progress`` goes from 0 to 1 (official ``GaussianNeighbourhood``:
    σ_e = σ₀ exp(−e/τ) with τ = −n_epochs / ln(σ_end/σ₀), per epoch)."""
    return float(sigma_start * (sigma_end / sigma_start) ** min(max(progress, 0.0), 1.0))


# ---------------------------------------------------------------------------------------------
# Map metrics (Sec. 4): purity, NMI, smoothness, node-label error, topographic error
# ---------------------------------------------------------------------------------------------


def contingency(labels: np.ndarray, nodes: np.ndarray, n_labels: int, n_nodes: int) -> np.ndarray:
    """Counts [n_nodes, n_labels]: how many windows of each regime land on each node."""
    table = np.zeros((n_nodes, n_labels), dtype=np.int64)
    np.add.at(table, (np.asarray(nodes), np.asarray(labels)), 1)
    return table


def purity(table: np.ndarray) -> float:
    """Cluster purity: Σ_nodes max_r count(node, r) / N (1 when every node holds one regime)."""
    return float(table.max(1).sum() / table.sum())


def nmi(table: np.ndarray) -> float:
    """Normalized mutual information I(node; regime) / mean(H(node), H(regime)) of a
    contingency ``table`` [nodes, regimes] (scikit-learn's ``normalized_mutual_info_score``,
    arithmetic normalization); 0 when either variable is constant."""
    from sklearn.metrics import normalized_mutual_info_score

    counts = np.rint(np.asarray(table)).astype(np.int64)
    nodes, regimes = np.indices(counts.shape)
    node_of = np.repeat(nodes.ravel(), counts.ravel())
    regime_of = np.repeat(regimes.ravel(), counts.ravel())
    if len(np.unique(node_of)) < 2 or len(np.unique(regime_of)) < 2:
        return 0.0
    return float(normalized_mutual_info_score(regime_of, node_of))


def smoothness(bmus: np.ndarray, side: int) -> float:
    """The paper's L2-smoothness: the mean Euclidean grid distance between the best-matching
    units of consecutive windows, ``bmus`` [S, T] (per sequence, never across sequences).
    Lower is smoother; a map that puts every window on one node scores 0, so read it beside
    the topographic and frequency errors."""
    b = np.asarray(bmus)
    rows, cols = b // side, b % side
    step = np.hypot(np.diff(rows, axis=1), np.diff(cols, axis=1))
    return float(step.mean())


def node_labels(bmus: np.ndarray, values: np.ndarray, side: int) -> np.ndarray:
    """Each node's label [N]: the median of ``values`` (e.g. the frequency) of the training
    windows it holds, as the official ``SOMmap.calculate_som_mode(continuous_labels=True)``.
    A node that holds none takes the median of its labelled 4-neighbours (official: their
    mode), else the median of all labels."""
    bmus, values = np.asarray(bmus).ravel(), np.asarray(values, dtype=float).ravel()
    n = side * side
    labels = np.full(n, np.nan)
    for j in np.unique(bmus):
        labels[j] = np.median(values[bmus == j])
    filled = labels.copy()
    for j in np.flatnonzero(np.isnan(labels)):
        r, c = divmod(j, side)
        near = [
            rr * side + cc
            for rr, cc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1))
            if 0 <= rr < side and 0 <= cc < side
        ]
        known = labels[near][~np.isnan(labels[near])]
        filled[j] = np.median(known) if len(known) else np.median(values)
    return filled


def label_error(labels: np.ndarray, bmus: np.ndarray, values: np.ndarray) -> float:
    """The paper's synthetic-data score: mean squared error between each held-out window's
    value (its frequency) and the label of its best-matching node."""
    return float(np.mean((np.asarray(labels)[np.asarray(bmus).ravel()] - np.ravel(values)) ** 2))


def topographic_error(distances: np.ndarray, side: int) -> float:
    """Share of windows whose first and second best-matching units are not grid neighbours
    (4-neighbourhood, somperf's ``topographic_error`` with a square topology, as the official
    inference), from distances [B, N]."""
    order = np.argsort(distances, axis=1)[:, :2]
    first, second = order[:, 0], order[:, 1]
    gap = np.abs(first // side - second // side) + np.abs(first % side - second % side)
    return float((gap > 1).mean())
