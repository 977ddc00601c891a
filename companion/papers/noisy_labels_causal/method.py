"""Semi-supervised learning or modelling label noise, decided by the causal direction
(Yao, Gong, Du, Yu, Han, Zhang & Liu, ICML 2023, PMLR v202 yao23a).

Noisy labels Ỹ come from clean labels Y through a transition matrix T (Sec. 2):

    T_ij = P(Ỹ = j | Y = i),      P(Ỹ | X = x) = Tᵀ P(Y | X = x).

Two families of methods learn P(Y | X) from (X, Ỹ):

* **modelling label noise** (Forward, Patrini et al. 2017): estimate T, then fit the network so
  that Tᵀ softmax(f(x)) matches the noisy labels (:func:`forward_loss`). Nothing here uses P(X),
  so it works whatever generated the data. T is estimated from anchor points of a network trained
  on the noisy labels (:func:`anchor_transition`, the estimator in the official ``tools.fit``).
* **semi-supervised** (DivideMix and kin): keep the small-loss examples as labelled, treat the
  others as unlabelled (:func:`small_loss_selection`), and train on both (:func:`ssl_loss`).
  Unlabelled data help only when P(X) carries information about P(Y | X): when Y causes X
  (*anticausal*, Y → X), P(X) = Σ_y P(y) P(X | y) is a mixture whose components are the classes.
  When X causes Y (*causal*, X → Y), P(X) and P(Y | X) are independent mechanisms and P(X) says
  nothing about the boundary (Sec. 3).

The paper's test for an unknown direction (Sec. 4; official ``main_*.py``, ``kmeans.py``,
``run_dnl.py``, ``tools.py``):

1. Cluster X into C clusters (k-means), match clusters to noisy labels (Hungarian algorithm) and
   count T′_ij = #(Y′ = i, Ỹ = j) / #(Y′ = i) (:func:`cluster_transition`). If Y → X, the
   clusters are the classes and T′ ≈ T; if X → Y, the clusters are unrelated to Y.
2. Estimate T̂* by maximum likelihood: ``softmax``-Gumbel outputs of a network times a learned
   T = rownorm(I + sigmoid(W) ⊙ (1 − I)) (:class:`SigmoidTransition`, the official ``sig_t``),
   fitted to the noisy labels (:func:`cdnl_loss`).
3. err = Σ|T′ − T̂*| / (Σ|T̂*|)² (:func:`transition_error`, official ``tools.error``): small means
   anticausal (use the semi-supervised method), large means causal (model the noise). Since the
   denominator is C², the score is read relative to that of uninformative clusters for the same C
   (:func:`relative_error`); the official code prints err and applies no threshold.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from companion.errors import CompanionError, unknown

NOISE_TYPES = ("sym", "pair", "one_way")


# ---------------------------------------------------------------- data-generating processes
def anticausal_gaussian(
    n: int, dim: int, separation: float, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Y → X: Y ~ Bernoulli(½), then X | Y = y ~ N(±(separation/2)·𝟙/√d, I_d).

    The class means lie ``separation`` apart, so P(X) is a two-bump mixture whose valley is
    the Bayes boundary (the official ``get_Y_star`` uses class-conditional Gaussian densities)."""
    y = torch.randint(0, 2, (n,), generator=generator)
    direction = torch.ones(dim) / math.sqrt(dim)
    mean = (y.float() - 0.5)[:, None] * separation * direction
    return mean + torch.randn(n, dim, generator=generator), y


