"""The experiment: the same label noise on causal (X → Y) and anticausal (Y → X) data; standard
training, Forward correction and a semi-supervised method on each; and the paper's test of the
direction (T′ from clusters against T̂* from a noise model).

Per dataset, every arm starts from the same warm-up network (cross-entropy on the noisy labels
for ``warmup_steps``) and trains ``steps − warmup_steps`` more steps on the same batches:

* ``ce``: cross-entropy on the noisy labels;
* ``forward``: Forward correction with T̂ from anchor points of the ``ce`` network;
* ``ssl``: small-loss examples labelled, the rest unlabelled: entropy minimisation on them
  (``lambda_u``) and DivideMix's uniform-prior term (``lambda_r``);
* ``labelled_only``: the control. The same selected labels and the same uniform-prior term,
  without the entropy term (``lambda_u = 0``): the one term through which the shape of P(X)
  moves the boundary. ``ssl − labelled_only`` is what that term contributed; the prior term
  (the classes are balanced) is kept in both, since it says nothing about where P(X) is low.

``bayes_accuracy`` is the best accuracy possible on the clean test labels (closed form for the
Gaussians): the premise of "P(X) helps" is that ``labelled_only`` stays below it.

The test trains its own network with the learned transition (``cdnl``) and keeps T̂* from the
measurement with the lowest noisy validation loss.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from companion.core import (
    Config,
    Every,
    Result,
    StepBatches,
    fit,
    launch_or_resume,
    torch_threads,
)
from companion.core.metrics import auroc
from companion.errors import CompanionError, unknown
from companion.nn import MLP
from companion.papers.noisy_labels_causal.method import (
    NOISE_TYPES,
    SigmoidTransition,
    anchor_transition,
    anticausal_gaussian,
    causal_gaussian,
    cdnl_loss,
    cdnl_probs,
    cluster_transition,
    flip_labels,
    forward_loss,
    relative_error,
    small_loss_selection,
    ssl_loss,
    transition_error,
    transition_matrix,
)

DATASETS = ("yx_gaussian", "xy_gaussian", "digits", "mnist")
DIRECTION = {
    "yx_gaussian": "anticausal",
    "xy_gaussian": "causal",
    "digits": "anticausal",
    "mnist": "anticausal",
}
ARMS = ("ce", "forward", "ssl", "labelled_only")
TRANSITIONS = ("anchor", "true")


@dataclasses.dataclass(frozen=True)
class NoisyCausalConfig(Config):
    """What to generate and train. Sizes change between presets; the algorithm never does."""

    datasets: tuple[str, ...] = ("yx_gaussian", "xy_gaussian", "digits")
    arms_on: tuple[str, ...] = ("yx_gaussian", "xy_gaussian")  # the others: the test only
    data_root: str = ""  # mnist: folder with the four IDX files
    n_train: int = 1000  # Gaussians: examples with noisy labels (train + validation)
    n_test: int = 4000  # Gaussians: clean test examples
    dim: int = 30  # many directions: a few labelled examples leave the boundary uncertain
    separation: float = 2.5  # anticausal: distance between the two class means
    causal_noise: float = 0.34  # causal: std of ε in Y = 1[wᵀX + ε > 0]
    noise_type: str = "one_way"
    noise_rate: float = 0.4
    val_fraction: float = 0.2
    hidden: tuple[int, ...] = (25, 25)
    dropout: float = 0.25
    lr: float = 0.05
    momentum: float = 0.9
    weight_decay: float = 1e-4
    batch_size: int = 128
    warmup_steps: int = 20  # 10% of the steps: the small-loss selection, before memorisation
    steps: int = 200  # per arm, warm-up included
    select_ratio: float = 0.01  # share of each noisy class kept as labelled (a few examples)
    lambda_u: float = 1.0  # entropy minimisation on the unlabelled rows
    lambda_r: float = 1.0  # DivideMix's uniform-prior regulariser on them (its default weight 1)
    transition: str = "anchor"  # Forward's T: "anchor" (estimated) or "true" (oracle)
    cdnl_steps: int = 300
    cdnl_lr: float = 0.003  # network of the test (Adam)
    t_lr: float = 0.1  # the learned transition (Adam): T settles before the network overfits
    t_init: float = 2.0  # W₀ = −t_init
    measure_every: int = 20
    threshold: float = 0.75  # relative err below (err / err of random clusters): anticausal
    checkpoint_every: int = 0
    threads: int = 1  # CPU threads (tiny MLPs are fastest on one); 0: leave torch's setting

    def validate(self) -> None:
        for d in self.datasets + self.arms_on:
            if d not in DATASETS:
                raise unknown("dataset", d, DATASETS)
        if self.noise_type not in NOISE_TYPES:
            raise unknown("noise type", self.noise_type, NOISE_TYPES)
        if self.transition not in TRANSITIONS:
            raise unknown("transition", self.transition, TRANSITIONS)
        if not 0 <= self.noise_rate < 0.5:
            raise CompanionError(f"noise_rate must lie in [0, 0.5), got {self.noise_rate}")
        if not 0 < self.select_ratio <= 1:
            raise CompanionError(f"select_ratio must lie in (0, 1], got {self.select_ratio}")
        if not 0 < self.warmup_steps < self.steps:
            raise CompanionError(
                f"need 0 < warmup_steps < steps, got {self.warmup_steps} and {self.steps}"
            )
        if min(self.n_train, self.n_test, self.dim, self.batch_size, self.cdnl_steps) < 1:
            raise CompanionError("n_train, n_test, dim, batch_size and cdnl_steps must be >= 1")


PRESETS: dict[str, NoisyCausalConfig] = {
    "smoke": NoisyCausalConfig(
        n_train=200, n_test=300, warmup_steps=5, steps=20, cdnl_steps=20, measure_every=10
    ),
    "notebook": NoisyCausalConfig(),
    # Larger scale: the same Gaussians with 20x more examples, MNIST (60,000 images, from its IDX
    # files) in place of the 8x8 digits, a wider MLP and 30x more steps.
    "full": NoisyCausalConfig(
        datasets=("yx_gaussian", "xy_gaussian", "mnist"),
        data_root="data/mnist",
        n_train=20_000,
        n_test=10_000,
        hidden=(256, 256),
        warmup_steps=500,
        steps=6000,
        cdnl_steps=6000,
        measure_every=200,
        checkpoint_every=1000,
        threads=0,
    ),
}


@dataclasses.dataclass
class DatasetResult(Result):
    """One dataset: the test's matrices and score, and the clean test accuracy of every arm."""

    dataset: str
    direction: str
    num_classes: int
    true_t: list[list[float]]
    t_prime: list[list[float]]  # from k-means clusters matched to the noisy labels
    t_star: list[list[float]]  # learned jointly with a network, at the lowest validation loss
    t_anchor: list[list[float]]  # Forward's T̂ (anchor points of the ce network)
    cdnl_error: float
    t_star_error: float  # err(T̂*, true T): how well the noise model estimated the noise
    t_star_relative: float  # err(T̂*, T) / err(T′₀, T): the same, relative to T′₀ (premise)
    bayes_accuracy: float | None  # best accuracy on clean labels (Gaussians; None otherwise)
    baseline_error: float  # err of uninformative clusters (rows = noisy-label shares) vs T̂*
    relative_error: float  # cdnl_error / baseline_error: the test's decision score
    cluster_accuracy: float  # k-means clusters, after matching, against the clean labels
    cdnl_steps: list[int]
    cdnl_val_loss: list[float]
    best_step: int
    accuracy: dict[str, float]  # arm -> clean test accuracy (empty: dataset not in arms_on)
    cdnl_accuracy: float  # the test's own network, clean test accuracy
    selected: int
    # within the noisy labels that receive flips (one-way noise: label 1 only; label 0 is
    # never a flipped label, so its selection is correct by construction)
    selection_precision: float  # share of selected examples whose noisy label is correct
    selection_auroc: float  # AUROC of −warm-up loss for "noisy label is correct"
    loss: dict[str, list[float]]  # arm -> training loss per step (after the warm-up)
    seconds: float


