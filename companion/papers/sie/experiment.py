"""The experiment: SIE against VICReg on digits rotated by known angles.

Each training pair is one image rotated twice, by θ_x and θ_y drawn uniformly in (−π, π]; SIE's
predictor is told z = (cos Δ, sin Δ), Δ = θ_y − θ_x; VICReg sees the same pairs and ignores z.
The views differ only by the rotation (no other augmentation), as on 3DIEBench. Both arms start
from the same encoder weights and see the same images and angles.

Measured afterwards on the frozen model, in float32 (Sec. 4 and the official ``eval_*.py``):

* classification: a closed-form ridge probe (``companion.core.probes``) on the representation of
  randomly rotated images: SIE's invariant part, its equivariant part, the whole; VICReg's whole;
* rotation prediction: R² of z predicted from (r(x), r(y)) of held-out pairs
  (:func:`method.bilinear_ridge_r2`);
* MRR: the embedding of each test image at 0° is moved by the predictor to each of K angles and
  the true target is ranked by cosine similarity among the K rotations of that image (official
  ``eval_MRR_Hk.py`` ranks among the 50 views of an object). VICReg has no predictor: it gets the
  best linear hypernetwork for its frozen embeddings, fitted in closed form on training pairs;
* how much each part varies with rotation (:func:`method.rotation_share`).
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from companion.core import (
    Config,
    Result,
    StepBatches,
    fit,
    seed_everything,
    torch_threads,
    train_arms,
)
from companion.core.probes import ridge_probe_accuracy
from companion.data.augment import rotate
from companion.errors import CompanionError, unknown
from companion.nn import MLP, SmallCNN
from companion.papers.sie.method import (
    SIE,
    VICReg,
    apply_linear_hypernet,
    bilinear_ridge_r2,
    chance_mrr,
    fit_linear_hypernet,
    grid_angles,
    mean_reciprocal_rank,
    relative_rotation,
    rotation_share,
)

METHODS = ("sie", "sie_mlp", "vicreg", "untrained")
# sie_mlp: the control that removes only the hypernetwork (an MLP predictor on [z, e]);
# untrained: SIE's initial weights, measured without training (the level every measure starts at)
SPLIT = ("sie", "sie_mlp", "untrained")  # the arms with a split representation
DATASETS = ("mnist_subset", "digits", "cifar10")
ENCODERS = ("mlp", "cnn")


@dataclasses.dataclass(frozen=True)
class SIEConfig(Config):
    """What to train and how. Sizes change between presets; the algorithm never does."""

    dataset: str = "mnist_subset"
    data_root: str = ""  # cifar10: the extracted python release
    image_size: int = 16
    encoder: str = "mlp"  # mlp: companion.nn.MLP on pixels; cnn: companion.nn.SmallCNN
    hidden: tuple[int, ...] = (256, 256)  # mlp hidden widths, or cnn channel widths
    repr_dim: int = 64  # D, the representation
    equi_dims: int = 32  # e, its equivariant part (the last e dimensions)
    widths: tuple[int, ...] = (128, 128)  # projector widths, split between the parts
    methods: tuple[str, ...] = METHODS
    sim_coeff: float = 10.0
    std_coeff: float = 10.0
    cov_coeff: float = 1.0
    equi_factor: float = 0.45  # ε: weight of the equivariance term relative to λ_sim
    lr: float = 1e-3
    weight_decay: float = 1e-6
    batch_size: int = 256
    steps: int = 300
    eval_pairs: int = 1000  # held-out pairs for R² (and training pairs for its probe)
    rotations: int = 16  # K: candidates in the MRR ranking
    grid_images: int = 200  # test images rotated to all K angles (MRR, rotation share)
    checkpoint_every: int = 0

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        if self.encoder not in ENCODERS:
            raise unknown("encoder", self.encoder, ENCODERS)
        for m in self.methods:
            if m not in METHODS:
                raise unknown("method", m, METHODS)
        if not 0 < self.equi_dims < self.repr_dim:
            raise CompanionError(
                f"equi_dims must lie strictly between 0 and repr_dim={self.repr_dim}, "
                f"got {self.equi_dims}"
            )
        if self.lr <= 0 or self.steps < 1 or self.batch_size < 2:
            raise CompanionError(
                f"lr and steps must be positive and batch_size at least 2, got lr={self.lr}, "
                f"steps={self.steps}, batch_size={self.batch_size}"
            )
        if self.rotations < 2 or self.eval_pairs < 2 or self.grid_images < 2:
            raise CompanionError("rotations, eval_pairs and grid_images must be at least 2")


PRESETS: dict[str, SIEConfig] = {
    "smoke": SIEConfig(
        hidden=(64,),
        widths=(64, 64),
        batch_size=64,
        steps=20,
        eval_pairs=200,
        rotations=8,
        grid_images=50,
    ),
    "notebook": SIEConfig(),
    # The paper's recipe (ResNet-18-sized representation 512 = 256 + 256, projectors
    # 2048-2048-2048 split in two, batch 1024, Adam 1e-3, about 2,000 epochs) on CIFAR-10 rotated
    # in the plane; 3DIEBench itself is not read by the companion.
    "full": SIEConfig(
        dataset="cifar10",
        data_root="data/cifar-10-batches-py",
        image_size=32,
        encoder="cnn",
        hidden=(64, 128, 256, 512),
        repr_dim=512,
        equi_dims=256,
        widths=(2048, 2048, 2048),
        batch_size=1024,
        steps=100_000,
        eval_pairs=5000,
        rotations=50,
        grid_images=1000,
        checkpoint_every=2000,
        precision="bf16-mixed",
    ),
}


@dataclasses.dataclass
class ArmResult(Result):
    """One arm (SIE or VICReg): loss curves and the measurements of the frozen model."""

    method: str
    loss_steps: list[int]
    loss: list[float]
    terms: dict[str, list[float]]  # the loss's terms (inv, equi, std, ...) per step
    accuracy: dict[str, float]  # ridge-probe accuracy per part: inv, equi, all
    r2: dict[str, float]  # R² of the relative rotation per part
    mrr: float  # among the K rotations of each test image
    rotation_share: dict[str, float]  # repr_inv, repr_equi, repr_all, embedding
    similarity: dict[str, list[float]]  # mean cosine to the 0° view, per angle, per part
    hypernet_at_zero: float | None  # ‖W(0)‖ of SIE's predictor (0 by construction)
    diverged: bool
    seconds: float


@dataclasses.dataclass
class SIEResult(Result):
    config: dict
    angles: list[float]  # the K angles of the MRR ranking and the similarity curves (radians)
    chance_mrr: float
    arms: dict[str, ArmResult]


def load_data(cfg: SIEConfig):
    """(train, test): each (images float32 [N, C, H, W] in [0, 1], labels int64 [N])."""
    from companion import data

    if cfg.dataset == "cifar10":
        train = data.load_cifar(cfg.data_root, "cifar10", "train").tensors
        test = data.load_cifar(cfg.data_root, "cifar10", "test").tensors
        return train, test
    splits = data.load(cfg.dataset, image_size=cfg.image_size, seed=0)
    return splits.train.tensors, splits.test.tensors


def build_encoder(cfg: SIEConfig, channels: int) -> nn.Module:
    """The encoder f: pixels → a representation of ``repr_dim`` numbers (linear last layer)."""
    if cfg.encoder == "mlp":
        return MLP(channels * cfg.image_size**2, cfg.hidden, cfg.repr_dim)
    return SmallCNN(channels, cfg.repr_dim, widths=cfg.hidden)


def build_model(cfg: SIEConfig, method: str, channels: int) -> nn.Module:
    encoder = build_encoder(cfg, channels)
    if method in SPLIT:
        predictor = "mlp" if method == "sie_mlp" else "hypernet"
        return SIE(encoder, cfg.repr_dim, cfg.equi_dims, cfg.widths, z_dim=2, predictor=predictor)
    return VICReg(encoder, cfg.repr_dim, cfg.widths)


class RotatedPairs:
    """Step → (images, θ_x, θ_y): the images of :class:`StepBatches` and two angles per image
    drawn uniformly in (−π, π] from a generator seeded by (seed, step, rank), so a resumed run
    sees the same pairs."""

    def __init__(self, images: torch.Tensor, cfg: SIEConfig, rank: int = 0, world_size: int = 1):
        self.batches = StepBatches((images,), cfg.batch_size, cfg.seed, rank, world_size)
        self.seed, self.rank = cfg.seed, rank

    def __call__(self, step: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        (x,) = self.batches(step)
        g = torch.Generator().manual_seed((self.seed * 1_000_003 + step) * 64 + self.rank)
        theta = (1 - 2 * torch.rand(2, len(x), generator=g)) * math.pi
        return x, theta[0], theta[1]


def make_step(cfg: SIEConfig):
    coeffs = dict(
        sim_coeff=cfg.sim_coeff,
        std_coeff=cfg.std_coeff,
        cov_coeff=cfg.cov_coeff,
        equi_factor=cfg.equi_factor,
    )

    def step(model, batch):
        x, theta_x, theta_y = batch
        loss, terms = model(
            rotate(x, theta_x), rotate(x, theta_y), relative_rotation(theta_x, theta_y), **coeffs
        )
        return loss, {k: v.item() for k, v in terms.items()}

    return step


# ----------------------------------------------------------------------------- measurement


@torch.no_grad()
def represent(model: nn.Module, images: torch.Tensor, theta: torch.Tensor, device) -> torch.Tensor:
    """r = f(rotate(images, θ)) in float32 on the CPU (eval mode, autocast off)."""
    out = []
    for xb, tb in zip(images.split(512), theta.split(512)):
        xb, tb = xb.to(device).float(), tb.to(device).float()
        with torch.autocast(torch.device(device).type, enabled=False):
            out.append(model.encoder(rotate(xb, tb)).float().cpu())
    return torch.cat(out)


def parts_of(model: nn.Module, method: str) -> dict[str, slice]:
    """The parts of the representation to measure: SIE's inv, equi and all; VICReg's all."""
    if method in SPLIT:
        return {
            "inv": slice(0, model.inv_dims),
            "equi": slice(model.inv_dims, None),
            "all": slice(None),
        }
    return {"all": slice(None)}


@torch.no_grad()
def embed(model: nn.Module, method: str, r: torch.Tensor) -> torch.Tensor:
    """The embedding a predictor works on: SIE's e_eq = h_eq(r_eq), VICReg's h(r)."""
    if method in SPLIT:
        return model.projector_equi(r[:, model.inv_dims :])
    return model.projector(r)


@torch.no_grad()
def measure(model: nn.Module, method: str, cfg: SIEConfig, train, test) -> dict:
    """Every number of :class:`ArmResult` after training, on the unwrapped model in float32
    on the CPU. The random angles come from a generator seeded by ``cfg.seed`` alone, so both
    arms are measured on the same rotated images."""
    model = getattr(model, "module", model).float().eval()
    device = next(model.parameters()).device
    g = torch.Generator().manual_seed(cfg.seed + 12_345)
    (xtr, ytr), (xte, yte) = train, test

    def angles(n: int) -> torch.Tensor:
        return (1 - 2 * torch.rand(n, generator=g)) * math.pi

    parts = parts_of(model, method)
    classes = int(max(ytr.max(), yte.max())) + 1
    rtr = represent(model, xtr, angles(len(xtr)), device)
    rte = represent(model, xte, angles(len(xte)), device)
    accuracy = {
        name: ridge_probe_accuracy(rtr[:, s].double(), ytr, rte[:, s].double(), yte, classes)
        for name, s in parts.items()
    }

    # seeded random subsets: mnist_subset is sorted by class, so a prefix holds the first digits
    n = min(cfg.eval_pairs, len(xtr), len(xte))
    pick = torch.Generator().manual_seed(cfg.seed + 54_321)
    pairs = {}
    for split, pool in (("train", xtr), ("test", xte)):
        images = pool[torch.randperm(len(pool), generator=pick)[:n]]
        tx, ty = angles(n), angles(n)
        rx, ry = represent(model, images, tx, device), represent(model, images, ty, device)
        pairs[split] = (rx, ry, relative_rotation(tx, ty))
    r2 = {
        name: bilinear_ridge_r2(
            tuple(t[:, s] if i < 2 else t for i, t in enumerate(pairs["train"])),
            tuple(t[:, s] if i < 2 else t for i, t in enumerate(pairs["test"])),
        )
        for name, s in parts.items()
    }

    # every grid image at each of the K angles: [n, K, D]
    k = cfg.rotations
    grid = grid_angles(k)
    images = xte[torch.randperm(len(xte), generator=pick)[: cfg.grid_images]]
    m = len(images)
    reps = torch.stack([represent(model, images, grid[j].repeat(m), device) for j in range(k)], 1)
    model = model.cpu()  # the heads (projectors, predictor) on the representations' device
    emb = embed(model, method, reps.reshape(m * k, -1)).reshape(m, k, -1)
    share = {f"repr_{name}": rotation_share(reps[:, :, s]) for name, s in parts.items()}
    share["embedding"] = rotation_share(emb)
    similarity = {
        f"repr_{name}": F.cosine_similarity(reps[:, :1, s], reps[:, :, s], dim=-1).mean(0).tolist()
        for name, s in parts.items()
    }
    similarity["embedding"] = F.cosine_similarity(emb[:, :1], emb, dim=-1).mean(0).tolist()

    # MRR: from the 0° embedding, predict each of the K rotations; rank the true one among K
    source = emb[:, 0].repeat_interleave(k, 0)  # [m·K, d]
    target = torch.arange(k).repeat(m)
    z = relative_rotation(torch.zeros(m * k), grid[target])
    if method in SPLIT:
        pred = model.predictor(source, z)
        at_zero = (
            float(model.predictor.matrices(torch.zeros(1, 2)).norm())
            if hasattr(model.predictor, "matrices")
            else None
        )
    else:
        ex, ey, zz = pairs["train"]
        weights = fit_linear_hypernet(embed(model, method, ex), embed(model, method, ey), zz)
        pred = apply_linear_hypernet(weights, source, z)
        at_zero = None
    candidates = F.normalize(emb, dim=-1).repeat_interleave(k, 0)  # [m·K, K, d]
    scores = torch.einsum("nd,nkd->nk", F.normalize(pred, dim=-1), candidates)
    mrr = float(mean_reciprocal_rank(scores, target))
    return dict(
        accuracy=accuracy,
        r2=r2,
        mrr=mrr,
        rotation_share=share,
        similarity=similarity,
        hypernet_at_zero=at_zero,
    )


def train_arm(fabric, cfg: SIEConfig, method: str, folder: Path | None, resume: bool) -> ArmResult:
    """Train one arm under Fabric (any device, DDP, precision), then measure it. On a CPU it
    runs on one thread: these models are small enough that a second thread costs more than it
    saves, and one thread gives the same numbers whatever the machine's thread count."""
    with torch_threads(1, fabric.device):
        return _train_arm(fabric, cfg, method, folder, resume)


