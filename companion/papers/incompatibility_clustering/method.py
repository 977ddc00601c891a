"""Incompatibility clustering: ISPL weak learners, boosting and self-paced refinement.

Jin, Sun, Rinard. "Incompatibility Clustering as a Defense Against Backdoor Poisoning Attacks",
ICLR 2023 (https://openreview.net/forum?id=mkJm5Uy4HrQ, code:
https://github.com/charlesjin/compatibility_clustering).

Two sets of examples are *compatible* when training on one improves the performance on the other;
a cluster that only generalizes to itself is *self-expanding* (Sec. 3). Backdoor poisons (an
image with a trigger, relabelled to the target class) are incompatible with the clean data: a
network trained on clean images predicts the poisons' true class, not the label they carry.

This module follows the official code line by line, with the training itself left to a
:class:`Trainer` (the experiment trains small networks with the shared Fabric loop):

* :func:`ispl_core_set`: one weak learner, Iterative Self-Paced Learning (``defense/weak.py``,
  ``WeakLearner.get_core_set``): train, keep the examples of low (EMA-smoothed) loss, train on a
  random ``1/β`` of the kept ones, repeat; then retrain a fresh network on the core set.
* :func:`trimmed_set`: the keep rule of one ISPL iteration (``WeakLearner.get_trimmed_set``).
* :func:`filter_noise`: boosting (``defense/boost.py``, ``filter_noise``): per bag, up to α weak
  learners, each removing its core set from the active set; every learner votes a label for every
  example; an example is kept when the majority vote is its label (and at least two learners
  agree); then 20 rounds of self-paced refinement (``.2·[pred = label] + .8·c``, keep ``c > .5``).

The ground-truth poison mask is never an argument of these functions: nothing the defense
decides can depend on it (the official code receives it, but only prints it).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

import numpy as np


class Trainer(Protocol):
    """How the defense trains and queries networks (the experiment implements it).

    ``new(name)`` builds a freshly initialized network with its optimizer and returns a handle;
    ``train(handle, indices, epochs, name)`` continues training it for ``epochs`` passes over
    the training examples ``indices`` (``new_optimizer=True``: a fresh optimizer on the same
    weights, as the official refinement does); ``evaluate(handle, indices)`` returns the
    per-example cross-entropy loss and the predicted class (float32, eval mode).
    """

    def new(self, name: str) -> Any: ...

    def train(
        self, handle: Any, indices: np.ndarray, epochs: int, name: str, new_optimizer: bool = False
    ) -> None: ...

    def evaluate(self, handle: Any, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...


@dataclasses.dataclass(frozen=True)
class ISPLSettings:
    """Hyperparameters of a weak learner and of the boosting (official values as defaults).

    ``warm_up``/``refit_epochs``: epochs of the first and of each later ISPL iteration (8, 4);
    ``retrain_epochs``: epochs of the fresh network trained on the core set (40);
    ``decay``: EMA decay of the per-example loss (0.9); ``beta``: a kept example joins the next
    training subset with probability 1/β (4); ``boost`` (α): weak learners per bag (8);
    ``bags``: independent boosting runs (3); ``data_perc``: the share of the data each learner's
    core set aims at (0.96/α); ``min_active``: a bag stops once at most this many examples are
    left (2,000 of CIFAR-10's 50,000); ``refine_rounds``/``refine_epochs``: self-paced
    refinement (20 rounds of 5 epochs).
    """

    warm_up: int = 8
    refit_epochs: int = 4
    retrain_epochs: int = 40
    decay: float = 0.9
    beta: float = 4.0
    boost: int = 8
    bags: int = 3
    data_perc: float = 0.96 / 8
    min_active: int = 2000
    refine_rounds: int = 20
    refine_epochs: int = 5


def refit_iterations(data_perc: float) -> int:
    """ISPL iterations of a weak learner: ``2 + clip(⌊1 // dp⌋, 1, 3)`` (``defense/boost.py``);
    a learner that may keep everything (``dp ≥ .999``) does none."""
    if data_perc >= 0.999:
        return 0
    return 2 + max(1, min(3, int(1 // data_perc)))


def learner_data_perc(data_perc: float, n_total: int, n_active: int) -> float:
    """The share of the *active* set a learner keeps, so that its core set is about
    ``data_perc`` of the whole data: ``min(1, dp · N / |A|)``."""
    return min(1.0, data_perc * n_total / n_active)


def ema_loss(losses: np.ndarray, previous: np.ndarray | None, decay: float) -> np.ndarray:
    """EMA of the per-example loss across ISPL iterations: ``(1 − decay)·ℓ + decay·m`` with
    ``m = 0`` at the first iteration (as the official code: the ranking is what matters).
    NaN losses are replaced by the mean loss."""
    losses = np.nan_to_num(losses, nan=float(np.nanmean(losses)))
    if previous is None:
        previous = np.zeros_like(losses)
    return losses * (1 - decay) + previous * decay


def trimmed_set(
    losses: np.ndarray,
    labels: np.ndarray,
    it: int,
    refit_it: int,
    data_perc: float,
    num_classes: int,
) -> np.ndarray:
    """The keep rule of ISPL iteration ``it`` (``WeakLearner.get_trimmed_set``).

    Global quantile ``q = clip(min(3, max(1, R − 2 − it))·dp, 0, 1)``: the threshold starts
    loose (up to 3·dp) and tightens to dp for the last iterations. An example is kept when its
    loss is at most the global ``q``-quantile, or at most the ``q/8``-quantile of its own class
    (so that every class keeps a few examples).
    """
    q = min(3, max(1, refit_it - 2 - it)) * data_perc
    q = max(0.0, min(1.0, q))
    keep = np.zeros(len(losses), dtype=bool)
    for c in range(num_classes):
        mask = labels == c
        if mask.any():
            keep[mask] = losses[mask] <= np.quantile(losses[mask], q / 8)
    return keep | (losses <= np.quantile(losses, q))


@dataclasses.dataclass
class WeakLearnerRecord:
    """What one weak learner did: its core set and, per ISPL iteration, its training subset."""

    core_set: np.ndarray  # bool [N]
    train_sets: list[np.ndarray]  # bool [N] per iteration: what it trained on
    data_perc: float
    refit_it: int


def ispl_core_set(
    trainer: Trainer,
    labels: np.ndarray,
    active: np.ndarray,
    data_perc: float,
    num_classes: int,
    settings: ISPLSettings,
    rng: np.random.Generator,
    name: str = "learner",
) -> tuple[WeakLearnerRecord, Any]:
    """One ISPL weak learner on the active set (``WeakLearner.get_core_set``).

    Returns its record and the network retrained from scratch on its core set (the learner that
    votes in :func:`filter_noise`).
    """
    n = len(labels)
    active_idx = np.flatnonzero(active)
    active_labels = labels[active_idx]
    refit_it = refit_iterations(data_perc)
    train_mask = active.copy()
    if active.all():  # the first learner of a bag starts from a random half of the data
        train_mask = rng.binomial(1, 0.5, size=n).astype(bool)
    keep = np.ones(len(active_idx), dtype=bool)  # dp >= .999: the whole active set
    loss_m = None
    train_sets = []
    net = trainer.new(f"{name}/ispl") if refit_it else None
    for it in range(refit_it):
        epochs = settings.warm_up if it == 0 else settings.refit_epochs
        train_sets.append(train_mask.copy())
        trainer.train(net, np.flatnonzero(train_mask), epochs, f"{name}/it{it}")
        losses, _ = trainer.evaluate(net, active_idx)
        loss_m = ema_loss(losses, loss_m, settings.decay)
        keep = trimmed_set(loss_m, active_labels, it, refit_it, data_perc, num_classes)
        # the next training subset: each kept example with probability 1/β ("expansion")
        expand = keep & (rng.binomial(1, 1 / settings.beta, size=len(keep)) == 1)
        train_mask = np.zeros(n, dtype=bool)
        train_mask[active_idx[expand]] = True
    core = np.zeros(n, dtype=bool)
    core[active_idx[keep]] = True
    final = trainer.new(f"{name}/retrain")
    trainer.train(final, np.flatnonzero(core), settings.retrain_epochs, f"{name}/retrain")
    return WeakLearnerRecord(core, train_sets, data_perc, refit_it), final


def mode_rand(votes: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Per column of ``votes`` [learners, N]: the most frequent label (ties broken at random)
    and how many learners voted for it (``mode_rand`` in ``defense/boost.py``)."""
    out = np.zeros(votes.shape[1], dtype=np.int64)
    count = np.zeros(votes.shape[1], dtype=np.int64)
    for col in range(votes.shape[1]):
        z = np.bincount(votes[:, col])
        count[col] = z.max()
        out[col] = rng.choice(np.flatnonzero(z == count[col]))
    return out, count


def vote_keep(votes: np.ndarray, labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Boosting's decision: keep an example when the learners' majority vote is its label and
    more than one learner voted for it."""
    vote, count = mode_rand(votes, rng)
    return (vote == labels) & (count > 1)


def refine_confidence(
    confidence: np.ndarray | None, predicted: np.ndarray, labels: np.ndarray
) -> np.ndarray:
    """Self-paced refinement: ``c ← .2·[pred = label] + .8·c`` (``c`` starts at .5)."""
    if confidence is None:
        confidence = np.full(len(labels), 0.5)
    return 0.2 * (predicted == labels) + 0.8 * confidence


@dataclasses.dataclass
class DefenseRecord:
    """Everything the defense decided, for the experiment to measure against the truth."""

    learners: list[WeakLearnerRecord]
    bag_of_learner: list[int]
    votes: np.ndarray  # int [learners, N]: every learner's predicted label
    vote_keep: np.ndarray  # bool [N]: kept by boosting
    refine_keep: list[np.ndarray]  # bool [N] after each refinement round
    keep: np.ndarray  # bool [N]: the final decision


def filter_noise(
    trainer: Trainer,
    labels: np.ndarray,
    num_classes: int,
    settings: ISPLSettings,
    rng: np.random.Generator,
) -> DefenseRecord:
    """The whole defense (``filter_noise`` in ``defense/boost.py``): which examples to keep.

    ``labels`` are the (possibly poisoned) training labels. Bags are independent; within a bag
    each learner's active set excludes the core sets of the learners before it, so later
    learners fit what the first ones found incompatible.
    """
    n = len(labels)
    learners, nets, bag_of = [], [], []
    for b in range(max(settings.bags, 1)):
        active = np.ones(n, dtype=bool)
        for e in range(max(settings.boost, 1)):
            if active.sum() <= settings.min_active:
                break
            dp = learner_data_perc(settings.data_perc, n, int(active.sum()))
            record, net = ispl_core_set(
                trainer, labels, active, dp, num_classes, settings, rng, name=f"bag{b}/l{e}"
            )
            learners.append(record)
            nets.append(net)
            bag_of.append(b)
            if settings.boost > 1:
                active = active & ~record.core_set
    everything = np.arange(n)
    votes = np.stack([trainer.evaluate(net, everything)[1] for net in nets])
    keep = vote_keep(votes, labels, rng)
    boosted = keep.copy()
    # self-paced refinement: keep training one network on what is kept, keep what it fits
    net, confidence, history = None, None, []
    for it in range(settings.refine_rounds):
        if net is None:
            net = trainer.new("refine")
        trainer.train(net, np.flatnonzero(keep), settings.refine_epochs, f"refine/{it}", True)
        _, predicted = trainer.evaluate(net, everything)
        confidence = refine_confidence(confidence, predicted, labels)
        keep = confidence > 0.5
        history.append(keep.copy())
    return DefenseRecord(learners, bag_of, votes, boosted, history, keep)
