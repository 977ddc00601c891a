"""Images sorted into one folder per class (``root/<class>/*.png``), as ImageNet-style sets are."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset

from companion.data.images import check_image_size
from companion.errors import CompanionError

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")


class ImageFolder(Dataset):
    """Read ``root/<class>/*.{png,jpg,jpeg}`` lazily with PIL.

    Each item is ``(float32 [3, image_size, image_size] in [0, 1], int64 label)``: the image is
    converted to RGB and resized (bilinear) to a square. ``classes`` holds the sub-folder names
    sorted (hidden ones such as ``.ipynb_checkpoints`` are skipped), and a label is the position
    of its folder in that tuple. ``samples`` lists ``(path, label)`` in a fixed order (by class,
    then by file name). Suffixes are matched case-insensitively; other files are ignored.
    """

    def __init__(self, root: str | Path, image_size: int = 224) -> None:
        check_image_size(image_size, minimum=1)
        self.root = Path(root).expanduser()
        self.image_size = image_size
        if not self.root.is_dir():
            raise CompanionError(
                f"image folder '{self.root}' not found; expected one sub-folder per class"
            )
        folders = sorted(
            p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".")
        )
        self.classes: tuple[str, ...] = tuple(p.name for p in folders)
        self.samples: list[tuple[Path, int]] = [
            (path, label)
            for label, folder in enumerate(folders)
            for path in sorted(folder.iterdir())
            if path.is_file() and path.suffix.lower() in IMAGE_SUFFIXES
        ]
        if not self.samples:
            kinds = ", ".join(IMAGE_SUFFIXES)
            raise CompanionError(
                f"image folder '{self.root}' holds no images; expected root/<class>/*"
                f" with one of: {kinds}"
            )

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        path, label = self.samples[index]
        with Image.open(path) as image:
            rgb = image.convert("RGB").resize(
                (self.image_size, self.image_size), Image.Resampling.BILINEAR
            )
        pixels = torch.from_numpy(np.asarray(rgb, dtype=np.float32) / 255.0)
        return pixels.permute(2, 0, 1).contiguous(), torch.tensor(label, dtype=torch.int64)
