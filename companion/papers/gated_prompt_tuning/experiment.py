"""The experiment: pre-train a small ViT as a masked autoencoder (no labels), freeze it, then
tune prompts with a few labels per class:

* ``linear``: no prompts, only the head (a linear probe of the frozen features);
* ``vpt@k`` for every block k: VPT with the prompts inserted before block k (paper Fig. 1);
* ``gated``: gated prompt tuning, prompts at the input with learned per-block gates and
  attention temperatures (paper Sec. 4);
* ``tempered``: the control that removes only the gates: prompts at the input with the same
  learned attention temperatures, no gates (``vpt@0`` plus the temperatures).

Every arm loads the same frozen backbone, starts from the same prompt and head initialization
(same seed, same shapes) and sees the same batches, so their accuracies are paired.

Hyper-parameters are chosen on the VALIDATION split, never on the test split, by one rule fixed
before the runs (:func:`select`): every arm tries each learning rate of ``lrs`` (the gated arm
each pair of ``lrs`` × ``gate_inits``) and keeps the candidate with the highest validation
accuracy, ties going to the earlier candidate in the grid order (so the official gate_init 5
wins a tie). The best VPT block is also chosen on validation accuracy.
"""

from __future__ import annotations

import dataclasses
import math
import os
import tempfile
import time
from pathlib import Path

import torch

from companion.core import (
    Config,
    Every,
    Result,
    StepBatches,
    fit,
    launch_or_resume,
    seed_everything,
    torch_threads,
)
from companion.errors import CompanionError, unknown
from companion.nn import ViT
from companion.papers.gated_prompt_tuning.method import (
    MAE,
    PromptedViT,
    classification_step,
    mae_step,
)

METHODS = ("linear", "vpt", "gated", "tempered")
DATASETS = ("digits", "mnist_subset", "cifar10")
REPO = Path(__file__).resolve().parents[3]
SHIPPED_BACKBONE = "data/gated_prompt_tuning/backbone.pt"


@dataclasses.dataclass(frozen=True)
class GatedPromptConfig(Config):
    """What to pre-train and tune. Sizes change between presets; the algorithm never does."""

    dataset: str = "mnist_subset"
    data_root: str = ""  # cifar10: the extracted python release
    image_size: int = 16
    patch_size: int = 4
    dim: int = 64
    depth: int = 4
    heads: int = 4
    mlp_ratio: float = 2.0
    # the frozen backbone: a file written by ``python -m companion.papers.gated_prompt_tuning.
    # pretrain`` (a path relative to the repository, or absolute), or "" to pre-train it in the
    # run with the fields below (MAE on every training image, labels unused)
    backbone_file: str = SHIPPED_BACKBONE
    mask_ratio: float = 0.75
    decoder_dim: int = 32
    pretrain_steps: int = 6000
    pretrain_lr: float = 2e-3
    pretrain_batch: int = 128
    pretrain_warmup: float = 0.05  # linear warm-up over this fraction of the steps, then cosine
    # prompt tuning: labels_per_class labelled images per class
    methods: tuple[str, ...] = METHODS
    num_prompts: int = 10
    labels_per_class: int = 10
    steps: int = 100  # prompt-tuning steps per arm
    lr: float = 0.5  # SGD, momentum 0.9, warm-up then cosine decay (official optimizer)
    batch_size: int = 50
    gate_init: float = 5.0  # ℓ_i starts at −gate_init (official run.sh: 5)
    # the candidates chosen among on validation accuracy (empty: the single value above)
    lrs: tuple[float, ...] = (0.5, 0.1)
    gate_inits: tuple[float, ...] = (5.0, 2.0, 0.0)  # gated arm only
    warmup: float = 0.1  # linear warm-up over this fraction of the steps (official: 10 of 100)
    learn_temperature: bool = True
    prompt_dropout: float = 0.1
    measure_every: int = 10
    checkpoint_every: int = 0

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        for m in self.methods:
            if m not in METHODS:
                raise unknown("method", m, METHODS)
        if self.image_size % self.patch_size:
            raise CompanionError(
                f"image_size {self.image_size} is not divisible by patch_size {self.patch_size}"
            )
        if self.dim % self.heads:
            raise CompanionError(f"dim {self.dim} is not divisible by heads {self.heads}")
        if not 0 < self.mask_ratio < 1:
            raise CompanionError(f"mask_ratio must be in (0, 1), got {self.mask_ratio}")
        if min(self.steps, self.pretrain_steps, self.batch_size, self.labels_per_class) < 1:
            raise CompanionError("steps, pretrain_steps, batch_size, labels_per_class must be >= 1")
        if self.depth < 2:
            raise CompanionError(f"depth must be >= 2 for insertion blocks, got {self.depth}")
        if not 0 <= self.warmup < 1:
            raise CompanionError(f"warmup must be in [0, 1), got {self.warmup}")

    def candidates(self, arm: str) -> list[tuple[float, float]]:
        """(lr, gate_init) pairs the arm tries, in the tie-breaking order of :func:`select`."""
        lrs = self.lrs or (self.lr,)
        inits = (self.gate_inits or (self.gate_init,)) if arm == "gated" else (self.gate_init,)
        return [(lr, g) for g in inits for lr in lrs]

    def arm_names(self) -> list[str]:
        names = []
        for m in self.methods:
            names += [f"vpt@{k}" for k in range(self.depth)] if m == "vpt" else [m]
        return names


