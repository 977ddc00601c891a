"""The experiment: a trigger backdoor in the training set, incompatibility made visible, and the
defense (ISPL weak learners + boosting + refinement) that removes the poisons before training.

Steps of :func:`run` (all networks train with the shared Fabric loop, :func:`companion.core.fit`):

1. Poison the training set with the shared trigger backdoor (``companion.data.backdoor``): a
   ``fraction`` of the ``source`` class is stamped with a corner patch and relabelled ``target``.
2. Incompatibility (self-expansion, Sec. 3): train on a random half of the clean examples and
   measure on the other half and on the poisons; then add half of the poisons and measure again.
   This step uses the ground-truth poison mask, only to *show* the clusters.
3. The defense (:func:`~companion.papers.incompatibility_clustering.method.filter_noise`),
   which sees images and labels only.
4. The baseline filter (:func:`misclassified_filter`): one network, one epoch on everything,
   drop what it misclassifies.
5. Train a fresh network on everything (no defense), on what the defense kept and on what the
   baseline kept; measure clean test accuracy and the attack success rate of each.
"""

from __future__ import annotations

import dataclasses
import time
import zlib
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
    torch_threads,
)
from companion.errors import CompanionError, unknown
from companion.nn import MLP, SmallCNN, cross_entropy_step
from companion.papers.incompatibility_clustering.method import ISPLSettings, filter_noise

DATASETS = ("mnist_subset", "digits", "cifar10")
MODELS = ("mlp", "cnn")


@dataclasses.dataclass(frozen=True)
class IncompatibilityConfig(Config):
    """What to poison, how to train and how to defend. Sizes change between presets; the
    algorithm never does."""

    dataset: str = "mnist_subset"
    data_root: str = ""  # cifar10: the extracted python release
    image_size: int = 14  # mnist_subset / digits: resized images
    # the backdoor (shared BadNets trigger): source -> target, share of the source class
    source: int = 0
    target: int = 2
    poison_fraction: float = 0.1
    trigger_size: int = 3
    trigger_value: float = 1.0
    # networks
    model: str = "mlp"
    hidden: int = 128  # mlp: width of the hidden layers
    depth: int = 1  # mlp: hidden layers
    widths: tuple[int, ...] = (32, 64)  # cnn
    batch_size: int = 128
    lr: float = 0.05
    momentum: float = 0.9
    weight_decay: float = 5e-4
    # ISPL + boosting + refinement (official defaults: 8, 4, 40, β 4, α 8, 3 bags, 20 x 5)
    warm_up: int = 8
    refit_epochs: int = 4
    retrain_epochs: int = 40
    beta: float = 4.0
    boost: int = 8
    bags: int = 3
    min_active_fraction: float = 0.04  # 2,000 of CIFAR-10's 50,000
    refine_rounds: int = 20
    refine_epochs: int = 5
    # the final networks (no defense / defended), and the incompatibility demonstration
    final_epochs: int = 200
    milestones: tuple[int, ...] = ()  # final training: lr x 0.1 at these epochs
    demo_epochs: int = 20
    # the pre-specified baseline filter: one fresh network, this many epochs on everything, drop
    # every training example it misclassifies (fixed before any test result was looked at)
    baseline_epochs: int = 1
    checkpoint_every: int = 0
    threads: int = 1  # CPU threads while training (small networks are fastest on one)

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        if self.model not in MODELS:
            raise unknown("model", self.model, MODELS)
        if self.source == self.target:
            raise CompanionError(f"source and target must differ, got {self.source} twice")
        if not 0.0 < self.poison_fraction <= 1.0:
            raise CompanionError(f"poison_fraction must lie in (0, 1], got {self.poison_fraction}")
        if self.boost < 1 or self.bags < 1 or self.beta < 1:
            raise CompanionError(
                f"boost and bags must be >= 1 and beta >= 1, got boost={self.boost}, "
                f"bags={self.bags}, beta={self.beta}"
            )
        if self.lr <= 0 or self.batch_size < 1 or self.final_epochs < 1:
            raise CompanionError(
                f"lr, batch_size and final_epochs must be positive, got lr={self.lr}, "
                f"batch_size={self.batch_size}, final_epochs={self.final_epochs}"
            )

    def settings(self, n_train: int) -> ISPLSettings:
        """The defense's hyperparameters (``data_perc = 0.96/α`` as the official run)."""
        return ISPLSettings(
            warm_up=self.warm_up,
            refit_epochs=self.refit_epochs,
            retrain_epochs=self.retrain_epochs,
            beta=self.beta,
            boost=self.boost,
            bags=self.bags,
            data_perc=0.96 / self.boost,
            min_active=int(self.min_active_fraction * n_train),
            refine_rounds=self.refine_rounds,
            refine_epochs=self.refine_epochs,
        )


