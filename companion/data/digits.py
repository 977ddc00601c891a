"""The handwritten digits that ship with scikit-learn (UCI optdigits, 8x8, 1,797 images)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import torch

from companion.data.images import check_image_size, resize
from companion.data.splits import Splits, check_fractions, stratified_split
from companion.errors import CompanionError

DIGIT_CLASSES = tuple(str(d) for d in range(10))


def _read_digits_csv() -> np.ndarray:
    """scikit-learn's ``datasets/data/digits.csv.gz`` (64 pixels + label per row), read without
    importing scikit-learn (~1.4 s); the same file ``sklearn.datasets.load_digits`` reads."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        raise CompanionError("scikit-learn is not installed; it ships the digits data")
    path = Path(spec.submodule_search_locations[0]) / "datasets" / "data" / "digits.csv.gz"
    return np.loadtxt(path, delimiter=",", dtype=np.int64)


def load_digits(
    image_size: int = 8,
    val_fraction: float = 0.2,
    test_fraction: float = 0.2,
    seed: int = 0,
) -> Splits:
    """Load scikit-learn's 8x8 digits as stratified train/val/test splits.

    Images are float32 ``[N, 1, image_size, image_size]`` in [0, 1] (the raw 0-16 counts divided
    by 16); labels are int64 digits 0-9. With ``image_size > 8`` the images are upsampled
    bilinearly (``align_corners=False``), e.g. to 32 for a ViT with patch size 4 or 8.
    Nothing downloads: the data ship inside scikit-learn.
    """
    check_image_size(image_size, minimum=8)
    check_fractions(val_fraction, test_fraction)
    raw = _read_digits_csv()
    x = torch.from_numpy(raw[:, :-1]).float().div_(16.0).view(-1, 1, 8, 8)
    y = torch.from_numpy(raw[:, -1]).long()
    return stratified_split(
        resize(x, image_size), y, val_fraction, test_fraction, seed, classes=DIGIT_CLASSES
    )