PRESETS: dict[str, GatedPromptConfig] = {
    # the digits (1,797 images, loaded in milliseconds, where the MNIST subset's CSV takes over
    # a second to parse) and two blocks keep the smoke run within its budget
    "smoke": GatedPromptConfig(
        dataset="digits",
        dim=16,
        depth=2,
        heads=2,
        backbone_file="",  # a tiny backbone pre-trained in the run (the test loads the shipped one)
        decoder_dim=16,
        pretrain_steps=8,
        pretrain_batch=64,
        steps=8,
        measure_every=4,
        lrs=(0.5,),
        gate_inits=(5.0, 0.0),
    ),
    "notebook": GatedPromptConfig(),
    # A larger scale on one GPU: a ViT-S/4 MAE on CIFAR-10, prompts on 200 labels per class.
    "full": GatedPromptConfig(
        dataset="cifar10",
        data_root="data/cifar-10-batches-py",
        image_size=32,
        patch_size=4,
        dim=384,
        depth=12,
        heads=6,
        mlp_ratio=4.0,
        backbone_file="",
        decoder_dim=256,
        pretrain_steps=40_000,
        pretrain_lr=1.5e-3,
        pretrain_batch=256,
        num_prompts=50,
        labels_per_class=200,
        steps=2_000,
        lr=0.1,
        batch_size=64,
        measure_every=100,
        checkpoint_every=1000,
        precision="bf16-mixed",
    ),
}


@dataclasses.dataclass
class PretrainResult(Result):
    loss_steps: list[int]
    loss: list[float]
    seconds: float


@dataclasses.dataclass
class ArmResult(Result):
    """One prompt-tuning arm: its curve, test accuracy, and (gated) its gates and temperatures."""

    name: str
    loss_steps: list[int]
    loss: list[float]
    measure_steps: list[int]
    gate_curves: list[list[float]]  # [block][measurement]: g_i during training (gated only)
    gates: list[float]  # g_i at the end (gated only)
    temperatures: list[float]  # τ_i at the end (gated only)
    train_accuracy: float
    test_accuracy: float
    seconds: float
    val_accuracy: float = float("nan")
    lr: float = float("nan")  # the chosen candidate
    gate_init: float = float("nan")
    # every candidate tried: {"lr", "gate_init", "val_accuracy", "test_accuracy", "gates"}
    selection: list[dict] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class GatedPromptResult(Result):
    """``probes``: test accuracy of a converged logistic regression on the few labelled images,
    on raw pixels (``pixels``), on the frozen backbone's features (``backbone``) and on the
    features of the same ViT at its random initialization (``random_backbone``)."""

    config: dict
    pretrain: PretrainResult
    arms: dict[str, ArmResult]
    probes: dict[str, float] = dataclasses.field(default_factory=dict)

    def vpt_accuracies(self, split: str = "test") -> list[float]:
        """Accuracy of VPT per insertion block, block 0 first (``split``: "test" or "val")."""
        k = sorted(int(n.split("@")[1]) for n in self.arms if n.startswith("vpt@"))
        return [getattr(self.arms[f"vpt@{i}"], f"{split}_accuracy") for i in k]

    def best_block(self, first: int = 0) -> int:
        """The VPT block (among ``first..``) with the highest VALIDATION accuracy."""
        val = self.vpt_accuracies("val")
        return max(range(first, len(val)), key=lambda k: (val[k], -k))


