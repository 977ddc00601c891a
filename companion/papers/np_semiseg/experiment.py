"""The experiment: semi-supervised segmentation of synthetic shape scenes with few labelled
masks, three arms trained for the same number of steps from the same initial backbone:

* ``supervised``: the ordinary softmax head on the labelled images only;
* ``mean_teacher``: the same softmax head with mean-teacher pseudo-labels kept where the
  teacher's confidence is at least ``threshold`` (AugSeg without the NP head): the control;
* ``np_semiseg``: the NP head (``method.NPHead``) in the same mean-teacher loop, its teacher
  pseudo-labels from the mean of T sampled predictions, plus the KL term (``train_semi.py``).
"""

from __future__ import annotations

import copy
import dataclasses
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from companion.core import Config, Result, seed_everything, torch_threads, train_arms
from companion.core.metrics import auroc
from companion.errors import CompanionError, unknown
from companion.papers.np_semiseg.method import (
    ClassMemory,
    NPHead,
    confusion,
    decoder,
    gaussian_kl,
    max_prob_uncertainty,
    mean_iou,
    predictive,
    predictive_entropy,
    sample_spread,
    threshold_pseudo_labels,
)

ARMS = ("supervised", "mean_teacher", "np_semiseg")
SHAPES = ("square", "disc", "triangle", "cross")
# each class also has its own texture (sign pattern of its brightness): a local cue a small
# network can learn from a few masks, while the outline needs context
TEXTURES = (
    lambda yy, xx: np.ones(yy.shape),
    lambda yy, xx: np.where(yy % 2 == 0, 1.0, -1.0),
    lambda yy, xx: np.where((yy + xx) % 2 == 0, 1.0, -1.0),
    lambda yy, xx: np.where(xx % 2 == 0, 1.0, -1.0),
)


@dataclasses.dataclass(frozen=True)
class NPSemiSegConfig(Config):
    """What to train and how. Sizes change between presets; the algorithm never does."""

    arms: tuple[str, ...] = ARMS
    image_size: int = 24
    shape_classes: int = 3  # shapes used (of SHAPES); pixel classes = shapes + background
    shapes_per_image: tuple[int, int] = (2, 3)  # at least, at most
    shape_size: tuple[int, int] = (5, 9)  # side of a shape's box, pixels
    noise: float = 0.35  # pixel noise of every image
    n_labeled: int = 8
    n_unlabeled: int = 300
    n_test: int = 100
    features: int = 16  # backbone width (the paper's DeepLabV3+ gives 304 channels)
    latent_dim: int = 8  # the paper: 32
    decoder_width: int = 16  # the paper: 256
    samples: int = 5  # T, as in the paper
    memory_size: int = 512  # per class queue; the paper: 2,560
    threshold: float = 0.95  # teacher confidence for a pseudo-label (the paper's default)
    kl_weight: float = 0.005  # the paper's default
    ema: float = 0.99  # teacher EMA; the paper: 0.999 over 80 epochs, scaled to the steps
    sup_only_fraction: float = 0.2  # first steps on labelled data only (AugSeg's sup_only_epoch)
    strong_noise: float = 0.3  # extra noise of the student's (strong) view of unlabelled images
    # CutMix of unlabelled images and their pseudo-labels in the student's view (U2PL's
    # generate_unsup_data(mode="cutmix"), AugSeg's cutmix): a box of half the image area
    cutmix: bool = True
    # Adam (the paper: SGD 1e-3, momentum 0.9, over 80 epochs). Not from the paper: set by hand
    # while this notebook was developed, by looking at training runs at this scale (no validation
    # split); the same value for all three arms
    lr: float = 1e-2
    batch_labeled: int = 4
    batch_unlabeled: int = 8
    steps: int = 300
    grad_clip: float = 5.0  # as in train_semi.py
    eval_every: int = 100
    # CPU threads: a small CNN on 24x24 scenes trains fastest on one (two threads on a busy
    # 2-core machine made the NP arm several times slower); 0 leaves torch's setting alone
    threads: int = 1

    def validate(self) -> None:
        for a in self.arms:
            if a not in ARMS:
                raise unknown("arm", a, ARMS)
        if not 1 <= self.shape_classes <= len(SHAPES):
            raise CompanionError(
                f"shape_classes must be between 1 and {len(SHAPES)}, got {self.shape_classes}"
            )
        if not 0 < self.threshold < 1:
            raise CompanionError(f"threshold must be in (0, 1), got {self.threshold}")
        if not 0 <= self.ema < 1:
            raise CompanionError(f"ema must be in [0, 1), got {self.ema}")
        for name in ("steps", "n_labeled", "n_unlabeled", "n_test", "samples", "memory_size"):
            if getattr(self, name) < 1:
                raise CompanionError(f"{name} must be positive, got {getattr(self, name)}")
        lo, hi = self.shape_size
        if not 3 <= lo <= hi < self.image_size:
            raise CompanionError(
                f"shape_size {self.shape_size} must satisfy 3 <= min <= max < image_size "
                f"{self.image_size}"
            )

    @property
    def num_classes(self) -> int:
        return self.shape_classes + 1

    @property
    def sup_only_steps(self) -> int:
        return int(round(self.sup_only_fraction * self.steps))


