"""The full MNIST in its original IDX format, read from a local folder (nothing downloads).

The companion ships only a 5,000-image MNIST subset; the paper's MNIST setting needs all 60,000
training and 10,000 test images. Download the four files from http://yann.lecun.com/exdb/mnist/
(or any mirror) into one folder, gzipped or not:
``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``, ``t10k-images-idx3-ubyte``,
``t10k-labels-idx1-ubyte``. IDX: a big-endian header (magic number 2051 for images, 2049 for
labels; then the sizes), then the unsigned bytes. (Kept here because no other paper reads full
MNIST yet; it belongs in ``companion.data`` beside ``load_cifar`` once one does.)
"""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import TensorDataset

from companion.errors import CompanionError, unknown

MNIST_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


def _read_idx(folder: Path, name: str, magic: int) -> np.ndarray:
    for path in (folder / name, folder / f"{name}.gz"):
        if path.is_file():
            opener = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rb") as f:
                raw = f.read()
            break
    else:
        raise CompanionError(
            f"MNIST file '{name}' (or '{name}.gz') not found in '{folder}'; download the four "
            "IDX files from http://yann.lecun.com/exdb/mnist/ there (the companion never downloads)"
        )
    (found,) = struct.unpack(">I", raw[:4])
    if found != magic:
        raise CompanionError(f"'{name}' is not an IDX file of this kind (magic {found} != {magic})")
    ndim = raw[3]
    shape = struct.unpack(f">{ndim}I", raw[4 : 4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def load_mnist_idx(root: str | Path, split: str = "train") -> TensorDataset:
    """One split of MNIST: ``(float32 [N, 1, 28, 28] in [0, 1], int64 [N])``."""
    if split not in MNIST_FILES:
        raise unknown("MNIST split", split, MNIST_FILES)
    folder = Path(root).expanduser()
    images_file, labels_file = MNIST_FILES[split]
    images = _read_idx(folder, images_file, 2051)
    labels = _read_idx(folder, labels_file, 2049)
    if len(images) != len(labels):
        raise CompanionError(f"MNIST {split}: {len(images)} images but {len(labels)} labels")
    x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)
    return TensorDataset(x, torch.from_numpy(labels.astype(np.int64)))


def write_mnist_fixture(root: str | Path, n_train: int = 40, n_test: int = 20, seed: int = 0):
    """Write tiny random MNIST IDX files (gzipped) in the official format; return the folder."""
    rng = np.random.default_rng(seed)
    folder = Path(root)
    folder.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", n_train), ("test", n_test)):
        images_file, labels_file = MNIST_FILES[split]
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        labels = (np.arange(n) % 10).astype(np.uint8)
        with gzip.open(folder / f"{images_file}.gz", "wb") as f:
            f.write(struct.pack(">IIII", 2051, n, 28, 28) + images.tobytes())
        with gzip.open(folder / f"{labels_file}.gz", "wb") as f:
            f.write(struct.pack(">II", 2049, n) + labels.tobytes())
    return folder
