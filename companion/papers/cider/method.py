"""CIDER's objects: EMA class prototypes on the unit hypersphere, the dispersion and compactness
losses, SupCon (the baseline), the KNN distance score, and the angles that measure the geometry.

Paper: Ming, Sun, Dia & Li, "How to Exploit Hyperspherical Embeddings for Out-of-Distribution
Detection?", ICLR 2023, Sec. 3 (Eqs. for L_dis, L_comp and the prototype update). Official code:
deeplearning-wisc/cider, ``utils/losses.py`` (``DisLoss``, ``CompLoss``, ``SupConLoss``),
``train_cider.py`` (the total loss) and ``eval_ood.py`` (KNN score with faiss).

Notation: z = normalise(head(h)) is the embedding on the unit sphere S^{d−1}, h the encoder's
penultimate feature, μ_c the prototype of class c, τ the temperature, C the number of classes.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from companion.errors import CompanionError

# CompLoss keeps SupCon's base temperature 0.07 while τ = 0.1, so compactness is scaled by
# τ/τ_b ≈ 1.43 in the official code (train_cider.py builds CompLoss(temperature=args.temp)).
BASE_TEMPERATURE = 0.07


def init_prototypes(z: torch.Tensor, labels: torch.Tensor, num_classes: int) -> torch.Tensor:
    """μ_c = normalise(mean of z over the class-c training samples) [C, d]: how ``DisLoss``
    starts (``init_class_prototypes``: the model in eval mode, the test transform)."""
    sums = torch.zeros(num_classes, z.shape[1], dtype=z.dtype, device=z.device)
    sums.index_add_(0, labels, z)
    counts = torch.bincount(labels, minlength=num_classes)
    if (counts == 0).any():
        missing = torch.nonzero(counts == 0).flatten().tolist()
        raise CompanionError(f"no training sample of class(es) {missing} to start a prototype")
    return F.normalize(sums / counts[:, None].to(z.dtype), dim=1)


def ema_update(
    prototypes: torch.Tensor, z: torch.Tensor, labels: torch.Tensor, alpha: float
) -> torch.Tensor:
    """The prototype update, one sample at a time in batch order (paper Sec. 3):

        μ_c ← normalise(α μ_c + (1 − α) z_n)   for every sample n of class c.

    ``DisLoss.forward`` loops over the 2B samples of a batch in Python. Samples of different
    classes touch different rows, so this runs *round by round*: round r updates every class
    with its r-th sample of the batch, all classes at once. That is the same sequence of
    operations per class (exactly the loop's result) in max-count rounds instead of 2B steps.

    The result keeps the autograd graph to ``z`` (as the official in-place update does): the
    dispersion loss computed on it sends gradient back into the encoder.
    """
    if not 0 <= alpha < 1:
        raise CompanionError(f"alpha (prototype momentum) must lie in [0, 1), got {alpha}")
    labels = labels.long()
    order = torch.argsort(labels, stable=True)  # samples grouped by class, batch order within
    sorted_labels = labels[order]
    counts = torch.bincount(sorted_labels, minlength=len(prototypes))
    starts = torch.cumsum(counts, 0) - counts
    rank = torch.arange(len(labels), device=labels.device) - starts[sorted_labels]
    mu = prototypes
    for r in range(int(counts.max()) if len(labels) else 0):
        rows = order[rank == r]  # the r-th sample of every class that has one
        cls = labels[rows]
        updated = F.normalize(alpha * mu[cls] + (1 - alpha) * z[rows], dim=1)
        mu = mu.index_copy(0, cls, updated)  # out of place: autograd sees every round
    return mu


def dispersion_loss(prototypes: torch.Tensor, temperature: float = 0.1) -> torch.Tensor:
    """L_dis = (1/C) Σ_i log[ (1/(C−1)) Σ_{j≠i} exp(μ_iᵀμ_j / τ) ] (paper Eq. for L_dis;
    ``DisLoss``: τ/τ_b = 1 there). Small when the prototypes are spread apart."""
    c = len(prototypes)
    if c < 2:
        raise CompanionError(f"dispersion needs at least 2 classes, got {c}")
    logits = prototypes @ prototypes.T / temperature
    off = ~torch.eye(c, dtype=torch.bool, device=prototypes.device)
    # log of the mean over j ≠ i of exp(logit_ij), stably: logsumexp − log(C − 1)
    per_class = torch.logsumexp(logits.masked_fill(~off, float("-inf")), dim=1) - math.log(c - 1)
    return per_class.mean()


def compactness_loss(
    z: torch.Tensor,
    prototypes: torch.Tensor,
    labels: torch.Tensor,
    temperature: float = 0.1,
    base_temperature: float = BASE_TEMPERATURE,
) -> torch.Tensor:
    """L_comp = −(τ/τ_b) · mean_n log[ exp(z_nᵀμ_{y_n}/τ) / Σ_c exp(z_nᵀμ_c/τ) ]
    (paper Eq. for L_comp, a von Mises–Fisher likelihood; ``CompLoss``). Small when every
    sample lies close to its own prototype."""
    logits = z @ F.normalize(prototypes, dim=1).T / temperature
    return (
        -(temperature / base_temperature)
        * F.log_softmax(logits, dim=1).gather(1, labels.long()[:, None]).mean()
    )


def cider_loss(
    z: torch.Tensor,
    labels: torch.Tensor,
    prototypes: torch.Tensor,
    alpha: float = 0.95,
    temperature: float = 0.1,
    w: float = 2.0,
) -> tuple[torch.Tensor, torch.Tensor, dict[str, float]]:
    """One CIDER step (``train_cider.py``): L = w·L_comp + L_dis.

    The prototypes are first moved towards this batch (:func:`ema_update`); L_dis is computed
    on the updated prototypes *with* their graph to z, L_comp against the updated prototypes
    *detached* (``DisLoss`` stores ``prototypes.detach()``, which ``CompLoss`` then reads).
    Returns (loss, the new prototypes detached for the buffer, the two loss values).
    """
    mu = ema_update(prototypes, z, labels, alpha)
    dis = dispersion_loss(mu, temperature)
    comp = compactness_loss(z, mu.detach(), labels, temperature)
    parts = {"dis": dis.item(), "comp": comp.item()}
    return w * comp + dis, mu.detach(), parts


def supcon_loss(
    z1: torch.Tensor,
    z2: torch.Tensor,
    labels: torch.Tensor,
    temperature: float = 0.1,
    base_temperature: float = BASE_TEMPERATURE,
) -> torch.Tensor:
    """Supervised contrastive loss (Khosla et al., 2020; ``SupConLoss``, contrast mode "all"),
    the baseline CIDER is compared against. With the 2B normalised views u and s_ij = u_iᵀu_j/τ,

        ℓ_i = −(τ/τ_b) · (1/|P(i)|) Σ_{p∈P(i)} log[ exp(s_ip) / Σ_{k≠i} exp(s_ik) ],

    P(i) the other views of i's class (its own second view included), averaged over all 2B.
    """
    u = torch.cat([z1, z2])
    y = torch.cat([labels, labels]).long()
    n = len(u)
    self_mask = torch.eye(n, dtype=torch.bool, device=u.device)
    logits = (u @ u.T / temperature).masked_fill(self_mask, float("-inf"))
    log_prob = logits - torch.logsumexp(logits, dim=1, keepdim=True)
    positive = (y[:, None] == y[None, :]) & ~self_mask
    mean_pos = log_prob.masked_fill(~positive, 0.0).sum(1) / positive.sum(1)
    return -(temperature / base_temperature) * mean_pos.mean()


@torch.no_grad()
def knn_score(
    train_features: torch.Tensor, test_features: torch.Tensor, k: int, batch_size: int = 2048
) -> torch.Tensor:
    """KNN OOD score (Sun et al., 2022; ``eval_ood.py``): minus the squared L2 distance from the
    normalised test feature to its k-th nearest normalised training feature. Higher means more
    in-distribution. CIDER scores the penultimate h, not the head's z."""
    if not 1 <= k <= len(train_features):
        raise CompanionError(f"k must lie in [1, {len(train_features)}], got {k}")
    bank = F.normalize(train_features.float(), dim=1)
    out = []
    for chunk in test_features.float().split(batch_size):
        d2 = torch.cdist(F.normalize(chunk, dim=1), bank).square()
        out.append(-d2.topk(k, dim=1, largest=False).values[:, -1])
    return torch.cat(out)


def msp_score(logits: torch.Tensor) -> torch.Tensor:
    """Maximum softmax probability (Hendrycks & Gimpel, 2017): the cross-entropy baseline's own
    score, higher means more in-distribution."""
    return logits.float().softmax(dim=1).max(dim=1).values


def energy_score(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """Negative free energy (Liu et al., 2020): T·logsumexp(logits/T), higher means more
    in-distribution. With MSP, the cross-entropy scores the paper compares CIDER against."""
    return temperature * torch.logsumexp(logits.float() / temperature, dim=1)


def _angles(cos: torch.Tensor) -> torch.Tensor:
    return torch.rad2deg(torch.arccos(cos.clamp(-1.0, 1.0)))


def dispersion_degrees(prototypes: torch.Tensor) -> float:
    """Mean angle (degrees) between two different prototypes: larger is more dispersed.
    C points on a sphere spread as far as possible have mean angle ≥ arccos(−1/(C−1))."""
    mu = F.normalize(prototypes.double(), dim=1)
    c = len(mu)
    off = ~torch.eye(c, dtype=torch.bool)
    return float(_angles(mu @ mu.T)[off].mean())


def compactness_degrees(z: torch.Tensor, labels: torch.Tensor, prototypes: torch.Tensor) -> float:
    """Mean angle (degrees) between a sample and its class prototype: smaller is more compact."""
    mu = F.normalize(prototypes.double(), dim=1)
    cos = (F.normalize(z.double(), dim=1) * mu[labels.long()]).sum(1)
    return float(_angles(cos).mean())


class HypersphereNet(nn.Module):
    """encoder → h (penultimate) → MLP head → z = normalise(head(h)), as the official
    ``SupCEHeadResNet`` (head Linear-ReLU-Linear); a linear classifier on h for the
    cross-entropy arm; and the prototypes μ as a buffer (saved with the model's checkpoint)."""

    def __init__(self, encoder: nn.Module, feat_dim: int, out_dim: int, num_classes: int):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Sequential(
            nn.Linear(feat_dim, feat_dim), nn.ReLU(), nn.Linear(feat_dim, out_dim)
        )
        self.fc = nn.Linear(feat_dim, num_classes)
        self.register_buffer("prototypes", torch.zeros(num_classes, out_dim))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(h, z, logits) for a batch of images."""
        h = self.encoder(x)
        return h, F.normalize(self.head(h), dim=1), self.fc(h)
