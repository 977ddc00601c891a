"""The experiment: a zoo of classifiers, each measured as the paper measures timm's 523 ImageNet
models (accuracy, AUROC, AURC, E-AURC, SAC, ECE; before and after temperature scaling).

* ``source="zoo"`` (smoke and notebook presets): small classifiers trained here on handwritten
  digits, several ways. For every architecture in ``architectures``: *vanilla* (cross-entropy),
  *label_smoothing*, *distilled* (knowledge distillation from a teacher: small vanilla CNNs,
  ``teacher_kind="cnn"``, *cross-fitted*: the training images are split into ``teacher_folds``
  folds and each image gets the logits of the CNN trained on the other folds, so the teacher's
  outputs on the students' training images are out-of-fold and still carry its uncertainty
  about each image, as a large teacher's train-set outputs do; a teacher trained on all images
  memorises them and is near one-hot there), *short* (vanilla, trained for ``short_epochs``
  only) and *distilled_shuffled*, the control of distillation: the same loss, but every training
  image gets the teacher's outputs for another training image of the same class
  (:func:`shuffle_within_class`), so the soft targets keep their class-level shape and lose what
  the teacher knows about each image. The members of one
  architecture start from the same weights and see the same batches, so a distilled model and
  its vanilla twin differ only in their loss.
* ``source="logits_folder"`` (full preset): pretrained classifiers' outputs on the ImageNet
  validation set, one ``<model>.npz`` per model (``logits`` [N, classes], ``labels`` [N]) in
  ``data_root``; nothing is trained, each model is evaluated as in ``benchmark_models.py``.

Either way, temperature scaling is fitted on a held-out validation part and every metric, with
and without it, is measured on the same test samples.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from companion.core import (
    Config,
    Result,
    StepBatches,
    fit,
    launch_or_resume,
    seed_everything,
    torch_threads,
)
from companion.errors import CompanionError, unknown
from companion.nn import MLP, SmallCNN
from companion.papers.selective_prediction.method import (
    distillation_loss,
    evaluate_with_temperature_scaling,
    label_smoothing_loss,
    max_softmax,
    uncertainty_metrics,
)

SOURCES = ("zoo", "logits_folder")
DATASETS = ("digits", "mnist_subset")
REGIMES = ("vanilla", "label_smoothing", "distilled", "short", "distilled_shuffled")
DISTILL_REGIMES = ("distilled", "distilled_shuffled")  # the regimes that need the teacher
TEACHER_KINDS = ("cnn", "mlp")


def hidden_widths(architecture: str) -> list[int]:
    """``"linear"`` -> [] (logistic regression); ``"64x64"`` -> [64, 64] (two hidden layers)."""
    if architecture == "linear":
        return []
    try:
        widths = [int(w) for w in architecture.split("x")]
    except ValueError:
        widths = []
    if not widths or min(widths) < 1:
        raise CompanionError(
            f"unknown architecture {architecture!r}; valid: 'linear' or hidden widths joined by "
            "'x' (e.g. '64' or '64x64')"
        )
    return widths


@dataclasses.dataclass(frozen=True)
class SelectivePredictionConfig(Config):
    """Which classifiers, how they are trained (zoo) or read (logits folder), and how measured."""

    source: str = "zoo"
    # zoo: data and members
    dataset: str = "mnist_subset"
    image_size: int = 14
    val_fraction: float = 0.2  # temperature scaling is fitted here
    test_fraction: float = 0.4  # every metric is measured here
    architectures: tuple[str, ...] = ("linear", "16", "64", "64x64")  # hidden widths, "x"-joined
    regimes: tuple[str, ...] = REGIMES
    epochs: int = 20
    short_epochs: int = 3
    batch_size: int = 128
    lr: float = 3e-3
    label_smoothing: float = 0.1
    teacher_kind: str = "cnn"  # the distillation teacher: "cnn" (SmallCNN) or "mlp"
    teacher_folds: int = 4  # cross-fitting: one teacher per fold, trained on the other folds
    teacher_epochs: int = 0  # 0: the students' ``epochs``
    teacher_width: int = 128  # mlp teacher: one hidden layer of this width
    teacher_channels: tuple[int, ...] = (16, 32, 64)  # cnn teacher: channels of its conv blocks
    kd_temperature: float = 2.0
    kd_alpha: float = 0.5
    checkpoint_every: int = 0
    threads: int = 1  # CPU threads while training (0: leave torch's setting)
    # logits folder (full preset)
    data_root: str = ""
    max_models: int = 0  # 0: every .npz file in data_root (sorted by name)
    ts_val_size: int = 5000  # stratified validation samples for temperature scaling
    # measurement (both sources)
    sac_targets: tuple[float, ...] = (0.99, 0.95)
    ts_init: float = 1.5
    ts_lr: float = 1.0
    ts_max_iter: int = 100
    curve_points: int = 200

    def validate(self) -> None:
        if self.source not in SOURCES:
            raise unknown("source", self.source, SOURCES)
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        for regime in self.regimes:
            if regime not in REGIMES:
                raise unknown("regime", regime, REGIMES)
        for arch in self.architectures:
            hidden_widths(arch)
        for target in self.sac_targets:
            if not 0 < target <= 1:
                raise CompanionError(f"SAC targets must lie in (0, 1], got {target}")
        if self.epochs < 1 or self.short_epochs < 1 or self.batch_size < 1 or self.lr <= 0:
            raise CompanionError(
                f"epochs, short_epochs, batch_size and lr must be positive, got {self.epochs}, "
                f"{self.short_epochs}, {self.batch_size}, {self.lr}"
            )
        if self.teacher_kind not in TEACHER_KINDS:
            raise unknown("teacher_kind", self.teacher_kind, TEACHER_KINDS)
        if self.teacher_folds < 2 or self.teacher_epochs < 0:
            raise CompanionError(
                f"teacher_folds must be >= 2 (cross-fitting) and teacher_epochs >= 0, got "
                f"{self.teacher_folds}, {self.teacher_epochs}"
            )
        if not 0 <= self.kd_alpha <= 1 or self.kd_temperature <= 0:
            raise CompanionError(
                f"kd_alpha must lie in [0, 1] and kd_temperature be positive, got "
                f"{self.kd_alpha}, {self.kd_temperature}"
            )
        if self.source == "logits_folder" and not self.data_root:
            raise CompanionError("source 'logits_folder' needs data_root (a folder of .npz files)")
        if self.max_models < 0 or self.ts_val_size < 1:
            raise CompanionError(
                f"max_models must be >= 0 and ts_val_size >= 1, got {self.max_models}, "
                f"{self.ts_val_size}"
            )


PRESETS: dict[str, SelectivePredictionConfig] = {
    "smoke": SelectivePredictionConfig(
        dataset="digits",
        image_size=8,
        val_fraction=0.15,
        test_fraction=0.35,
        architectures=("linear", "16"),
        epochs=2,
        short_epochs=1,
        teacher_folds=2,
        teacher_channels=(4, 8, 8),
        curve_points=20,
    ),
    "notebook": SelectivePredictionConfig(),
    # Paper scale: pretrained ImageNet classifiers' validation-set outputs, read from a folder
    # (one .npz per model, written with timm as shown in the notebook), 5,000 images for TS.
    "full": SelectivePredictionConfig(
        source="logits_folder",
        data_root="data/imagenet_val_logits",
        max_models=523,
        ts_val_size=5000,
        checkpoint_every=1,
    ),
}


@dataclasses.dataclass
class MemberResult(Result):
    """One classifier: its metrics before and after temperature scaling, and its curves."""

    name: str
    architecture: str
    regime: str
    temperature: float
    before: dict[str, float]
    after: dict[str, float]
    coverage: list[float]
    risk: list[float]
    risk_ts: list[float]
    n_test: int
    seconds: float
    kappa: list[float] = dataclasses.field(default_factory=list)  # per test sample, before TS
    correct: list[bool] = dataclasses.field(default_factory=list)  # per test sample


@dataclasses.dataclass
class SelectivePredictionResult(Result):
    config: dict
    members: dict[str, MemberResult]
    # the distillation teacher on the test samples (the mean softmax of its fold CNNs)
    teacher: MemberResult | None
    # the teacher's out-of-fold metrics on the students' training images (what they learn from)
    teacher_train: dict[str, float] | None = None

    def table(self, key: str, after: bool = False) -> dict[str, float]:
        """``{member: metric}`` before (or after) temperature scaling."""
        return {n: (m.after if after else m.before)[key] for n, m in self.members.items()}

    def twins(self, regime: str = "distilled") -> list[tuple[MemberResult, MemberResult]]:
        """(vanilla, ``regime``) pairs of one architecture each: same initial weights, same
        batches."""
        by = {(m.architecture, m.regime): m for m in self.members.values()}
        return [
            (by[(a, "vanilla")], by[(a, regime)])
            for a in dict.fromkeys(m.architecture for m in self.members.values())
            if (a, "vanilla") in by and (a, regime) in by
        ]


# --------------------------------------------------------------------------------------------
# The zoo: data, models, training regimes
# --------------------------------------------------------------------------------------------


def load_zoo_data(cfg: SelectivePredictionConfig):
    """Flattened train/val/test tensors and the number of classes."""
    from companion import data

    splits = data.load(
        cfg.dataset,
        image_size=cfg.image_size,
        val_fraction=cfg.val_fraction,
        test_fraction=cfg.test_fraction,
        seed=cfg.seed,
    )

    def flat(part):
        x, y = part.tensors
        return x.reshape(len(x), -1).float(), y

    return flat(splits.train), flat(splits.val), flat(splits.test), splits.num_classes


def build_model(architecture: str, in_features: int, classes: int) -> nn.Module:
    """An MLP with the architecture's hidden widths (none: multinomial logistic regression)."""
    return MLP(in_features, hidden_widths(architecture), classes)