PRESETS: dict[str, IncompatibilityConfig] = {
    "smoke": IncompatibilityConfig(
        dataset="digits",
        image_size=8,
        hidden=64,
        warm_up=2,
        refit_epochs=1,
        retrain_epochs=3,
        boost=4,
        bags=1,
        refine_rounds=2,
        refine_epochs=1,
        final_epochs=4,
        demo_epochs=3,
        batch_size=256,
    ),
    # α = 4 learners in one bag, shorter fits; the rules (quantiles, EMA, β, votes) unchanged
    "notebook": IncompatibilityConfig(
        warm_up=4,
        refit_epochs=2,
        retrain_epochs=30,
        boost=4,
        bags=1,
        refine_rounds=10,
        refine_epochs=2,
        final_epochs=20,
        demo_epochs=15,
    ),
    # Paper scale: CIFAR-10, 10% of the source class poisoned, α = 8, 3 bags, official epochs
    # (a 3-stage CNN instead of the PreActResNet-18), lr 0.02 with steps at 100/150/180.
    "full": IncompatibilityConfig(
        dataset="cifar10",
        data_root="data/cifar-10-batches-py",
        image_size=32,
        model="cnn",
        widths=(64, 128, 256),
        lr=0.02,
        milestones=(100, 150, 180),
        demo_epochs=40,
        checkpoint_every=2000,
        precision="bf16-mixed",
    ),
}


@dataclasses.dataclass
class ModelResult(Result):
    """A network trained on some training set, measured on the clean and the stamped test set."""

    clean_accuracy: float
    attack_success: float  # stamped source images predicted as the target
    targeted_misclassification: float  # ... and whose clean version is classified right


@dataclasses.dataclass
class IncompatibilityResult(Result):
    config: dict
    n_train: int
    n_poisons: int
    n_source_test: int
    # incompatibility: accuracy (w.r.t. the training labels) on held-out clean / held-out poisons
    compat: dict[str, dict[str, float]]  # trained on -> measured on -> accuracy
    clean_losses: list[float]  # per-example loss of held-out clean examples (clean-half net)
    poison_losses: list[float]  # ... and of the poisons
    # the defense
    learners: list[dict]  # per weak learner: bag, dp, R, core size, poisons in core, ...
    vote_removed_poisons: int
    vote_removed_clean: int
    refine_removed_poisons: list[int]  # after each refinement round
    refine_removed_clean: list[int]
    removed_poisons: int
    removed_clean: int
    clean_per_class: list[int]  # clean training examples per (true) class
    removed_clean_per_class: list[int]  # ... of them removed by the defense
    bags_disjoint: bool  # within a bag, core sets never overlap
    no_defense: ModelResult
    defended: ModelResult
    # the baseline filter: one network, ``baseline_epochs`` on everything, drop the misclassified
    baseline_removed_poisons: int
    baseline_removed_clean: int
    baseline: ModelResult  # a fresh network trained on what the baseline kept
    seconds: float

    @property
    def n_clean(self) -> int:
        return self.n_train - self.n_poisons

    @property
    def poison_recall(self) -> float:
        """Share of the poisons the defense removed."""
        return self.removed_poisons / self.n_poisons if self.n_poisons else 0.0

    @property
    def clean_removed_share(self) -> float:
        """Share of the clean examples the defense removed."""
        return self.removed_clean / self.n_clean if self.n_clean else 0.0

    @property
    def baseline_recall(self) -> float:
        """Share of the poisons the baseline filter removed."""
        return self.baseline_removed_poisons / self.n_poisons if self.n_poisons else 0.0

    @property
    def baseline_clean_share(self) -> float:
        """Share of the clean examples the baseline filter removed."""
        return self.baseline_removed_clean / self.n_clean if self.n_clean else 0.0


