"""Probes of a frozen representation: k-nearest neighbours, a trained linear classifier, and a
closed-form ridge classifier, on features standardised with the training statistics.

Self-supervised papers judge an encoder by how well a simple classifier reads the labels off its
features. Every paper that needs such a probe uses these, so that "kNN accuracy" means the same
thing in every notebook:

- :func:`knn_accuracy`: Euclidean k-nearest-neighbour majority vote (scikit-learn's
  ``KNeighborsClassifier`` with uniform weights: ties go to the smallest label).
- :func:`linear_probe_accuracy`: a linear layer trained with AdamW on mini-batches.
- :func:`ridge_probe_accuracy`: ridge regression onto one-hot labels, solved in closed form.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from companion.errors import CompanionError


def _tensor(x) -> torch.Tensor:
    return x if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x))


def standardize(train: torch.Tensor, test: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Subtract the training mean, divide by the training std (unbiased; a constant feature keeps
    std 1, as scikit-learn's StandardScaler), for both sets."""
    mean = train.mean(dim=0)
    std = train.std(dim=0)
    std = torch.where(std < 10 * torch.finfo(std.dtype).eps, torch.ones_like(std), std)
    return (train - mean) / std, (test - mean) / std


@torch.no_grad()
def knn_accuracy(
    train_x,
    train_y,
    test_x,
    test_y,
    k: int = 20,
    num_classes: int | None = None,
    batch_size: int = 1024,
) -> float:
    """k-nearest-neighbour accuracy: Euclidean distance, majority vote of the k nearest training
    points, ties to the smallest label (as scikit-learn's ``KNeighborsClassifier``). Takes
    tensors or numpy arrays."""
    train_x, train_y, test_x, test_y = map(_tensor, (train_x, train_y, test_x, test_y))
    if not 1 <= k <= len(train_x):
        raise CompanionError(f"k must lie in [1, {len(train_x)}] (the training set size), got {k}")
    train_y, test_y = train_y.long(), test_y.long()
    num_classes = num_classes or int(max(train_y.max(), test_y.max())) + 1
    correct = 0
    for xb, yb in zip(test_x.split(batch_size), test_y.split(batch_size)):
        nearest = torch.cdist(xb, train_x).topk(k, largest=False).indices
        votes = F.one_hot(train_y[nearest], num_classes).sum(dim=1)
        correct += (votes.argmax(dim=1) == yb).sum().item()  # argmax: first (smallest) on ties
    return correct / len(test_y)


def linear_probe_accuracy(
    train_x: torch.Tensor,
    train_y: torch.Tensor,
    test_x: torch.Tensor,
    test_y: torch.Tensor,
    num_classes: int,
    epochs: int = 10,
    batch_size: int = 256,
    lr: float = 1e-3,
    seed: int = 0,
) -> float:
    """Test accuracy of a linear classifier trained with AdamW (PyTorch's default uniform init,
    AdamW defaults, mini-batches reshuffled every epoch), seeded by ``seed`` alone."""
    generator = torch.Generator().manual_seed(seed)
    d = train_x.shape[1]
    bound = 1 / math.sqrt(d)
    weight = (torch.rand(num_classes, d, generator=generator) * 2 - 1) * bound
    bias = (torch.rand(num_classes, generator=generator) * 2 - 1) * bound
    clf = nn.Linear(d, num_classes).to(train_x.device)
    with torch.no_grad():
        clf.weight.copy_(weight)
        clf.bias.copy_(bias)
    opt = torch.optim.AdamW(clf.parameters(), lr=lr)
    with torch.enable_grad():
        for _ in range(epochs):
            order = torch.randperm(len(train_x), generator=generator).to(train_x.device)
            for rows in order.split(batch_size):
                loss = F.cross_entropy(clf(train_x[rows]), train_y[rows])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
    with torch.no_grad():
        return (clf(test_x).argmax(dim=1) == test_y).float().mean().item()


def ridge_probe_accuracy(
    train_x: torch.Tensor,
    train_y: torch.Tensor,
    test_x: torch.Tensor,
    test_y: torch.Tensor,
    classes: int,
    ridge: float = 1.0,
) -> float:
    """Test accuracy of a linear classifier on frozen features: ridge regression onto one-hot
    labels, W = (AᵀA + λI)⁻¹ Aᵀ Y with a bias column, on features standardized with the train
    statistics (closed form: no seed, no learning rate). Computed in the features' dtype; pass
    float64 for results that do not depend on the CPU's summation order."""
    mean, std = train_x.mean(0), train_x.std(0) + 1e-8
    a = torch.cat([(train_x - mean) / std, torch.ones(len(train_x), 1, dtype=train_x.dtype)], 1)
    b = torch.cat([(test_x - mean) / std, torch.ones(len(test_x), 1, dtype=test_x.dtype)], 1)
    targets = F.one_hot(train_y, classes).to(a.dtype)
    gram = a.T @ a + ridge * torch.eye(a.shape[1], dtype=a.dtype)
    w = torch.linalg.solve(gram, a.T @ targets)
    return (b @ w).argmax(1).eq(test_y).double().mean().item()
