"""unimodal_features: the full preset without real data (it reads none: the two-modality data
are generated), on CPU fixtures and as a bounded GPU check."""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F

from companion.core.fullscale import FullCheck, count_flops

DATA = (
    "nothing to download: the two-modality data (uni-modal and paired signal) are generated; "
    "the paper's VGG-Sound, Kinetics-400, UCF101 and ModelNet40 runs are not reproduced"
)
HARDWARE = "one GPU or a CPU (estimate: MLPs of under 0.5M parameters)"
REPORTED = (
    "UME or UMT, chosen by a simple guiding rule, match more complex late- and intermediate-"
    "fusion methods on VGG-Sound, Kinetics-400, UCF101 and ModelNet40 (abstract)"
)
STEPS_KEY = "steps"


def flops_per_step(cfg) -> float:
    """FLOPs of one step of every model of the run: two uni-modal models and
    ``2 + len(alphas)`` fusion models per dataset and seed, each trained for ``steps``."""
    from companion.papers.unimodal_features.experiment import inputs_of, new_fusion

    da, db = inputs_of(cfg)
    with torch.device("meta"):
        model = new_fusion(cfg, 0)
        xa, xb = torch.empty(cfg.batch_size, da), torch.empty(cfg.batch_size, db)
        y = torch.zeros(cfg.batch_size, dtype=torch.long)

    def step():
        F.cross_entropy(model(xa, xb), y).backward()

    models = len(cfg.datasets) * cfg.num_seeds * (2 + len(cfg.alphas) + 2)
    return count_flops(step) * models


def optimizer_steps(cfg) -> int:
    return len(cfg.datasets) * cfg.num_seeds * (4 + len(cfg.alphas)) * cfg.steps


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """Nothing is written to ``data_dir`` (the data are generated).

    ``tiny``: 200 + 100 + 200 examples, width 16, 20 steps, two seeds (the run is interrupted
    after the first finished part and resumed). ``gpu``: the preset's sizes, 2,000 steps."""
    if scale == "tiny":
        overrides = dict(
            n_train=200,
            n_val=100,
            n_test=200,
            hidden=16,
            features=8,
            head_hidden=16,
            steps=20,
            batch_size=32,
            eval_every=10,
            num_seeds=2,
        )
        return FullCheck(overrides, STEPS_KEY, "no files: 500 generated examples per dataset")
    return FullCheck(dict(steps=2_000), STEPS_KEY, "no files: the preset's generated data")