@dataclasses.dataclass
class PoisonedData:
    x: torch.Tensor  # poisoned training images
    y: torch.Tensor  # poisoned training labels
    poisoned: torch.Tensor  # bool: ground truth, for measurements only
    x_test: torch.Tensor
    y_test: torch.Tensor
    channels: int
    classes: int


def load_data(cfg: IncompatibilityConfig) -> PoisonedData:
    """Training set (train + validation split of the shipped data) poisoned with the shared
    trigger backdoor; the clean test set."""
    from companion import data
    from companion.data.backdoor import poison

    if cfg.dataset == "cifar10":
        x, y = data.load_cifar(cfg.data_root, "cifar10", "train").tensors
        x_test, y_test = data.load_cifar(cfg.data_root, "cifar10", "test").tensors
        classes = 10
    else:
        splits = data.load(cfg.dataset, image_size=cfg.image_size, seed=0)
        x = torch.cat([splits.train.tensors[0], splits.val.tensors[0]])
        y = torch.cat([splits.train.tensors[1], splits.val.tensors[1]])
        x_test, y_test = splits.test.tensors
        classes = splits.num_classes
    g = torch.Generator().manual_seed(cfg.seed)
    xp, yp, poisoned = poison(
        x, y, target=cfg.target, fraction=cfg.poison_fraction, source=cfg.source,
        generator=g, size=cfg.trigger_size, value=cfg.trigger_value,
    )  # fmt: skip
    return PoisonedData(xp, yp, poisoned, x_test, y_test, x.shape[1], classes)


def build_model(cfg: IncompatibilityConfig, channels: int, classes: int) -> nn.Module:
    if cfg.model == "cnn":
        return SmallCNN(channels, classes, widths=cfg.widths)
    size = cfg.image_size if cfg.dataset != "cifar10" else 32
    return MLP(channels * size * size, (cfg.hidden,) * cfg.depth, classes)


@torch.no_grad()
def predict(model: nn.Module, x: torch.Tensor, device, batch: int = 2048) -> torch.Tensor:
    """Logits in float32 (unwrapped module, autocast off, eval mode), on the CPU."""
    module = getattr(model, "module", model).eval()
    out = []
    with torch.autocast(torch.device(device).type, enabled=False):
        for xb in x.split(batch):
            out.append(module(xb.to(device).float()).float().cpu())
    return torch.cat(out)


class FabricTrainer:
    """The defense's :class:`~.method.Trainer`: each training call is one checkpointed
    :func:`companion.core.fit` phase named after the step of the defense, so an interrupted run
    resumes to the same decisions (every random draw comes from seeded generators)."""

    def __init__(self, fabric, cfg: IncompatibilityConfig, d: PoisonedData, folder, resume):
        self.fabric, self.cfg, self.d = fabric, cfg, d
        self.folder, self.resume = folder, resume

    def _seed(self, name: str) -> int:
        """A seed per network or phase, from its name: the same whatever ran before it."""
        return self.cfg.seed * 100_003 + zlib.crc32(name.encode())

    def _optimizer(self, params):
        cfg = self.cfg
        return torch.optim.SGD(
            params, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay
        )

    def new(self, name: str) -> dict:
        torch.manual_seed(self._seed(name))  # a fresh, seeded network
        model = build_model(self.cfg, self.d.channels, self.d.classes)
        model, opt = self.fabric.setup(model, self._optimizer(model.parameters()))
        return {"model": model, "opt": opt}

    def train(self, handle, indices, epochs, name, new_optimizer=False, scheduler_fn=None):
        if new_optimizer:
            handle["opt"] = self.fabric.setup_optimizers(
                self._optimizer(handle["model"].parameters())
            )
        if len(indices) == 0 or epochs == 0:
            return
        idx = torch.as_tensor(indices, dtype=torch.long)
        batches = StepBatches(
            (self.d.x[idx], self.d.y[idx]), self.cfg.batch_size, self._seed(name),
            self.fabric.global_rank, self.fabric.world_size,
        )  # fmt: skip
        steps = epochs * batches.steps_per_epoch
        scheduler = scheduler_fn(handle["opt"], batches.steps_per_epoch) if scheduler_fn else None
        fit(
            self.fabric, handle["model"], handle["opt"], batches, cross_entropy_step,
            steps=steps, scheduler=scheduler, log_every=max(1, steps),
            checkpoint=self.folder / f"{name}.ckpt" if self.folder else None,
            checkpoint_every=self.cfg.checkpoint_every, resume=self.resume, desc=name,
        )  # fmt: skip

    def evaluate(self, handle, indices):
        idx = torch.as_tensor(indices, dtype=torch.long)
        logits = predict(handle["model"], self.d.x[idx], self.fabric.device)
        losses = F.cross_entropy(logits, self.d.y[idx], reduction="none")
        return losses.numpy(), logits.argmax(-1).numpy()


