"""CIFAR-10 and CIFAR-100 from their standard python-pickle release, read from a local folder.

Nothing here downloads. To use the full-scale presets, download the *python version* from
https://www.cs.toronto.edu/~kriz/cifar.html yourself and extract it, which gives:

- ``cifar-10-batches-py/`` with ``data_batch_1`` .. ``data_batch_5``, ``test_batch`` and
  ``batches.meta``;
- ``cifar-100-python/`` with ``train``, ``test`` and ``meta``.

Each data file is a pickled dict (load it with ``encoding="bytes"``, keys are bytes) whose
``b"data"`` is a uint8 array ``[N, 3072]``: one row per image, 1,024 red values, then 1,024 green,
then 1,024 blue, each channel a row-major 32x32 grid. Labels are the list ``b"labels"`` (CIFAR-10)
or ``b"fine_labels"`` (CIFAR-100); class names are ``b"label_names"`` / ``b"fine_label_names"`` in
the meta file.

:func:`write_cifar_fixture` writes a tiny copy in exactly that format for tests.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import TensorDataset

from companion.errors import CompanionError, unknown

CIFAR_URL = "https://www.cs.toronto.edu/~kriz/cifar.html"
SPLITS = ("train", "test")
CIFAR10_CLASSES = (
    "airplane", "automobile", "bird", "cat", "deer",
    "dog", "frog", "horse", "ship", "truck",
)  # fmt: skip


@dataclass(frozen=True)
class _Layout:
    """Where one CIFAR variant keeps its files and under which keys."""

    title: str
    folder: str
    files: dict[str, tuple[str, ...]]
    meta_file: str
    label_key: bytes
    names_key: bytes
    num_classes: int


LAYOUTS = {
    "cifar10": _Layout(
        title="CIFAR-10",
        folder="cifar-10-batches-py",
        files={
            "train": tuple(f"data_batch_{i}" for i in range(1, 6)),
            "test": ("test_batch",),
        },
        meta_file="batches.meta",
        label_key=b"labels",
        names_key=b"label_names",
        num_classes=10,
    ),
    "cifar100": _Layout(
        title="CIFAR-100",
        folder="cifar-100-python",
        files={"train": ("train",), "test": ("test",)},
        meta_file="meta",
        label_key=b"fine_labels",
        names_key=b"fine_label_names",
        num_classes=100,
    ),
}


def _layout(name: str) -> _Layout:
    if name not in LAYOUTS:
        raise unknown("CIFAR dataset", name, LAYOUTS)
    return LAYOUTS[name]


def _find_folder(root: str | Path, layout: _Layout) -> Path:
    """The extracted folder: ``root/<folder>`` or ``root`` itself, whichever holds the meta."""
    root = Path(root).expanduser()
    candidates = (root / layout.folder, root)
    for folder in candidates:
        if (folder / layout.meta_file).is_file():
            return folder
    looked = " and ".join(f"'{c}'" for c in candidates)
    raise CompanionError(
        f"{layout.title} not found: looked for '{layout.meta_file}' in {looked}; download the "
        f"python version from {CIFAR_URL} and extract it there (the companion never downloads)"
    )


def _unpickle(path: Path) -> dict:
    if not path.is_file():
        raise CompanionError(
            f"missing CIFAR file '{path}'; re-extract the python version from {CIFAR_URL}"
        )
    with path.open("rb") as f:
        return pickle.load(f, encoding="bytes")


def load_cifar(root: str | Path, name: str = "cifar10", split: str = "train") -> TensorDataset:
    """Read one split of CIFAR-10/100 as ``(float32 [N, 3, 32, 32] in [0, 1], int64 [N])``.

    ``root`` is the extracted folder (``cifar-10-batches-py`` / ``cifar-100-python``) or the
    folder that contains it. CIFAR-100 labels are the 100 fine labels. The full training set is
    about 600 MB as float32.
    """
    layout = _layout(name)
    if split not in SPLITS:
        raise unknown("CIFAR split", split, SPLITS)
    folder = _find_folder(root, layout)
    batches = [_unpickle(folder / file) for file in layout.files[split]]
    data = np.concatenate([np.asarray(b[b"data"], dtype=np.uint8) for b in batches])
    labels = np.concatenate([np.asarray(b[layout.label_key], dtype=np.int64) for b in batches])
    images = torch.from_numpy(data).reshape(-1, 3, 32, 32).float().div_(255.0)
    return TensorDataset(images, torch.from_numpy(labels))


def cifar_classes(root: str | Path, name: str = "cifar10") -> tuple[str, ...]:
    """Class names from the meta file, in label order (fine labels for CIFAR-100)."""
    layout = _layout(name)
    meta = _unpickle(_find_folder(root, layout) / layout.meta_file)
    return tuple(n.decode("utf-8") for n in meta[layout.names_key])


def write_cifar_fixture(
    root: str | Path, name: str = "cifar10", n_train: int = 50, n_test: int = 10, seed: int = 0
) -> Path:
    """Write a tiny CIFAR-10/100 in the official python-pickle format; return its folder.

    Creates ``root/cifar-10-batches-py`` or ``root/cifar-100-python`` with every file and key the
    real release has, so :func:`load_cifar` (or any other CIFAR reader) can be tested without
    the real data. Pixels are uniform random uint8; labels cycle through all classes in a seeded
    random order (every class appears once ``n`` reaches the number of classes). CIFAR-10 uses
    the real class names; CIFAR-100 uses placeholders ``fine_00`` .. ``fine_99`` and
    ``coarse_00`` .. ``coarse_19`` (coarse label = fine label // 5). The CIFAR-10 training
    images are spread over the five ``data_batch_*`` files as evenly as possible.
    """
    layout = _layout(name)
    for arg, value in (("n_train", n_train), ("n_test", n_test)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise CompanionError(f"{arg} {value!r} is not valid; valid: an integer >= 1")
    rng = np.random.default_rng(seed)
    folder = Path(root) / layout.folder
    folder.mkdir(parents=True, exist_ok=True)

    def dump(obj: dict, file: str) -> None:
        with (folder / file).open("wb") as f:
            pickle.dump(obj, f, protocol=2)

    for split, n in (("train", n_train), ("test", n_test)):
        data = rng.integers(0, 256, size=(n, 3072), dtype=np.uint8)
        labels = rng.permutation(np.arange(n) % layout.num_classes)
        files = layout.files[split]
        parts = np.array_split(np.arange(n), len(files))
        for i, (file, rows) in enumerate(zip(files, parts, strict=True)):
            batch = {
                b"batch_label": f"{split} batch {i + 1} of {len(files)}".encode(),
                b"data": data[rows],
                b"filenames": [f"image_{r:05d}.png".encode() for r in rows],
                layout.label_key: [int(label) for label in labels[rows]],
            }
            if name == "cifar100":
                batch[b"coarse_labels"] = [int(label) // 5 for label in labels[rows]]
            dump(batch, file)

    if name == "cifar10":
        meta = {
            b"label_names": [c.encode() for c in CIFAR10_CLASSES],
            b"num_cases_per_batch": -(-n_train // len(layout.files["train"])),
            b"num_vis": 3072,
        }
    else:
        meta = {
            b"fine_label_names": [f"fine_{i:02d}".encode() for i in range(100)],
            b"coarse_label_names": [f"coarse_{i:02d}".encode() for i in range(20)],
        }
    dump(meta, layout.meta_file)
    return folder
