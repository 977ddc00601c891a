"""Byz-VR-MARINA: the full preset without its real data (a9a fixtures in LIBSVM format)."""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck

DATA = (
    "LIBSVM a9a (32,561 samples, 123 binary features, labels ±1), the text file "
    "<data_root>/a9a (default data/a9a), downloaded by the user from the LIBSVM data sets page"
)
HARDWARE = (
    "one CPU core is enough (a 124-dimensional logistic regression: 30 arms of 40,000 rounds "
    "of 5 workers each, bound by per-round overhead; a GPU does not speed it up)"
)
REPORTED = (
    "Fig. 1 (a9a, 4 good + 1 Byzantine worker, λ = 0.01, coordinate-wise median with bucketing): "
    "under no attack, bit flip, label flip, ALIE and IPM, Byz-VR-MARINA converges linearly to "
    "f* (with and without RandK), while SGD, BR-SGDm, compressed SGD and BR-DIANA plateau"
)
STEPS_KEY = "rounds"
SINGLE_DEVICE = True  # one process simulates every worker


def _arms(cfg) -> int:
    return len(cfg.methods) * len(cfg.attacks)


def flops_per_step(cfg) -> float:
    """FLOPs of one round of *every arm* (attacks × methods), counted from the matrix-vector
    products of the gradients (2 FLOPs per multiply-add): a minibatch gradient costs 4·b·d, a
    MARINA difference on b samples at two points 6·b·d, a full gradient 4·m·d, taken with
    probability p = b/m by MARINA's workers. Aggregation and compression are left out."""
    d, m, b = 124, 32_561, cfg.batch_size
    p = b / m
    per_worker = {
        "sgd": 4 * b * d,
        "sgdm": 4 * b * d,
        "marina": p * 4 * m * d + (1 - p) * 6 * b * d,
    }
    total = sum(per_worker[method.partition("+")[0]] for method in cfg.methods)
    return float(total * cfg.workers * len(cfg.attacks))


def optimizer_steps(cfg) -> int:
    """Server steps of the whole run: ``cfg.rounds`` for each (attack, method) arm."""
    return _arms(cfg) * cfg.rounds


def write_a9a(folder: Path, n: int, seed: int = 0) -> Path:
    """A file in a9a's LIBSVM format: ``n`` rows of ±1 labels and 14 of 123 binary features
    (a9a's rows have 14 ones), drawn at random, written once."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "a9a"
    if path.exists():
        return path
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(123, generator=g)
    lines = []
    for _ in range(n):
        idx = torch.randperm(123, generator=g)[:14].sort().values
        label = 1 if float(w[idx].sum()) + float(torch.randn((), generator=g)) > 0 else -1
        lines.append(f"{label:+d} " + " ".join(f"{int(i) + 1}:1" for i in idx))
    path.write_text("\n".join(lines) + "\n")
    return path


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 64 random rows in a9a's format, 2 attacks × 2 methods, 8 rounds with a
    checkpoint every 4. ``gpu``: 32,561 rows (a9a's size), every arm, 400 rounds."""
    n = 64 if scale == "tiny" else 32_561
    root = Path(data_dir) / f"a9a-{n}"
    write_a9a(root, n)
    data = f"a9a fixture: {n:,} random rows in LIBSVM format, 123 binary features"
    if scale == "tiny":
        overrides = dict(
            data_root=str(root),
            rounds=8,
            attacks=("bit_flip", "label_flip"),
            methods=("sgdm", "marina+randk", "marina"),
            batch_size=8,
            evaluate_every=2,
            checkpoint_every=4,
        )
        return FullCheck(overrides, STEPS_KEY, data)
    return FullCheck(dict(data_root=str(root), rounds=400), STEPS_KEY, data)
