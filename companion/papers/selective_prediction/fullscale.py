"""Selective prediction: the full preset without its real data (fixtures in the real format).

The full preset trains nothing: it reads pretrained ImageNet classifiers' outputs on the
50,000 validation images (one ``<model>.npz`` per model, ``logits`` [50000, 1000] and ``labels``
[50000]) and measures each as the paper does. ``full_check`` writes such files with random
logits.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from companion.core.fullscale import FullCheck

DATA = (
    "ImageNet validation outputs of pretrained classifiers: one <model>.npz per model in "
    "data_root (default data/imagenet_val_logits) with 'logits' [50000, 1000] and 'labels' "
    "[50000], written once with timm (see the notebook's Scaling up)"
)
HARDWARE = (
    "a CPU with 8 GB of memory for the measurements (nothing is trained); writing the "
    "outputs is one forward pass over the 50,000 images per model, on a GPU"
)
REPORTED = (
    "523 timm ImageNet classifiers: distillation improves AUROC, ECE and selective accuracy "
    "more than other training regimes; some ViTs reach 99% selective accuracy at 47% coverage, "
    "which EfficientNet-V2-XL never reaches; temperature scaling improves AUROC for most models"
)
STEPS_KEY = "max_models"
# measured with one synthetic model at full size (50,000 x 1,000 float16 logits) on a shared
# 2-core CPU under heavy load (load average ~12): 58 s for reading, TS and every metric
MEASURED = (
    "about 1 min per model on a busy 2-core CPU (one synthetic model at full size), so at most "
    "~9 h for 523 models; a quiet multi-core CPU is several times faster"
)
N_IMAGES, N_CLASSES = 50_000, 1_000


def flops_per_step(cfg) -> float:
    """Arithmetic of measuring one model (a "step" is one model): softmax and sorting of
    [N, 1000] logits before and after TS, and each L-BFGS evaluation of the NLL on the
    ``ts_val_size`` validation samples (``ts_max_iter`` evaluations at most). Elementwise work,
    about 10 operations per logit; reading the file is not counted."""
    per_pass = 10.0 * N_IMAGES * N_CLASSES
    return 2 * per_pass + cfg.ts_max_iter * 10.0 * cfg.ts_val_size * N_CLASSES


def optimizer_steps(cfg) -> int:
    """One unit of work per model (nothing is trained)."""
    return cfg.max_models


def write_logits_fixture(root: Path, models: int, n: int, classes: int, seed: int = 0) -> Path:
    """``models`` files ``model<i>.npz`` of float16 logits [n, classes] whose argmax is right
    about 60-80% of the time (each model a different skill), and the shared labels."""
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, n)
    for i in range(models):
        logits = rng.normal(size=(n, classes)).astype(np.float32)
        logits[np.arange(n), labels] += 2.5 + 0.5 * i + rng.normal(size=n)
        np.savez(root / f"model{i}.npz", logits=logits.astype(np.float16), labels=labels)
    return root


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 3 models' outputs on 600 images of 10 classes, 100 of them for TS.
    ``gpu``: 5 models' outputs at the real size (50,000 images, 1,000 classes)."""
    if scale == "tiny":
        root = write_logits_fixture(Path(data_dir) / "logits-tiny", 3, 600, 10)
        return FullCheck(
            dict(data_root=str(root), max_models=3, ts_val_size=100),
            STEPS_KEY,
            "3 models' random logits on 600 images, 10 classes (.npz fixture)",
        )
    root = Path(data_dir) / "logits-gpu"
    if not (root / "model4.npz").exists():
        write_logits_fixture(root, 5, N_IMAGES, N_CLASSES)
    return FullCheck(
        dict(data_root=str(root), max_models=5),
        STEPS_KEY,
        "5 models' random logits on 50,000 images, 1,000 classes (.npz, float16)",
    )
