"""The full preset (M2OR pairs, the official model sizes) without its real data: fixtures in the
official CSV layout on CPU, a bounded check on GPUs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from companion.core.fullscale import FullCheck, count_flops

DATA = (
    "M2OR pairs in the official processed layout (';'-separated data_train_node32_edge64.csv, "
    "data_valid_node32_edge64.csv, data_test.csv with _SMILES, seq_id, Responsive, "
    "sample_weight; receptors by seq_id only) and a receptor file keyed by seq_id (receptors.csv "
    "with the sequences, or an .npz of ProtBERT [CLS] vectors exported from the official h5), "
    "read from data_root (default data/m2or)"
)
HARDWARE = "one GPU (estimate: a 5-layer graph transformer of width 72 on molecules of ≤ 32 atoms)"
REPORTED = (
    "the injected model beats drug-target-interaction models and GNN baselines on M2OR, and "
    "its predicted activation patterns group odorants by odour family (abstract)"
)
STEPS_KEY = "steps"

FIXTURE_PAIRS = [  # (SMILES, receptor index, label)
    ("CCCCCCO", 0, 1),
    ("CCCCCC=O", 0, 0),
    ("CCCCCCO", 1, 0),
    ("CCCCCC=O", 1, 1),
    ("CC(=O)OCC(C)C", 0, 0),
    ("CC(=O)OCC(C)C", 1, 1),
    ("CCCCO.CCCC=O", 0, 1),
    ("CCCCO.CCCC=O", 1, 1),
    ("OCCc1ccccc1", 0, 1),
    ("OCCc1ccccc1", 1, 0),
]
SEQUENCES = ["MEGNQTWITEFILLGFQ", "MSSTNQSSVTEFLLLGL"]  # two short made-up receptor fragments


def write_m2or_fixture(data_dir: Path, n_copies: int = 1) -> Path:
    """Three CSVs in the official layout under ``data_dir/m2or`` (receptors by ``seq_id`` only):
    ``n_copies`` copies of :data:`FIXTURE_PAIRS` each, and ``receptors.csv`` with the
    sequences."""
    root = Path(data_dir) / "m2or"
    root.mkdir(parents=True, exist_ok=True)
    header = "_SMILES;seq_id;Responsive;sample_weight\n"
    lines = [f"{smi};OR{r};{y};{1.0 if y else 0.5}\n" for smi, r, y in FIXTURE_PAIRS] * n_copies
    (root / "receptors.csv").write_text(
        "seq_id;mutated_Sequence\n" + "".join(f"OR{i};{s}\n" for i, s in enumerate(SEQUENCES))
    )
    for name in ("data_train_node32_edge64.csv", "data_valid_node32_edge64.csv", "data_test.csv"):
        (root / name).write_text(header + "".join(lines))
    return root


def flops_per_step(cfg) -> float:
    """FLOPs of one training step of one arm (a batch of ``cfg.batch_size`` molecules of 20
    atoms and 40 directed bonds), times the number of arms and seeds."""
    from companion.papers.olfactory_gnn.experiment import build_model
    from companion.papers.olfactory_gnn.method import build_bank, gather_batch, mol_graph

    bank = build_bank([mol_graph("C" * 19 + "O")])
    g = gather_batch(bank, torch.zeros(cfg.batch_size, dtype=torch.long))
    cls = torch.zeros(cfg.batch_size, cfg.cls_dim)
    model = build_model(cfg, "inject", 0)

    def step():
        model(g, cls).sum().backward()

    return count_flops(step) * len(cfg.arms) * cfg.num_seeds


def optimizer_steps(cfg) -> int:
    return len(cfg.arms) * cfg.num_seeds * cfg.steps


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: ten pairs per split, the preset's model at width 12 with 2 layers, 4 steps and a
    checkpoint after 2. ``gpu``: 5,000 copies of the pairs, the preset's model, 60 steps."""
    if scale == "tiny":
        root = write_m2or_fixture(data_dir)
        overrides = dict(
            data_root=str(root),
            dim=12,
            edge_dim=6,
            heads=2,
            layers=2,
            widening=2,
            receptor_hidden=16,
            cls_dim=32,
            steps_mean=2.0,
            steps_lo=1,
            steps_hi=3,
            batch_size=4,
            steps=4,
            eval_every=2,
            checkpoint_every=2,
        )
        return FullCheck(overrides, STEPS_KEY, "M2OR fixture: 10 pairs per split, 2 receptors")
    root = write_m2or_fixture(data_dir, n_copies=5_000)
    np.random.default_rng(0)
    return FullCheck(
        dict(data_root=str(root), steps=60), STEPS_KEY, "M2OR-format pairs, 50,000 per split"
    )