# ----------------------------------------------------------------------------- data
def load_data(cfg: GatedPromptConfig):
    """(pre-training images, (train x, y), (val x, y), (test x, y), channels, classes).

    MAE sees every training image without its label; prompt tuning then sees only
    ``labels_per_class`` labelled images per class, drawn from the training split by the run's
    seed (so each seed is another few-shot task). Hyper-parameters and the best block are
    chosen on the validation split; the test split is only scored. Both are the same at every
    seed and the MAE never saw them. (CIFAR-10 has no validation split: the last tenth of the
    training images is held out as one, and neither pre-training nor the labelled draw uses it.)
    """
    from companion import data

    if cfg.dataset == "cifar10":
        full = data.load_cifar(cfg.data_root, "cifar10", "train").tensors
        n_val = len(full[1]) // 10
        tr, va = tuple(t[:-n_val] for t in full), tuple(t[-n_val:] for t in full)
        te = data.load_cifar(cfg.data_root, "cifar10", "test").tensors
        classes = 10
    else:
        splits = data.load(cfg.dataset, image_size=cfg.image_size, seed=0)
        tr, va, te = splits.train.tensors, splits.val.tensors, splits.test.tensors
        classes = splits.num_classes
    gen = torch.Generator().manual_seed(cfg.seed)
    order = torch.randperm(len(tr[1]), generator=gen)
    rows = (
        torch.cat([order[tr[1][order] == c][: cfg.labels_per_class] for c in range(classes)])
        .sort()
        .values
    )
    return tr[0], (tr[0][rows], tr[1][rows]), va, te, tr[0].shape[1], classes


def backbone_spec(cfg: GatedPromptConfig, channels: int) -> dict:
    """The backbone's shape, stored with the shipped weights and checked when they load."""
    return {
        "dataset": cfg.dataset,
        "image_size": cfg.image_size,
        "patch_size": cfg.patch_size,
        "channels": channels,
        "dim": cfg.dim,
        "depth": cfg.depth,
        "heads": cfg.heads,
        "mlp_ratio": cfg.mlp_ratio,
    }


def backbone_path(name: str) -> Path:
    """A backbone file: absolute, relative to the working directory, or to the repository."""
    path = Path(name)
    return path if path.is_absolute() or path.exists() else REPO / path


def load_backbone_file(cfg: GatedPromptConfig, channels: int) -> dict:
    """The shipped pre-trained backbone: ``{"state_dict", "backbone", "pretrain", "provenance"}``.

    Refuses a file whose backbone shape differs from the config's.
    """
    path = backbone_path(cfg.backbone_file)
    if not path.exists():
        raise CompanionError(
            f"backbone file {path} not found: write it with `python -m "
            "companion.papers.gated_prompt_tuning.pretrain --out "
            f"{cfg.backbone_file}` or set backbone_file='' to pre-train in the run"
        )
    blob = torch.load(path, weights_only=True)
    want = backbone_spec(cfg, channels)
    if blob["backbone"] != want:
        raise CompanionError(
            f"backbone file {path} holds {blob['backbone']}, the config needs {want}"
        )
    return blob


def build_backbone(cfg: GatedPromptConfig, channels: int) -> ViT:
    return ViT(
        image_size=cfg.image_size,
        patch_size=cfg.patch_size,
        in_channels=channels,
        num_classes=1,  # the ViT's own head is unused
        dim=cfg.dim,
        depth=cfg.depth,
        heads=cfg.heads,
        mlp_ratio=cfg.mlp_ratio,
    )


def build_prompted(
    cfg: GatedPromptConfig, arm: str, backbone: ViT, channels: int, classes: int
) -> PromptedViT:
    """The prompted model of one arm (``linear``, ``vpt@k``, ``gated`` or ``tempered``)."""
    kind, _, block = arm.partition("@")
    return PromptedViT(
        backbone,
        classes,
        num_prompts=0 if kind == "linear" else cfg.num_prompts,
        insert_block=int(block) if block else 0,
        gated=kind in ("gated", "tempered"),
        use_gates=kind == "gated",
        gate_init=cfg.gate_init,
        learn_temperature=cfg.learn_temperature,
        prompt_dropout=cfg.prompt_dropout,
        channels=channels,
    )


def cosine(total: int, warmup: int = 0):
    """Linear warm-up over ``warmup`` steps, then cosine decay to 0 at ``total``."""

    def factor(s: int) -> float:
        if s < warmup:
            return (s + 1) / warmup
        return 0.5 * (1 + math.cos(math.pi * min(s, total) / total))

    return factor


# ----------------------------------------------------------------------------- pre-training
def pretrain(fabric, cfg: GatedPromptConfig, folder: Path, resume: bool) -> PretrainResult:
    """MAE pre-training (one CPU thread: faster for this small model on a busy CPU)."""
    with torch_threads(1, fabric.device):
        return _pretrain(fabric, cfg, folder, resume)