PRESETS: dict[str, NPSemiSegConfig] = {
    "smoke": NPSemiSegConfig(
        n_unlabeled=24,
        n_test=12,
        steps=12,
        eval_every=6,
        batch_unlabeled=6,
        features=8,
        latent_dim=4,
        decoder_width=8,
        image_size=16,
        shape_size=(4, 7),
    ),
    "notebook": NPSemiSegConfig(),
    # Three times the steps (EMA decay scaled to them): the mean teacher needs them to overtake
    # labelled-only training at this scale (about 4 min per seed single-threaded)
    "medium": NPSemiSegConfig(steps=900, eval_every=300, ema=0.996),
    # The paper's head at its own size (latent 32, decoder 256, queues of 2,560, T = 5, EMA 0.999)
    # on larger synthetic scenes; the paper's real runs (VOC, Cityscapes) need its backbone.
    "full": NPSemiSegConfig(
        image_size=64,
        shape_classes=4,
        shapes_per_image=(2, 4),
        shape_size=(10, 22),
        n_labeled=32,
        n_unlabeled=4000,
        n_test=500,
        features=64,
        latent_dim=32,
        decoder_width=256,
        memory_size=2560,
        ema=0.999,
        batch_labeled=8,
        batch_unlabeled=16,
        steps=20_000,
        eval_every=1000,
        threads=0,
    ),
}


# ---------------------------------------------------------------------------------------------
# Data: scenes of textured shapes on a noisy background
# ---------------------------------------------------------------------------------------------


def shape_mask(kind: str, size: int) -> np.ndarray:
    """Boolean mask of one shape in a size×size box."""
    yy, xx = np.mgrid[0:size, 0:size] + 0.5
    c = size / 2
    if kind == "square":
        return np.ones((size, size), bool)
    if kind == "disc":
        return (yy - c) ** 2 + (xx - c) ** 2 <= c**2
    if kind == "triangle":
        return np.abs(xx - c) <= yy / 2
    t = max(1.0, size / 6)  # cross
    return (np.abs(xx - c) <= t) | (np.abs(yy - c) <= t)