def build_teacher(cfg: SelectivePredictionConfig, in_features: int, classes: int) -> nn.Module:
    """One member of the distillation teacher, reading the flattened square images: a small
    CNN (``teacher_kind="cnn"``, conv blocks of ``teacher_channels``) or a one-hidden-layer MLP of
    ``teacher_width``."""
    if cfg.teacher_kind == "mlp":
        return build_model(str(cfg.teacher_width), in_features, classes)
    side = round(in_features**0.5)
    if side * side != in_features:
        raise CompanionError(f"a cnn teacher needs square images, got {in_features} features")
    return nn.Sequential(
        nn.Unflatten(1, (1, side, side)), SmallCNN(1, classes, cfg.teacher_channels)
    )


def make_step(cfg: SelectivePredictionConfig, regime: str):
    """The loss of a training regime, as a step function for :func:`companion.core.fit`; the
    batch is (x, y, teacher logits)."""

    def step(model, batch):
        x, y, teacher = batch
        logits = model(x)
        if regime == "label_smoothing":
            loss = label_smoothing_loss(logits, y, cfg.label_smoothing)
        elif regime in DISTILL_REGIMES:
            loss = distillation_loss(logits, teacher, y, cfg.kd_temperature, cfg.kd_alpha)
        else:  # vanilla and short
            loss = nn.functional.cross_entropy(logits, y)
        return loss, {"accuracy": (logits.argmax(-1) == y).float().mean().item()}

    return step


