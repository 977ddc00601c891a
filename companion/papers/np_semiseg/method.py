"""The NP-SemiSeg head: a neural process that segments with a per-pixel mean and uncertainty.

Wang, Massiceti, Hu, Pavlovic, Lukasiewicz, "NP-SemiSeg: When Neural Processes meet
Semi-Supervised Semantic Segmentation", ICML 2023 (official code: Jianf-Wang/NP-SemiSeg,
``AugSeg/augseg/models/np_head.py`` and ``AugSeg/train_semi.py``).

The head sits on top of a segmentation backbone's features f (one vector per pixel). Pixels are
*context* (labelled, ground truth) or *target* (labelled plus pseudo-labelled); each set feeds
one memory of per-class FIFO queues of embeddings φ(f). The class centres (queue means) are
aggregated per pixel by a per-channel attention (Eq. "aggregator"), pooled into one vector per
image, mapped to a Gaussian q(z) over a global latent, and T samples of z are decoded together
with f and the deterministic context vector into T segmentation maps (Eq. "decoder"). Their
mean is the prediction; their spread and the entropy of their mean are its uncertainty.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def conv_in_relu(cin: int, cout: int, kernel: int) -> list[nn.Module]:
    """Conv → InstanceNorm → ReLU, the block the official head is built from."""
    return [nn.Conv2d(cin, cout, kernel, padding=kernel // 2), nn.InstanceNorm2d(cout), nn.ReLU()]


class Embedding(nn.Module):
    """φ: three 1×1 convolutions to ``latent_dim`` channels with InstanceNorm and ReLU between
    (the official ``Conv_1``): the space the memories and the attention live in."""

    def __init__(self, in_dim: int, latent_dim: int):
        super().__init__()
        self.net = nn.Sequential(
            *conv_in_relu(in_dim, latent_dim, 1),
            *conv_in_relu(latent_dim, latent_dim, 1),
            nn.Conv2d(latent_dim, latent_dim, 1),
        )

    def forward(self, f: torch.Tensor) -> torch.Tensor:
        return self.net(f)


def decoder(in_dim: int, width: int, num_classes: int) -> nn.Sequential:
    """conv3×3(width)–IN–ReLU twice, then a 1×1 classifier (the official ``Conv_Decoder``; the
    ordinary softmax head of the control arm is the same stack on f alone)."""
    return nn.Sequential(
        *conv_in_relu(in_dim, width, 3),
        *conv_in_relu(width, width, 3),
        nn.Conv2d(width, num_classes, 1),
    )


class ClassMemory:
    """One FIFO queue of detached embeddings per class, at most ``max_length`` each.

    The official code starts every queue with one zero vector that stays until it is pushed
    out; here a queue starts empty and an empty class is left out of the attention
    (:meth:`centres` returns a mask), which matters when the queues are short.
    """

    def __init__(self, num_classes: int, dim: int, max_length: int):
        self.queues = [torch.zeros(0, dim) for _ in range(num_classes)]
        self.max_length = max_length

    @torch.no_grad()
    def push(self, emb: torch.Tensor, labels: torch.Tensor) -> None:
        """Append the embeddings ``emb`` [B, D, H, W] of pixels labelled c to queue c (label
        255 matches no class), dropping the oldest beyond ``max_length``."""
        flat = emb.permute(0, 2, 3, 1).reshape(-1, emb.shape[1]).detach().cpu()
        lab = labels.reshape(-1).cpu()
        for c, queue in enumerate(self.queues):
            q = torch.cat([queue, flat[lab == c]])
            self.queues[c] = q[-self.max_length :]

    def centres(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(class centres [C, D] = queue means, mask [C] of classes with a non-empty queue)."""
        present = torch.tensor([len(q) > 0 for q in self.queues])
        dim = self.queues[0].shape[1]
        cent = torch.stack([q.mean(0) if len(q) else torch.zeros(dim) for q in self.queues])
        return cent, present

    def state(self) -> list[torch.Tensor]:
        return [q.clone() for q in self.queues]

    def load(self, queues: list[torch.Tensor]) -> None:
        self.queues = [q.clone() for q in queues]


def aggregate(emb: torch.Tensor, centres: torch.Tensor, present: torch.Tensor) -> torch.Tensor:
    """The aggregator: per pixel and *per channel*, attention weights over classes
    w_c = softmax_c(−(φ(f) − centre_c)²) and output Σ_c w_c · centre_c [B, D, H, W].

    This is the official code's attention: a squared residual per channel, not a dot product.
    Classes whose queue is empty (``present`` False) get no weight.
    """
    cent = centres.to(emb)[None, :, :, None, None]  # [1, C, D, 1, 1]
    sim = -((emb[:, None] - cent) ** 2)  # [B, C, D, H, W]
    sim = sim.masked_fill(~present.to(emb.device)[None, :, None, None, None], float("-inf"))
    weights = torch.softmax(sim, dim=1)
    return (weights * cent).sum(1)


def gaussian_kl(mu_t, sigma_t, mu_c, sigma_c) -> torch.Tensor:
    """KL(N(μ_t, σ_t²) ‖ N(μ_c, σ_c²)) summed over the latent dimensions, one value per image:
    Σ_d log(σ_c/σ_t) + (σ_t² + (μ_t − μ_c)²)/(2σ_c²) − ½.

    σ is a standard deviation here, as in the sampling z = μ + σ·ε. (The official
    ``train_semi.py`` writes the same formula with σ in place of σ², i.e. treats σ as a variance
    in the KL only; this companion keeps one convention.)
    """
    var_t, var_c = sigma_t**2, sigma_c**2
    kl = torch.log(sigma_c / sigma_t) + (var_t + (mu_t - mu_c) ** 2) / (2 * var_c) - 0.5
    return kl.sum(-1)


