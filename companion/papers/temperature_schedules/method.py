"""The method: SimCLR's NT-Xent loss with a temperature τ that follows a cosine schedule.

Kukleva, Böhle, Schiele, Kuehne, Rupprecht. "Temperature Schedules for Self-Supervised
Contrastive Methods on Long-Tail Data", ICLR 2023 (official code: Annusha/temperature_schedules,
``train_simCLR.py`` and ``utils.py``).

* The loss is unchanged: NT-Xent (``companion.nn.contrastive.nt_xent``; the official
  ``utils.nt_xent`` computes the same quantity with raw exponentials).
* τ changes with the epoch e (``train_simCLR.py``, ``--adj_tau cos``):

  τ(e) = τ_min + ½ (τ_max − τ_min) (1 + cos(π e / T)),

  starting at τ_max, reaching τ_min at e = T and coming back at e = 2T (period 2T).
* Why it should help (paper abstract and Sec. 3): τ sets how the loss distributes its push
  over the negatives. The gradient of ℓ_i with respect to the anchor pushes it away from each
  negative k with weight p_ik = softmax_k(s_ik / τ) (:func:`negative_weights`). A small τ puts
  nearly all of it on the few nearest negatives, whatever their class: every image is pushed
  off its closest neighbours and the embeddings spread out, *instance discrimination*. A large
  τ spreads the push evenly over all negatives; the loss then approaches maximising the average
  distance between all pairs, which separates dense *groups* from each other and lets similar
  images stay together, *group-wise discrimination*. On long-tailed data the groups that this
  average is dominated by are the frequent classes: head classes benefit from the group-wise
  phase (large τ), while tail classes, too small to weigh in the average, need the
  instance-discrimination phase (small τ) so that their few images are not absorbed into a
  neighbouring head class. Cycling τ alternates the two tasks, so the model learns both.

Also here: the long-tailed split used to test the claim (:func:`long_tail_counts`, the standard
CIFAR-LT exponential profile), per-class kNN accuracy, and Wang & Isola's uniformity.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from companion.core.probes import knn_accuracy
from companion.errors import CompanionError
from companion.nn.contrastive import nt_xent


def cosine_temperature(epoch: float, tau_min: float, tau_max: float, t_max: float) -> float:
    """τ(e) = τ_min + ½ (τ_max − τ_min)(1 + cos(π e / t_max)) (official ``train_simCLR.py``).

    The schedule ignores the run's length: it is periodic with period 2 t_max."""
    if not 0 < tau_min <= tau_max or t_max <= 0:
        raise CompanionError(
            f"need 0 < tau_min <= tau_max and t_max > 0, got {tau_min}, {tau_max}, {t_max}"
        )
    return tau_min + 0.5 * (tau_max - tau_min) * (1 + math.cos(math.pi * epoch / t_max))


def temperature_at(
    arm: str, epoch: float, tau_min: float = 0.1, tau_max: float = 1.0, t_max: float = 200
) -> float:
    """τ of an arm at an epoch: arm ``"cos"`` follows :func:`cosine_temperature`; an arm named
    by a number (``"0.2"``) keeps that constant τ."""
    if arm == "cos":
        return cosine_temperature(epoch, tau_min, tau_max, t_max)
    try:
        tau = float(arm)
    except ValueError:
        raise CompanionError(
            f"unknown temperature arm {arm!r}; valid: 'cos' or a positive number like '0.2'"
        ) from None
    if tau <= 0:
        raise CompanionError(f"a constant temperature must be positive, got {arm!r}")
    return tau


def negative_weights(u: torch.Tensor, tau: float) -> torch.Tensor:
    """[N, N]: row i is softmax over k ≠ i of u_i·u_k / τ (the diagonal is 0).

    For NT-Xent, ∂ℓ_i/∂u_i = (−u_p + Σ_k p_ik u_k) / τ over the other views k: each negative
    repels the anchor with weight p_ik. ``u`` holds L2-normalized embeddings, one per image."""
    s = (u @ u.T) / tau
    s = s.masked_fill(torch.eye(len(u), dtype=torch.bool, device=u.device), float("-inf"))
    return torch.softmax(s, dim=1)