@torch.no_grad()
def predict_logits(model: nn.Module, x: torch.Tensor, device, batch_size: int = 4096):
    """Logits in float32 whatever the training precision: the unwrapped module, autocast off."""
    module = getattr(model, "module", model).eval()
    out = []
    with torch.autocast(torch.device(device).type, enabled=False):
        for chunk in x.split(batch_size):
            out.append(module(chunk.to(device).float()).float().cpu())
    return torch.cat(out)


def train_member(
    fabric,
    cfg: SelectivePredictionConfig,
    architecture: str,
    regime: str,
    seed: int,
    teacher_logits: torch.Tensor | None,
    folder: Path | None,
    resume: bool,
) -> MemberResult:
    """Train one classifier under Fabric, then evaluate it (raw and temperature-scaled)."""
    with torch_threads(cfg.threads, fabric.device):
        (x_train, y_train), val, test, classes = load_zoo_data(cfg)
        seed_everything(seed)  # every regime of one architecture starts from these weights
        model = build_model(architecture, x_train.shape[1], classes)
        optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
        model, optimizer = fabric.setup(model, optimizer)
        soft = teacher_logits if teacher_logits is not None else torch.zeros(len(y_train), classes)
        batches = StepBatches(
            (x_train, y_train, soft),
            cfg.batch_size,
            cfg.seed,
            fabric.global_rank,
            fabric.world_size,
        )
        epochs = cfg.short_epochs if regime == "short" else cfg.epochs
        start = time.perf_counter()
        fit(
            fabric,
            model,
            optimizer,
            batches,
            make_step(cfg, regime),
            steps=epochs * batches.steps_per_epoch,
            log_every=batches.steps_per_epoch,
            checkpoint=folder / "checkpoint.ckpt" if folder else None,
            checkpoint_every=cfg.checkpoint_every * batches.steps_per_epoch,
            resume=resume,
            desc=f"{architecture}/{regime}",
        )
        seconds = time.perf_counter() - start
        val_logits = predict_logits(model, val[0], fabric.device)
        test_logits = predict_logits(model, test[0], fabric.device)
        return _member(
            cfg,
            f"{architecture}/{regime}",
            architecture,
            regime,
            val_logits,
            val[1],
            test_logits,
            test[1],
            seconds,
        )