class NPHead(nn.Module):
    """The neural-process segmentation head (official ``NP_HEAD``).

    ``forward(f, latent_memory, deterministic_memory)`` returns T logit maps [T, B, K, H, W]
    and the posterior (μ, σ) of the global latent z from the target aggregate, plus the prior
    (μ_c, σ_c) from the context aggregate, for the KL term.
    """

    def __init__(self, in_dim: int, num_classes: int, latent_dim: int = 32, width: int = 256):
        super().__init__()
        self.phi = Embedding(in_dim, latent_dim)
        # latent path: MLP latent→latent→2·latent gives (μ, σ = 0.1 + 0.9·softplus(·))
        self.mean_sigma = nn.Sequential(
            nn.Linear(latent_dim, latent_dim), nn.ReLU(), nn.Linear(latent_dim, 2 * latent_dim)
        )
        self.decoder = decoder(in_dim + 2 * latent_dim, width, num_classes)
        self.latent_dim, self.num_classes = latent_dim, num_classes

    def embed(self, f: torch.Tensor) -> torch.Tensor:
        """φ(f) without gradient: what the memories store."""
        with torch.no_grad():
            return self.phi(f)

    def gaussian(self, pooled: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.mean_sigma(pooled)
        mu, raw = out[:, : self.latent_dim], out[:, self.latent_dim :]
        return mu, 0.1 + 0.9 * F.softplus(raw)

    def forward(self, f, latent_memory: ClassMemory, deterministic_memory: ClassMemory, samples=5):
        # φ trains through both attentions (the target and the context aggregates), not through
        # the memories, which store φ(f) without gradient (``embed``); f is detached as in the
        # code, so the backbone gets no gradient through φ
        emb = self.phi(f.detach())
        t_cent, t_present = latent_memory.centres()
        c_cent, c_present = deterministic_memory.centres()
        target_agg = aggregate(emb, t_cent, t_present).mean(dim=(2, 3))  # [B, D]
        context_agg = aggregate(emb, c_cent, c_present).mean(dim=(2, 3))  # [B, D]
        mu, sigma = self.gaussian(target_agg)
        mu_c, sigma_c = self.gaussian(context_agg)
        B, _, H, W = f.shape
        z = mu + sigma * torch.randn(samples, *mu.shape, device=f.device)  # [T, B, D]
        parts = [
            z[..., None, None].expand(-1, -1, -1, H, W),
            f[None].expand(samples, -1, -1, -1, -1),
            context_agg[None, :, :, None, None].expand(samples, -1, -1, H, W),
        ]
        x = torch.cat(parts, dim=2).reshape(samples * B, -1, H, W)
        logits = self.decoder(x).reshape(samples, B, self.num_classes, H, W)
        return logits, (mu, sigma), (mu_c, sigma_c)


def predictive(logits: torch.Tensor) -> torch.Tensor:
    """The NP prediction: the mean over the T samples of the softmax [T, B, K, H, W] → [B, K, H, W]
    (as ``train_semi.py`` forms the teacher's pseudo-labels)."""
    return torch.softmax(logits, dim=2).mean(0)


def predictive_entropy(probs: torch.Tensor) -> torch.Tensor:
    """Per-pixel entropy of the mean prediction, normalised by log K (1 − the code's
    ``confidence`` before it is weighted): the NP uncertainty used to rank errors."""
    k = probs.shape[1]
    return -(probs * torch.log(probs + 1e-10)).sum(1) / torch.log(torch.tensor(float(k)))


def sample_spread(logits: torch.Tensor) -> torch.Tensor:
    """Per-pixel spread of the T sampled predictions: the standard deviation over samples of the
    softmax, summed over classes (the part of the uncertainty that comes from z alone)."""
    return torch.softmax(logits, dim=2).std(0, unbiased=False).sum(1)


def max_prob_uncertainty(probs: torch.Tensor) -> torch.Tensor:
    """The reference: 1 − max_k p_k of an ordinary softmax head."""
    return 1 - probs.max(1).values


def threshold_pseudo_labels(probs: torch.Tensor, threshold: float) -> torch.Tensor:
    """Teacher pseudo-labels arg max_k p_k, set to 255 (ignored) where max_k p_k < threshold
    (``compute_unsupervised_loss_by_threshold``)."""
    conf, labels = probs.max(1)
    return labels.masked_fill(conf < threshold, 255)


def confusion(pred: torch.Tensor, target: torch.Tensor, num_classes: int) -> torch.Tensor:
    """Confusion counts [true, predicted] over the pixels whose label is not 255."""
    keep = target != 255
    idx = target[keep] * num_classes + pred[keep]
    return torch.bincount(idx, minlength=num_classes**2).reshape(num_classes, num_classes)


def mean_iou(conf: torch.Tensor) -> float:
    """mIoU: the mean over classes present in the truth or the prediction of TP/(TP+FP+FN)."""
    conf = conf.double()
    tp = conf.diag()
    union = conf.sum(0) + conf.sum(1) - tp
    keep = union > 0
    return float((tp[keep] / union[keep]).mean())