def _train_arm(fabric, cfg: SIEConfig, method: str, folder: Path | None, resume: bool) -> ArmResult:
    seed_everything(cfg.seed)  # the same initial encoder for every arm
    train, test = load_data(cfg)
    model = build_model(cfg, method, train[0].shape[1])
    if method == "untrained":  # the same initial weights as every arm, measured as they are
        model = fabric.setup(model)
        return ArmResult(
            method=method,
            loss_steps=[],
            loss=[],
            terms={},
            **measure(model, method, cfg, train, test),
            diverged=False,
            seconds=0.0,
        )
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    model, optimizer = fabric.setup(model, optimizer)
    batches = RotatedPairs(train[0], cfg, fabric.global_rank, fabric.world_size)
    start = time.perf_counter()
    history = fit(
        fabric,
        model,
        optimizer,
        batches,
        make_step(cfg),
        steps=cfg.steps,
        checkpoint=folder / "checkpoint.ckpt" if folder else None,
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        desc=method,
    )
    seconds = time.perf_counter() - start
    names = ("inv", "equi", "std", "pred_std", "cov") if method in SPLIT else ("inv", "std", "cov")
    return ArmResult(
        method=method,
        loss_steps=history.steps("loss"),
        loss=history.values("loss"),
        terms={name: history.values(name) for name in names},
        **measure(model, method, cfg, train, test),
        diverged="diverged" in history.data,
        seconds=seconds,
    )


def run(cfg: SIEConfig, out_dir: str | Path | None = None, resume: bool = False) -> SIEResult:
    """Train every arm in ``cfg.methods``; with ``out_dir``, checkpoint and write results.

    ``resume=True`` keeps arms that finished (``<out_dir>/<method>/arm.json``) and continues an
    interrupted arm from its last checkpoint.
    """
    arms = train_arms(cfg, cfg.methods, out_dir, resume, ArmResult, train_arm)
    result = SIEResult(
        config=cfg.to_dict(),
        angles=grid_angles(cfg.rotations).tolist(),
        chance_mrr=chance_mrr(cfg.rotations),
        arms=arms,
    )
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