def _member(
    cfg, name, architecture, regime, val_logits, val_labels, test_logits, test_labels, seconds
) -> MemberResult:
    ev = evaluate_with_temperature_scaling(
        val_logits,
        np.asarray(val_labels),
        test_logits,
        np.asarray(test_labels),
        sac_targets=cfg.sac_targets,
        curve_points=cfg.curve_points,
        ts_init=cfg.ts_init,
        ts_lr=cfg.ts_lr,
        ts_max_iter=cfg.ts_max_iter,
    )
    kappa, predicted = max_softmax(test_logits)
    return MemberResult(
        name=name,
        architecture=architecture,
        regime=regime,
        n_test=len(test_labels),
        seconds=seconds,
        kappa=kappa.tolist(),
        correct=(predicted == np.asarray(test_labels)).tolist(),
        **ev,
    )


def teacher_label(cfg: SelectivePredictionConfig) -> str:
    """The teacher's architecture in words, e.g. ``cnn16-32-64 x 4 folds``."""
    if cfg.teacher_kind == "cnn":
        one = "cnn" + "-".join(str(c) for c in cfg.teacher_channels)
    else:
        one = f"mlp{cfg.teacher_width}"
    return f"{one} x {cfg.teacher_folds} folds"


def teacher_name(i: int) -> str:
    return f"teacher{i}"


def teacher_folds(n: int, folds: int, seed: int) -> torch.Tensor:
    """The fold (0 .. ``folds`` − 1) of each of ``n`` training samples: a seeded random
    permutation cut into ``folds`` parts of near-equal size."""
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    fold = torch.empty(n, dtype=torch.long)
    for k, part in enumerate(perm.tensor_split(folds)):
        fold[part] = k
    return fold


def train_teacher(fabric, cfg, i: int, folder: Path | None, resume: bool) -> TeacherLogits:
    """The teacher of fold ``i`` (a vanilla CNN or wider MLP, its own seed, trained for
    ``teacher_epochs`` on the training samples of every *other* fold); returns its logits on the
    samples of fold ``i`` (out-of-fold), and on the validation and test samples."""
    with torch_threads(cfg.threads, fabric.device):
        (x_train, y_train), val, test, classes = load_zoo_data(cfg)
        held = teacher_folds(len(y_train), cfg.teacher_folds, cfg.seed * 1000 + 5) == i
        seed_everything(cfg.seed * 1000 + 101 + i)
        model = build_teacher(cfg, x_train.shape[1], classes)
        optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
        model, optimizer = fabric.setup(model, optimizer)
        batches = StepBatches(
            (x_train[~held], y_train[~held], torch.zeros(int((~held).sum()), classes)),
            cfg.batch_size,
            cfg.seed * 1000 + 101 + i,
            fabric.global_rank,
            fabric.world_size,
        )
        fit(
            fabric,
            model,
            optimizer,
            batches,
            make_step(cfg, "vanilla"),
            steps=(cfg.teacher_epochs or cfg.epochs) * batches.steps_per_epoch,
            log_every=batches.steps_per_epoch,
            checkpoint=folder / "checkpoint.ckpt" if folder else None,
            checkpoint_every=cfg.checkpoint_every * batches.steps_per_epoch,
            resume=resume,
            desc=teacher_name(i),
        )
        return TeacherLogits(
            *(
                predict_logits(model, x, fabric.device).tolist()
                for x in (x_train[held], val[0], test[0])
            )
        )