def measure(model, cfg: IncompatibilityConfig, d: PoisonedData, device) -> ModelResult:
    """Clean test accuracy, attack success rate, and the paper's targeted misclassification
    rate (``evaluation/run_defense.py``: stamped source images predicted as the target whose
    clean version is predicted right, over all source test images)."""
    from companion.data.backdoor import stamp_trigger

    clean_pred = predict(model, d.x_test, device).argmax(-1)
    src = d.y_test == cfg.source
    stamped = stamp_trigger(d.x_test[src], cfg.trigger_size, cfg.trigger_value)
    hit = predict(model, stamped, device).argmax(-1) == cfg.target
    right = clean_pred[src] == cfg.source
    return ModelResult(
        clean_accuracy=(clean_pred == d.y_test).float().mean().item(),
        attack_success=hit.float().mean().item(),
        targeted_misclassification=(hit & right).float().mean().item(),
    )


def _milestone_scheduler(cfg: IncompatibilityConfig):
    def make(optimizer, steps_per_epoch: int):
        def factor(step: int) -> float:
            epoch = step // steps_per_epoch
            return 0.1 ** sum(epoch >= m for m in cfg.milestones)

        return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)

    return make


def compatibility(trainer: FabricTrainer, d: PoisonedData, cfg: IncompatibilityConfig) -> dict:
    """Self-expansion made visible (uses the ground truth, for the picture only): train on half
    of the clean examples, measure accuracy w.r.t. the training labels on the other half and on
    held-out poisons; then train on the clean half plus half of the poisons and measure again."""
    rng = np.random.default_rng([cfg.seed, 1])
    clean = np.flatnonzero(~d.poisoned.numpy())
    poisons = np.flatnonzero(d.poisoned.numpy())
    clean, poisons = rng.permutation(clean), rng.permutation(poisons)
    clean_a, clean_b = clean[: len(clean) // 2], clean[len(clean) // 2 :]
    pois_a, pois_b = poisons[: len(poisons) // 2], poisons[len(poisons) // 2 :]
    out, losses = {}, {}
    for name, train_idx in (("clean", clean_a), ("clean+poisons", np.r_[clean_a, pois_a])):
        net = trainer.new(f"demo/{name}")
        trainer.train(net, train_idx, cfg.demo_epochs, f"demo/{name}")
        row = {}
        for part, idx in (("clean", clean_b), ("poisons", pois_b)):
            loss, pred = trainer.evaluate(net, idx)
            row[part] = float((pred == d.y.numpy()[idx]).mean()) if len(idx) else 0.0
            losses[(name, part)] = loss
        out[name] = row
    # losses of the clean-half network on held-out clean and on every held-out poison
    return dict(
        compat=out,
        clean_losses=[round(float(v), 4) for v in losses[("clean", "clean")][:400]],
        poison_losses=[round(float(v), 4) for v in losses[("clean", "poisons")]],
    )


def misclassified_filter(trainer: FabricTrainer, labels: np.ndarray, epochs: int) -> np.ndarray:
    """The baseline filter (no ISPL, no boosting, no refinement): one fresh network trained
    ``epochs`` passes over all the (poisoned) training data; keep exactly the examples it
    classifies as labelled. Like the defense it sees images and labels only."""
    everything = np.arange(len(labels))
    net = trainer.new("baseline/filter")
    trainer.train(net, everything, epochs, "baseline/filter")
    _, predicted = trainer.evaluate(net, everything)
    return predicted == labels


def defend(fabric, cfg: IncompatibilityConfig, folder: Path | None, resume: bool):
    with torch_threads(cfg.threads, fabric.device):
        return _defend(fabric, cfg, folder, resume)


def _defend(fabric, cfg, folder, resume) -> IncompatibilityResult:
    start = time.perf_counter()
    d = load_data(cfg)
    trainer = FabricTrainer(fabric, cfg, d, folder, resume)
    demo = compatibility(trainer, d, cfg)

    labels = d.y.numpy()
    record = filter_noise(
        trainer, labels, d.classes, cfg.settings(len(labels)), np.random.default_rng([cfg.seed, 2])
    )
    truth = d.poisoned.numpy()  # measurements only, after the defense decided

    def removed(keep):
        return int((~keep & truth).sum()), int((~keep & ~truth).sum())

    learners = []
    for rec, bag in zip(record.learners, record.bag_of_learner):
        learners.append(
            dict(
                bag=bag,
                data_perc=rec.data_perc,
                refit_it=rec.refit_it,
                core_size=int(rec.core_set.sum()),
                core_poisons=int((rec.core_set & truth).sum()),
                train_sizes=[int(t.sum()) for t in rec.train_sets],
                train_poisons=[int((t & truth).sum()) for t in rec.train_sets],
            )
        )
    disjoint = True
    for bag in set(record.bag_of_learner):
        cores = [r.core_set for r, b in zip(record.learners, record.bag_of_learner) if b == bag]
        disjoint &= bool((np.sum(cores, axis=0) <= 1).all())

    everything = np.arange(len(labels))
    base_keep = misclassified_filter(trainer, labels, cfg.baseline_epochs)
    sched = _milestone_scheduler(cfg) if cfg.milestones else None
    nets = {}
    arms = (
        ("no_defense", np.ones(len(labels), bool)),
        ("defended", record.keep),
        ("baseline", base_keep),
    )
    for arm, keep in arms:
        net = trainer.new(f"final/{arm}")
        trainer.train(net, everything[keep], cfg.final_epochs, f"final/{arm}", False, sched)
        nets[arm] = measure(net["model"], cfg, d, fabric.device)
    vote_p, vote_c = removed(record.vote_keep)
    refine = [removed(k) for k in record.refine_keep]
    final_p, final_c = removed(record.keep)
    base_p, base_c = removed(base_keep)
    return IncompatibilityResult(
        config=cfg.to_dict(),
        n_train=len(labels),
        n_poisons=int(truth.sum()),
        n_source_test=int((d.y_test == cfg.source).sum()),
        **demo,
        learners=learners,
        vote_removed_poisons=vote_p,
        vote_removed_clean=vote_c,
        refine_removed_poisons=[p for p, _ in refine],
        refine_removed_clean=[c for _, c in refine],
        removed_poisons=final_p,
        removed_clean=final_c,
        clean_per_class=np.bincount(labels[~truth], minlength=d.classes).tolist(),
        removed_clean_per_class=np.bincount(
            labels[~truth & ~record.keep], minlength=d.classes
        ).tolist(),
        bags_disjoint=disjoint,
        no_defense=nets["no_defense"],
        defended=nets["defended"],
        baseline_removed_poisons=base_p,
        baseline_removed_clean=base_c,
        baseline=nets["baseline"],
        seconds=time.perf_counter() - start,
    )


def run(
    cfg: IncompatibilityConfig, out_dir: str | Path | None = None, resume: bool = False
) -> IncompatibilityResult:
    """Poison, show incompatibility, defend, train with and without the defense.

    With ``out_dir``, every training phase checkpoints into ``<out_dir>/defense/`` and
    ``resume=True`` continues an interrupted run to the same result."""
    folder = Path(out_dir) / "defense" if out_dir is not None else None
    result = launch_or_resume(
        cfg, folder, resume, IncompatibilityResult, defend, cfg, folder, resume
    )
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