def make_scenes(cfg: NPSemiSegConfig, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` images [n, 1, S, S] and pixel labels [n, S, S] (0 background, 1.. shapes).

    Each shape has a random brightness from the same range whatever its class, and a class
    texture (``TEXTURES``); the background is a smooth random field plus pixel noise.
    """
    rng = np.random.default_rng(seed)
    s = cfg.image_size
    images = np.zeros((n, s, s), np.float32)
    labels = np.zeros((n, s, s), np.int64)
    for i in range(n):
        coarse = rng.normal(0, 0.5, (4, 4)).astype(np.float32)
        bg = F.interpolate(
            torch.from_numpy(coarse)[None, None], size=(s, s), mode="bilinear", align_corners=False
        )[0, 0].numpy()
        img = bg.copy()
        for _ in range(rng.integers(cfg.shapes_per_image[0], cfg.shapes_per_image[1] + 1)):
            c = int(rng.integers(cfg.shape_classes))
            size = int(rng.integers(cfg.shape_size[0], cfg.shape_size[1] + 1))
            y, x = rng.integers(0, s - size + 1, size=2)
            m = shape_mask(SHAPES[c], size)
            yy, xx = np.mgrid[0:size, 0:size]
            texture = TEXTURES[c % len(TEXTURES)](yy, xx)
            img[y : y + size, x : x + size][m] = (rng.uniform(1.0, 2.0) * texture)[m]
            labels[i, y : y + size, x : x + size][m] = c + 1
        images[i] = img + rng.normal(0, cfg.noise, (s, s))
    return torch.from_numpy(images)[:, None], torch.from_numpy(labels)


@dataclasses.dataclass
class Data:
    x_l: torch.Tensor
    y_l: torch.Tensor
    x_u: torch.Tensor
    y_u: torch.Tensor  # only to measure pseudo-label accuracy, never used for training
    x_test: torch.Tensor
    y_test: torch.Tensor


def load_data(cfg: NPSemiSegConfig) -> Data:
    """Labelled, unlabelled and test scenes of this seed (disjoint draws)."""
    base = 1000 * cfg.seed
    x_l, y_l = make_scenes(cfg, cfg.n_labeled, base + 1)
    x_u, y_u = make_scenes(cfg, cfg.n_unlabeled, base + 2)
    x_t, y_t = make_scenes(cfg, cfg.n_test, base + 3)
    return Data(x_l, y_l, x_u, y_u, x_t, y_t)


# ---------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------


class Backbone(nn.Module):
    """A small fully convolutional encoder (dilations 1, 2, 4): features f per pixel."""

    def __init__(self, width: int):
        super().__init__()
        layers, cin = [], 1
        for d in (1, 2, 4):
            layers += [
                nn.Conv2d(cin, width, 3, padding=d, dilation=d),
                nn.InstanceNorm2d(width),
                nn.ReLU(),
            ]
            cin = width
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


class Segmenter(nn.Module):
    """Backbone + head: ``head="softmax"`` (ordinary classifier) or ``"np"`` (NP head)."""

    def __init__(self, cfg: NPSemiSegConfig, head: str):
        super().__init__()
        self.backbone = Backbone(cfg.features)
        self.kind = head
        if head == "np":
            self.head = NPHead(cfg.features, cfg.num_classes, cfg.latent_dim, cfg.decoder_width)
        else:
            self.head = decoder(cfg.features, cfg.decoder_width, cfg.num_classes)


def build_model(cfg: NPSemiSegConfig, arm: str) -> Segmenter:
    """The same backbone initialisation for every arm (built first after seeding)."""
    seed_everything(cfg.seed)
    backbone = Backbone(cfg.features)
    model = Segmenter(cfg, "np" if arm == "np_semiseg" else "softmax")
    model.backbone.load_state_dict(backbone.state_dict())
    return model


def predict(model: Segmenter, x, memories=None, samples: int = 5):
    """(probabilities [B, K, H, W], T logit maps or None) in eval mode."""
    f = model.backbone(x)
    if model.kind == "np":
        logits, _, _ = model.head(f, *memories, samples=samples)
        return predictive(logits), logits
    return torch.softmax(model.head(f), 1), None


@torch.no_grad()
def ema_update(teacher: nn.Module, student: nn.Module, step: int, ema: float) -> None:
    """θ_teacher ← d·θ_teacher + (1 − d)·θ_student with d = min(1 − 1/(step + 1), ema), ``step``
    counted from the end of the labelled-only warm-up (d = 0 before it: the teacher is a copy of
    the student), as AugSeg's ``train_semi.py``."""
    d = 0.0 if step < 0 else min(1 - 1 / (step + 1), ema)
    for pt, ps in zip(teacher.parameters(), student.parameters()):
        pt.mul_(d).add_(ps.detach(), alpha=1 - d)


def poly_lr(cfg: NPSemiSegConfig, step: int) -> float:
    """Poly decay (1 − step/steps)^0.9 of the learning rate, as the paper's schedule."""
    return (1 - step / cfg.steps) ** 0.9


def strong_view(x: torch.Tensor, noise: float, gen: torch.Generator) -> torch.Tensor:
    """The student's view of unlabelled images: random contrast and offset plus noise (the
    labels stay aligned: no geometric change)."""
    b = x.shape[0]
    a = 1 + 0.3 * (2 * torch.rand(b, 1, 1, 1, generator=gen) - 1)
    o = 0.3 * (2 * torch.rand(b, 1, 1, 1, generator=gen) - 1)
    eps = torch.randn(x.shape, generator=gen)
    return a.to(x.device) * x + o.to(x.device) + noise * eps.to(x.device)


def cutmix_box(size: int, gen: torch.Generator) -> torch.Tensor:
    """U2PL's ``generate_cutout_mask(ratio=2)``: a [size, size] mask, 1 inside a random box of
    half the image area (width drawn in (size/2, size), height = area / width)."""
    area = size * size / 2
    w = int(torch.randint(size // 2 + 1, size, (1,), generator=gen))
    h = min(size, int(round(area / w)))
    x0 = int(torch.randint(0, size - w + 1, (1,), generator=gen))
    y0 = int(torch.randint(0, size - h + 1, (1,), generator=gen))
    box = torch.zeros(size, size, dtype=torch.bool)
    box[y0 : y0 + h, x0 : x0 + w] = True
    return box


def cutmix(tensors, gen: torch.Generator):
    """Paste a random box of image i + 1 (cyclically) into image i, for every tensor of the
    batch alike (images [B, C, H, W], label or confidence maps [B, H, W]): U2PL's
    ``generate_unsup_data(..., mode="cutmix")``, applied after the teacher has labelled the
    unmixed images, so the pseudo-labels travel with their pixels."""
    b, size = tensors[0].shape[0], tensors[0].shape[-1]
    boxes = torch.stack([cutmix_box(size, gen) for _ in range(b)]).to(tensors[0].device)
    out = []
    for t in tensors:
        other = t.roll(-1, 0)
        m = boxes if t.dim() == 3 else boxes[:, None]
        out.append(torch.where(m, other, t))
    return out


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class ArmResult(Result):
    """One arm: curves over training and the final test numbers."""

    arm: str
    loss_steps: list[int]
    loss: list[float]
    eval_steps: list[int]
    miou_curve: list[float]
    pseudo_ratio: list[float]  # share of unlabelled pixels kept as pseudo-labels, per step
    pseudo_accuracy: list[float | None]  # their accuracy on the hidden true masks (None: none kept)
    miou: float
    pixel_accuracy: float
    auroc_entropy: float  # AUROC of the predictive entropy for misclassified pixels
    auroc_max_prob: float  # ... of 1 − max probability
    auroc_spread: float | None  # NP only: ... of the spread of the T samples
    kl: list[float]  # NP only: KL term per step (after the warm-up)
    examples: dict  # a few test images: image, truth, prediction, uncertainty (rounded)
    seconds: float


@dataclasses.dataclass
class NPSemiSegResult(Result):
    config: dict
    arms: dict[str, ArmResult]


@torch.no_grad()
def evaluate(cfg, model, data: Data, memories, n_examples: int = 0) -> dict:
    model.eval()
    probs, logits = predict(model, data.x_test, memories, cfg.samples)
    pred = probs.argmax(1)
    conf = confusion(pred, data.y_test, cfg.num_classes)
    out = {"miou": mean_iou(conf), "pixel_accuracy": float((pred == data.y_test).float().mean())}
    if n_examples:
        wrong = (pred != data.y_test).flatten().cpu().numpy()
        ent = predictive_entropy(probs)

        def score(u):
            return auroc(u.flatten().float().cpu().numpy(), wrong)

        out["auroc_entropy"] = score(ent)
        out["auroc_max_prob"] = score(max_prob_uncertainty(probs))
        out["auroc_spread"] = score(sample_spread(logits)) if logits is not None else None
        r = lambda t: np.round(t[:n_examples].cpu().numpy().astype(float), 3).tolist()  # noqa: E731
        out["examples"] = {
            "image": r(data.x_test[:, 0]),
            "truth": data.y_test[:n_examples].tolist(),
            "prediction": pred[:n_examples].tolist(),
            "uncertainty": r(ent),
        }
    model.train()
    return out


def train_arm(
    fabric, cfg: NPSemiSegConfig, arm: str, folder: Path | None, resume: bool
) -> ArmResult:
    """Train one arm for ``cfg.steps`` steps and measure it on the test scenes, with
    ``cfg.threads`` CPU threads."""
    device = fabric.device if fabric is not None else torch.device("cpu")
    with torch_threads(cfg.threads, device):
        return _train_arm(fabric, cfg, arm, folder, resume, device)


def _train_arm(
    fabric, cfg: NPSemiSegConfig, arm: str, folder: Path | None, resume: bool, device
) -> ArmResult:
    data = Data(*(t.to(device) for t in dataclasses.astuple(load_data(cfg))))
    model = build_model(cfg, arm).to(device)
    # every arm keeps an EMA teacher with one schedule, labelled-only too (it never labels
    # anything there): the arms are all scored by their teacher, so they differ only in the
    # unsupervised loss, not in weight averaging
    teacher = copy.deepcopy(model)
    for p in teacher.parameters():
        p.requires_grad_(False)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: poly_lr(cfg, s))
    is_np = arm == "np_semiseg"
    latent_mem = ClassMemory(cfg.num_classes, cfg.latent_dim, cfg.memory_size)
    det_mem = ClassMemory(cfg.num_classes, cfg.latent_dim, cfg.memory_size)
    mems = (latent_mem, det_mem)
    gen = torch.Generator().manual_seed(cfg.seed)
    mix_gen = torch.Generator().manual_seed(cfg.seed + 10_000)  # CutMix boxes: own stream
    hist = {
        "loss": [],
        "steps": [],
        "eval_steps": [],
        "miou": [],
        "ratio": [],
        "pacc": [],
        "kl": [],
    }

    def scored(step: int) -> Segmenter:
        """The model measured: the EMA teacher once the warm-up is over (AugSeg reports the
        teacher's mIoU; labelled-only training is scored by its own EMA, same schedule),
        otherwise the student."""
        return teacher if step >= cfg.sup_only_steps else model

    start = time.perf_counter()
    for step in range(cfg.steps):
        il = torch.randint(cfg.n_labeled, (cfg.batch_labeled,), generator=gen)
        iu = torch.randint(cfg.n_unlabeled, (cfg.batch_unlabeled,), generator=gen)
        flip = torch.rand(cfg.batch_labeled, generator=gen) < 0.5
        x_l, y_l = data.x_l[il].clone(), data.y_l[il].clone()
        x_l[flip], y_l[flip] = x_l[flip].flip(-1), y_l[flip].flip(-1)
        x_w = data.x_u[iu]
        x_s = strong_view(x_w, cfg.strong_noise, gen)
        semi = arm != "supervised" and step >= cfg.sup_only_steps
        if semi:
            teacher.eval()
            with torch.no_grad():
                p_u, _ = predict(teacher, x_w, mems, cfg.samples)
            y_hard = p_u.argmax(1)  # the NP memory takes every pseudo-label (train_semi.py)
            y_u = threshold_pseudo_labels(p_u, cfg.threshold)
            true = data.y_u[iu.to(device)]
            if cfg.cutmix:  # after the intensity changes, as AugSeg does
                x_s, y_hard, y_u, true = cutmix([x_s, y_hard, y_u, true], mix_gen)
            kept = y_u != 255
            hist["ratio"].append(float(kept.float().mean()))
            hist["pacc"].append(
                float((y_u[kept] == true[kept]).float().mean()) if kept.any() else None
            )
            x_all = torch.cat([x_l, x_s])
        else:
            x_all = x_l
        f = model.backbone(x_all)
        n_l = len(x_l)
        if is_np:
            labels_target = torch.cat([y_l, y_hard]) if semi else y_l
            latent_mem.push(model.head.embed(f), labels_target)
            det_mem.push(model.head.embed(f[:n_l]), y_l)
            logits, (mu, sigma), (mu_c, sigma_c) = model.head(f, *mems, samples=cfg.samples)
            logits = logits.mean(0)  # the student's loss is on the mean of the T logit maps
        else:
            logits = model.head(f)
        loss = F.cross_entropy(logits[:n_l], y_l)
        if semi:
            if kept.any():  # the official mean over all pixels, ignored ones counting 0
                unsup = F.cross_entropy(logits[n_l:], y_u, ignore_index=255)
                loss = loss + unsup * kept.float().mean()
            if is_np:
                kl = gaussian_kl(mu, sigma, mu_c, sigma_c).mean()
                hist["kl"].append(float(kl.detach()))
                loss = loss + cfg.kl_weight * kl
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        sched.step()
        ema_update(teacher, model, step - cfg.sup_only_steps, cfg.ema)
        hist["loss"].append(float(loss.detach()))
        hist["steps"].append(step)
        if (step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps:
            hist["eval_steps"].append(step + 1)
            hist["miou"].append(evaluate(cfg, scored(step), data, mems)["miou"])
    seconds = time.perf_counter() - start
    final = evaluate(cfg, scored(cfg.steps), data, mems, n_examples=3)
    return ArmResult(
        arm=arm,
        loss_steps=hist["steps"],
        loss=hist["loss"],
        eval_steps=hist["eval_steps"],
        miou_curve=hist["miou"],
        pseudo_ratio=hist["ratio"],
        pseudo_accuracy=hist["pacc"],
        miou=final["miou"],
        pixel_accuracy=final["pixel_accuracy"],
        auroc_entropy=final["auroc_entropy"],
        auroc_max_prob=final["auroc_max_prob"],
        auroc_spread=final["auroc_spread"],
        kl=hist["kl"],
        examples=final["examples"],
        seconds=seconds,
    )


def run(
    cfg: NPSemiSegConfig, out_dir: str | Path | None = None, resume: bool = False
) -> NPSemiSegResult:
    """Train every arm in ``cfg.arms``; with ``out_dir``, save each finished arm and the result
    (``resume=True`` loads finished arms instead of training them again)."""
    cfg.validate()
    arms = train_arms(cfg, cfg.arms, out_dir, resume, ArmResult, train_arm)
    result = NPSemiSegResult(config=cfg.to_dict(), arms=arms)
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