def _pretrain(fabric, cfg: GatedPromptConfig, folder: Path, resume: bool) -> PretrainResult:
    """MAE pre-training; the encoder's weights go to ``folder/backbone.pt``."""
    seed_everything(cfg.seed)
    images, _, _, _, channels, _ = load_data(cfg)
    mae = MAE(
        build_backbone(cfg, channels), cfg.decoder_dim, mask_ratio=cfg.mask_ratio, channels=channels
    )
    opt = torch.optim.AdamW(
        mae.parameters(), lr=cfg.pretrain_lr, weight_decay=0.05, betas=(0.9, 0.95)
    )
    warmup = int(cfg.pretrain_warmup * cfg.pretrain_steps)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, cosine(cfg.pretrain_steps, warmup))
    model, opt = fabric.setup(mae, opt)
    batches = StepBatches(
        (images,), cfg.pretrain_batch, cfg.seed, fabric.global_rank, fabric.world_size
    )
    start = time.perf_counter()
    history = fit(
        fabric,
        model,
        opt,
        batches,
        mae_step,
        steps=cfg.pretrain_steps,
        scheduler=sched,
        checkpoint=folder / "checkpoint.ckpt",
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        desc="MAE",
    )
    if fabric.is_global_zero:
        tmp = folder / "backbone.pt.tmp"
        torch.save(mae.encoder.state_dict(), tmp)
        os.replace(tmp, folder / "backbone.pt")
    fabric.barrier()
    return PretrainResult(
        history.steps("loss"), history.values("loss"), time.perf_counter() - start
    )


# ----------------------------------------------------------------------------- prompt tuning
@torch.no_grad()
def evaluate(model: PromptedViT, data, device, batch_size: int = 512) -> float:
    """Top-1 accuracy in float32 (unwrapped model, autocast off)."""
    model = getattr(model, "module", model).eval()
    correct = 0
    for x, y in zip(data[0].split(batch_size), data[1].split(batch_size)):
        with torch.autocast(torch.device(device).type, enabled=False):
            correct += (model(x.to(device).float()).argmax(-1).cpu() == y).sum().item()
    return correct / len(data[1])


def gate_stats(model) -> dict[str, float]:
    gates = getattr(model, "module", model).gates()
    return {f"gate/{i}": g.item() for i, g in enumerate(gates)}


def train_arm(
    fabric, cfg: GatedPromptConfig, arm: str, backbone_file: Path, folder: Path | None, resume: bool
) -> ArmResult:
    """Tune one arm on the frozen backbone (one CPU thread, as :func:`pretrain`)."""
    with torch_threads(1, fabric.device):
        return _train_arm(fabric, cfg, arm, backbone_file, folder, resume)


def _train_arm(
    fabric, cfg: GatedPromptConfig, arm: str, backbone_file: Path, folder: Path | None, resume: bool
) -> ArmResult:
    """Tune one arm's prompts (and gates, temperatures) and head on the frozen backbone."""
    seed_everything(cfg.seed)  # the same prompts and head at step 0 in every arm
    _, train, val, test, channels, classes = load_data(cfg)
    backbone = build_backbone(cfg, channels)
    backbone.load_state_dict(torch.load(backbone_file, weights_only=True))
    model = build_prompted(cfg, arm, backbone, channels, classes)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=cfg.lr, momentum=0.9)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, cosine(cfg.steps, int(round(cfg.warmup * cfg.steps)))
    )
    model, opt = fabric.setup(model, opt)
    batches = StepBatches(train, cfg.batch_size, cfg.seed, fabric.global_rank, fabric.world_size)
    callbacks = [Every(cfg.measure_every, lambda s, m: gate_stats(m))] if arm == "gated" else []
    start = time.perf_counter()
    history = fit(
        fabric,
        model,
        opt,
        batches,
        classification_step,
        steps=cfg.steps,
        scheduler=sched,
        callbacks=callbacks,
        checkpoint=folder / "checkpoint.ckpt" if folder else None,
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        desc=arm,
    )
    seconds = time.perf_counter() - start
    inner = getattr(model, "module", model)
    n_gates = cfg.depth - 1 if arm == "gated" else 0
    return ArmResult(
        name=arm,
        loss_steps=history.steps("loss"),
        loss=history.values("loss"),
        measure_steps=history.steps("gate/0") if n_gates else [],
        gate_curves=[history.values(f"gate/{i}") for i in range(n_gates)],
        gates=inner.gates().tolist(),
        temperatures=inner.temperature.detach().tolist() if inner.gated else [],
        train_accuracy=evaluate(model, train, fabric.device),
        test_accuracy=evaluate(model, test, fabric.device),
        seconds=seconds,
        val_accuracy=evaluate(model, val, fabric.device),
        lr=cfg.lr,
        gate_init=cfg.gate_init,
    )


