"""The paper's method: Gaussian dropout and the estimators of an information plane.

Everything is in nats (natural logarithms). Notation as in the paper: ``X`` is the input, ``Y``
the label, ``f(x)`` the noiseless activations of the layer that carries dropout, and
``Z = f(X) ⊙ D`` the representation after Gaussian dropout, ``D_i ~ N(1, σ²)`` independent.

* :class:`GaussianDropout`: multiplicative ``N(1, σ²)`` noise with ``σ² = p / (1 − p)``
  (Srivastava et al., 2014), applied in training mode only.
* :func:`dropout_mutual_information`: the paper's estimator, ``I(X;Z) = h(Z) − h(Z|X)``
  with ``h(Z|X)`` in closed form and ``h(Z)`` by Monte Carlo under the Gaussian mixture that
  ``Z`` follows when ``X`` is uniform over a dataset.
* :func:`mixture_label_information` and :func:`cross_entropy_bound`: two ways to get
  ``I(Z;Y)``: the same mixture estimator (``h(Z) − h(Z|Y)``), and the variational lower bound
  ``H(Y) − cross-entropy`` that the network's own classifier head gives.
* :func:`binned_mutual_information`: the binning estimator used for deterministic networks
  (Shwartz-Ziv & Tishby, 2017), whose value depends on the number of bins.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from companion.errors import CompanionError

LOG_SQRT_2PI_E = 0.5 * math.log(2 * math.pi * math.e)  # h(N(0, 1)) in nats


def gaussian_dropout_std(p: float) -> float:
    """σ of Gaussian dropout that matches Bernoulli dropout with drop rate ``p``.

    Srivastava et al. (2014) replace a Bernoulli mask (rescaled by 1/(1−p)) by ``N(1, σ²)``
    noise of the same mean and variance: ``σ² = p / (1 − p)``. ``p / (1 − p)`` is the
    *variance*; the official code uses it as a standard deviation.
    """
    if not 0 <= p < 1:
        raise CompanionError(f"dropout rate p={p!r} is not valid; valid: 0 <= p < 1")
    return math.sqrt(p / (1 - p))


class GaussianDropout(nn.Module):
    """``x ⊙ ε`` with ``ε ~ N(1, σ²)`` per unit in training mode; the identity in eval mode.

    ``E[ε] = 1``, so no rescaling is needed at evaluation (unlike Bernoulli dropout).
    """

    def __init__(self, p: float):
        super().__init__()
        self.p = p
        self.sigma = gaussian_dropout_std(p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.sigma == 0:
            return x
        return x * (1 + self.sigma * torch.randn_like(x))

    def extra_repr(self) -> str:
        return f"p={self.p}, sigma={self.sigma:.4f}"


class DropoutNetwork(nn.Module):
    """``head(dropout(body(x)))``: the representation ``f(x) = body(x)`` carries the dropout.

    ``representation(x)`` gives the noiseless ``f(x)`` whose noisy version ``Z`` the estimators
    measure; ``head`` is the rest of the network, a decoder of ``Z`` (used for the
    ``H(Y) − cross-entropy`` bound). With ``p = 0`` this is the deterministic network.
    """

    def __init__(self, body: nn.Module, width: int, num_classes: int, p: float):
        super().__init__()
        self.body = body
        self.dropout = GaussianDropout(p)
        self.head = nn.Linear(width, num_classes)

    def representation(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.dropout(self.body(x)))


def softplus_mlp(in_features: int, hidden: tuple[int, ...]) -> nn.Sequential:
    """Linear + softplus layers, as in the official MNIST network (784-512-128-32, softplus).

    Softplus rather than ReLU: a unit that is exactly 0 has ``Z_i = 0 · D_i = 0`` with no noise,
    which makes ``h(Z|X) = −∞`` and ``I(X;Z)`` infinite again; softplus is never 0.
    """
    layers: list[nn.Module] = [nn.Flatten()]
    width = in_features
    for h in hidden:
        layers += [nn.Linear(width, h), nn.Softplus()]
        width = h
    return nn.Sequential(*layers)


# --- I(X;Z) under Gaussian dropout: the paper's estimator ---------------------------------------


def conditional_entropy(f: torch.Tensor, sigma: float) -> float:
    """``h(Z|X)`` for ``Z = f(X) ⊙ D``, ``D_i ~ N(1, σ²)``, X uniform over the rows of ``f``.

    Given ``X = x``, each ``Z_i = f_i(x) D_i`` is Gaussian with standard deviation
    ``σ |f_i(x)|``, so ``h(Z|X=x) = Σ_i log(√(2πe) σ |f_i(x)|)`` exactly, and ``h(Z|X)`` is
    its mean over the dataset. A unit with ``f_i(x) = 0`` gives ``−∞`` (Z is deterministic
    there, and ``I(X;Z)`` is infinite).
    """
    f = f.double()
    return (f.shape[1] * (LOG_SQRT_2PI_E + math.log(sigma)) + f.abs().log().sum(1).mean()).item()


def diagonal_mixture_log_density(
    z: torch.Tensor,
    means: torch.Tensor,
    stds: torch.Tensor,
    exclude: torch.Tensor | None = None,
    chunk_entries: int = 1 << 24,
) -> torch.Tensor:
    """``log p(z)`` for the equal-weight mixture ``p = (1/M) Σ_m N(means_m, diag(stds_m²))``.

    ``z`` [S, d], ``means`` and ``stds`` [M, d] → [S]. ``exclude`` [S] (optional): for sample
    s, leave component ``exclude[s]`` out (a mixture of the other M − 1). The squared
    Mahalanobis distances come from two matrix products (``Σ_i (z_i − μ_i)² / s_i²``
    expanded), in float64, a chunk of samples at a time so that at most ``chunk_entries``
    sample-component pairs are held in memory.
    """
    means, stds = means.double(), stds.double()
    inv_var = stds.pow(-2)  # [M, d]
    # log N(z; μ, diag s²) = −½ z²·(1/s²) + z·(μ/s²) + [−½ μ²·(1/s²) − Σ log s − (d/2) log 2π]
    quad_weight = -0.5 * inv_var.T  # [d, M]
    cross_weight = (means * inv_var).T  # [d, M]
    bias = (
        -0.5 * (means.pow(2) * inv_var).sum(1)
        - stds.log().sum(1)
        - 0.5 * means.shape[1] * math.log(2 * math.pi)
    )  # [M]
    chunk = max(1, chunk_entries // len(means))
    out = []
    for start in range(0, len(z), chunk):
        part = z[start : start + chunk].double()
        log_comp = torch.addmm(bias, part.pow(2), quad_weight).addmm_(part, cross_weight)
        if exclude is not None:
            own = exclude[start : start + chunk].to(z.device)
            log_comp[torch.arange(len(part), device=z.device), own] = -math.inf
        out.append(torch.logsumexp(log_comp, dim=1))
    n_used = len(means) - (exclude is not None)
    return torch.cat(out) - math.log(n_used)


def sample_dropout_representation(
    f: torch.Tensor, sigma: float, n_samples: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """``n_samples`` draws of ``Z = f(X) ⊙ D`` with X uniform over the rows of ``f``.

    Rows are visited in a random order, cycling (``n_samples = k · N`` draws every input k
    times: stratified sampling, lower variance than drawing X at random). Returns ``(z, rows)``.
    """
    n = len(f)
    order = torch.randperm(n, generator=generator).to(f.device)
    rows = order.repeat(-(-n_samples // n))[:n_samples]
    noise = torch.randn(n_samples, f.shape[1], generator=generator, dtype=torch.float64)
    z = f[rows].double() * (1 + sigma * noise.to(f.device))
    return z, rows


class MIEstimate(NamedTuple):
    mi: float  # I(X;Z) = h(Z) − h(Z|X), nats
    h_z: float
    h_z_given_x: float
    component_rows: torch.Tensor | None = None  # rows of f that are the mixture's means; None: all


def pick_components(
    n: int, components: int, generator: torch.Generator, device=None
) -> torch.Tensor | None:
    """The rows of the N inputs whose ``f(x)`` are the mixture's means: ``components = M`` of
    them at random (without replacement), or ``None`` (all N) when M is 0 or at least N."""
    if not 0 < components < n:
        return None
    return torch.randperm(n, generator=generator)[:components].to(device)


def dropout_mutual_information(
    f: torch.Tensor,
    sigma: float,
    n_samples: int | None = None,
    components: int = 0,
    generator: torch.Generator | None = None,
    samples: tuple[torch.Tensor, torch.Tensor] | None = None,
    component_rows: torch.Tensor | None = None,
) -> MIEstimate:
    """The paper's estimator of ``I(X;Z)`` for a Gaussian-dropout layer.

    X is uniform over the N rows of ``f`` (the dataset), so Z is the Gaussian mixture
    ``p(z) = (1/N) Σ_n N(f(x_n), σ² diag(f(x_n)²))``. Then

    * ``h(Z|X)`` is exact (:func:`conditional_entropy`);
    * ``h(Z) ≈ −(1/S) Σ_s log p(z_s)``, ``z_s`` drawn from that mixture: Monte Carlo over
      ``S = n_samples`` (default N) samples, unbiased for any S, its spread shrinking as 1/√S.

    Two settings change the estimate itself, not only its noise: the dataset (its size N),
    and ``components = M``: ``p`` evaluated with M randomly chosen means instead of all N, for
    samples drawn from all N inputs (the official code uses the first 1,000, to make a
    60,000-point dataset affordable). A sample whose own input is not among the M means is
    then scored out of sample, as in the leave-one-out estimate, so M < N gives a larger
    value. 0 uses all N. ``component_rows`` (optional) fixes which rows are the means, e.g.
    to share them with :func:`mixture_label_information`; the rows used are returned.
    ``samples``: reuse ``(z, rows)`` from :func:`sample_dropout_representation`.

    The official routine (``mi_estimators/dropout_MI.py``) differs in two ways not copied
    here: its mixture covariance is ``(p/(1−p)) · diag |f(x)|`` rather than
    ``σ² diag f(x)²``, and it scores the samples in whole blocks of 10,000, dropping the
    remainder, so with fewer than 10,000 samples it divides by zero (``ZeroDivisionError``).
    """
    generator = generator or torch.Generator().manual_seed(0)
    if samples is None:
        samples = sample_dropout_representation(f, sigma, n_samples or len(f), generator)
    z, _ = samples
    if component_rows is None:
        component_rows = pick_components(len(f), components, generator, f.device)
    means = (f if component_rows is None else f[component_rows]).double()
    h_z = -diagonal_mixture_log_density(z, means, sigma * means.abs()).mean().item()
    h_zx = conditional_entropy(f, sigma)
    return MIEstimate(h_z - h_zx, h_z, h_zx, component_rows)


def mixture_label_information(
    f: torch.Tensor,
    y: torch.Tensor,
    sigma: float,
    samples: tuple[torch.Tensor, torch.Tensor],
    h_z: float | None = None,
    component_rows: torch.Tensor | None = None,
) -> float:
    """``I(Z;Y) = h(Z) − Σ_y P(y) h(Z|Y=y)`` with the same mixture estimator.

    Given ``Y = y``, Z is the mixture over the class-y members of the mixture's means; each
    ``h(Z|Y=y)`` is the Monte Carlo average of ``−log p(z|y)`` over the samples drawn from
    class-y inputs, and ``P(y)`` is the share of those samples. ``component_rows``: the rows
    of ``f`` that are the means (None: all N), the same for ``h(Z)`` and every ``h(Z|Y=y)``.
    Since ``p(z) >= P(y) p(z|y)`` for one and the same mixture, the estimate is at most
    ``H(Y)`` (up to the small mismatch between the classes' shares among the samples and
    among the means when M < N). Pass ``h_z`` from :func:`dropout_mutual_information` on the
    same samples and the same ``component_rows`` to skip recomputing it.
    """
    z, rows = samples
    f = f.double()
    y = y.to(f.device)
    labels = y[rows]
    means_rows = torch.arange(len(f), device=f.device) if component_rows is None else component_rows
    means, mean_labels = f[means_rows], y[means_rows]
    if h_z is None:
        h_z = -diagonal_mixture_log_density(z, means, sigma * means.abs()).mean().item()
    h_z_given_y = 0.0
    for c in torch.unique(labels):
        class_means = means[mean_labels == c]
        if len(class_means) == 0:
            raise CompanionError(
                f"class {int(c)} has no mixture component among the {len(means)} used; "
                "valid: components = 0 (all inputs) or enough for every class"
            )
        picked = labels == c
        log_p = diagonal_mixture_log_density(z[picked], class_means, sigma * class_means.abs())
        h_z_given_y -= picked.double().mean().item() * log_p.mean().item()
    return h_z - h_z_given_y


def label_entropy(y: torch.Tensor) -> float:
    """``H(Y)`` of the empirical label distribution (nats)."""
    p = torch.bincount(y).double() / len(y)
    p = p[p > 0]
    return -(p * p.log()).sum().item()


def cross_entropy_bound(logits: torch.Tensor, y: torch.Tensor) -> float:
    """``H(Y) − CE``: a lower bound on ``I(Z;Y)`` when ``logits`` are computed from noisy Z.

    For any decoder ``q(y|z)``, ``I(Z;Y) = H(Y) − H(Y|Z) ≥ H(Y) − E[−log q(Y|Z)]``; the layers
    after Z are such a decoder, and their cross-entropy on noisy Z is its Monte Carlo estimate.
    """
    return label_entropy(y) - F.cross_entropy(logits.double(), y.to(logits.device)).item()


# --- binning, for deterministic networks --------------------------------------------------------


def bin_representation(t: torch.Tensor, n_bins: int) -> torch.Tensor:
    """Each activation replaced by the index of its bin: ``n_bins`` equal-width bins spanning
    ``[min, max]`` of the whole layer (as in Shwartz-Ziv & Tishby, 2017 and the official code).
    """
    if n_bins < 1:
        raise CompanionError(f"n_bins={n_bins!r} is not valid; valid: an integer >= 1")
    lo, hi = t.min(), t.max()
    width = (hi - lo).clamp_min(torch.finfo(t.dtype).tiny) / n_bins
    return ((t - lo) / width).floor().clamp_(0, n_bins - 1).long()


def row_ids(codes: torch.Tensor) -> torch.Tensor:
    """An integer id per row of the non-negative integer matrix ``codes`` [N, d], equal ids for
    equal rows (an exact, faster equivalent of ``unique(dim=0)``).

    Columns are folded into one integer key (``key · base + column``); before the key could
    overflow int64 it is renumbered to ``0 .. K−1`` (K <= N distinct rows so far).
    """
    ids = torch.zeros(len(codes), dtype=torch.long, device=codes.device)
    key_range = 1
    for column in codes.T:
        base = int(column.max()) + 1
        if key_range * base >= 1 << 62:
            ids = torch.unique(ids, return_inverse=True)[1]
            key_range = int(ids.max()) + 1
        ids = ids * base + column
        key_range *= base
    return torch.unique(ids, return_inverse=True)[1]


def discrete_entropy(ids: torch.Tensor) -> float:
    """Plug-in entropy (nats) of the empirical distribution of the integer symbols ``ids``."""
    p = torch.bincount(ids).double() / len(ids)
    p = p[p > 0]
    return -(p * p.log()).sum().item()


def binned_mutual_information(t: torch.Tensor, y: torch.Tensor, n_bins: int) -> tuple[float, float]:
    """Binning estimates ``(I(X;T), I(T;Y))`` for a deterministic representation ``t = f(x)``.

    X is uniform over the N (distinct) inputs and the binned ``T`` is a function of X, so
    ``H(T|X) = 0`` and ``I(X;T) = H(T)``: from 0 (one bin) up to ``log N`` (every input in its
    own bin). ``I(T;Y) = H(T) − Σ_y P(y) H(T|Y=y)``.
    """
    ids = row_ids(bin_representation(t.double(), n_bins))
    h_t = discrete_entropy(ids)
    # H(T|Y) = H(T, Y) − H(Y): the joint symbol of (bin pattern, label)
    y = y.to(ids.device)
    h_ty = discrete_entropy(ids * (int(y.max()) + 1) + y)
    return h_t, h_t - (h_ty - discrete_entropy(y))