def causal_gaussian(
    n: int, dim: int, label_noise: float, generator: torch.Generator, w: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """X → Y: X ~ N(0, I_d), then Y = 𝟙[wᵀX + ε > 0] with ε ~ N(0, label_noise²), ‖w‖ = 1.

    P(X) is one round bump whatever w is: it carries no information about the boundary."""
    if w is None:
        w = torch.ones(dim) / math.sqrt(dim)
    x = torch.randn(n, dim, generator=generator)
    eps = label_noise * torch.randn(n, generator=generator)
    return x, (x @ w + eps > 0).long()


# ---------------------------------------------------------------- label noise
def transition_matrix(noise_type: str, rate: float, num_classes: int) -> torch.Tensor:
    """T_ij = P(Ỹ = j | Y = i). ``sym``: 1 − rate on the diagonal, rate/(C − 1) elsewhere (the
    official ``transition_matrix_generate``); ``pair``: class i flips to i + 1 (mod C) with
    probability ``rate``; ``one_way``: only the first half of the classes (i < C/2) flip, to
    i + 1, with probability ``rate`` (for two classes: 0 becomes 1, 1 stays). For two classes
    ``sym`` and ``pair`` are the same matrix; ``one_way`` is class-dependent, so that training
    on the noisy labels moves the boundary."""
    if noise_type not in NOISE_TYPES:
        raise unknown("noise type", noise_type, NOISE_TYPES)
    if not 0 <= rate < 0.5:
        raise CompanionError(
            f"noise rate must lie in [0, 0.5) (clusters are matched to the majority label), "
            f"got {rate}"
        )
    c = num_classes
    if noise_type == "sym":
        t = torch.full((c, c), rate / (c - 1))
        t[torch.arange(c), torch.arange(c)] = 1.0 - rate
        return t
    rows = torch.arange(c) if noise_type == "pair" else torch.arange(max(1, c // 2))
    t = torch.eye(c)
    t[rows, rows] = 1.0 - rate
    t[rows, (rows + 1) % c] = rate
    return t


def flip_labels(y: torch.Tensor, t: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Draw Ỹ ~ T[Y, :] for every example (class-conditional noise)."""
    return torch.multinomial(t[y], 1, generator=generator).squeeze(1)


def count_transition(rows: np.ndarray, noisy: np.ndarray, num_classes: int) -> np.ndarray:
    """M_ij = #(rows = i, noisy = j) / #(rows = i): the official ``count_m`` (a row with no
    example stays zero instead of dividing by zero)."""
    m = np.zeros((num_classes, num_classes))
    np.add.at(m, (np.asarray(rows, int), np.asarray(noisy, int)), 1.0)
    counts = m.sum(1, keepdims=True)
    return np.divide(m, counts, out=np.zeros_like(m), where=counts > 0)


# ---------------------------------------------------------------- the causal-direction test
def hungarian_match(clusters: np.ndarray, labels: np.ndarray, num_classes: int) -> np.ndarray:
    """``mapping[k]``: the label assigned to cluster k, maximising the number of agreements
    (official ``_hungarian_match``, from IIC)."""
    from scipy.optimize import linear_sum_assignment

    votes = np.zeros((num_classes, num_classes))
    np.add.at(votes, (np.asarray(clusters, int), np.asarray(labels, int)), 1.0)
    rows, cols = linear_sum_assignment(-votes)
    mapping = np.empty(num_classes, dtype=int)
    mapping[rows] = cols
    return mapping


def cluster_transition(
    x: np.ndarray, noisy: np.ndarray, num_classes: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Step 1 of the test: T′ from k-means clusters of X matched to the noisy labels.

    Returns (T′, Y′). The official code uses ``KMeans`` (UCI, Gaussians), ``MiniBatchKMeans``
    (MNIST) and SPICE self-supervised clusters (CIFAR-10)."""
    from sklearn.cluster import KMeans

    x = np.asarray(x, dtype=np.float64).reshape(len(x), -1)
    clusters = KMeans(num_classes, n_init=4, random_state=seed).fit_predict(x)
    y_prime = hungarian_match(clusters, noisy, num_classes)[clusters]
    return count_transition(y_prime, noisy, num_classes), y_prime


class SigmoidTransition(nn.Module):
    """T = rownorm(I + sigmoid(W) ⊙ (1 − I)), W₀ = −init (official ``sig_t``, init 2).

    The diagonal is fixed to 1 before normalising, so T stays diagonally dominant only while
    every sigmoid(W_ij) < 1; each row sums to one."""

    def __init__(self, num_classes: int, init: float = 2.0):
        super().__init__()
        self.w = nn.Parameter(torch.full((num_classes, num_classes), -float(init)))
        self.register_buffer("off_diagonal", 1.0 - torch.eye(num_classes))

    def forward(self) -> torch.Tensor:
        t = torch.eye(len(self.w), device=self.w.device) + torch.sigmoid(self.w) * self.off_diagonal
        return t / t.sum(1, keepdim=True)


def cdnl_probs(
    logits: torch.Tensor, t: torch.Tensor, gumbel: bool, tau: float = 1.0
) -> torch.Tensor:
    """P(Ỹ | x) = (clean probabilities)ᵀ T. In training the clean probabilities are a soft
    Gumbel-softmax sample (official ``run_dnl``: ``F.gumbel_softmax(clean, 1)``); for
    validation we use the plain softmax, so the chosen epoch does not depend on Gumbel noise."""
    clean = F.gumbel_softmax(logits, tau=tau) if gumbel else logits.softmax(-1)
    return clean @ t


def cdnl_loss(logits: torch.Tensor, noisy: torch.Tensor, t: torch.Tensor, gumbel: bool = True):
    """Negative log-likelihood of the noisy labels under :func:`cdnl_probs` (no volume term:
    the official ``lam`` is 0)."""
    return F.nll_loss(cdnl_probs(logits, t, gumbel).clamp_min(1e-12).log(), noisy)


def transition_error(t_prime, t_star) -> float:
    """err = Σ_ij |T′_ij − T̂*_ij| / (Σ_ij |T̂*_ij|)²  (official ``tools.error``).

    With a row-stochastic T̂* the denominator is C², so the score is the summed absolute
    difference divided by C², and one threshold does not fit every C: the official code prints
    this score and applies no threshold (a number from the paper's text is unverified here), so
    the decision here is made on :func:`relative_error`, scaled per number of classes."""
    t_prime, t_star = np.asarray(t_prime, float), np.asarray(t_star, float)
    return float(np.abs(t_prime - t_star).sum() / np.abs(t_star).sum() ** 2)


def uninformative_transition(noisy: np.ndarray, num_classes: int) -> np.ndarray:
    """The T′ of clusters that carry no information about the labels: every row is the share
    of each noisy label (what random clusters give on average, whatever the matching). The
    test's score is read relative to err(this, T̂*), the score of random clusters for the same
    number of classes (:func:`relative_error`)."""
    share = np.bincount(np.asarray(noisy, int), minlength=num_classes) / len(noisy)
    return np.tile(share, (num_classes, 1))


def relative_error(t_prime, t_star, noisy: np.ndarray) -> tuple[float, float]:
    """(err(T′, T̂*) / err(T′₀, T̂*), err(T′₀, T̂*)) with T′₀ the uninformative transition.

    err divides by (Σ|T̂*|)² = C², so its scale changes with the number of classes; relative to
    random clusters it is about 1 when the clusters say nothing about the labels and 0 when
    T′ = T̂*, for any C."""
    c = len(np.asarray(t_star))
    base = transition_error(uninformative_transition(noisy, c), t_star)
    return transition_error(t_prime, t_star) / max(base, 1e-12), base


# ---------------------------------------------------------------- modelling label noise
def anchor_transition(probs: torch.Tensor, percentile: float | None = 97.0) -> torch.Tensor:
    """Patrini et al.'s estimator of T from P(Ỹ | x) on training inputs (official ``tools.fit``).

    Row i of T̂ is P(Ỹ | x*) at the anchor x* = the example most confidently predicted as i:
    an anchor of class i has P(Y = i | x*) = 1, so P(Ỹ | x*) = T[i, :]. With ``percentile``
    the top 3% are treated as outliers and x* is the most confident of the rest (the official
    ``filter_outlier=True``)."""
    probs = torch.as_tensor(probs, dtype=torch.float64)
    t = torch.empty(probs.shape[1], probs.shape[1], dtype=torch.float64)
    for i in range(probs.shape[1]):
        col = probs[:, i].clone()
        if percentile is not None:
            threshold = torch.quantile(col, percentile / 100, interpolation="higher")
            col[col >= threshold] = 0.0
        t[i] = probs[col.argmax()]
    return t.float()


def forward_loss(logits: torch.Tensor, noisy: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """Forward correction: −log [Tᵀ softmax(f(x))]_ỹ, averaged over the batch."""
    noisy_probs = logits.softmax(-1) @ t
    return F.nll_loss(noisy_probs.clamp_min(1e-12).log(), noisy)


# ---------------------------------------------------------------- semi-supervised
def small_loss_selection(losses: torch.Tensor, noisy: torch.Tensor, ratio: float) -> torch.Tensor:
    """Boolean mask of the confident examples: within each noisy class, the ``ratio`` share
    with the smallest loss (small-loss trick; DivideMix fits a two-component GMM to the losses
    instead). Selecting per class keeps the labelled set balanced."""
    if not 0 < ratio <= 1:
        raise CompanionError(f"selection ratio must lie in (0, 1], got {ratio}")
    keep = torch.zeros(len(losses), dtype=torch.bool)
    for c in noisy.unique():
        rows = (noisy == c).nonzero().squeeze(1)
        k = max(1, round(ratio * len(rows)))
        keep[rows[losses[rows].argsort()[:k]]] = True
    return keep


def ssl_loss(
    logits: torch.Tensor,
    noisy: torch.Tensor,
    labelled: torch.Tensor,
    lambda_u: float,
    lambda_r: float = 0.0,
) -> torch.Tensor:
    """Cross-entropy on the labelled (confident) rows plus ``lambda_u`` × the entropy of the
    predictions on the unlabelled rows (entropy minimisation, Grandvalet & Bengio 2005): it
    moves the boundary away from unlabelled points, into regions of low density of P(X).
    ``lambda_r`` weighs DivideMix's uniform-prior regulariser Σ_c π_c log(π_c / p̄_c), with π
    uniform and p̄ the mean prediction on the unlabelled rows: without it, entropy minimisation
    can put every unlabelled point in one class. Each term is a mean over its own rows; an
    empty part contributes zero."""
    zero = logits.sum() * 0.0
    sup = F.cross_entropy(logits[labelled], noisy[labelled]) if labelled.any() else zero
    unl = ~labelled
    if not unl.any() or (lambda_u == 0 and lambda_r == 0):
        return sup
    logp = logits[unl].log_softmax(-1)
    entropy = -(logp.exp() * logp).sum(-1).mean()
    loss = sup + lambda_u * entropy
    if lambda_r:
        c = logits.shape[-1]
        mean_p = logp.exp().mean(0).clamp_min(1e-12)
        loss = loss + lambda_r * (torch.log(torch.tensor(1.0 / c)) - mean_p.log()).mean()
    return loss
