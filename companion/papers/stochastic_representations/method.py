"""The method: long-tailed data, SWA and SWA-Gaussian (SWAG) moments of a feature extractor,
stochastic representations drawn from SWAG, and classifier re-training on them with
self-distillation (Nam, Jang & Lee, ICLR 2023, Sections 3-4).

Equations (the paper's Section 4 recipe is reconstructed, see ``retraining_loss``):

* long tail (the CIFAR-LT profile): class ``c`` of ``C`` keeps ``n_c = ⌊n_max · ρ^(−c/(C−1))⌋``;
* SWA (Izmailov et al., 2018): ``θ̄ = (1/T) Σ_t θ_t`` over snapshots of a constant-rate run;
* SWAG (Maddox et al., 2019, Eq. 1-3): running first and second moments ``θ̄``, ``\\overline{θ²}``,
  the diagonal ``Σ_diag = \\overline{θ²} − θ̄²`` and the last ``K`` deviations
  ``D = [θ_t − θ̄_t]``; a draw is
  ``θ̃ = θ̄ + (1/√2) Σ_diag^{1/2} z₁ + (1/√(2(K−1))) D z₂``, ``z₁ ~ N(0, I_P)``, ``z₂ ~ N(0, I_K)``;
* stochastic representations: ``φ(x; θ̃_s)``, s = 1..S, the features of one image under S
  feature extractors drawn from SWAG (the classifier ``g`` is re-trained, the extractor is not);
* self-distillation "from SWAG into SWA": the teacher is the classifier's mean prediction over the
  stochastic representations, ``p̄_T(x) = (1/S) Σ_s softmax(g(φ(x; θ̃_s)) / T)``, whose spread
  carries the extractor's uncertainty; the student is the same classifier on the SWA features
  ``softmax(g(φ(x; θ̄)) / T)``.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from companion.core.metrics import ece as _ece
from companion.errors import CompanionError

ECE_BINS = 15  # equal-width bins of the top-class confidence (Guo et al., 2017), fixed


# ------------------------------------------------------------------------------------------
# Long-tailed data
# ------------------------------------------------------------------------------------------


def long_tail_counts(n_max: int, imbalance: float, classes: int) -> list[int]:
    """Images per class: ``n_c = ⌊n_max · imbalance^(−c/(C−1))⌋`` (at least 1), so class 0 is
    the head with ``n_max`` and class C−1 the tail with ``n_max / imbalance``."""
    if n_max < 1 or imbalance < 1 or classes < 2:
        raise CompanionError(
            f"need n_max >= 1, imbalance >= 1, classes >= 2; got {n_max}, {imbalance}, {classes}"
        )
    return [max(1, int(n_max * imbalance ** (-c / (classes - 1)))) for c in range(classes)]


def long_tail_subset(labels: torch.Tensor, counts: list[int], seed: int) -> torch.Tensor:
    """Rows of a long-tailed subset: per class ``c``, the first ``counts[c]`` of a seeded
    shuffle (NumPy's generator, the same on every CPU)."""
    order = np.random.default_rng(seed).permutation(len(labels))
    y = labels.numpy()[order]
    rows = []
    for c, n in enumerate(counts):
        have = order[y == c]
        if len(have) < n:
            raise CompanionError(f"class {c} has {len(have)} images, fewer than {n}")
        rows.append(have[:n])
    return torch.from_numpy(np.sort(np.concatenate(rows)))


def shot_groups(counts: list[int], many: int, few: int) -> dict[str, list[int]]:
    """Classes by training count: many-shot (> ``many`` images), few-shot (< ``few``) and
    medium-shot (the rest), as in the long-tail literature (many > 100, few < 20 at paper
    scale; the thresholds are scaled with the data)."""
    if few > many:
        raise CompanionError(f"few ({few}) must not exceed many ({many})")
    groups = {"many": [], "medium": [], "few": []}
    for c, n in enumerate(counts):
        groups["many" if n > many else "few" if n < few else "medium"].append(c)
    return groups


def class_balanced_batches(
    labels: torch.Tensor, classes: int, batch_size: int, steps: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """Class-balanced sampling (cRT, Kang et al., 2020): each row of a batch first draws a class
    uniformly, then an image of that class uniformly, with replacement."""
    by_class = [np.flatnonzero(labels.numpy() == c) for c in range(classes)]
    if any(len(rows) == 0 for rows in by_class):
        raise CompanionError("class-balanced sampling needs every class in the training set")
    batches = []
    for _ in range(steps):
        picks = rng.integers(0, classes, batch_size)
        batches.append(np.array([by_class[c][rng.integers(len(by_class[c]))] for c in picks]))
    return batches


# ------------------------------------------------------------------------------------------
# Portable initialisation (NumPy draws: the same weights on every CPU)
# ------------------------------------------------------------------------------------------


class SGD:
    """SGD with momentum and weight decay, PyTorch's update written out (``torch.optim.SGD``
    with ``dampening=0``, ``nesterov=False``): ``d = g + wd·θ``; ``b ← μ·b + d`` (``b = d`` at
    the first step); ``θ ← θ − lr·b``. Written here because importing ``torch.optim`` loads
    torch's compiler (about a second), a large share of a notebook's smoke budget; a unit test
    checks it against ``torch.optim.SGD``."""

    def __init__(self, params, lr: float, momentum: float = 0.0, weight_decay: float = 0.0):
        self.params = [p for p in params]
        self.lr, self.momentum, self.weight_decay = lr, momentum, weight_decay
        self.buffers: list[torch.Tensor | None] = [None] * len(self.params)

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        for i, p in enumerate(self.params):
            if p.grad is None:
                continue
            d = p.grad + self.weight_decay * p if self.weight_decay else p.grad
            if self.momentum:
                b = self.buffers[i]
                b = d.clone() if b is None else b.mul_(self.momentum).add_(d)
                self.buffers[i] = b
                d = b
            p.sub_(self.lr * d)


# ------------------------------------------------------------------------------------------
# SWA and SWAG
# ------------------------------------------------------------------------------------------


def flat_parameters(module: nn.Module) -> torch.Tensor:
    """All parameters of ``module`` as one detached vector θ (the order of ``parameters()``)."""
    return torch.cat([p.detach().reshape(-1) for p in module.parameters()]).clone()


def load_flat_parameters(module: nn.Module, theta: torch.Tensor) -> nn.Module:
    """Write the vector ``theta`` into ``module``'s parameters (inverse of
    :func:`flat_parameters`); returns the module."""
    torch.nn.utils.vector_to_parameters(
        theta.to(next(module.parameters()).dtype), module.parameters()
    )
    return module


@dataclasses.dataclass
class SWAGMoments:
    """SWAG's running statistics of snapshots θ_1..θ_n (Maddox et al., 2019, Section 3):
    ``mean`` θ̄, ``sq_mean`` the mean of θ², and ``deviations`` D, the last ``rank`` rows
    ``θ_t − θ̄_t`` (each taken against the mean *after* adding θ_t, as the official
    ``collect_model`` does)."""

    mean: torch.Tensor
    sq_mean: torch.Tensor
    deviations: torch.Tensor  # [≤ rank, P]
    n: int
    rank: int

    @classmethod
    def empty(cls, num_params: int, rank: int, dtype=torch.float64) -> SWAGMoments:
        if rank < 2:
            raise CompanionError(f"SWAG needs a deviation rank K >= 2, got {rank}")
        z = torch.zeros(num_params, dtype=dtype)
        return cls(z.clone(), z.clone(), torch.zeros(0, num_params, dtype=dtype), 0, rank)

    def collect(self, theta: torch.Tensor) -> None:
        """Add a snapshot: θ̄ ← (nθ̄ + θ)/(n+1), \\overline{θ²} ← (n\\overline{θ²} + θ²)/(n+1),
        append θ − θ̄ to D and keep the last K rows."""
        theta = theta.to(self.mean.dtype)
        n = self.n
        self.mean = self.mean * n / (n + 1) + theta / (n + 1)
        self.sq_mean = self.sq_mean * n / (n + 1) + theta**2 / (n + 1)
        self.deviations = torch.cat([self.deviations, (theta - self.mean)[None]])[-self.rank :]
        self.n = n + 1

    @property
    def variance(self) -> torch.Tensor:
        """Σ_diag = \\overline{θ²} − θ̄², clamped at 1e-30 as in the official code."""
        return torch.clamp(self.sq_mean - self.mean**2, min=1e-30)

    def sample(self, rng: np.random.Generator, scale: float = 0.5) -> torch.Tensor:
        """One draw θ̃ = θ̄ + √scale · (Σ_diag^{1/2} z₁ + D z₂ / √(K−1)) (``scale = 0.5`` is the
        paper's Eq. with its 1/√2); z₁, z₂ come from NumPy's generator ``rng``."""
        k = len(self.deviations)
        if k < 2:
            raise CompanionError(f"SWAG has {k} deviation(s); collect at least 2 snapshots")
        z1 = torch.from_numpy(rng.standard_normal(len(self.mean))).to(self.mean.dtype)
        z2 = torch.from_numpy(rng.standard_normal(k)).to(self.mean.dtype)
        noise = self.variance.sqrt() * z1 + self.deviations.T @ z2 / math.sqrt(k - 1)
        return self.mean + math.sqrt(scale) * noise

    def to_dict(self) -> dict:
        return {
            "mean": self.mean.tolist(),
            "sq_mean": self.sq_mean.tolist(),
            "deviations": self.deviations.tolist(),
            "n": self.n,
            "rank": self.rank,
        }


# ------------------------------------------------------------------------------------------
# Stochastic representations and the re-training objective
# ------------------------------------------------------------------------------------------


@torch.no_grad()
def features(extractor: nn.Module, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """φ(x; θ): the extractor's output with its parameters set to the vector θ."""
    load_flat_parameters(extractor, theta)
    return extractor(x.to(theta.dtype))


@torch.no_grad()
def stochastic_representations(
    extractor: nn.Module,
    moments: SWAGMoments,
    x: torch.Tensor,
    num_samples: int,
    rng: np.random.Generator,
    scale: float = 0.5,
) -> torch.Tensor:
    """``[S, N, d]``: φ(x; θ̃_s) for S extractors θ̃_s drawn from SWAG (one draw serves every
    image, as one sampled network does)."""
    return torch.stack(
        [features(extractor, moments.sample(rng, scale), x) for _ in range(num_samples)]
    )


def distillation_target(logits_samples: torch.Tensor, temperature: float) -> torch.Tensor:
    """The teacher p̄_T(x) = (1/S) Σ_s softmax(z_s / T) from logits ``[S, B, C]``: the mean
    prediction over the stochastic representations (its entropy grows where they disagree)."""
    return torch.softmax(logits_samples / temperature, dim=-1).mean(0)


def retraining_loss(
    head: nn.Module,
    z_samples: torch.Tensor,
    z_mean: torch.Tensor,
    y: torch.Tensor,
    distill_weight: float,
    temperature: float,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Classifier re-training on stochastic representations with self-distillation
    (reconstructed: the paper's exact loss was not available):

        L = (1/S) Σ_s CE(g(φ(x; θ̃_s)), y) + λ T² KL(p̄_T(x) ‖ softmax(g(φ(x; θ̄)) / T)),

    ``z_samples`` ``[S, B, d]`` the stochastic representations of the batch, ``z_mean``
    ``[B, d]`` its SWA features; the teacher p̄_T is detached. λ = 0 leaves stochastic
    re-training alone; S = 1 with θ̃ = θ̄ and λ = 0 is plain classifier re-training."""
    s, b, _ = z_samples.shape
    logits = head(z_samples)  # [S, B, C]
    ce = F.cross_entropy(logits.reshape(s * b, -1), y.repeat(s))
    if distill_weight == 0:
        return ce, {"ce": float(ce.detach())}
    teacher = distillation_target(logits.detach(), temperature)
    student = F.log_softmax(head(z_mean) / temperature, dim=-1)
    kl = F.kl_div(student, teacher, reduction="batchmean")
    loss = ce + distill_weight * temperature**2 * kl
    return loss, {"ce": float(ce.detach()), "kl": float(kl.detach())}


# ------------------------------------------------------------------------------------------
# Measurements
# ------------------------------------------------------------------------------------------


def expected_calibration_error(probs: torch.Tensor, labels: torch.Tensor) -> float:
    """ECE with :data:`ECE_BINS` equal-width confidence bins: Σ_b (n_b/N)|acc_b − conf_b|."""
    return _ece(probs.double().numpy(), labels.numpy(), bins=ECE_BINS)


def group_accuracy(
    probs: torch.Tensor, labels: torch.Tensor, groups: dict[str, list[int]]
) -> dict[str, float]:
    """Mean per-class accuracy over all classes (``"all"``) and within each shot group: every
    class weighs the same, whatever its number of test images."""
    hit = (probs.argmax(1) == labels).double()
    per_class = {c: float(hit[labels == c].mean()) for c in labels.unique().tolist()}
    out = {"all": float(np.mean(list(per_class.values())))}
    for name, classes in groups.items():
        out[name] = float(np.mean([per_class[c] for c in classes])) if classes else float("nan")
    return out
