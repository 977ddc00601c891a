"""The paper-scale path without the paper's data: fixtures on CPU, a bounded check on GPUs.

Each paper's ``full`` preset is exercised through its module ``companion.papers.<slug>.fullscale``,
which defines ``full_check(data_dir, scale) -> FullCheck``: it writes data *in the real format*
(CIFAR python batches, image folders, CSV files, ...) into ``data_dir`` and returns the settings
that shrink sizes and steps, never the algorithm, precision or model family.

* ``scale="tiny"``: a few images and steps, for the CPU tests (``tests/test_full_presets.py``
  runs every ``full`` preset end to end, interrupted once and resumed, at its own precision).
* ``scale="gpu"``: full-size synthetic data and a bounded number of steps, for
  ``companion gpu-check``: steps per second, peak memory and the projected time of the full run.

The module also states, for the README's scaling-up table (``scaling_table``): ``DATA`` (what the
full preset reads), ``HARDWARE`` (what it needs), ``REPORTED`` (what the paper reported), and
``flops_per_step(cfg)`` (counted with :func:`count_flops` on the full-size model; per unit of
``STEPS_KEY``, over every arm and seed the run trains), optionally ``optimizer_steps(cfg)`` (all
optimizer steps of the run) and ``SINGLE_DEVICE = True`` (a run that cannot use DDP), from which
:func:`estimate_hours` gives an *estimate* on a named GPU class until a GPU run measures it
(``MEASURED``, a string, once ``gpu-check`` has run on a GPU, or a CPU time measured for a run
that is not GPU work). A run bound by a CPU solver, whose time FLOPs do not describe, states
``ESTIMATED`` instead of ``flops_per_step``: a string that says what it is extrapolated from.
"""

from __future__ import annotations

import dataclasses
import importlib
import time
from pathlib import Path
from typing import Any

import torch

from companion.errors import CompanionError

SCALES = ("tiny", "gpu")


@dataclasses.dataclass(frozen=True)
class FullCheck:
    """How to run a ``full`` preset without its real data.

    ``overrides`` replace settings of the preset (data paths to the written data, fewer steps,
    smaller sizes); ``steps_key`` names the setting that counts training (steps or epochs), so
    the full run's time is projected as ``seconds / overrides[steps_key] * full[steps_key]``;
    ``data`` says in words what was written (shown by ``gpu-check``).
    """

    overrides: dict[str, Any]
    steps_key: str
    data: str


def cifar10_data(
    data_dir: Path, scale: str, n_train: int = 40, n_test: int = 20
) -> tuple[str, str]:
    """CIFAR-10 in its python format for a check: ``n_train`` + ``n_test`` fixture images at
    ``tiny``, the real sizes (50,000 + 10,000 random images) at ``gpu``, written once per
    folder. Returns the folder (for ``data_root``) and what was written, in words."""
    from companion.data import write_cifar_fixture

    if scale == "gpu":
        n_train, n_test = 50_000, 10_000
    done = Path(data_dir) / f".cifar10-{n_train}-{n_test}"
    root = Path(data_dir) / "cifar-10-batches-py"
    if not done.exists():
        root = write_cifar_fixture(data_dir, "cifar10", n_train=n_train, n_test=n_test)
        done.touch()
    kind = "fixture" if scale == "tiny" else "random images in the python format, written here"
    return str(root), f"CIFAR-10 {kind}: {n_train:,} train + {n_test:,} test images"


def full_check(slug: str, data_dir: Path, scale: str) -> FullCheck:
    """The paper's :class:`FullCheck` at ``scale`` ("tiny" or "gpu"), its data written."""
    if scale not in SCALES:
        raise CompanionError(f"unknown scale {scale!r}; valid: {', '.join(SCALES)}")
    try:
        module = importlib.import_module(f"companion.papers.{slug}.fullscale")
    except ModuleNotFoundError as err:
        raise CompanionError(
            f"{slug} has no fullscale module (companion/papers/{slug}/fullscale.py)"
        ) from err
    Path(data_dir).mkdir(parents=True, exist_ok=True)
    return module.full_check(Path(data_dir), scale)


