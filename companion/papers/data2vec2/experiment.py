"""The experiment: data2vec 2.0 with M masked clones per teacher pass against M = 1 and against
an MAE-style pixel target, all with the same student, masks and decoder, at equal training
compute; plus the control ``single_mask_images`` (M = 1 with the multi-mask arm's steps and
distinct images: it differs in the number of masks per teacher target and so also in the clones
per step, 1 × batch against M × batch; it is not an equal-clones control). Each encoder is then
read out by a linear probe on frozen features, fitted on every training image (or a fixed random
subset: the split is sorted by class, so a prefix would miss classes).

Equal compute: every arm gets as many optimizer steps as make its training FLOPs (teacher
forward, student and decoder forward and backward, counted by torch's FlopCounterMode on the
real shapes) equal to the multi-mask arm's ``steps``. FLOPs, unlike seconds, are the same on
every machine; wall-clock time per effective sample (one masked clone) is measured separately.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from pathlib import Path

import torch

from companion.core import (
    Config,
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
from companion.core.fullscale import count_flops
from companion.core.probes import ridge_probe_accuracy
from companion.errors import CompanionError, unknown
from companion.papers.data2vec2.method import Data2Vec2, Encoder

ARMS = ("multi_mask", "single_mask", "pixel_target", "single_mask_images", "single_mask_clones")
COST_ARMS = ARMS[:3]  # arms with distinct costs (the two controls cost what single_mask does)
CONTROLS = ("single_mask_images", "single_mask_clones")  # not at equal FLOPs
DATASETS = ("mnist_subset", "digits", "cifar10")
EQUALIZE = ("batch", "steps")
LABELS = {
    "random": "random encoder",
    "multi_mask": "data2vec 2.0, M clones",
    "single_mask": "data2vec 2.0, M = 1",
    "single_mask_images": "M = 1, equal images",
    "single_mask_clones": "M = 1, equal clones (M× images)",
    "pixel_target": "pixel target (MAE-style)",
}


@dataclasses.dataclass(frozen=True)
class Data2Vec2Config(Config):
    """What to train and how. Sizes change between presets; the algorithm never does."""

    dataset: str = "mnist_subset"
    data_root: str = ""  # cifar10: the extracted python release
    image_size: int = 24  # MNIST resized: 6 × 6 patches of 4 × 4 pixels
    patch_size: int = 4
    dim: int = 48
    heads: int = 4
    prenet_depth: int = 1  # modality-specific blocks before the shared ones
    depth: int = 3  # shared blocks (the teacher's targets come from these)
    mlp_ratio: float = 2.0
    top_k: int = 3  # K: average the top K shared blocks' FFN outputs
    clones: int = 4  # M of the multi-mask arm
    mask_ratio: float = 0.8
    mask_block: int = 2  # B: side of the kept squares
    mask_adjust: float = 0.07
    decoder_dim: int = 48
    decoder_layers: int = 2
    decoder_kernel: int = 3
    decoder_groups: int = 4
    mask_noise_std: float = 0.01
    cls_loss: float = 2.56  # on the mean over clones: the official 0.01 × 256 clones per GPU
    ema_start: float = 0.99
    ema_end: float = 0.999
    ema_anneal_fraction: float = 0.5  # τ rises over this share of an arm's steps
    arms: tuple[str, ...] = ARMS
    lr: float = 2e-3
    beta2: float = 0.95
    weight_decay: float = 0.05
    warmup_fraction: float = 0.1
    grad_clip: float | None = 4.0
    batch_size: int = 32  # images per step (the multi-mask arm trains on M × this clones)
    steps: int = 120  # the multi-mask arm's steps; the others get equal training FLOPs
    probe_ridge: float = 1.0  # λ of the ridge-regression linear probe
    probe_images: int = 0  # train images that fit the probe (0: all; else a fixed random subset)
    timing_batch: int = 32  # images per timed step (each arm clones them as it trains)
    timing_steps: int = 3  # training steps timed per arm (median of interleaved rounds)
    threads: int = 1  # torch CPU threads during the run; 0 leaves torch's setting alone
    equalize: str = "batch"  # equal training FLOPs through more images per step, or more steps
    checkpoint_every: int = 0

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        if self.equalize not in EQUALIZE:
            raise unknown("equalize", self.equalize, EQUALIZE)
        for arm in self.arms:
            if arm not in ARMS:
                raise unknown("arm", arm, ARMS)
        if self.image_size % self.patch_size:
            raise CompanionError(
                f"image_size {self.image_size} is not divisible by patch_size {self.patch_size}"
            )
        if self.dim % self.heads or self.dim % 4:
            raise CompanionError(f"dim {self.dim} must be divisible by heads and by 4")
        if not 1 <= self.top_k <= self.depth:
            raise CompanionError(
                f"top_k must be between 1 and depth={self.depth}, got {self.top_k}"
            )
        if not 0 < self.mask_ratio < 1:
            raise CompanionError(f"mask_ratio must be in (0, 1), got {self.mask_ratio}")
        if self.clones < 1 or self.steps < 1 or self.batch_size < 1 or self.lr <= 0:
            raise CompanionError(
                f"clones, steps, batch_size and lr must be positive, got {self.clones}, "
                f"{self.steps}, {self.batch_size}, {self.lr}"
            )
        if self.dim % self.decoder_groups or self.decoder_dim % self.decoder_groups:
            raise CompanionError(
                f"dim {self.dim} and decoder_dim {self.decoder_dim} must be divisible by "
                f"decoder_groups {self.decoder_groups}"
            )


PRESETS: dict[str, Data2Vec2Config] = {
    "smoke": Data2Vec2Config(
        # the notebook's arms (the pixel target is trained by the full preset's checks)
        arms=("multi_mask", "single_mask", "single_mask_images", "single_mask_clones"),
        dataset="digits",
        image_size=8,
        patch_size=2,
        dim=16,
        heads=2,
        depth=2,
        top_k=2,
        decoder_dim=16,
        batch_size=16,
        steps=8,
        probe_images=0,
        timing_steps=1,
    ),
    # EMA scaled to the run: the official decay 0.9998 -> 0.99999 over the first 100k of 375k
    # updates is a teacher horizon 1/(1 - τ) of 5k -> 100k updates, i.e. the teacher ends up
    # averaging the last ~27% of the run, and τ anneals over 27% of it. Here τ_e = 0.97 (a
    # horizon of 33 of the 120 steps, ~27%), annealed over 27% of each arm's steps. τ₀ = 0.9 is
    # chosen, not scaled (a 10-step horizon, about the warm-up; the official 1.3% share would be
    # under 2 steps). The official values would leave the teacher at its init.
    "notebook": Data2Vec2Config(
        arms=("multi_mask", "single_mask", "single_mask_images", "single_mask_clones"),
        ema_start=0.9,
        ema_end=0.97,
        ema_anneal_fraction=0.27,
        probe_images=0,
    ),
    # Several passes over the data (480 steps × 32 images = 5 epochs of the multi-mask arm):
    # the regime of the paper's long runs, where M = 1's extra distinct images stop being new.
    # EMA scaled the same way: τ_e = 1 − 1/(0.27 × 480) ≈ 0.992, annealed over 27% of the steps;
    # τ₀ = 0.9 as in the notebook preset.
    # The notebook's arms, the equal-clones control included.
    "medium": Data2Vec2Config(
        arms=("multi_mask", "single_mask", "single_mask_images", "single_mask_clones"),
        ema_start=0.9,
        ema_end=0.992,
        ema_anneal_fraction=0.27,
        probe_images=0,
        steps=480,
    ),
    # Paper scale (ViT-B recipe of base_images_only_task.yaml) on CIFAR-10 at 32 px, 2 × 2
    # patches: 16 × 16 = 256 tokens; 2 prenet + 10 shared blocks, K = 10, M = 16, B = 3,
    # 6-layer decoder. EMA scaled by the notebook's rule (official horizons as shares of the
    # 375k updates: 5k ≈ 1.3%, 100k ≈ 27%): τ₀ = 1 − 1/(0.0133 × 20k) ≈ 0.99625,
    # τ_e = 1 − 1/(0.27 × 20k) ≈ 0.99981 (the official 0.9998 → 0.99999 would be 5× the run).
    "full": Data2Vec2Config(
        dataset="cifar10",
        data_root="data/cifar-10-batches-py",
        image_size=32,
        patch_size=2,
        dim=768,
        heads=12,
        prenet_depth=2,
        depth=10,
        mlp_ratio=4.0,
        top_k=10,
        clones=16,
        mask_block=3,
        decoder_dim=768,
        decoder_layers=6,
        decoder_groups=16,
        ema_start=0.99625,
        ema_end=0.99981,
        ema_anneal_fraction=0.27,  # 100k of 375k updates
        lr=1e-3,
        warmup_fraction=0.13,  # 50k of 375k
        batch_size=256,
        steps=20_000,
        probe_images=0,
        timing_steps=5,
        threads=0,
        checkpoint_every=1000,
        precision="bf16-mixed",
    ),
}


@dataclasses.dataclass
class ArmResult(Result):
    """One pre-training arm: its curves and its probe."""

    arm: str
    clones: int
    target: str
    steps: int
    batch_size: int  # images per step (each cloned ``clones`` times)
    flops_per_step: float  # training FLOPs of one step (forward and backward)
    loss_steps: list[int]
    loss: list[float]
    target_var: list[float]  # mean per-feature std of the targets at masked positions
    pred_var: list[float]  # the same for the predictions (logged, never an abort)
    probe_accuracy: float
    seconds: float


@dataclasses.dataclass
class Data2Vec2Result(Result):
    config: dict
    random_probe: float  # linear probe on the untrained encoder (same initial weights)
    arms: dict[str, ArmResult]
    costs: dict  # FLOPs and measured time per effective sample, encoder FLOP shares
    n_test: int = 0


# ---------------------------------------------------------------------------------------------
# Data, models, probe
# ---------------------------------------------------------------------------------------------


def load_data(cfg: Data2Vec2Config):
    """(train, test, channels, classes), tensors (images in [0, 1] standardized per channel)."""
    from companion import data

    if cfg.dataset in ("digits", "mnist_subset"):
        splits = data.load(cfg.dataset, image_size=cfg.image_size, seed=0)
        train, test = splits.train.tensors, splits.test.tensors
        channels, classes = train[0].shape[1], splits.num_classes
    else:
        train = data.load_cifar(cfg.data_root, "cifar10", "train").tensors
        test = data.load_cifar(cfg.data_root, "cifar10", "test").tensors
        channels, classes = 3, 10
    mean = train[0].mean(dim=(0, 2, 3), keepdim=True)
    std = train[0].std(dim=(0, 2, 3), keepdim=True) + 1e-6
    norm = lambda t: (t[0].float() - mean) / std  # noqa: E731
    return (norm(train), train[1]), (norm(test), test[1]), channels, classes


ARM_SETTINGS = {  # arm -> (target, clones from cfg?)
    "multi_mask": ("contextualized", True),
    "single_mask": ("contextualized", False),
    "pixel_target": ("pixels", False),
    "single_mask_images": ("contextualized", False),  # control: equal images, not FLOPs
    "single_mask_clones": ("contextualized", False),  # control: equal student passes per step
}
COST_OF = {arm: "single_mask" if arm in CONTROLS else arm for arm in ARMS}


def build_model(cfg: Data2Vec2Config, arm: str, channels: int, steps: int = 1) -> Data2Vec2:
    """The encoder (same initial weights for every arm under the same seed) and its trainer."""
    target, multi = ARM_SETTINGS[arm]
    encoder = Encoder(
        cfg.image_size,
        cfg.patch_size,
        channels,
        cfg.dim,
        cfg.depth,
        cfg.heads,
        cfg.prenet_depth,
        cfg.mlp_ratio,
    )
    return Data2Vec2(
        encoder,
        target=target,
        clones=cfg.clones if multi else 1,
        top_k=cfg.top_k,
        mask_ratio=cfg.mask_ratio,
        mask_block=cfg.mask_block,
        mask_adjust=cfg.mask_adjust,
        decoder_dim=cfg.decoder_dim,
        decoder_layers=cfg.decoder_layers,
        decoder_kernel=cfg.decoder_kernel,
        decoder_groups=cfg.decoder_groups,
        mask_noise_std=cfg.mask_noise_std,
        cls_loss=cfg.cls_loss,
        ema_start=cfg.ema_start,
        ema_end=cfg.ema_end,
        ema_anneal_end_step=max(1, round(cfg.ema_anneal_fraction * steps)),
        in_channels=channels,
    )


@torch.no_grad()
def encode(encoder: Encoder, images: torch.Tensor, device, batch_size: int = 500):
    """Frozen features of ``images`` in float32 (autocast off), on the CPU."""
    encoder = encoder.eval()
    out = []
    for x in images.split(batch_size):
        with torch.autocast(torch.device(device).type, enabled=False):
            out.append(encoder.features(x.to(device).float()).cpu())
    return torch.cat(out).double()


def probe(encoder: Encoder, train, test, classes: int, cfg: Data2Vec2Config, device) -> float:
    n = min(cfg.probe_images or len(train[0]), len(train[0]))
    # a fixed random subset: the split is sorted by class, so a prefix would miss classes
    idx = torch.randperm(len(train[0]), generator=torch.Generator().manual_seed(0))[:n]
    tx, ty = encode(encoder, train[0][idx], device), train[1][idx]
    test_x = encode(encoder, test[0], device)
    return ridge_probe_accuracy(tx, ty, test_x, test[1], classes, cfg.probe_ridge)


# ---------------------------------------------------------------------------------------------
# Costs: FLOPs and time per effective sample
# ---------------------------------------------------------------------------------------------


def step_flops(model: Data2Vec2, images: torch.Tensor) -> float:
    """Training FLOPs of one step on ``images`` (teacher forward; student and decoder forward
    and backward), counted on the real shapes."""
    model.train()
    state = [p.detach().clone() for p in model.parameters()]
    rng = torch.get_rng_state()  # masks are drawn on the CPU even for meta tensors

    def step():
        loss, _ = model(images)
        loss.backward()

    flops = count_flops(step)
    with torch.no_grad():  # leave the model (its EMA teacher too) and the RNG as they were
        for p, s in zip(model.parameters(), state):
            p.copy_(s)
        model.updates.zero_()
    model.zero_grad(set_to_none=True)
    torch.set_rng_state(rng)
    return flops


def encoder_flop_share(model: Data2Vec2, images: torch.Tensor) -> dict[str, float]:
    """Forward FLOPs of the student encoder per clone on the visible patches against a full
    pass on every patch: the saving of dropping masked tokens."""
    mask = model.masks(len(images))
    from companion.papers.data2vec2.method import visible_indices

    keep = visible_indices(mask).to(images.device)
    with torch.no_grad():
        visible = count_flops(model.student, images, keep=keep)
        full = count_flops(model.student, images)
    length = model.student.num_patches
    n_visible = keep.shape[1]
    return {
        "encoder_flops_visible": visible / len(images),
        "encoder_flops_full": full / len(images),
        "encoder_flop_share": visible / full,
        "visible_share": n_visible / length,
        "visible_patches": n_visible,
        "patches": length,
    }


def time_per_sample(
    models: dict[str, Data2Vec2], images: torch.Tensor, steps: int, lr: float = 1e-4
) -> dict[str, float]:
    """Median seconds of one training step (forward, backward, Adam step) per effective sample
    (one masked clone), arms timed in interleaved rounds so machine load hits all alike."""
    opts = {k: torch.optim.Adam(m.parameters(), lr=lr) for k, m in models.items()}
    times: dict[str, list[float]] = {k: [] for k in models}

    def one(name: str) -> float:
        m, opt = models[name], opts[name]
        m.train()
        start = time.perf_counter()
        loss, _ = m(images)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if images.device.type == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - start

    for name in models:  # warm-up
        one(name)
    for _ in range(steps):
        for name in models:
            times[name].append(one(name))
    return {k: statistics.median(v) / (len(images) * models[k].clones) for k, v in times.items()}


def measure_costs(cfg: Data2Vec2Config, train, channels: int, device) -> dict:
    """FLOPs per step and per effective sample of every arm, the encoder's FLOP share, and
    measured time per effective sample, all in float32."""
    costs: dict = {"flops_per_sample": {}, "flops_per_step": {}}
    # a fixed random subset, never a prefix (mnist_subset is sorted by class)
    pick = torch.randperm(len(train[0]), generator=torch.Generator().manual_seed(0))
    small = train[0][pick[:2]].to(device)  # FLOPs are linear in the batch: count on 2 images
    for arm in COST_ARMS:
        model = build_model(cfg, arm, channels).to(device)
        per_image = step_flops(model, small) / len(small)
        costs["flops_per_step"][arm] = per_image * cfg.batch_size
        costs["flops_per_sample"][arm] = per_image / model.clones
        if arm == "multi_mask":
            costs.update(encoder_flop_share(model, small))
            with torch.no_grad():
                costs["teacher_flops_per_image"] = count_flops(model.targets, small) / len(small)
    models = {arm: build_model(cfg, arm, channels).to(device) for arm in COST_ARMS}
    images = train[0][pick[: min(cfg.batch_size, cfg.timing_batch)]].to(device)
    costs["sample_seconds"] = time_per_sample(models, images, cfg.timing_steps)
    return costs


def arm_schedule(cfg: Data2Vec2Config, costs: dict, arm: str) -> tuple[int, int]:
    """(steps, images per step) that give ``arm`` the multi-mask arm's training FLOPs
    (``steps`` × ``batch_size`` × its FLOPs per image). ``equalize="batch"``: the same steps,
    more images per step; ``"steps"``: the same images per step, more steps. The control
    ``single_mask_images`` gets the multi-mask arm's steps and images instead (fewer FLOPs); the
    control ``single_mask_clones`` its steps and M × its images, i.e. its student forward passes
    per step (every clone a distinct image, each with its own teacher pass: more FLOPs)."""
    if arm == "single_mask_images":
        return cfg.steps, cfg.batch_size
    if arm == "single_mask_clones":
        return cfg.steps, cfg.batch_size * cfg.clones
    per_image = {a: costs["flops_per_step"][a] / cfg.batch_size for a in COST_ARMS}
    budget = cfg.steps * cfg.batch_size * per_image["multi_mask"]
    if cfg.equalize == "batch":
        return cfg.steps, max(1, round(budget / (cfg.steps * per_image[arm])))
    return max(1, round(budget / (cfg.batch_size * per_image[arm]))), cfg.batch_size


# ---------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------


def lr_factor(step: int, steps: int, warmup: int) -> float:
    """Linear warm-up, then cosine decay to zero (``cosine`` scheduler of the yaml)."""
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return 0.5 * (1 + math.cos(math.pi * progress))


def d2v_step(model, batch):
    """The step for :func:`companion.core.fit`: the model computes its own loss."""
    loss, metrics = model(batch[0])
    return loss, metrics


def train_arm(
    fabric,
    cfg: Data2Vec2Config,
    arm: str,
    steps: int,
    batch_size: int,
    folder: Path | None,
    resume: bool,
    flops_per_image: float,
) -> ArmResult:
    """Pre-train one arm under Fabric (any device, DDP, precision), then probe it."""
    train, test, channels, classes = load_data(cfg)
    seed_everything(cfg.seed)  # the same initial encoder for every arm
    model = build_model(cfg, arm, channels, steps)
    optimizer = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad],
        lr=cfg.lr,
        betas=(0.9, cfg.beta2),
        weight_decay=cfg.weight_decay,
    )
    warmup = round(cfg.warmup_fraction * steps)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(s, steps, warmup))
    model, optimizer = fabric.setup(model, optimizer)
    batches = StepBatches((train[0],), batch_size, cfg.seed, fabric.global_rank, fabric.world_size)
    start = time.perf_counter()
    history = fit(
        fabric,
        model,
        optimizer,
        batches,
        d2v_step,
        steps=steps,
        grad_clip=cfg.grad_clip,
        scheduler=scheduler,
        checkpoint=folder / "checkpoint.ckpt" if folder else None,
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        desc=arm,
    )
    seconds = time.perf_counter() - start
    student = getattr(model, "module", model).student
    return ArmResult(
        arm=arm,
        clones=getattr(model, "module", model).clones,
        target=ARM_SETTINGS[arm][0],
        steps=steps,
        batch_size=batch_size,
        flops_per_step=flops_per_image * batch_size,
        loss_steps=history.steps("loss"),
        loss=history.values("loss"),
        target_var=history.values("target_var"),
        pred_var=history.values("pred_var"),
        probe_accuracy=probe(student, train, test, classes, cfg, fabric.device),
        seconds=seconds,
    )


def baselines(fabric, cfg: Data2Vec2Config) -> dict:
    """Costs of every arm and the probe of the untrained encoder, in float32."""
    train, test, channels, classes = load_data(cfg)
    device = fabric.device
    seed_everything(cfg.seed)
    random_encoder = build_model(cfg, "multi_mask", channels).student.to(device)
    random_probe = probe(random_encoder, train, test, classes, cfg, device)
    with torch.autocast(torch.device(device).type, enabled=False):
        costs = measure_costs(cfg, train, channels, device)
    return {"random_probe": random_probe, "costs": costs, "n_test": len(test[1])}


def run(
    cfg: Data2Vec2Config, out_dir: str | Path | None = None, resume: bool = False
) -> Data2Vec2Result:
    """Measure costs, probe the random encoder, then pre-train and probe every arm at equal
    training FLOPs. With ``out_dir``, finished parts are saved and checkpoints written;
    ``resume=True`` keeps finished parts and continues an interrupted arm."""
    out = Path(out_dir) if out_dir is not None else None
    with torch_threads(cfg.threads, None if cfg.device == "auto" else cfg.device):
        saved = out / "baselines.json" if out else None
        if resume and saved is not None and saved.exists():
            base = read_json(saved)
        else:
            base = launch(cfg, baselines, cfg)
            if saved is not None:
                write_json(saved, base)
        arms = {}
        for arm in cfg.arms:
            steps, batch = arm_schedule(cfg, base["costs"], arm)
            per_image = base["costs"]["flops_per_step"][COST_OF[arm]] / cfg.batch_size
            folder = out / arm if out else None
            arms[arm] = launch_or_resume(
                cfg,
                folder,
                resume,
                ArmResult,
                train_arm,
                cfg,
                arm,
                steps,
                batch,
                folder,
                resume,
                per_image,
            )
    result = Data2Vec2Result(
        config=cfg.to_dict(),
        random_probe=base["random_probe"],
        arms=arms,
        costs=base["costs"],
        n_test=base["n_test"],
    )
    if out is not None:
        result.save(out / "result.json")
    return result
