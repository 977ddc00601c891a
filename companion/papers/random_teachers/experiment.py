"""The experiment: distil students into one frozen random teacher, each student starting at a
different distance from it (α), and probe teacher and students (the paper's main experiment and
its locality experiment).

Every arm uses the same teacher (drawn from ``seed``), the same θ_R for the interpolation, the
same batches and the same optimizer; only α differs. The teacher is probed once; every student is
probed before training and every ``measure_every`` steps.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from pathlib import Path

import torch

from companion.core import (
    Config,
    Every,
    Result,
    StepBatches,
    fit,
    launch,
    launch_or_resume,
    read_json,
    seed_everything,
    torch_threads,
    write_json,
)
from companion.errors import CompanionError, unknown
from companion.papers.random_teachers.method import (
    ConvEncoder,
    DINOHead,
    DINOModel,
    DistillationStep,
    ResNet18,
    make_teacher_student,
    parameter_distance,
    probe,
)

DATASETS = ("digits", "mnist_subset", "cifar10")
ENCODERS = ("conv", "resnet18")
OPTIMIZERS = ("adamw", "adam")


@dataclasses.dataclass(frozen=True)
class RandomTeachersConfig(Config):
    """What to train and how. Sizes change between presets; the algorithm never does."""

    dataset: str = "digits"
    data_root: str = ""  # cifar10: the extracted python release
    image_size: int = 8  # digits and mnist_subset are resized to this
    encoder: str = "conv"  # conv (VGG-style, widths below) | resnet18 (the paper's CIFAR net)
    widths: tuple[int, ...] = (16, 16, 16, 16, 16, 16)
    pool_after: tuple[int, ...] = (2, 5)  # conv layers followed by a 2×2 max-pool
    hidden_dims: tuple[int, ...] = (128, 128)
    bottleneck_dim: int = 32
    # outputs K (paper: 65,536). With K = 256 the independent start (α = 1) has little to match
    # and also gains, so locality fades; K = 4,096 keeps it visible at 400 steps
    out_dim: int = 4096
    weight_norm: bool = False  # see DINOHead: the official code's runs used False
    teacher_temp: float = 1.0
    student_temp: float = 1.0
    alphas: tuple[float, ...] = (0.0, 0.5, 1.0)  # student start: 0 = teacher copy, 1 = independent
    optimizer: str = "adamw"
    lr: float = 1e-3
    weight_decay: float = 0.0
    batch_size: int = 64
    steps: int = 400
    measure_every: int = 100  # probe the student every n steps
    probe_k: int = 20
    # the linear probe: AdamW on standardised features. The paper: 10 epochs of batch 256 at
    # lr 1e-3 on 50,000 images; on 1,079 digits that stops far from convergence, so the small
    # presets take 100 full-batch steps at lr 1e-2 (within 1 point of a 2,000-step solution)
    probe_epochs: int = 100
    probe_batch_size: int = 4096
    probe_lr: float = 1e-2
    threads: int = 0  # torch CPU threads during the run; 0 leaves torch's setting alone
    checkpoint_every: int = 0

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        if self.encoder not in ENCODERS:
            raise unknown("encoder", self.encoder, ENCODERS)
        if self.optimizer not in OPTIMIZERS:
            raise unknown("optimizer", self.optimizer, OPTIMIZERS)
        if not self.alphas or any(not 0.0 <= a <= 1.0 for a in self.alphas):
            raise CompanionError(f"alphas must be values in [0, 1], got {self.alphas}")
        if len(set(self.alphas)) != len(self.alphas):
            raise CompanionError(f"alphas must be distinct, got {self.alphas}")
        if self.lr <= 0 or self.steps < 1 or self.batch_size < 1 or self.measure_every < 1:
            raise CompanionError(
                "lr, steps, batch_size and measure_every must be positive, got "
                f"lr={self.lr}, steps={self.steps}, batch_size={self.batch_size}, "
                f"measure_every={self.measure_every}"
            )
        if self.teacher_temp <= 0 or self.student_temp <= 0:
            raise CompanionError(
                f"temperatures must be positive, got teacher_temp={self.teacher_temp}, "
                f"student_temp={self.student_temp}"
            )
        if self.encoder == "conv" and (
            not self.widths or any(i < 0 or i >= len(self.widths) for i in self.pool_after)
        ):
            raise CompanionError(
                f"pool_after {self.pool_after} must index the conv layers 0..{len(self.widths) - 1}"
            )
        if self.probe_k < 1 or self.probe_epochs < 1 or self.threads < 0:
            raise CompanionError(
                f"probe_k and probe_epochs must be >= 1 and threads >= 0, got {self.probe_k}, "
                f"{self.probe_epochs}, {self.threads}"
            )


PRESETS: dict[str, RandomTeachersConfig] = {
    "smoke": RandomTeachersConfig(
        widths=(8, 8, 8),
        pool_after=(1,),
        hidden_dims=(32,),
        bottleneck_dim=16,
        out_dim=64,
        alphas=(0.0, 1.0),
        steps=20,
        measure_every=10,
        probe_epochs=5,
        threads=1,
    ),
    "notebook": RandomTeachersConfig(threads=1),
    # The paper's CIFAR-10 setting (configs/cifar10_distillation_v2.json): ResNet18 for tiny
    # inputs, head 2048-2048-256-65536, τ = 1, AdamW lr 1e-3 without weight decay, batch 256,
    # one unaugmented view; 100 epochs (the default `n_epochs` of the official configuration.py),
    # probes every 5 epochs with the paper's protocol (linear: 10 epochs, batch 256). The official
    # code probes at every validation (`validation_freq`, by default once per epoch); its
    # `probe_every` option is switched off (commented out) at the repository's HEAD.
    "full": RandomTeachersConfig(
        dataset="cifar10",
        data_root="data/cifar-10-batches-py",
        image_size=32,
        encoder="resnet18",
        hidden_dims=(2048, 2048),
        bottleneck_dim=256,
        out_dim=65536,
        alphas=(0.0, 0.25, 0.5, 0.75, 1.0),
        batch_size=256,
        steps=19_500,
        measure_every=975,
        probe_epochs=10,
        probe_batch_size=256,
        probe_lr=1e-3,
        checkpoint_every=975,
    ),
}


@dataclasses.dataclass
class StudentArm(Result):
    """One student (one α): its training curves and its probes over training."""

    alpha: float
    loss_steps: list[int]
    loss: list[float]  # Eq. 1 (cross-entropy)
    kl: list[float]  # KL(p_T ‖ p_S) = loss − H(p_T)
    probe_steps: list[int]  # optimizer steps done (0 = the initialisation)
    linear: list[float]  # linear-probe test accuracy of the student's encoder
    knn: list[float]  # kNN test accuracy
    distance_to_teacher: list[float]  # ‖θ_S − θ_T‖₂ at each probe
    distance_to_start: list[float]  # ‖θ_S − θ_S(0)‖₂ at each probe ("distance from init")
    seconds: float

    @property
    def final_linear(self) -> float:
        return self.linear[-1]

    @property
    def final_knn(self) -> float:
        return self.knn[-1]


@dataclasses.dataclass
class RandomTeachersResult(Result):
    config: dict
    inputs: dict[str, float]  # probes of the raw pixels: the "input" baseline
    teacher: dict[str, float]  # probes of the random teacher's encoder
    students: dict[str, StudentArm]  # by f"{alpha:g}"
    n_test: int = 0  # held-out images the probes are scored on (one image = 100 / n_test points)

    def arm(self, alpha: float) -> StudentArm:
        return self.students[arm_name(alpha)]

    @property
    def alphas(self) -> list[float]:
        return sorted(a.alpha for a in self.students.values())


def arm_name(alpha: float) -> str:
    return f"{alpha:g}"


def load_data(cfg: RandomTeachersConfig):
    """((train_x, train_y), (test_x, test_y), channels, classes), inputs standardised per channel
    with the training mean and std (as ``transforms.Normalize`` in the official code).

    CIFAR-10: its 50,000 training and 10,000 test images. Digits and the MNIST subset: the
    fixed 60% training split; validation and test splits (40%) together are the held-out set.
    """
    from companion import data

    if cfg.dataset == "cifar10":
        train = data.load_cifar(cfg.data_root, "cifar10", "train").tensors
        test = data.load_cifar(cfg.data_root, "cifar10", "test").tensors
        classes = 10
    else:
        splits = data.load(cfg.dataset, image_size=cfg.image_size, seed=0)
        train, classes = splits.train.tensors, splits.num_classes
        # nothing here is tuned on a validation set, so validation and test images together
        # are the held-out set the probes are scored on (fewer ties, less noise)
        test = tuple(torch.cat(pair) for pair in zip(splits.val.tensors, splits.test.tensors))
    mean = train[0].mean(dim=(0, 2, 3), keepdim=True)
    std = train[0].std(dim=(0, 2, 3), keepdim=True)
    norm = lambda x: (x - mean) / std  # noqa: E731
    return (norm(train[0]), train[1]), (norm(test[0]), test[1]), train[0].shape[1], classes


def build_model(cfg: RandomTeachersConfig, channels: int) -> DINOModel:
    """Encoder and DINO head (initialised by ``make_teacher_student``)."""
    if cfg.encoder == "resnet18":
        encoder = ResNet18(channels)
    else:
        encoder = ConvEncoder(channels, cfg.widths, cfg.pool_after)
    head = DINOHead(
        encoder.embed_dim, cfg.hidden_dims, cfg.bottleneck_dim, cfg.out_dim, cfg.weight_norm
    )
    return DINOModel(encoder, head)


def probe_kwargs(cfg: RandomTeachersConfig) -> dict:
    return dict(
        k=cfg.probe_k,
        epochs=cfg.probe_epochs,
        batch_size=cfg.probe_batch_size,
        lr=cfg.probe_lr,
        seed=cfg.seed,
    )


def probe_baselines(fabric, cfg: RandomTeachersConfig) -> dict[str, dict[str, float]]:
    """Probes of the raw inputs and of the random teacher (the same teacher every arm sees)."""
    seed_everything(cfg.seed)
    train, test, channels, classes = load_data(cfg)
    train, test = fabric.to_device(train), fabric.to_device(test)
    teacher, _ = make_teacher_student(lambda: build_model(cfg, channels), 0.0, cfg.seed)
    teacher = fabric.to_device(teacher)
    return {
        "inputs": probe(None, train, test, classes, **probe_kwargs(cfg)),
        "teacher": probe(teacher.encoder, train, test, classes, **probe_kwargs(cfg)),
    }


def train_student(
    fabric, cfg: RandomTeachersConfig, alpha: float, folder: Path | None, resume: bool
) -> StudentArm:
    """Distil one student (start α) into the random teacher and probe it while it learns."""
    seed_everything(cfg.seed)
    train, test, channels, classes = load_data(cfg)
    teacher, student = make_teacher_student(lambda: build_model(cfg, channels), alpha, cfg.seed)
    opt_cls = torch.optim.AdamW if cfg.optimizer == "adamw" else torch.optim.Adam
    optimizer = opt_cls(
        student.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, foreach=True
    )
    teacher = fabric.to_device(teacher)
    student, optimizer = fabric.setup(student, optimizer)
    batches = StepBatches(train, cfg.batch_size, cfg.seed, fabric.global_rank, fabric.world_size)
    train_d, test_d = fabric.to_device(train), fabric.to_device(test)
    raw = student.module if hasattr(student, "module") else student
    start_weights = copy.deepcopy(raw)  # θ_S(0); on a resume: rebuilt identically from the seed

    def measure(model) -> dict[str, float]:
        accs = probe(model.encoder, train_d, test_d, classes, **probe_kwargs(cfg))
        return {
            "probe/linear": accs["linear"],
            "probe/knn": accs["knn"],
            "distance": parameter_distance(model, teacher),
            "distance/start": parameter_distance(model, start_weights),
        }

    def after_update(step, _model) -> dict[str, float]:
        # fit calls this after the update of step ``step``, i.e. after step + 1 updates
        done = step + 1
        return measure(raw) if done % cfg.measure_every == 0 or done == cfg.steps else {}

    start_probe = measure(raw)  # the initialisation, before any update
    start = time.perf_counter()
    history = fit(
        fabric,
        student,
        optimizer,
        batches,
        DistillationStep(teacher, cfg.student_temp, cfg.teacher_temp),
        steps=cfg.steps,
        callbacks=[Every(1, after_update)],
        checkpoint=folder / "checkpoint.ckpt" if folder else None,
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        desc=f"student α={alpha:g}",
    )
    return StudentArm(
        alpha=alpha,
        loss_steps=[s + 1 for s in history.steps("loss")],
        loss=history.values("loss"),
        kl=history.values("kl"),
        probe_steps=[0] + [s + 1 for s in history.steps("probe/linear")],
        linear=[start_probe["probe/linear"]] + history.values("probe/linear"),
        knn=[start_probe["probe/knn"]] + history.values("probe/knn"),
        distance_to_teacher=[start_probe["distance"]] + history.values("distance"),
        distance_to_start=[0.0] + history.values("distance/start"),
        seconds=time.perf_counter() - start,
    )


def run(
    cfg: RandomTeachersConfig, out_dir: str | Path | None = None, resume: bool = False
) -> RandomTeachersResult:
    """Probe inputs and teacher, then train one student per α in ``cfg.alphas``.

    With ``out_dir``, finished parts are saved (``baselines.json``, ``alpha_<α>/arm.json``) and
    checkpoints written; ``resume=True`` keeps finished parts and continues an interrupted arm.
    """
    out = Path(out_dir) if out_dir is not None else None
    with torch_threads(cfg.threads):
        saved = out / "baselines.json" if out else None
        if resume and saved is not None and saved.exists():
            baselines = read_json(saved)
        else:
            baselines = launch(cfg, probe_baselines, cfg)
            if saved is not None:
                write_json(saved, baselines)
        students = {}
        for alpha in cfg.alphas:
            folder = out / f"alpha_{arm_name(alpha)}" if out else None
            students[arm_name(alpha)] = launch_or_resume(
                cfg, folder, resume, StudentArm, train_student, cfg, alpha, folder, resume
            )
    result = RandomTeachersResult(
        config=cfg.to_dict(),
        inputs=baselines["inputs"],
        teacher=baselines["teacher"],
        students=students,
        n_test=len(load_data(cfg)[1][1]),
    )
    if out is not None:
        result.save(out / "result.json")
    return result