@dataclasses.dataclass
class TeacherLogits(Result):
    """A fold teacher's logits on its held-out training samples, the validation and the test
    samples (lists, so that a finished teacher is saved as JSON and resumed)."""

    train: list
    val: list
    test: list


def shuffle_within_class(logits: torch.Tensor, labels: torch.Tensor, seed: int) -> torch.Tensor:
    """The control's soft targets: row i is the teacher's logits for another training sample of
    the same class (a random permutation within each class, fixed by ``seed``). Class-level
    structure (how soft, which classes it confuses on average) stays; per-image knowledge (which
    images are hard) goes."""
    g = torch.Generator().manual_seed(seed)
    perm = torch.arange(len(labels))
    for c in labels.unique():
        idx = (labels == c).nonzero().squeeze(1)
        perm[idx] = idx[torch.randperm(len(idx), generator=g)]
    return logits[perm]


def ensemble_logits(parts: list[torch.Tensor]) -> torch.Tensor:
    """Log of the mean of several networks' softmax probabilities (the fold teachers' outputs on
    the validation and test samples, which none of them was trained on)."""
    return torch.stack([p.log_softmax(-1) for p in parts]).logsumexp(0) - np.log(len(parts))


def cross_fitted_teacher(cfg: SelectivePredictionConfig, out_dir: Path | None, resume: bool):
    """Train the ``teacher_folds`` fold teachers; returns the out-of-fold logits on the training
    samples (row i from the teacher that never saw sample i) and the mean-softmax logits of the
    fold teachers on the validation and test samples."""
    (_, y_train), _, _, _ = load_zoo_data(cfg)
    fold = teacher_folds(len(y_train), cfg.teacher_folds, cfg.seed * 1000 + 5)
    outs = []
    for i in range(cfg.teacher_folds):
        folder = out_dir / teacher_name(i) if out_dir is not None else None
        outs.append(
            launch_or_resume(
                cfg,
                folder,
                resume,
                TeacherLogits,
                train_teacher,
                cfg,
                i,
                folder,
                resume,
                filename="logits.json",
            )
        )
    train = None
    for i, o in enumerate(outs):
        part = torch.tensor(o.train)
        train = torch.zeros(len(y_train), part.shape[1]) if train is None else train
        train[fold == i] = part
    val = ensemble_logits([torch.tensor(o.val) for o in outs])
    test = ensemble_logits([torch.tensor(o.test) for o in outs])
    return train, val, test


def run_zoo(cfg: SelectivePredictionConfig, out_dir: Path | None, resume: bool):
    members, teacher, teacher_train, soft, shuffled = {}, None, None, None, None
    if any(r in DISTILL_REGIMES for r in cfg.regimes):
        soft, val_logits, test_logits = cross_fitted_teacher(cfg, out_dir, resume)
        (_, y_train), val, test, _ = load_zoo_data(cfg)
        shuffled = shuffle_within_class(soft, y_train, cfg.seed * 1000 + 7)
        teacher = _member(
            cfg,
            "teacher",
            teacher_label(cfg),
            "teacher",
            val_logits,
            val[1],
            test_logits,
            test[1],
            0.0,
        )
        teacher_train = uncertainty_metrics(soft, y_train.numpy(), 1.0, cfg.sac_targets)
    for a, architecture in enumerate(cfg.architectures):
        for regime in cfg.regimes:
            name = f"{architecture}/{regime}"
            folder = out_dir / name.replace("/", "-") if out_dir is not None else None
            members[name] = launch_or_resume(
                cfg,
                folder,
                resume,
                MemberResult,
                train_member,
                cfg,
                architecture,
                regime,
                cfg.seed * 1000 + a,
                {"distilled": soft, "distilled_shuffled": shuffled}.get(regime),
                folder,
                resume,
            )
    return members, teacher, teacher_train