@dataclasses.dataclass
class NoisyCausalResult(Result):
    config: dict
    datasets: dict[str, DatasetResult]


# ---------------------------------------------------------------- data
def read_idx(path: Path) -> np.ndarray:
    """An MNIST IDX file (optionally .gz): magic (2 zero bytes, type 0x08, rank), big-endian
    int32 sizes, then unsigned bytes."""
    import gzip

    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    if raw[:2] != b"\x00\x00" or raw[2] != 8:
        raise CompanionError(f"{path} is not an IDX file of unsigned bytes")
    rank = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(rank))
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * rank).reshape(shape)


MNIST_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


def load_mnist_idx(root: str | Path, split: str) -> tuple[torch.Tensor, torch.Tensor]:
    """MNIST from the four IDX files in ``root`` (plain or .gz): flattened pixels in [0, 1]."""
    out = []
    for name in MNIST_FILES[split]:
        candidates = [Path(root) / name, Path(root) / f"{name}.gz"]
        found = [p for p in candidates if p.exists()]
        if not found:
            raise CompanionError(f"MNIST file {name} not found in {root!r}")
        out.append(read_idx(found[0]))
    x = torch.from_numpy(out[0].reshape(len(out[0]), -1).astype(np.float32) / 255.0)
    return x, torch.from_numpy(out[1].astype(np.int64))


