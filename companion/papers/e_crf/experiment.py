"""The experiment: a small fully convolutional network segments synthetic scenes, with and
without E-CRF before its 1×1 classifier, and we measure the class weights' similarity and the
mIoU near boundaries.

**The scenes.** Four classes, each a colour at a vertex of a regular tetrahedron in RGB (so
every pair of classes is equally far apart in colour) plus Gaussian pixel noise. Each scene
holds exactly one *pair* of classes, (0, 1) or (2, 3), split by the level set of a smooth
random field: 0 and 1 share long boundaries, as do 2 and 3, and the other four pairs never
touch. Colour cannot explain a difference between touching and non-touching pairs, so any
extra similarity of the touching pairs' weights has a known cause: the boundaries.

**The arms** (same initial backbone and classifier weights, same batches, same steps):
``baseline`` (no module), ``ecrf`` (the paper's module with its superpixel prior),
``ecrf_nosp`` (an ablation: the module without superpixels) and ``centre_only`` (the control:
the full module with its kernel restricted to j = i, so it keeps the centre term's rescaling
1 + 0.2 · k_ii μ_i of every feature but passes no kernel messages between neighbouring pixels
(the superpixel prior, itself an average over pixels, is kept)). Superpixels come from
scikit-image's SLIC, computed once per image when the scenes are made.

The training loop is the companion's own (the paper's training code is not released): Adam at a
constant learning rate, plain pixel-wise cross-entropy, as the paper trains the module
end-to-end with the host network's loss.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from companion.core import Config, Every, Result, StepBatches, fit, seed_everything, train_arms
from companion.errors import CompanionError, unknown
from companion.papers.e_crf.method import MessagePass, class_weight_similarity

METHODS = ("baseline", "ecrf", "ecrf_nosp", "centre_only")
# colours at the vertices of a regular tetrahedron inscribed in the RGB cube: equidistant
COLOURS = torch.tensor([[0.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
PAIRS = ((0, 1), (2, 3))  # the class pairs that share boundaries; no other pair ever touches
NUM_CLASSES = 4


def touching(a: int, b: int) -> bool:
    return (min(a, b), max(a, b)) in PAIRS


@dataclasses.dataclass(frozen=True)
class ECRFConfig(Config):
    """What to train and how. Sizes change between presets; the algorithm never does."""

    image_size: int = 24
    n_train: int = 256
    n_test: int = 64
    smoothness: float = 2.5  # σ (pixels) of the Gaussian filter that makes the random field
    noise: float = 0.6  # std of the Gaussian pixel noise (colours are 0/1 per channel)
    superpixels: int = 36  # SLIC's n_segments per image
    compactness: float = 10.0  # SLIC's compactness
    width: int = 16  # channels of the backbone
    depth: int = 3  # 3×3 convolutions of the backbone (receptive field 2·depth + 1)
    ecrf_channels: int = 8  # channels of the image and position embeddings (code: 32)
    methods: tuple[str, ...] = METHODS
    lr: float = 3e-3
    batch_size: int = 8
    steps: int = 300
    measure_every: int = 25  # class-weight similarity every n steps
    band: int = 2  # the boundary band: pixels within `band` px of a class boundary
    checkpoint_every: int = 0

    def validate(self) -> None:
        for m in self.methods:
            if m not in METHODS:
                raise unknown("method", m, METHODS)
        if "baseline" not in self.methods:
            raise CompanionError(
                f"methods must include 'baseline' (the control), got {self.methods}"
            )
        for name in ("image_size", "n_train", "n_test", "width", "depth", "batch_size", "steps"):
            if getattr(self, name) < 1:
                raise CompanionError(f"{name} must be positive, got {getattr(self, name)}")
        if self.image_size < 8:
            raise CompanionError(f"image_size must be at least 8, got {self.image_size}")
        if self.lr <= 0 or self.noise < 0 or self.smoothness <= 0:
            raise CompanionError(
                f"lr and smoothness must be positive and noise non-negative, got lr={self.lr}, "
                f"smoothness={self.smoothness}, noise={self.noise}"
            )
        if self.ecrf_channels < 2 or self.ecrf_channels % 2:
            raise CompanionError(
                f"ecrf_channels must be even and positive (sin/cos pairs), got {self.ecrf_channels}"
            )
        if self.superpixels < 1 or self.band < 1 or self.measure_every < 1:
            raise CompanionError(
                f"superpixels, band and measure_every must be positive, got {self.superpixels}, "
                f"{self.band}, {self.measure_every}"
            )


PRESETS: dict[str, ECRFConfig] = {
    "smoke": ECRFConfig(
        image_size=16,
        n_train=64,
        n_test=32,
        smoothness=2.0,
        superpixels=16,
        width=8,
        depth=2,
        ecrf_channels=4,
        batch_size=8,
        steps=20,
        measure_every=5,
    ),
    "notebook": ECRFConfig(),
    # A stored run toward the paper's setting (about 2 min CPU per seed, single-threaded): the
    # official 32 embedding channels, five times the steps and four times the training scenes;
    # the scenes, the backbone, the learning rate and the algorithm stay the notebook's.
    "medium": ECRFConfig(ecrf_channels=32, n_train=1024, steps=1500, measure_every=50),
    # The paper trains DeepLabV3+ on ADE20K; here the synthetic scenes at a larger size with a
    # wider, deeper backbone, many more steps and checkpoints (GPU).
    "full": ECRFConfig(
        image_size=96,
        n_train=4000,
        n_test=500,
        smoothness=9.0,
        superpixels=225,
        width=256,
        depth=8,
        ecrf_channels=32,
        batch_size=32,
        steps=20_000,
        measure_every=500,
        band=4,
        checkpoint_every=1000,
        lr=1e-3,
    ),
}


@dataclasses.dataclass
class ArmResult(Result):
    """One arm: curves over training and the final measurements on the test scenes."""

    method: str
    loss_steps: list[int]
    loss: list[float]
    measure_steps: list[int]
    sim_touching: list[float]  # mean cosine similarity of the touching pairs' weights
    sim_apart: list[float]  # ... of the pairs that never touch
    similarity: list[list[float]]  # K×K cosine similarity of the class weights at the end
    miou: float
    boundary_miou: float  # mIoU on the pixels within `band` px of a boundary
    interior_miou: float  # mIoU on the other pixels
    examples: list[list[list[int]]]  # predictions on the first test scenes [n][H][W]
    seconds: float


@dataclasses.dataclass
class ECRFResult(Result):
    config: dict
    pairs: list[list[int]]  # the touching pairs
    examples: list[list[list[list[float]]]]  # the first test images [n][H][W][3], rounded
    example_labels: list[list[list[int]]]
    example_superpixels: list[list[list[int]]]
    boundary_share: float  # share of test pixels in the boundary band
    arms: dict[str, ArmResult]


# ---------------------------------------------------------------- data
@functools.lru_cache(maxsize=4)
def make_scenes(cfg: ECRFConfig, n: int, seed: int):
    """(images n×3×S×S float32, labels n×S×S int64, superpixels n×S×S int64).

    Each scene: a pair (a, b) from ``PAIRS`` drawn uniformly, a smooth random field (white noise
    through a Gaussian filter of σ = ``smoothness``) thresholded at its median, so a and b each
    fill about half of the scene and share long, curved boundaries; pixel colour = the class's
    colour + N(0, noise²) per channel. SLIC superpixels of the noisy image.
    """
    from scipy.ndimage import gaussian_filter
    from skimage.segmentation import slic

    rng = np.random.default_rng(seed)
    s = cfg.image_size
    field = gaussian_filter(rng.standard_normal((n, s, s)), (0, cfg.smoothness, cfg.smoothness))
    side = field > np.median(field.reshape(n, -1), axis=1)[:, None, None]
    pair = rng.integers(len(PAIRS), size=n)
    flip = rng.integers(2, size=n).astype(bool)
    first = np.array([PAIRS[p][0] for p in pair])
    second = np.array([PAIRS[p][1] for p in pair])
    a = np.where(flip, second, first)[:, None, None]
    b = np.where(flip, first, second)[:, None, None]
    labels = np.where(side, a, b)
    colours = COLOURS.numpy()[labels]  # n × S × S × 3
    images = (colours + cfg.noise * rng.standard_normal(colours.shape)).astype(np.float32)
    sp = np.stack(
        [
            slic(
                img.astype(np.float64),
                n_segments=cfg.superpixels,
                compactness=cfg.compactness,
                sigma=1.0,
                start_label=0,
                channel_axis=-1,
            )
            for img in images
        ]
    )
    return (
        torch.from_numpy(images).permute(0, 3, 1, 2).contiguous(),
        torch.from_numpy(labels).long(),
        torch.from_numpy(sp).long(),
    )


def boundary_band(labels: torch.Tensor, band: int) -> torch.Tensor:
    """Pixels within ``band`` px (Chebyshev distance) of a pixel of another class: N×H×W bool."""
    onehot = F.one_hot(labels, NUM_CLASSES).permute(0, 3, 1, 2).float()
    k = 2 * band + 1
    present = F.max_pool2d(onehot, k, stride=1, padding=band)  # classes within the window
    return present.sum(dim=1) > 1


# ---------------------------------------------------------------- model
class SegNet(nn.Module):
    """A fully convolutional network: ``depth`` 3×3 conv + ReLU layers (no down-sampling), an
    optional E-CRF :class:`MessagePass` and the final 1×1 classifier (the class weights)."""

    def __init__(self, cfg: ECRFConfig, method: str):
        super().__init__()
        layers, c_in = [], 3
        for _ in range(cfg.depth):
            layers += [nn.Conv2d(c_in, cfg.width, 3, padding=1), nn.ReLU()]
            c_in = cfg.width
        self.backbone = nn.Sequential(*layers)
        self.classifier = nn.Conv2d(cfg.width, NUM_CLASSES, 1)
        self.ecrf = None
        if method != "baseline":
            self.ecrf = _module(cfg, method)

    def features(self, img: torch.Tensor, superpixels: torch.Tensor | None = None):
        feat = self.backbone(img)
        if self.ecrf is not None:
            feat = self.ecrf(feat, img, superpixels)
        return feat

    def forward(self, img: torch.Tensor, superpixels: torch.Tensor | None = None):
        return self.classifier(self.features(img, superpixels))


def build_model(cfg: ECRFConfig, method: str) -> SegNet:
    """Every arm draws the backbone and classifier from the same seed, then the module."""
    torch.manual_seed(cfg.seed)
    model = SegNet(cfg, "baseline")
    if method != "baseline":
        torch.manual_seed(cfg.seed + 10_000)
        model.ecrf = _module(cfg, method)
    return model


def _module(cfg: ECRFConfig, method: str) -> MessagePass:
    return MessagePass(
        cfg.width,
        use_superpixels=method in ("ecrf", "centre_only"),
        channel=cfg.ecrf_channels,
        centre_only=method == "centre_only",
    )


def _segmentation_step(model, batch):
    img, labels, sp = batch
    loss = F.cross_entropy(model(img, sp), labels)
    return loss, {}


# ---------------------------------------------------------------- measurements
def weight_similarity(model: nn.Module) -> tuple[torch.Tensor, float, float]:
    """(K×K cosine similarity of the class weights, mean over touching pairs, over the rest)."""
    module = getattr(model, "module", model)
    sim = class_weight_similarity(module.classifier.weight)
    touch = [sim[a, b].item() for a in range(NUM_CLASSES) for b in range(a) if touching(a, b)]
    apart = [sim[a, b].item() for a in range(NUM_CLASSES) for b in range(a) if not touching(a, b)]
    return sim, float(np.mean(touch)), float(np.mean(apart))


def mean_iou(pred: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor | None = None) -> float:
    """Mean over classes of TP / (TP + FP + FN), pixels counted over the whole set (inside
    ``mask`` only, when given); classes absent from both prediction and truth are skipped."""
    if mask is not None:
        pred, labels = pred[mask], labels[mask]
    ious = []
    for k in range(NUM_CLASSES):
        p, t = pred == k, labels == k
        union = (p | t).sum().item()
        if union:
            ious.append((p & t).sum().item() / union)
    return float(np.mean(ious)) if ious else 0.0


@torch.no_grad()
def predict(model: nn.Module, images, superpixels, batch_size: int = 64) -> torch.Tensor:
    """Arg-max labels of the test images, in float32 with the unwrapped model."""
    module = getattr(model, "module", model).eval()
    device = next(module.parameters()).device
    out = []
    for img, sp in zip(images.split(batch_size), superpixels.split(batch_size)):
        with torch.autocast(device.type, enabled=False):
            out.append(module(img.to(device).float(), sp.to(device)).argmax(1).cpu())
    return torch.cat(out)


N_EXAMPLES = 4


def train_arm(fabric, cfg: ECRFConfig, method: str, folder: Path | None, resume: bool):
    """Train one arm under Fabric and measure it on the test scenes."""
    train = make_scenes(cfg, cfg.n_train, seed=cfg.seed)
    test = make_scenes(cfg, cfg.n_test, seed=cfg.seed + 1_000_000)
    model = build_model(cfg, method)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    model, optimizer = fabric.setup(model, optimizer)
    batches = StepBatches(train, cfg.batch_size, cfg.seed, fabric.global_rank, fabric.world_size)

    def measure(step, m):
        _, touch, apart = weight_similarity(m)
        return {"sim_touching": touch, "sim_apart": apart}

    seed_everything(cfg.seed)
    start = time.perf_counter()
    history = fit(
        fabric,
        model,
        optimizer,
        batches,
        _segmentation_step,
        steps=cfg.steps,
        callbacks=[Every(cfg.measure_every, measure)],
        checkpoint=folder / "checkpoint.ckpt" if folder else None,
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        desc=method,
    )
    seconds = time.perf_counter() - start
    sim, _, _ = weight_similarity(model)
    pred = predict(model, test[0], test[2])
    band = boundary_band(test[1], cfg.band)
    return ArmResult(
        method=method,
        loss_steps=history.steps("loss"),
        loss=history.values("loss"),
        measure_steps=history.steps("sim_touching"),
        sim_touching=history.values("sim_touching"),
        sim_apart=history.values("sim_apart"),
        similarity=[[round(v, 5) for v in row] for row in sim.tolist()],
        miou=mean_iou(pred, test[1]),
        boundary_miou=mean_iou(pred, test[1], band),
        interior_miou=mean_iou(pred, test[1], ~band),
        examples=pred[:N_EXAMPLES].tolist(),
        seconds=seconds,
    )


def run(cfg: ECRFConfig, out_dir: str | Path | None = None, resume: bool = False) -> ECRFResult:
    """Train every arm in ``cfg.methods``; with ``out_dir``, checkpoint and write results.

    ``resume=True`` keeps arms that finished (``<out_dir>/<method>/arm.json``) and continues an
    interrupted arm from its last checkpoint.
    """
    arms = train_arms(cfg, cfg.methods, out_dir, resume, ArmResult, train_arm)
    images, labels, sp = make_scenes(cfg, cfg.n_test, seed=cfg.seed + 1_000_000)
    n = N_EXAMPLES
    result = ECRFResult(
        config=cfg.to_dict(),
        pairs=[list(p) for p in PAIRS],
        examples=np.round(images[:n].permute(0, 2, 3, 1).numpy(), 3).tolist(),
        example_labels=labels[:n].tolist(),
        example_superpixels=sp[:n].tolist(),
        boundary_share=float(boundary_band(labels, cfg.band).float().mean()),
        arms=arms,
    )
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