# --------------------------------------------------------------------------------------------
# The full preset: pretrained classifiers' outputs read from a folder
# --------------------------------------------------------------------------------------------


def logits_files(cfg: SelectivePredictionConfig) -> list[Path]:
    """The ``.npz`` files of ``data_root``, sorted by name, at most ``max_models`` of them."""
    root = Path(cfg.data_root)
    if not root.is_dir():
        raise CompanionError(
            f"data_root {str(root)!r} is not a folder; valid: a folder of <model>.npz files "
            "holding 'logits' [N, classes] and 'labels' [N]"
        )
    files = sorted(root.glob("*.npz"))
    if not files:
        raise CompanionError(f"no .npz files in {str(root)!r}")
    return files[: cfg.max_models] if cfg.max_models else files


def read_logits(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """``logits`` [N, classes] (any float dtype; measured in float64) and ``labels`` [N]."""
    with np.load(path) as f:
        missing = [k for k in ("logits", "labels") if k not in f]
        if missing:
            raise CompanionError(
                f"{path.name} has no {missing[0]!r} array; valid: an .npz with 'logits' and "
                "'labels'"
            )
        logits, labels = f["logits"], f["labels"].astype(np.int64)
    if logits.ndim != 2 or len(logits) != len(labels):
        raise CompanionError(f"{path.name}: logits {logits.shape} do not fit labels {labels.shape}")
    return logits, labels


def ts_split(labels: np.ndarray, val_size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Stratified (validation, test) indices, ``val_size`` for validation, as the official
    ``sklearn.model_selection.train_test_split(..., stratify=targets)``."""
    from sklearn.model_selection import train_test_split

    if not 0 < val_size < len(labels):
        raise CompanionError(f"ts_val_size {val_size} must lie in (0, {len(labels)})")
    test, val = train_test_split(
        np.arange(len(labels)), test_size=val_size, stratify=labels, random_state=seed
    )
    return np.sort(val), np.sort(test)


def evaluate_file(fabric, cfg: SelectivePredictionConfig, path: Path) -> MemberResult:
    """One pretrained classifier from its stored outputs (nothing trained)."""
    start = time.perf_counter()
    logits, labels = read_logits(path)
    val, test = ts_split(labels, cfg.ts_val_size, cfg.seed)
    logits = torch.from_numpy(logits.astype(np.float32))
    return _member(
        cfg,
        path.stem,
        path.stem,
        "pretrained",
        logits[val],
        labels[val],
        logits[test],
        labels[test],
        time.perf_counter() - start,
    )


def run_folder(cfg: SelectivePredictionConfig, out_dir: Path | None, resume: bool):
    members = {}
    for path in logits_files(cfg):
        folder = out_dir / "models" / path.stem if out_dir is not None else None
        members[path.stem] = launch_or_resume(
            cfg, folder, resume, MemberResult, evaluate_file, cfg, path
        )
    return members, None, None


def run(
    cfg: SelectivePredictionConfig, out_dir: str | Path | None = None, resume: bool = False
) -> SelectivePredictionResult:
    """Train (zoo) or read (logits folder) every classifier and measure it; with ``out_dir``,
    every finished member is saved, and ``resume=True`` keeps those and continues an
    interrupted one from its last checkpoint."""
    out = Path(out_dir) if out_dir is not None else None
    if cfg.source == "zoo":
        members, teacher, teacher_train = run_zoo(cfg, out, resume)
    else:
        members, teacher, teacher_train = run_folder(cfg, out, resume)
    result = SelectivePredictionResult(
        config=cfg.to_dict(), members=members, teacher=teacher, teacher_train=teacher_train
    )
    if out is not None:
        result.save(out / "result.json")
    return result