def load_dataset(cfg: NoisyCausalConfig, name: str):
    """(x_train, y_train, x_test, y_test, classes): clean labels; the train part is later
    split into train and validation and its labels corrupted."""
    g = torch.Generator().manual_seed(cfg.seed)
    if name in ("yx_gaussian", "xy_gaussian"):
        n = cfg.n_train + cfg.n_test
        if name == "yx_gaussian":
            x, y = anticausal_gaussian(n, cfg.dim, cfg.separation, g)
        else:
            x, y = causal_gaussian(n, cfg.dim, cfg.causal_noise, g)
        return x[: cfg.n_train], y[: cfg.n_train], x[cfg.n_train :], y[cfg.n_train :], 2
    if name == "digits":
        from companion import data

        splits = data.load("digits", seed=cfg.seed)  # 60/20/20; our own validation split
        (xtr, ytr), (xva, yva) = splits.train.tensors, splits.val.tensors
        xte, yte = splits.test.tensors
        return torch.cat([xtr, xva]).flatten(1), torch.cat([ytr, yva]), xte.flatten(1), yte, 10
    xtr, ytr = load_mnist_idx(cfg.data_root, "train")
    xte, yte = load_mnist_idx(cfg.data_root, "test")
    return xtr, ytr, xte, yte, 10


def bayes_accuracy(cfg: NoisyCausalConfig, name: str) -> float | None:
    """The Bayes accuracy on clean labels. Y → X: the boundary is the midplane between the two
    means, so Φ(separation / 2). X → Y: with Z = wᵀX ~ N(0, 1), the best rule is 𝟙[Z > 0],
    wrong when ε flips the sign of Z + ε: P = arctan(σ) / π. None for the digit datasets."""
    if name == "yx_gaussian":
        return 0.5 * (1.0 + math.erf(cfg.separation / 2 / math.sqrt(2.0)))
    if name == "xy_gaussian":
        return 1.0 - math.atan(cfg.causal_noise) / math.pi
    return None


def build_model(cfg: NoisyCausalConfig, in_features: int, classes: int) -> torch.nn.Module:
    """The official ``NaiveNet`` shape: ReLU MLP with dropout after every hidden layer."""
    return MLP(in_features, cfg.hidden, classes, dropout=cfg.dropout)


# ---------------------------------------------------------------- training
class NoisyPosterior(torch.nn.Module):
    """The test's model: a classifier and the learned transition, trained together."""

    def __init__(self, net: torch.nn.Module, trans: SigmoidTransition):
        super().__init__()
        self.net, self.trans = net, trans

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.net(x), self.trans()


def _phase(fabric, cfg, model, optimizer, tensors, step_fn, steps, folder, name, resume, **kw):
    """One ``fit`` call on in-memory tensors, checkpointed as ``<folder>/<name>.ckpt``."""
    model, optimizer = fabric.setup(model, optimizer)
    batches = StepBatches(tensors, cfg.batch_size, cfg.seed, fabric.global_rank, fabric.world_size)
    history = fit(
        fabric,
        model,
        optimizer,
        batches,
        step_fn,
        steps=steps,
        checkpoint=folder / f"{name}.ckpt" if folder else None,
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        desc=name,
        **kw,
    )
    return getattr(model, "module", model), history


def _sgd(cfg, model):
    return torch.optim.SGD(
        model.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay
    )


@torch.no_grad()
def _predict(model, x, device, batch: int = 4096) -> torch.Tensor:
    """Logits in float32, eval mode (no dropout), on CPU."""
    model.eval()
    with torch.autocast(torch.device(device).type, enabled=False):
        out = [model(xb.to(device).float()).float().cpu() for xb in x.split(batch)]
    return torch.cat(out)


def _accuracy(model, x, y, device) -> float:
    return (_predict(model, x, device).argmax(-1) == y).float().mean().item()


def _fresh(cfg, dim: int, classes: int) -> torch.nn.Module:
    torch.manual_seed(cfg.seed)  # the same initial weights for every network of a dataset
    return build_model(cfg, dim, classes)


def _ce_step(model, batch):
    return F.cross_entropy(model(batch[0]), batch[1]), {}


@dataclasses.dataclass
class _Split:
    """One dataset after corruption: noisy training and validation parts, clean test part."""

    x: torch.Tensor
    y: torch.Tensor  # clean labels of the training part (for measurements only)
    noisy: torch.Tensor
    x_val: torch.Tensor
    noisy_val: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    classes: int
    true_t: torch.Tensor