@torch.no_grad()
def _features(vit: ViT, x: torch.Tensor, batch_size: int = 512) -> torch.Tensor:
    """The frozen readout every arm uses (LayerNorm of the mean of the non-class tokens)."""
    model = PromptedViT(vit, 1, num_prompts=0).eval()
    return torch.cat([model.features(b.float()) for b in x.split(batch_size)])


def linear_probes(cfg: GatedPromptConfig, backbone_file: Path) -> dict[str, float]:
    """A converged logistic regression (scikit-learn, L2, C = 1) on the labelled images: on raw
    pixels, on the frozen backbone's features, and on a randomly initialized backbone's."""
    from sklearn.linear_model import LogisticRegression

    with torch_threads(1, "cpu"):
        _, (x, y), _, (xt, yt), channels, _ = load_data(cfg)
        trained = build_backbone(cfg, channels)
        trained.load_state_dict(torch.load(backbone_file, weights_only=True, map_location="cpu"))
        seed_everything(cfg.seed)
        random_init = build_backbone(cfg, channels)
        inputs = {
            "pixels": (x.flatten(1).float(), xt.flatten(1).float()),
            "backbone": (_features(trained, x), _features(trained, xt)),
            "random_backbone": (_features(random_init, x), _features(random_init, xt)),
        }
        probes = {}
        for name, (a, b) in inputs.items():
            clf = LogisticRegression(C=1.0, max_iter=3000).fit(a.numpy(), y.numpy())
            probes[name] = float(clf.score(b.numpy(), yt.numpy()))
    return probes


def select(tried: list[ArmResult]) -> ArmResult:
    """The pre-stated rule: the candidate with the highest VALIDATION accuracy, ties to the
    earlier one in grid order. The chosen arm keeps every candidate's scores in ``selection``."""
    best = max(range(len(tried)), key=lambda i: (tried[i].val_accuracy, -i))
    chosen = dataclasses.replace(tried[best])
    chosen.selection = [
        {
            "lr": t.lr,
            "gate_init": t.gate_init,
            "val_accuracy": t.val_accuracy,
            "test_accuracy": t.test_accuracy,
            "gates": list(t.gates),
        }
        for t in tried
    ]
    return chosen


def run(
    cfg: GatedPromptConfig, out_dir: str | Path | None = None, resume: bool = False
) -> GatedPromptResult:
    """Pre-train once, then tune every arm on the frozen backbone; with ``out_dir``, checkpoint
    and write results (``resume=True`` keeps finished parts and continues the interrupted one).
    """
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(out_dir) if out_dir is not None else Path(tmp)
        pre_dir = root / "pretrain"
        pre_dir.mkdir(parents=True, exist_ok=True)
        if resume and not (pre_dir / "backbone.pt").exists():
            (pre_dir / "arm.json").unlink(missing_ok=True)
        if cfg.backbone_file:  # the shipped backbone, pre-trained once (see pretrain.py)
            blob = load_backbone_file(cfg, load_data(cfg)[4])
            torch.save(blob["state_dict"], pre_dir / "backbone.pt")
            info = blob["pretrain"]
            pre = PretrainResult(info["loss_steps"], info["loss"], info["cpu_seconds"])
        else:
            pre = launch_or_resume(
                cfg, pre_dir, resume, PretrainResult, pretrain, cfg, pre_dir, resume
            )
        probes = linear_probes(cfg, pre_dir / "backbone.pt")
        arms = {}
        for arm in cfg.arm_names():
            tried = []
            for lr, gate_init in cfg.candidates(arm):
                sub = cfg.replace(lr=lr, gate_init=gate_init)
                name = f"{arm.replace('@', '_')}_lr{lr:g}_g{gate_init:g}"
                folder = root / name if out_dir is not None else None
                tried.append(
                    launch_or_resume(
                        sub,
                        folder,
                        resume,
                        ArmResult,
                        train_arm,
                        sub,
                        arm,
                        pre_dir / "backbone.pt",
                        folder,
                        resume,
                    )
                )
            arms[arm] = select(tried)
    result = GatedPromptResult(config=cfg.to_dict(), pretrain=pre, arms=arms, probes=probes)
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