# bf16 dense peak of one H100 SXM (TFLOP/s) and the share of it a well-fed training step reaches
GPU_CLASS, GPU_PEAK_TFLOPS, UTILIZATION = "one H100", 989.0, 0.35
# a small model's step is bound by launch and Python overhead, not FLOPs: a floor per optimizer step
STEP_OVERHEAD_S = 2e-3


def count_flops(fn, *args, **kwargs) -> float:
    """Floating-point operations of ``fn(*args, **kwargs)`` (forward and backward if ``fn`` runs
    both), counted by torch's ``FlopCounterMode`` from the shapes of the matrix products and
    convolutions; elementwise work is not counted, so this is a lower bound."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        fn(*args, **kwargs)
    return float(counter.get_total_flops())


def count_steps(value) -> float:
    """A preset's steps setting as a number: a tuple (e.g. t-SimCNE's epochs per stage) counts
    as the sum of its entries."""
    return float(sum(value)) if isinstance(value, (tuple, list)) else float(value)


def estimate_hours(flops_per_step: float, steps: float, optimizer_steps: float = 0.0) -> float:
    """Estimated hours on :data:`GPU_CLASS` at :data:`UTILIZATION` of its bf16 peak, and never
    less than :data:`STEP_OVERHEAD_S` per optimizer step (small models are overhead-bound)."""
    compute = flops_per_step * steps / (GPU_PEAK_TFLOPS * 1e12 * UTILIZATION)
    return max(compute, optimizer_steps * STEP_OVERHEAD_S) / 3600


def scaling_row(slug: str) -> dict[str, str]:
    """One row of the README's scaling-up table, from the paper's fullscale module."""
    from companion.registry import load_paper

    paper = load_paper(slug)
    module = importlib.import_module(f"companion.papers.{slug}.fullscale")
    cfg = paper.PRESETS["full"]
    if getattr(module, "MEASURED", None):
        time_text = f"{module.MEASURED} (measured)"
    elif getattr(module, "ESTIMATED", None):  # a CPU-bound preset (a solver): no FLOP count
        time_text = f"{module.ESTIMATED} (estimated)"
    else:
        steps_key = module.STEPS_KEY
        # optimizer steps over every arm, seed and run: the module says, else the steps setting
        total = getattr(module, "optimizer_steps", lambda c: getattr(c, steps_key))(cfg)
        hours = estimate_hours(
            module.flops_per_step(cfg), count_steps(getattr(cfg, steps_key)), count_steps(total)
        )
        time_text = (
            f"~{_hours(hours)} on {GPU_CLASS} (estimated: FLOPs per step × {steps_key}, "
            f"at least {STEP_OVERHEAD_S * 1e3:g} ms per optimizer step)"
        )
    return {
        "paper": slug,
        "command": f"companion run {slug} --preset full --out runs/{slug}-full",
        "data": module.DATA,
        "hardware": module.HARDWARE,
        "time": time_text,
        "reported": module.REPORTED,
    }


def _hours(hours: float) -> str:
    if hours < 1 / 60:
        return "1 min"
    if hours < 1:
        return f"{max(1, round(hours * 60))} min"
    return f"{hours:.1f} h" if hours < 10 else f"{round(hours)} h"


SCALING_FILE = Path(__file__).resolve().parents[2] / "data" / "scaling.json"


def write_scaling(slugs: list[str], path: Path = SCALING_FILE) -> dict[str, dict[str, str]]:
    """Compute every paper's scaling row and keep them in ``data/scaling.json`` (written by
    ``companion catalog --write``), so a notebook prints its row without counting FLOPs."""
    from companion.core.results import write_json

    rows = {s: scaling_row(s) for s in slugs}
    write_json(path, rows)
    return rows


def stored_scaling_row(slug: str, path: Path = SCALING_FILE) -> dict[str, str]:
    """A paper's scaling row as ``companion catalog --write README.md`` stored it."""
    from companion.core.results import read_json

    rows = read_json(path) if Path(path).exists() else {}
    if slug not in rows:
        raise CompanionError(
            f"no scaling row for {slug!r} in {path}: run `companion catalog --write README.md`"
        )
    return rows[slug]


