"""counts: the full preset without its real data (fixtures on CPU, bounded GPU check)."""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck, count_flops

DATA = (
    "nothing to download: the dosing simulator generates every patient (100,000 training and "
    "10,000 test series of 96 steps); the paper's own datasets were not available here"
)
HARDWARE = (
    "one GPU, or a CPU (estimate: two models of about 0.15M parameters each at batch 512; "
    "the counterfactual searches are 500 Adam steps on 2,000 patients)"
)
REPORTED = (
    "CounTS's counterfactual explanations beat post-hoc baselines on the paper's evaluation "
    "protocols at comparable prediction accuracy (abstract; the tables were not available "
    "here and are not reproduced)"
)
STEPS_KEY = "steps"


def flops_per_step(cfg) -> float:
    """FLOPs of one step of the run: one Adam step of the CounTS model (−ELBO forward and
    backward) and one of the black-box classifier, at ``batch_size``. The counterfactual
    searches (``cf_steps`` forward/backward passes on ``n_explain`` patients, once per method)
    are added, divided by ``steps``."""
    from companion.papers.counts.experiment import build_model
    from companion.papers.counts.method import negative_elbo

    with torch.device("meta"):
        counts = build_model(cfg, "counts")
        box = build_model(cfg, "blackbox")
        x = torch.empty(cfg.batch_size, 2, cfg.length)
        y = torch.empty(cfg.batch_size)
        xe = torch.empty(cfg.n_explain, 2, cfg.length)
        ye = torch.empty(cfg.n_explain)

    def step_counts():
        negative_elbo(counts, x, y)[0].backward()

    def step_box():
        box(x).sum().backward()

    def search():
        negative_elbo(counts, xe, ye, sample=False)[0].backward()
        box(xe).sum().backward()

    per_step = count_flops(step_counts) + count_flops(step_box)
    return per_step + 2 * cfg.cf_steps * count_flops(search) / cfg.steps


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run: ``steps`` for each of the two models."""
    return 2 * cfg.steps


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """The ``full`` preset reads no files (the simulator generates the patients), so nothing is
    written to ``data_dir``.

    ``tiny``: 200 + 100 patients of 16 steps, a 16-wide model, 8 steps per arm with a
    checkpoint after every 4, 20 explained patients and 10 search steps.
    ``gpu``: the preset's sizes for 1,500 of its 15,000 steps per arm.
    """
    if scale == "tiny":
        overrides = dict(
            length=16,
            n_train=200,
            n_test=100,
            n_explain=20,
            hidden=16,
            batch_size=32,
            steps=8,
            cf_steps=10,
            n_examples=4,
            log_every=2,
            checkpoint_every=4,
        )
        return FullCheck(overrides, STEPS_KEY, "no files: 200 + 100 simulated patients")
    return FullCheck(
        dict(steps=1500), STEPS_KEY, "no files: the preset's 100,000 + 10,000 simulated patients"
    )