def corrupt(cfg: NoisyCausalConfig, name: str) -> _Split:
    """Load a dataset, flip its training labels through T, split off the validation part."""
    x_all, y_all, x_test, y_test, classes = load_dataset(cfg, name)
    g = torch.Generator().manual_seed(cfg.seed + 1)
    true_t = transition_matrix(cfg.noise_type, cfg.noise_rate, classes)
    noisy_all = flip_labels(y_all, true_t, g)
    order = torch.randperm(len(x_all), generator=g)
    n_val = int(round(cfg.val_fraction * len(x_all)))
    val, tr = order[:n_val], order[n_val:]
    return _Split(
        x_all[tr], y_all[tr], noisy_all[tr], x_all[val], noisy_all[val], x_test, y_test,
        classes, true_t,
    )  # fmt: skip


def receiving_flips(t) -> list[int]:
    """The noisy labels j that some other class flips into (T_ij > 0 for an i ≠ j). One-way
    noise on two classes: only label 1; a noisy 0 is always a clean 0."""
    t = np.asarray(t, dtype=float)
    return [j for j in range(len(t)) if (np.delete(t[:, j], j) > 0).any()]


def train_arms(fabric, cfg: NoisyCausalConfig, d: _Split, folder, resume) -> dict:
    """Warm-up, then the four arms from the warm-up weights; clean test accuracy of each."""
    x, noisy, device = d.x, d.noisy, fabric.device
    model = _fresh(cfg, x.shape[1], d.classes)
    warm, _ = _phase(
        fabric, cfg, model, _sgd(cfg, model), (x, noisy), _ce_step,
        cfg.warmup_steps, folder, "warmup", resume,
    )  # fmt: skip
    warm_state = {k: v.detach().clone() for k, v in warm.state_dict().items()}
    models, losses = {}, {}

    def arm(arm_name, tensors, step_fn):
        model = _fresh(cfg, x.shape[1], d.classes)
        model.load_state_dict(warm_state)
        trained, history = _phase(
            fabric, cfg, model, _sgd(cfg, model), tensors, step_fn,
            cfg.steps - cfg.warmup_steps, folder, arm_name, resume,
        )  # fmt: skip
        models[arm_name], losses[arm_name] = trained, history.values("loss")

    arm("ce", (x, noisy), _ce_step)
    # Forward: T̂ from anchor points of the ce network's noisy posteriors on the training inputs
    t_anchor = anchor_transition(_predict(models["ce"], x, device).softmax(-1))
    t_forward = (d.true_t if cfg.transition == "true" else t_anchor).to(device)
    arm("forward", (x, noisy), lambda m, b: (forward_loss(m(b[0]), b[1], t_forward), {}))
    # semi-supervised: per-class small-loss selection by the warm-up network
    sample_loss = F.cross_entropy(_predict(warm, x, device), noisy, reduction="none")
    labelled = small_loss_selection(sample_loss, noisy, cfg.select_ratio)
    for arm_name, lam, lam_r in (
        ("ssl", cfg.lambda_u, cfg.lambda_r),
        ("labelled_only", 0.0, cfg.lambda_r),  # the control: no entropy term
    ):
        arm(
            arm_name,
            (x, noisy, labelled),
            lambda m, b, lam=lam, lam_r=lam_r: (ssl_loss(m(b[0]), b[1], b[2], lam, lam_r), {}),
        )
    # measured within the noisy labels that some other class flips into: elsewhere every
    # label is correct by construction, which would inflate precision and pool two rankings
    rows = np.isin(noisy.numpy(), receiving_flips(d.true_t))
    correct, sel = (noisy == d.y).numpy()[rows], labelled.numpy()[rows]
    score = -sample_loss.numpy()[rows]
    return dict(
        accuracy={a: _accuracy(models[a], d.x_test, d.y_test, device) for a in ARMS},
        loss=losses,
        t_anchor=t_anchor.tolist(),
        selected=int(labelled.sum()),
        selection_precision=float(correct[sel].mean()) if sel.any() else float("nan"),
        selection_auroc=auroc(score, correct) if 0 < correct.mean() < 1 else 0.5,
    )