def scaling_table(slugs: list[str]) -> str:
    rows = [scaling_row(s) for s in slugs]
    lines = [
        "| paper | command | data | hardware | time | what the paper reported |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['paper']} | `{r['command']}` | {r['data']} | {r['hardware']} | {r['time']} "
        f"| {r['reported']} |"
        for r in rows
    ]
    return "\n".join(lines)


def full_config(slug: str, data_dir: Path, scale: str, **settings):
    """The ``full`` preset with the check's overrides and any ``settings`` (e.g. device)."""
    from companion.registry import load_paper

    paper = load_paper(slug)
    check = full_check(slug, data_dir, scale)
    return paper, check, paper.PRESETS["full"].replace(**check.overrides, **settings)


@dataclasses.dataclass(frozen=True)
class GpuCheckRow:
    slug: str
    steps: float
    seconds: float
    peak_gib: float
    projected_h: float
    claims: str
    data: str
    unit: str  # what a step is: the preset's steps_key (steps, epochs, ...)


def gpu_check(
    slugs: list[str], work_dir: Path, device: str = "cuda", scale: str = "gpu", echo=print
) -> list[GpuCheckRow]:
    """Run each paper's ``full`` preset for the check's bounded steps on ``device``.

    On CUDA, all visible GPUs are used (DDP through Fabric's ``ddp_spawn`` when more than one).
    Returns a row per paper: steps run, seconds, peak GPU memory, the projected hours of the full
    run (``seconds / steps * full steps``; one GPU's figure when there is one) and the claims line.
    """
    if device == "cuda" and not torch.cuda.is_available():
        raise CompanionError(
            "no CUDA device is present: gpu-check runs the full presets on GPUs "
            "(use --device cpu --scale tiny to try its code path here)"
        )
    devices = torch.cuda.device_count() if device == "cuda" else 1
    rows = []
    for slug in slugs:
        settings: dict[str, Any] = {"device": device}
        module = importlib.import_module(f"companion.papers.{slug}.fullscale")
        if devices > 1 and not getattr(module, "SINGLE_DEVICE", False):
            settings.update(devices=devices, strategy="ddp_spawn")
        # one data folder for every paper: the 60,000 CIFAR images are written once
        paper, check, cfg = full_config(slug, Path(work_dir) / "data", scale, **settings)
        echo(f"{slug}: {check.data}; {check.steps_key} = {check.overrides[check.steps_key]}")
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        result = paper.run(cfg, out_dir=Path(work_dir) / slug / "run")
        seconds = time.perf_counter() - start
        peak = torch.cuda.max_memory_allocated() / 2**30 if device == "cuda" else float("nan")
        steps = count_steps(check.overrides[check.steps_key])
        full_steps = count_steps(getattr(paper.PRESETS["full"], check.steps_key))
        report = paper.check_claims(result)
        rows.append(
            GpuCheckRow(
                slug,
                steps,
                seconds,
                peak,
                seconds / steps * full_steps / 3600,
                f"claims hold: {report.n_hold}/{len(report.rows)}",
                check.data,
                check.steps_key,
            )
        )
    return rows


def gpu_table(rows: list[GpuCheckRow], device_name: str) -> str:
    header = ("paper", "run", "seconds", "rate", "peak GiB", "projected full run", "claims")
    body = [
        (
            r.slug,
            f"{r.steps:g} {r.unit}",
            f"{r.seconds:.1f}",
            f"{r.steps / r.seconds:.2f} {r.unit}/s",
            f"{r.peak_gib:.1f}",
            f"{r.projected_h:.1f} h",
            r.claims,
        )
        for r in rows
    ]
    widths = [max(len(x[i]) for x in [header, *body]) for i in range(len(header))]
    lines = [f"gpu-check on {device_name} (projected = seconds / steps run × the preset's steps)"]
    lines += ["  ".join(c.ljust(w) for c, w in zip(x, widths)).rstrip() for x in [header, *body]]
    lines.insert(2, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
