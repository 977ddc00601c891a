"""The experiment: explain a SimCLR encoder's representation of digits with four explanation
targets and score each by insertion and deletion of the corpus-majority probability (the
paper's quantitative evaluation, ``scripts/attribute.py`` then ``scripts/eval.py``).

1. Train a small CNN encoder f with SimCLR (NT-Xent on two augmented views; no labels), then a
   linear eval head on the frozen representation (labels used here only, as in SimCLR's linear
   evaluation; the official code uses the eval heads released with its encoders).
2. For every class k: a corpus of training images of class k, a foil from the rest of the
   training set (class mix kept), explicands from the test images of class k.
3. Integrated Gradients (Captum) of each target from a blurred copy of the explicand: COCOA
   (contrastive corpus similarity), corpus similarity alone, the explicand's self-similarity,
   and random attributions.
4. Insertion and deletion curves of the eval head's probability of the corpus-majority class,
   features ranked by each attribution; the area under each curve (AUC) per explicand.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
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
from companion.data.augment import simclr_augmentation
from companion.errors import CompanionError, unknown
from companion.nn import MLP, SmallCNN
from companion.nn.contrastive import nt_xent
from companion.papers.cocoa.method import (
    KINDS,
    TARGETS,
    ClassLogit,
    ContrastiveCorpusSimilarity,
    CorpusMajorityProbability,
    CorpusSimilarity,
    SelfSimilarity,
    ablation_curves,
    attribute,
    auc,
    blur_baseline,
    encode,
    rank_correlation,
    split_corpus_foil,
)

DATASETS = ("digits", "mnist_subset", "cifar10")


@dataclasses.dataclass(frozen=True)
class CocoaConfig(Config):
    """What to train and explain. Sizes change between presets; the algorithm never does."""

    dataset: str = "digits"
    data_root: str = ""  # cifar10: the extracted python release
    image_size: int = 8
    widths: tuple[int, ...] = (16, 32, 64)  # the CNN encoder; representation = last width
    proj_dim: int = 32  # SimCLR's projection head: width -> width -> proj_dim
    temperature: float = 0.5
    crop_scale: float = 0.5  # RandomResizedCrop scale (crop_scale, 1)
    flip: float = 0.0  # a mirrored digit is not a digit
    batch_size: int = 128
    steps: int = 200
    lr: float = 3e-3
    weight_decay: float = 1e-4
    head_epochs: int = 100  # linear eval head on the frozen representation (full batch, Adam)
    classes: int = 10  # explain the first `classes` classes
    corpus_size: int = 40  # per class (official: 100)
    foil_size: int = 400  # official: 1,500
    explicands_per_class: int = 8  # official: 25
    targets: tuple[str, ...] = TARGETS
    ig_steps: int = 16  # Integrated Gradients' integration points (Captum's default: 50)
    blur_sigma: float = 2.0  # removal baseline: Gaussian blur, ±2σ (official: kernel 21, σ 5)
    ablation_steps: int = 20  # points of each insertion/deletion curve (official: 50)
    sanity: bool = True  # the sanity checks: a randomised encoder, a corpus of another class
    checkpoint_every: int = 0
    threads: int = 1  # CPU threads (a tiny CNN on 8x8 images is fastest on one); 0: leave as is

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        for t in self.targets:
            if t not in TARGETS:
                raise unknown("explanation target", t, TARGETS)
        if "cocoa" not in self.targets:
            raise CompanionError(f"targets {self.targets} must include 'cocoa'")
        if self.steps < 1 or self.batch_size < 2 or self.lr <= 0 or self.temperature <= 0:
            raise CompanionError(
                f"need steps >= 1, batch_size >= 2, lr > 0, temperature > 0; got {self.steps}, "
                f"{self.batch_size}, {self.lr}, {self.temperature}"
            )
        if min(self.corpus_size, self.foil_size, self.explicands_per_class, self.classes) < 1:
            raise CompanionError("corpus_size, foil_size, explicands_per_class, classes >= 1")
        if self.ig_steps < 2 or self.ablation_steps < 2 or self.blur_sigma <= 0:
            raise CompanionError(
                f"need ig_steps >= 2, ablation_steps >= 2, blur_sigma > 0; got {self.ig_steps}, "
                f"{self.ablation_steps}, {self.blur_sigma}"
            )
        if not 0 < self.crop_scale <= 1 or not 0 <= self.flip <= 1 or not self.widths:
            raise CompanionError(
                f"need crop_scale in (0, 1], flip in [0, 1], widths non-empty; got "
                f"{self.crop_scale}, {self.flip}, {self.widths}"
            )


PRESETS: dict[str, CocoaConfig] = {
    "smoke": CocoaConfig(
        widths=(8, 16),
        proj_dim=16,
        batch_size=128,
        steps=15,
        head_epochs=30,
        classes=3,
        corpus_size=20,
        foil_size=100,
        explicands_per_class=3,
        ig_steps=8,
        ablation_steps=6,
    ),
    "notebook": CocoaConfig(),
    # Paper scale (its CIFAR-10 setting): 25 explicands per class, corpus 100, foil 1,500,
    # 50 ablation steps, 50 IG points, blur kernel 21 with σ = 5; a wider CNN trained with
    # SimCLR for 100 epochs at batch 512 instead of the paper's SimSiam ResNet-18.
    "full": CocoaConfig(
        dataset="cifar10",
        data_root="data/cifar-10-batches-py",
        image_size=32,
        widths=(64, 128, 256, 512),
        proj_dim=128,
        temperature=0.2,
        crop_scale=0.2,
        flip=0.5,
        batch_size=512,
        steps=9_700,  # 100 epochs of 50,000 images
        lr=1e-3,
        weight_decay=1e-6,
        head_epochs=100,
        corpus_size=100,
        foil_size=1500,
        explicands_per_class=25,
        ig_steps=50,
        blur_sigma=5.0,
        ablation_steps=50,
        checkpoint_every=500,
        threads=0,
        precision="bf16-mixed",
    ),
}


@dataclasses.dataclass
class TargetResult(Result):
    """One explanation target: insertion and deletion AUC per explicand, and mean curves."""

    target: str
    insertion_auc: list[float]  # [explicand], in class order
    deletion_auc: list[float]
    insertion_curve: list[float]  # mean over explicands, at each step
    deletion_curve: list[float]
    convergence_delta: float  # mean |Σ attributions − (y(x) − y(baseline))| (IG completeness)
    target_range: float  # mean |y(x) − y(baseline)|: the scale the delta is compared with
    examples: list[list[list[float]]]  # one attribution map [H][W] per class (first explicand)

    @property
    def insertion(self) -> float:
        return float(np.mean(self.insertion_auc))

    @property
    def deletion(self) -> float:
        return float(np.mean(self.deletion_auc))


@dataclasses.dataclass
class Trained:
    """The trained encoder f and linear eval head (CPU, eval mode, float32)."""

    encoder: nn.Module
    head: nn.Module


@dataclasses.dataclass
class CocoaResult(Result):
    config: dict
    fraction: list[float]  # fraction of pixels inserted or deleted at each curve point
    loss: list[float]  # SimCLR training loss per step
    head_accuracy: float  # linear eval head on the test split
    explicand_labels: list[int]
    majority_classes: list[int]  # per explained class: the head's majority class on its corpus
    examples: list[list[list[float]]]  # the explicand of each class shown with `examples`
    targets: dict[str, TargetResult]
    # cosine between the eval head's weight row of the corpus-majority class and COCOA's
    # direction m_C − m_F, per explained class (how much the evaluator rewards COCOA's target)
    head_cosine: list[float]
    # sanity checks (None / empty when cfg.sanity is off):
    # COCOA computed on a randomly re-initialised encoder, scored with the trained one
    randomized: TargetResult | None
    # insertion AUC per explicand when pixels are ranked by x − blur(x) alone (no model): the
    # part of any IG-from-blur attribution that does not depend on the network
    input_only_insertion: list[float]
    # per explicand: rank correlation of COCOA's map with the map from a fresh corpus and foil of
    # the same class (how stable it is) and from a corpus of the next class (it should change)
    same_class_corr: list[float]
    other_class_corr: list[float]
    seconds: float

    trained = None  # set on results of an in-process run (class attribute: never serialized)


def load_data(cfg: CocoaConfig):
    """(train images, train labels, test images, test labels): float [N, C, H, W] in [0, 1]."""
    from companion import data

    if cfg.dataset == "cifar10":
        train = data.load_cifar(cfg.data_root, "cifar10", "train").tensors
        test = data.load_cifar(cfg.data_root, "cifar10", "test").tensors
    else:
        splits = data.load(cfg.dataset, image_size=cfg.image_size, seed=0)
        train, test = splits.train.tensors, splits.test.tensors
    return train[0], train[1], test[0], test[1]


class SimCLRModel(nn.Module):
    """Encoder f (a small CNN with global average pooling: the representation explained) and
    SimCLR's projection head g (an MLP; used only by the training loss)."""

    def __init__(self, channels: int, widths: tuple[int, ...], proj_dim: int):
        super().__init__()
        self.encoder = SmallCNN(channels, num_classes=1, widths=widths)
        self.encoder.head = nn.Identity()  # f(x): the pooled features
        self.projector = MLP(widths[-1], [widths[-1]], proj_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.projector(self.encoder(x))


def train_eval_head(
    reps: torch.Tensor, labels: torch.Tensor, classes: int, epochs: int, seed: int
) -> nn.Linear:
    """A linear classifier on frozen representations (full-batch Adam, lr 1e-2, float32)."""
    torch.manual_seed(seed)
    head = nn.Linear(reps.shape[1], classes).to(reps.device)
    opt = torch.optim.Adam(head.parameters(), lr=1e-2)
    with torch.enable_grad():
        for _ in range(epochs):
            loss = F.cross_entropy(head(reps), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    return head.eval()


def explain_and_evaluate(fabric, cfg: CocoaConfig, folder: Path | None, resume: bool):
    """Train the encoder (Fabric: any device, DDP, precision, checkpoints), then attribute and
    evaluate in float32, with ``cfg.threads`` CPU threads."""
    with torch_threads(cfg.threads, fabric.device):
        return _explain_and_evaluate(fabric, cfg, folder, resume)


def _explain_and_evaluate(fabric, cfg: CocoaConfig, folder: Path | None, resume: bool):
    seed_everything(cfg.seed)
    x_train, y_train, x_test, y_test = load_data(cfg)
    channels, size = x_train.shape[1], x_train.shape[-1]
    model = SimCLRModel(channels, cfg.widths, cfg.proj_dim)
    augment = simclr_augmentation(size, channels, crop_scale=(cfg.crop_scale, 1.0), flip=cfg.flip)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    model, optimizer = fabric.setup(model, optimizer)
    batches = StepBatches(
        (x_train,), cfg.batch_size, cfg.seed, fabric.global_rank, fabric.world_size
    )

    def step_fn(model, batch):
        x = batch[0]
        return nt_xent(model(augment(x)), model(augment(x)), cfg.temperature), {}

    start = time.perf_counter()
    history = fit(
        fabric,
        model,
        optimizer,
        batches,
        step_fn,
        steps=cfg.steps,
        checkpoint=folder / "checkpoint.ckpt" if folder else None,
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        desc="SimCLR",
    )
    # Everything below is measured in float32 on the unwrapped encoder, in eval mode.
    device = fabric.device
    encoder = getattr(model, "module", model).encoder.float().eval()
    for p in encoder.parameters():
        p.requires_grad_(False)
    with torch.autocast(device.type, enabled=False):
        out, head = explain(cfg, encoder, x_train, y_train, x_test, y_test, device)
    result = CocoaResult(
        config=cfg.to_dict(),
        loss=[round(v, 5) for v in history.values("loss")],
        seconds=time.perf_counter() - start,
        **out,
    )
    # Not saved with the result: the trained modules, for exploring after an in-process run
    # (a result loaded from disk or returned by spawned DDP workers has ``trained = None``).
    if fabric.world_size == 1:
        result.trained = Trained(encoder.cpu(), head.cpu())
    return result


@dataclasses.dataclass
class ClassEvaluation:
    """One corpus class: per target, the attributions and the insertion and deletion curves."""

    majority: int  # the eval head's majority class on the corpus
    attributions: dict[str, torch.Tensor]  # [B, C, H, W]
    curves: dict[str, dict[str, torch.Tensor]]  # target -> kind -> [B, K+1]
    fraction: torch.Tensor  # [K+1]: fraction of pixels inserted or deleted
    delta: dict[str, list[float]]  # |IG convergence delta| per explicand
    change: dict[str, list[float]]  # |y(x) − y(baseline)| per explicand

    def auc(self, target: str, kind: str) -> torch.Tensor:
        """Area under each explicand's curve [B]."""
        return auc(self.curves[target][kind], self.fraction)


def evaluate_class(
    cfg: CocoaConfig,
    encoder: nn.Module,
    head: nn.Module,
    explicands: torch.Tensor,
    corpus: torch.Tensor,
    foil: torch.Tensor,
    generator: torch.Generator,
) -> ClassEvaluation:
    """Attribute every target in ``cfg.targets`` for these explicands (IG from their blurred
    copies) and trace insertion and deletion curves of the corpus-majority probability."""
    baselines = blur_baseline(explicands, cfg.blur_sigma)
    score = CorpusMajorityProbability(encoder, head, corpus)
    attributions, curves, delta, change = {}, {}, {}, {}
    fraction = None
    for t in cfg.targets:
        attr, d = attribute(
            t, encoder, explicands, baselines, corpus, foil, cfg.ig_steps, generator=generator,
            head=head, k=score.majority,
        )  # fmt: skip
        attributions[t], delta[t] = attr, d.abs().tolist()
        change[t] = target_change(t, encoder, explicands, baselines, corpus, foil, head, score)
        curves[t] = {}
        for kind in KINDS:
            curves[t][kind], counts = ablation_curves(
                score, explicands, baselines, attr, cfg.ablation_steps, kind
            )
            fraction = counts / counts.max()
    return ClassEvaluation(score.majority, attributions, curves, fraction, delta, change)


def _rounded(x: torch.Tensor, digits: int = 6) -> list:
    return x.cpu().numpy().round(digits).tolist()


def explain(cfg: CocoaConfig, encoder, x_train, y_train, x_test, y_test, device) -> dict:
    """Steps 2-4 of the module docstring, for a trained encoder: the fields of a result."""
    classes = int(max(y_train.max(), y_test.max())) + 1
    head = train_eval_head(
        encode(encoder, x_train), y_train.to(device), classes, cfg.head_epochs, cfg.seed
    )
    with torch.no_grad():
        head_accuracy = (head(encode(encoder, x_test)).argmax(1).cpu() == y_test).float().mean()

    g = torch.Generator().manual_seed(cfg.seed)
    evals, labels, shown, sets, cosines = [], [], [], [], []
    # corpora, foils and explicands are drawn per class with seeded permutations (never a prefix
    # of the class-ordered training split)
    for k in range(min(cfg.classes, classes)):
        corpus_idx, foil_idx = split_corpus_foil(y_train, k, cfg.corpus_size, cfg.foil_size, g)
        pool = (y_test == k).nonzero().flatten()
        pool = pool[torch.randperm(len(pool), generator=g)][: cfg.explicands_per_class]
        explicands = x_test[pool].to(device)
        corpus, foil = x_train[corpus_idx].to(device), x_train[foil_idx].to(device)
        ev = evaluate_class(cfg, encoder, head, explicands, corpus, foil, g)
        evals.append(ev)
        sets.append((explicands, corpus, foil))
        with torch.no_grad():
            direction = ContrastiveCorpusSimilarity(encoder, corpus, foil).direction()
            cosines.append(float(F.cosine_similarity(head.weight[ev.majority], direction, dim=0)))
        labels += [k] * len(pool)
        shown.append(explicands[0].sum(0).cpu().numpy().round(4).tolist())
    targets = {}
    for t in cfg.targets:
        ins = torch.cat([e.curves[t]["insertion"] for e in evals])
        dele = torch.cat([e.curves[t]["deletion"] for e in evals])
        targets[t] = TargetResult(
            target=t,
            insertion_auc=_rounded(torch.cat([e.auc(t, "insertion") for e in evals])),
            deletion_auc=_rounded(torch.cat([e.auc(t, "deletion") for e in evals])),
            insertion_curve=_rounded(ins.mean(0)),
            deletion_curve=_rounded(dele.mean(0)),
            convergence_delta=float(np.mean([d for e in evals for d in e.delta[t]])),
            target_range=float(np.mean([c for e in evals for c in e.change[t]])),
            examples=[e.attributions[t][0].sum(0).cpu().numpy().round(5).tolist() for e in evals],
        )
    sanity = dict(randomized=None, input_only_insertion=[], same_class_corr=[], other_class_corr=[])
    if cfg.sanity:
        sanity = sanity_checks(cfg, encoder, head, evals, sets, x_train, y_train, device)
    result = dict(
        fraction=[round(f, 6) for f in evals[0].fraction.tolist()],
        head_accuracy=float(head_accuracy),
        explicand_labels=labels,
        majority_classes=[e.majority for e in evals],
        examples=shown,
        targets=targets,
        head_cosine=[round(c, 4) for c in cosines],
        **sanity,
    )
    return result, head


def randomized_encoder(encoder: nn.Module, seed: int) -> nn.Module:
    """A copy of ``encoder`` with every layer re-initialised (the official ``--randomize-model``
    sanity check): same architecture, no training."""
    import copy

    rand = copy.deepcopy(encoder)
    torch.manual_seed(seed)
    for m in rand.modules():
        if m is not rand and hasattr(m, "reset_parameters"):
            m.reset_parameters()
        if hasattr(m, "reset_running_stats"):
            m.reset_running_stats()
    return rand.eval()


def sanity_checks(cfg, encoder, head, evals, sets, x_train, y_train, device) -> dict:
    """Two sanity checks of COCOA's explanations (same explicands, same IG, same blur baseline):

    * randomised encoder: COCOA's attributions computed on a re-initialised encoder, then scored
      by the *trained* encoder and head like every target. Explanations that depend on what the
      encoder learned degrade towards random attributions. For reference, pixels ranked by
      x − blur(x) alone (no network at all), the input factor of every IG-from-blur map.
    * another corpus: COCOA with the corpus (and its foil) of the next explained class, against
      COCOA with a fresh corpus and foil of the explicand's own class; the rank correlation of
      each map with the original one. The explanation should follow the corpus.

    Draws come from their own generator, so the main results do not depend on ``cfg.sanity``.
    """
    g = torch.Generator().manual_seed(cfg.seed + 1)
    rand = randomized_encoder(encoder, cfg.seed + 7919)
    n = len(evals)
    ins, dele, ins_c, del_c, examples, same, other, plain = [], [], [], [], [], [], [], []
    for k, (ev, (explicands, corpus, foil)) in enumerate(zip(evals, sets)):
        baselines = blur_baseline(explicands, cfg.blur_sigma)
        score = CorpusMajorityProbability(encoder, head, corpus)
        attr, _ = attribute("cocoa", rand, explicands, baselines, corpus, foil, cfg.ig_steps)
        curves = {}
        for kind in KINDS:
            curves[kind], counts = ablation_curves(
                score, explicands, baselines, attr, cfg.ablation_steps, kind
            )
        ins.append(curves["insertion"])
        dele.append(curves["deletion"])
        ins_c.append(auc(curves["insertion"], counts))
        del_c.append(auc(curves["deletion"], counts))
        examples.append(attr[0].sum(0).cpu().numpy().round(5).tolist())
        curve, counts = ablation_curves(
            score, explicands, baselines, explicands - baselines, cfg.ablation_steps, "insertion"
        )
        plain.append(auc(curve, counts))
        original = ev.attributions["cocoa"]
        for cls, out in ((k, same), ((k + 1) % n, other)):
            c_idx, f_idx = split_corpus_foil(y_train, cls, cfg.corpus_size, cfg.foil_size, g)
            a, _ = attribute(
                "cocoa", encoder, explicands, baselines,
                x_train[c_idx].to(device), x_train[f_idx].to(device), cfg.ig_steps,
            )  # fmt: skip
            out += rank_correlation(original, a).cpu().tolist()
    randomized = TargetResult(
        target="cocoa (randomised encoder)",
        insertion_auc=_rounded(torch.cat(ins_c)),
        deletion_auc=_rounded(torch.cat(del_c)),
        insertion_curve=_rounded(torch.cat(ins).mean(0)),
        deletion_curve=_rounded(torch.cat(dele).mean(0)),
        convergence_delta=0.0,
        target_range=0.0,
        examples=examples,
    )
    return dict(
        randomized=randomized,
        input_only_insertion=_rounded(torch.cat(plain)),
        same_class_corr=[round(v, 4) for v in same],
        other_class_corr=[round(v, 4) for v in other] if n > 1 else [],
    )


@torch.no_grad()
def target_change(
    target, encoder, explicands, baselines, corpus, foil, head=None, score=None
) -> list[float]:
    """|y(x) − y(baseline)| per explicand for one target: what IG's attributions must sum to."""
    if target == "oracle":
        y = ClassLogit(encoder, head, score.majority)
        return (y(explicands) - y(baselines)).abs().cpu().tolist()
    if target == "cocoa":
        y = ContrastiveCorpusSimilarity(encoder, corpus, foil)
        return (y(explicands) - y(baselines)).abs().cpu().tolist()
    if target == "corpus":
        y = CorpusSimilarity(encoder, corpus)
        return (y(explicands) - y(baselines)).abs().cpu().tolist()
    if target == "random":
        return [0.0] * len(explicands)
    w = encode(encoder, explicands)
    y = SelfSimilarity(encoder)
    return (y(explicands, w) - y(baselines, w)).abs().cpu().tolist()


def run(cfg: CocoaConfig, out_dir: str | Path | None = None, resume: bool = False) -> CocoaResult:
    """Train, attribute, evaluate. With ``out_dir``, the encoder checkpoints into
    ``<out_dir>/encoder/`` and ``resume=True`` continues from there (a finished run is loaded)."""
    folder = Path(out_dir) / "encoder" if out_dir is not None else None
    result = launch_or_resume(
        cfg,
        folder,
        resume,
        CocoaResult,
        explain_and_evaluate,
        cfg,
        folder,
        resume,
        filename="result.json",
    )
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
