"""NAS robustness: the full preset without its real data (a fixture in the database's format).

The full preset trains nothing: it reads the released robustness database (robustness.vision)
in the layout of the official ``robustness_dataset.py``: ``meta.json`` and
``<dataset>/<key>_<measure>.json``. ``full_check`` writes such a database with random numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from companion.core.fullscale import FullCheck
from companion.papers.nas_robustness.method import CORRUPTIONS, KEYS_ADV, all_archs, canonical

DATA = (
    "the released robustness database (robustness.vision; meta.json and "
    "<dataset>/<key>_<measure>.json as read by the official robustness_dataset.py), unpacked "
    "into data_root (default data/robustness-data)"
)
HARDWARE = "a CPU with 4 GB of memory (nothing is trained; the database is read)"
REPORTED = (
    "6,466 non-isomorphic NAS-Bench-201 networks on CIFAR-10/100 and ImageNet16-120: at equal "
    "parameter count, mean adversarial accuracy ranges over 20-41%; Jacobian- and "
    "Hessian-based measures rank robustness only partly (Kendall τ reported)"
)
STEPS_KEY = "max_archs"
EPSILONS = [0.1 / 255, 0.5 / 255, 1.0 / 255, 2.0 / 255, 3.0 / 255, 4.0 / 255, 8.0 / 255]


def flops_per_step(cfg) -> float:
    """Reading one architecture's entries: a few dozen numbers (a "step" is one architecture)."""
    return 100.0


def optimizer_steps(cfg) -> int:
    return cfg.max_archs


def write_database_fixture(
    root: Path, n_archs: int, seed: int = 0, dataset: str = "cifar10"
) -> Path:
    """A database in the released layout: ``meta.json`` over all 15,625 ids (each mapped to the
    id of its isomorphism representative among the first ``n_archs`` representatives, the rest
    to themselves), and accuracy files for clean, every attack (a list over ε) and the three
    corruptions, with random values that fall with ε."""
    root = Path(root)
    rng = np.random.default_rng(seed)
    archs = all_archs()
    first: dict[str, str] = {}
    ids = {}
    for i, arch in enumerate(archs):
        c = canonical(arch)
        rep = first.setdefault(c, str(i))
        ids[str(i)] = {"nb201-string": arch, "isomorph": rep}
    reps = [i for i, d in ids.items() if d["isomorph"] == i][:n_archs]
    meta = {"ids": ids, "epsilons": {k: EPSILONS for k in KEYS_ADV}}
    root.mkdir(parents=True, exist_ok=True)
    (root / "meta.json").write_text(json.dumps(meta))
    folder = root / dataset
    folder.mkdir(exist_ok=True)
    clean = {i: float(rng.uniform(0.5, 0.95)) for i in reps}

    def write(key, values):
        data = {dataset: {key: {"accuracy": values}}}
        (folder / f"{key}_accuracy.json").write_text(json.dumps(data))

    write("clean", clean)
    for key in KEYS_ADV:
        write(
            key,
            {
                i: [
                    round(clean[i] * float(np.exp(-rng.uniform(2, 6) * e * 255 / 8)), 4)
                    for e in EPSILONS
                ]
                for i in reps
            },
        )
    for key in CORRUPTIONS:
        write(
            key,
            {i: [round(clean[i] * float(rng.uniform(0.5, 1)), 4) for _ in range(5)] for i in reps},
        )
    return root


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: a fixture database whose first 60 representatives carry results.
    ``gpu``: the fixture over all representatives (nothing needs a GPU)."""
    n = 60 if scale == "tiny" else 10_000
    root = Path(data_dir) / f"robustness-data-{scale}"
    if not (root / "meta.json").exists():
        write_database_fixture(root, n)
    return FullCheck(
        dict(data_root=str(root), max_archs=n),
        STEPS_KEY,
        f"a robustness database fixture: meta.json over 15,625 ids, results for {n} "
        "representatives (random accuracies)",
    )