def same_class_share(u: torch.Tensor, labels: torch.Tensor, tau: float) -> float:
    """Mean over anchors of the share of their repulsion (:func:`negative_weights`) that falls
    on images of their own class: high = instance discrimination (same-class images pushed
    apart), near the class's share of the data = group discrimination."""
    w = negative_weights(F.normalize(u.double(), dim=1), tau)
    same = labels[:, None] == labels[None, :]
    return float((w * same).sum(1).mean())


def uniformity(u: torch.Tensor, t: float = 2.0) -> float:
    """Wang & Isola (2020): log mean over pairs i ≠ j of exp(−t ‖u_i − u_j‖²) on L2-normalized
    embeddings. Lower = spread more uniformly over the sphere."""
    u = F.normalize(u.double(), dim=1)
    d2 = torch.cdist(u, u).pow(2)
    off = ~torch.eye(len(u), dtype=torch.bool)
    return float(torch.log(torch.exp(-t * d2[off]).mean()))


def long_tail_counts(n_max: int, imbalance: float, classes: int) -> list[int]:
    """Images per class of a long-tailed set: class c keeps ⌊n_max · imbalance^(−c/(C−1))⌋
    (the CIFAR-LT profile; class 0 is the head, class C−1 has n_max / imbalance)."""
    if n_max < 1 or imbalance < 1 or classes < 2:
        raise CompanionError(
            f"need n_max >= 1, imbalance >= 1, classes >= 2; got {n_max}, {imbalance}, {classes}"
        )
    return [max(1, int(n_max * imbalance ** (-c / (classes - 1)))) for c in range(classes)]


def long_tail_split(
    labels: torch.Tensor, counts: list[int], test_per_class: int, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """(train rows, test rows): per class c, a seeded shuffle; the first ``counts[c]`` images go
    to the long-tailed training set, the next ``test_per_class`` to the test set (0: no test
    rows; −1: every remaining image, so each class is scored on as many images as it has left;
    the class-balanced accuracy averages per-class accuracies, so unequal test counts do not
    weight the classes)."""
    if test_per_class < -1:
        raise CompanionError(f"test_per_class must be >= -1, got {test_per_class}")
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(labels), generator=g)
    train, test = [], []
    for c, n in enumerate(counts):
        rows = order[labels[order] == c]
        need = n + max(test_per_class, 1 if test_per_class == -1 else 0)
        if len(rows) < need:
            raise CompanionError(
                f"class {c} has {len(rows)} images, fewer than {n} train + {test_per_class} test"
            )
        train.append(rows[:n])
        test.append(rows[n:] if test_per_class == -1 else rows[n : n + test_per_class])
    return torch.cat(train), torch.cat(test)


def per_class_knn(
    train_x: torch.Tensor,
    train_y: torch.Tensor,
    test_x: torch.Tensor,
    test_y: torch.Tensor,
    classes: int,
    k: int = 1,
) -> list[float]:
    """kNN accuracy of each class's test images (features L2-normalized: the nearest neighbours
    by cosine similarity), with every training image as the bank. Their mean is the
    class-balanced accuracy the paper reports."""
    train_x, test_x = F.normalize(train_x, dim=1), F.normalize(test_x, dim=1)
    out = []
    for c in range(classes):
        rows = test_y == c
        out.append(knn_accuracy(train_x, train_y, test_x[rows], test_y[rows], k, classes))
    return out


__all__ = [
    "cosine_temperature",
    "long_tail_counts",
    "long_tail_split",
    "negative_weights",
    "nt_xent",
    "per_class_knn",
    "same_class_share",
    "temperature_at",
    "uniformity",
]
