"""Random teachers: the full preset without its real data (fixtures on CPU, bounded GPU
check)."""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck, cifar10_data, count_flops

DATA = (
    "CIFAR-10, python release (cifar-10-batches-py: data_batch_1..5, test_batch, "
    "batches.meta), read from data_root (default data/cifar-10-batches-py)"
)
HARDWARE = (
    "one GPU with ≥ 16 GB (estimate: ResNet18 and a 65,536-output head, 33 M parameters, "
    "batch 256, float32)"
)
REPORTED = (
    "on CIFAR-10, students distilled from a random ResNet18 teacher (no augmentation) probe "
    "far above it, linear and kNN, and gain more the closer they start to the teacher "
    "(locality)"
)
STEPS_KEY = "steps"


def flops_per_step(cfg) -> float:
    """FLOPs of one step of the run: for *every student* in ``cfg.alphas`` (they train one after
    the other for ``cfg.steps`` steps each, so steps × this is the whole run), the frozen
    teacher's forward and the student's forward and backward on ``cfg.batch_size`` images of
    3 × 32². The probes (embedding the 60,000 images and a linear probe every
    ``measure_every`` steps, about 3 % of the training FLOPs) are left out."""
    from companion.papers.random_teachers.experiment import build_model
    from companion.papers.random_teachers.method import distillation_loss

    with torch.device("meta"):
        teacher, student = build_model(cfg, 3), build_model(cfg, 3)
        x = torch.empty(cfg.batch_size, 3, cfg.image_size, cfg.image_size)
    teacher.requires_grad_(False).eval()

    def step():
        with torch.no_grad():
            target = teacher(x)
        ce, _ = distillation_loss(student(x), target, cfg.student_temp, cfg.teacher_temp)
        ce.backward()

    return count_flops(step) * len(cfg.alphas)


def optimizer_steps(cfg) -> int:
    """Optimizer steps of the whole run: ``cfg.steps`` per student, and those of the linear
    probes (``probe_epochs`` epochs of the 50,000 training features in batches of
    ``probe_batch_size``) of the teacher and of each student before training, every
    ``measure_every`` steps and at the end. Small steps, but each costs a launch."""
    probes_per_student = 1 + -(-cfg.steps // cfg.measure_every)
    probe_steps = cfg.probe_epochs * -(-50_000 // cfg.probe_batch_size)
    per_student = cfg.steps + probes_per_student * probe_steps
    return len(cfg.alphas) * per_student + probe_steps * 2  # + inputs' and teacher's probes


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: 16 + 8 CIFAR images, the preset's ResNet18 with a small head (32 → 8 → 16
    outputs), one student (α = 0, the paper's default start: every α runs the same code, and
    a ResNet18 is slow on a CPU), 2 steps of batch 8 with a checkpoint after each, probes
    (k = 5, one epoch) before and after training.

    ``gpu``: 50,000 + 10,000 random CIFAR images, the preset's model and its five students,
    60 steps each, probed (as in the preset) at the start and at the end: the probes weigh more
    in these few steps than in the full run, so the projected time errs on the long side."""
    if scale == "tiny":
        root, data = cifar10_data(data_dir, scale, n_train=16, n_test=8)
        overrides = dict(
            data_root=str(root),
            hidden_dims=(32,),
            bottleneck_dim=8,
            out_dim=16,
            alphas=(0.0,),
            batch_size=8,
            steps=2,
            measure_every=2,
            probe_k=5,
            probe_epochs=1,
            probe_batch_size=8,
            checkpoint_every=1,
        )
        return FullCheck(overrides, STEPS_KEY, data)
    root, data = cifar10_data(data_dir, scale)
    overrides = dict(data_root=str(root), steps=60)
    return FullCheck(overrides, STEPS_KEY, data)
