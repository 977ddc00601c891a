"""companion.core.probes against scikit-learn and closed forms."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from companion.core.probes import (
    knn_accuracy,
    linear_probe_accuracy,
    ridge_probe_accuracy,
    standardize,
)
from companion.errors import CompanionError


def blobs(n_train=300, n_test=120, d=6, classes=4, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(classes, d)) * 1.5
    y_tr, y_te = rng.integers(0, classes, n_train), rng.integers(0, classes, n_test)
    return (
        centers[y_tr] + rng.normal(size=(n_train, d)),
        y_tr,
        centers[y_te] + rng.normal(size=(n_test, d)),
        y_te,
    )


def test_knn_matches_scikit_learn_on_tensors_and_arrays():
    from sklearn.neighbors import KNeighborsClassifier

    x_tr, y_tr, x_te, y_te = blobs()
    for k in (1, 5, 20):
        ref = KNeighborsClassifier(n_neighbors=k, algorithm="brute").fit(x_tr, y_tr)
        tensors = [torch.tensor(a) for a in (x_tr, y_tr, x_te, y_te)]
        assert knn_accuracy(*tensors, k, batch_size=50) == pytest.approx(ref.score(x_te, y_te))
        assert knn_accuracy(x_tr, y_tr, x_te, y_te, k) == pytest.approx(ref.score(x_te, y_te))


def test_knn_ties_go_to_the_smallest_label():
    train_x = torch.tensor([[1.0], [-1.0], [5.0]])
    train_y = torch.tensor([2, 1, 0])
    # k = 2: the two nearest neighbours of 0 vote 2 and 1, a tie: the smaller label, 1, wins
    assert knn_accuracy(train_x, train_y, torch.zeros(1, 1), torch.tensor([1]), 2) == 1.0
    with pytest.raises(CompanionError, match="k must lie"):
        knn_accuracy(train_x, train_y, torch.zeros(1, 1), torch.tensor([1]), 4)


def test_standardize_uses_training_statistics():
    rng = np.random.default_rng(1)
    tr = rng.normal(3, 2, size=(50, 4))
    tr[:, 2] = 7.0  # a constant feature keeps std 1 (as StandardScaler)
    te = rng.normal(size=(10, 4))
    a, b = standardize(torch.tensor(tr), torch.tensor(te))
    std = tr.std(axis=0, ddof=1)
    std[2] = 1.0
    np.testing.assert_allclose(a.numpy(), (tr - tr.mean(0)) / std, rtol=1e-10)
    np.testing.assert_allclose(b.numpy(), (te - tr.mean(0)) / std, rtol=1e-10)


def test_linear_probe_separates_separable_data_and_is_deterministic():
    torch.manual_seed(0)
    y = torch.randint(0, 3, (300,))
    x = F.one_hot(y, 3).float() * 4 + torch.randn(300, 3) * 0.3
    acc = linear_probe_accuracy(x[:200], y[:200], x[200:], y[200:], 3, epochs=50, lr=0.05)
    assert acc > 0.98
    again = linear_probe_accuracy(x[:200], y[:200], x[200:], y[200:], 3, epochs=3, seed=5)
    assert again == linear_probe_accuracy(x[:200], y[:200], x[200:], y[200:], 3, 3, seed=5)


def test_ridge_probe_matches_an_augmented_least_squares_solve():
    x_tr, y_tr, x_te, y_te = blobs(d=5, seed=3)
    ridge = 2.5
    mean, std = x_tr.mean(0), x_tr.std(0, ddof=1) + 1e-8
    a = np.hstack([(x_tr - mean) / std, np.ones((len(x_tr), 1))])
    b = np.hstack([(x_te - mean) / std, np.ones((len(x_te), 1))])
    targets = np.eye(4)[y_tr]
    # min ‖A W − Y‖² + λ‖W‖²  ==  least squares on [A; √λ I] against [Y; 0]
    stacked = np.vstack([a, np.sqrt(ridge) * np.eye(a.shape[1])])
    w = np.linalg.lstsq(stacked, np.vstack([targets, np.zeros((a.shape[1], 4))]), rcond=None)[0]
    expected = float(((b @ w).argmax(1) == y_te).mean())
    ours = ridge_probe_accuracy(
        torch.tensor(x_tr), torch.tensor(y_tr), torch.tensor(x_te), torch.tensor(y_te), 4, ridge
    )
    assert ours == pytest.approx(expected)
    assert 0.5 < ours <= 1.0
