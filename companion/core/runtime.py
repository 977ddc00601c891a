"""Where and how a run executes: device choice, seeding, threads, progress bars.

Progress bars are ``tqdm.auto`` bars; ``COMPANION_PROGRESS=0`` turns every bar off (the notebook
execution tooling and CI set it, so stored outputs stay stable).
"""

from __future__ import annotations

import contextlib
import os
import random
import sys

import numpy as np
import torch

from companion.errors import CompanionError, unknown

DEVICES = ("auto", "cpu", "cuda", "mps")


def resolve_device(device: str = "auto") -> str:
    """``"auto"`` becomes the best available of cuda, mps, cpu; an explicit choice is checked."""
    if device not in DEVICES:
        raise unknown("device", device, DEVICES)
    if device == "auto":
        if torch.cuda.is_available():
            return "cuda"
        if torch.backends.mps.is_available():
            return "mps"
        return "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise CompanionError(
            "device 'cuda' requested but torch sees no CUDA device; valid here: auto, cpu"
        )
    if device == "mps" and not torch.backends.mps.is_available():
        raise CompanionError(
            "device 'mps' requested but MPS is not available; valid here: auto, cpu"
        )
    return device


def seed_everything(seed: int, deterministic: bool = True) -> None:
    """Seed python, numpy and torch; ask torch for deterministic kernels where they exist."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if deterministic:
        # torch.use_deterministic_algorithms makes this same call and also sets the flag of
        # torch._inductor, whose first import costs seconds at a notebook's first run. Nothing
        # here compiles, so the eager flag is set alone unless inductor is already loaded.
        if "torch._inductor.config" in sys.modules:
            torch.use_deterministic_algorithms(True, warn_only=True)
        else:
            torch._C._set_deterministic_algorithms(True, warn_only=True)
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


def progress_enabled() -> bool:
    """False when ``COMPANION_PROGRESS=0`` (CI, papermill batch runs)."""
    return os.environ.get("COMPANION_PROGRESS", "1") not in ("0", "false", "False", "")


def progress(iterable=None, **kwargs):
    """A ``tqdm.auto`` bar that respects the ``COMPANION_PROGRESS`` switch."""
    from tqdm.auto import tqdm

    kwargs.setdefault("disable", not progress_enabled())
    kwargs.setdefault("leave", False)
    return tqdm(iterable, **kwargs)


def describe() -> str:
    """One line for a notebook's setup cell: torch version, device, threads."""
    return (
        f"torch {torch.__version__} | device {resolve_device('auto')} | "
        f"threads {torch.get_num_threads()}"
    )


@contextlib.contextmanager
def torch_threads(n: int, device: torch.device | str | None = None):
    """Run the block with ``n`` intra-op CPU threads, then restore the previous number.

    ``n = 0`` leaves the setting alone, and so does a ``device`` that is not the CPU. Tiny
    models (MLPs of a few hundred units, 8x8 images) train faster on one thread: handing a
    small matrix product to a second thread costs more than the product, and on a busy 2-core
    machine two threads made such steps 10-30x slower. One thread is also reproducible.
    """
    before = torch.get_num_threads()
    change = n > 0 and (device is None or torch.device(device).type == "cpu")
    if change:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if change:
            torch.set_num_threads(before)
