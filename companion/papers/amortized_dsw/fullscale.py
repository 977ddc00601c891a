"""Amortized v-DSW: the full preset on ModelNet40 ``.off`` meshes (fixtures on CPU, a bounded
check on GPUs).

The official code reads ModelNet40 as the ``modelnet40_ply_hdf5_2048`` ``.h5`` files, which need
h5py (not installed here); this package reads ModelNet40's own ``.off`` meshes
(``<root>/<class>/{train,test}/*.off``) and samples 2,048 points on each surface. The check
writes a few small meshes in that layout and format (boxes, pyramids and prisms with random
proportions), shrinks sizes and steps, never the algorithm or the precision.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from companion.core.fullscale import FullCheck

DATA = (
    "ModelNet40 (modelnet.cs.princeton.edu, ModelNet40.zip, .off meshes) under "
    "data_root=<root>, <root>/<class>/{train,test}/*.off; 2,048 points sampled per surface"
)
HARDWARE = (
    "one GPU; four autoencoders (SW, random-location v-DSW, linear and attention amortized "
    "v-DSW) of 23,000 steps at batch 128; the attention over 2,048 points is the largest cost"
)
REPORTED = (
    "on ModelNet40 reconstruction after training on ShapeNetCore-55, the self-attention "
    "amortized v-DSW gives the best or competitive SW2, Chamfer and EMD at low time per epoch "
    "(numbers not verified here)"
)
STEPS_KEY = "steps"
SINGLE_DEVICE = True

CLASSES = ("box", "pyramid", "prism")


def _mesh(kind: str, rng: np.random.Generator) -> tuple[np.ndarray, list[list[int]]]:
    s = rng.uniform(0.5, 1.5, 3)
    if kind == "box":
        v = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], float)
        f = [[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]]
    elif kind == "pyramid":
        v = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0.5, 0.5, 1]], float)
        f = [[0, 3, 2, 1], [0, 1, 4], [1, 2, 4], [2, 3, 4], [3, 0, 4]]
    else:
        v = np.array([[0, 0, 0], [1, 0, 0], [0.5, 1, 0], [0, 0, 1], [1, 0, 1], [0.5, 1, 1]])
        f = [[0, 2, 1], [3, 4, 5], [0, 1, 4, 3], [1, 2, 5, 4], [2, 0, 3, 5]]
    return v * s, f


def write_off(path: Path, verts: np.ndarray, faces: list[list[int]], one_line_header=False):
    """An OFF file; ``one_line_header`` writes ModelNet's quirk ``OFF<V> <F> 0``."""
    head = (
        f"OFF{len(verts)} {len(faces)} 0\n"
        if one_line_header
        else (f"OFF\n{len(verts)} {len(faces)} 0\n")
    )
    body = "".join(f"{x:.6f} {y:.6f} {z:.6f}\n" for x, y, z in verts)
    body += "".join(f"{len(face)} {' '.join(map(str, face))}\n" for face in faces)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(head + body)


def write_modelnet40_fixture(root: Path, per_split: dict[str, int], seed: int = 0) -> Path:
    """Meshes in ModelNet40's layout and format: ``per_split[split]`` files per class."""
    rng = np.random.default_rng(seed)
    for kind in CLASSES:
        for split, n in per_split.items():
            for i in range(n):
                path = Path(root) / kind / split / f"{kind}_{i + 1:04d}.off"
                write_off(path, *_mesh(kind, rng), one_line_header=(i % 2 == 1))
    return Path(root)


def flops_per_step(cfg) -> float:
    """FLOPs of one step of the four arms (forward and backward), counted on the full-size
    model on the meta device would need every arm; estimated from the largest terms: the
    autoencoder (~3 × 2 × params × batch) per arm, the attention (2 × m² × d_k × 2 per cloud,
    twice per pair, three passes) for the amortized arm, and the projections (2 × m × L × 3)."""
    m, b, L = cfg.num_points, cfg.batch_size, cfg.num_projections
    h, c = cfg.hidden, cfg.code_dim
    enc = 3 * (h // 2) + (h // 2) * h + h * c
    ae_params = m * enc + c * 2 * h + 4 * h * h + 2 * h * m * 3
    ae = 4 * 3 * 2 * ae_params * b
    attention = 3 * 2 * 2 * (2 * m * m * cfg.d_k) * b
    projections = 4 * 3 * 2 * (2 * m * L * 3) * b
    return float(ae + attention + projections)


def optimizer_steps(cfg) -> int:
    """Four arms, each ``steps`` autoencoder steps (and one ψ step for the amortized ones)."""
    return 6 * cfg.steps


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 3 classes × (4 train + 2 test) meshes, 64 points, a few steps. ``gpu``: 3
    classes × 100 + 30 meshes at the preset's sizes, a bounded number of steps."""
    if scale == "tiny":
        root = write_modelnet40_fixture(data_dir / "ModelNet40", {"train": 4, "test": 2})
        overrides = dict(
            data_root=str(root), num_points=64, n_train=12, n_val=2, n_test=6, batch_size=4,
            steps=6, num_projections=8, code_dim=16, hidden=32, d_k=8, eval_every=3,
            eval_val=2, eval_repeats=1, opt_steps=2, threads=1,
        )  # fmt: skip
        return FullCheck(overrides, STEPS_KEY, "ModelNet40 .off fixture: 3 classes, 18 meshes")
    root = write_modelnet40_fixture(data_dir / "ModelNet40", {"train": 100, "test": 30})
    return FullCheck(
        dict(data_root=str(root), steps=200, n_val=30, n_test=90, eval_every=100),
        STEPS_KEY,
        "ModelNet40 .off meshes (generated): 3 classes, 390 meshes",
    )