def train_transition(fabric, cfg: NoisyCausalConfig, d: _Split, folder, resume) -> dict:
    """The test, step 2: T̂* learned jointly with a network on the noisy labels; T̂* is read at
    the measurement with the lowest noisy validation loss."""
    device = fabric.device
    net = _fresh(cfg, d.x.shape[1], d.classes)
    joint = NoisyPosterior(net, SigmoidTransition(d.classes, cfg.t_init))
    opt = torch.optim.Adam(
        [
            {"params": joint.net.parameters(), "lr": cfg.cdnl_lr},
            {"params": joint.trans.parameters(), "lr": cfg.t_lr},
        ]
    )
    x_val, noisy_val = fabric.to_device(d.x_val), fabric.to_device(d.noisy_val)

    def cdnl_step(model, batch):
        logits, t = model(batch[0])
        return cdnl_loss(logits, batch[1], t), {}

    def measure(step, model):
        module = getattr(model, "module", model)
        with torch.autocast(torch.device(device).type, enabled=False):
            logits, t = module(x_val.float())
            probs = cdnl_probs(logits.float(), t.float(), gumbel=False)
            val_loss = F.nll_loss(probs.clamp_min(1e-12).log(), noisy_val).item()
        cells = {f"T/{i}/{j}": v for i, row in enumerate(t.tolist()) for j, v in enumerate(row)}
        return {"val_loss": val_loss, **cells}

    joint, history = _phase(
        fabric, cfg, joint, opt, (d.x, d.noisy), cdnl_step, cfg.cdnl_steps, folder, "cdnl",
        resume, callbacks=[Every(cfg.measure_every, measure)],
    )  # fmt: skip
    steps, val_loss = history.steps("val_loss"), history.values("val_loss")
    best = int(np.argmin(val_loss))  # the measurement itself: no epoch-index off-by-one
    c = d.classes
    t_star = [[history.values(f"T/{i}/{j}")[best] for j in range(c)] for i in range(c)]
    return dict(
        t_star=t_star,
        cdnl_steps=steps,
        cdnl_val_loss=val_loss,
        best_step=steps[best],
        cdnl_accuracy=_accuracy(joint.net, d.x_test, d.y_test, device),
    )


def train_dataset(
    fabric, cfg: NoisyCausalConfig, name: str, folder: Path | None, resume: bool
) -> DatasetResult:
    """The arms (datasets in ``cfg.arms_on``) and the direction test on one dataset."""
    with torch_threads(cfg.threads, fabric.device):
        return _train_dataset(fabric, cfg, name, folder, resume)


def _train_dataset(fabric, cfg, name, folder, resume) -> DatasetResult:
    start = time.perf_counter()
    d = corrupt(cfg, name)
    arms = dict(
        accuracy={}, loss={}, t_anchor=[], selected=0, selection_precision=0.0,
        selection_auroc=0.0,
    )  # fmt: skip
    if name in cfg.arms_on:
        arms = train_arms(fabric, cfg, d, folder, resume)
    learned = train_transition(fabric, cfg, d, folder, resume)
    # the test, step 1: clusters of X matched to the noisy labels
    t_prime, y_prime = cluster_transition(d.x.numpy(), d.noisy.numpy(), d.classes, cfg.seed)
    relative, baseline = relative_error(t_prime, learned["t_star"], d.noisy.numpy())
    # the premise of the test: T̂* is close to the injected T (compared with T′₀, which says
    # nothing about the labels); without it a relative score near 1 says nothing
    t_star_relative, _ = relative_error(learned["t_star"], d.true_t.numpy(), d.noisy.numpy())
    return DatasetResult(
        dataset=name,
        bayes_accuracy=bayes_accuracy(cfg, name),
        baseline_error=baseline,
        relative_error=relative,
        direction=DIRECTION[name],
        num_classes=d.classes,
        true_t=d.true_t.tolist(),
        t_prime=t_prime.tolist(),
        cdnl_error=transition_error(t_prime, learned["t_star"]),
        t_star_error=transition_error(learned["t_star"], d.true_t.numpy()),
        t_star_relative=t_star_relative,
        cluster_accuracy=float((y_prime == d.y.numpy()).mean()),
        seconds=time.perf_counter() - start,
        **learned,
        **arms,
    )


def run(
    cfg: NoisyCausalConfig, out_dir: str | Path | None = None, resume: bool = False
) -> NoisyCausalResult:
    """Every dataset in ``cfg.datasets``; with ``out_dir``, checkpoint and write results.

    ``resume=True`` keeps datasets that finished (``<out_dir>/<dataset>/arm.json``) and
    continues an interrupted one from its checkpoints."""
    sets = {}
    for name in cfg.datasets:
        folder = Path(out_dir) / name if out_dir is not None else None
        sets[name] = launch_or_resume(
            cfg, folder, resume, DatasetResult, train_dataset, cfg, name, folder, resume
        )
    result = NoisyCausalResult(config=cfg.to_dict(), datasets=sets)
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
