"""SFAT's pieces: PGD adversarial training on a client, the non-IID "skew" split, and the
α-slack weights of the aggregation.

Federated adversarial training (FAT) runs PGD adversarial training (Madry et al. 2018) on every
client and averages the local models (FedAvg). SFAT keeps the clients as they are and changes
only the aggregation: the clients with the *smallest* adversarial training loss get the weight
``(1 + α)``, the others ``(1 − α)``, normalised (the α-slack mechanism, paper Sec. 4;
official code ``SFAT.py`` and ``utils.average_weights_alpha``).

The federated loop itself (rounds, local SGD, weighted mean, checkpoints) is the shared one of
:mod:`companion.core.federated`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from companion.core.federated import Update
from companion.errors import CompanionError

# --------------------------------------------------------------------------------------------
# Inner maximisation: PGD (official attack_generator.PGD, category "Madry", loss "cent")


def pgd_attack(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    eps: float,
    step_size: float,
    steps: int,
    generator: torch.Generator | None = None,
    random_start: bool = True,
) -> torch.Tensor:
    """L∞ PGD: ``x' ← Π_{B(x, ε) ∩ [0,1]}(x' + step · sign ∇ₓ CE(f(x'), y))``, ``steps`` times.

    As in the official ``attack_generator.PGD``: a uniform random start in ``[−ε, ε]`` (drawn
    from ``generator``), clamped to the image range [0, 1]; the mean cross-entropy is the
    attacked loss; the model is in eval mode while attacking and its mode is restored after.
    Returns the adversarial batch, detached. The model's parameter gradients are left
    untouched (the gradient is taken with respect to the input only).
    """
    was_training = model.training
    model.eval()
    x = x.detach()
    if random_start:
        noise = torch.rand(x.shape, generator=generator, dtype=x.dtype) * 2 * eps - eps
        x_adv = (x + noise.to(x.device)).clamp(0.0, 1.0)
    else:
        x_adv = x.clone()
    for _ in range(steps):
        x_adv.requires_grad_(True)
        with torch.enable_grad():
            loss = F.cross_entropy(model(x_adv), y)
            (grad,) = torch.autograd.grad(loss, x_adv)
        x_adv = x_adv.detach() + step_size * grad.sign()
        x_adv = torch.min(torch.max(x_adv, x - eps), x + eps).clamp(0.0, 1.0)
    model.train(was_training)
    return x_adv.detach()


# --------------------------------------------------------------------------------------------
# The non-IID split (official sampling.cifar_noniid_skew)


def skew_split(
    labels: torch.Tensor, clients: int, skew: float, generator: torch.Generator
) -> list[torch.Tensor]:
    """The official "skew" split: sort the samples by label and cut them into ``clients``
    equal blocks (with 10 classes and 5 clients, two classes per block). Client ``i`` keeps
    ``100 − (clients − 1) · skew`` percent of block ``i`` and receives ``skew`` percent of every
    other block, drawn at random without replacement (at the defaults, 92 % and 2 %).

    Returns one index tensor per client (indices into ``labels``). Like the official code,
    samples that do not fill a whole block (``len(labels) % clients``) are left out, and so are
    the few lost to rounding the percentages down.
    """
    if clients < 1 or not 0 <= skew * (clients - 1) <= 100:
        raise CompanionError(
            f"skew split needs clients >= 1 and 0 <= skew·(clients−1) <= 100; "
            f"got clients={clients}, skew={skew}"
        )
    order = torch.sort(labels, stable=True).indices
    size = len(labels) // clients
    blocks = [order[k * size : (k + 1) * size] for k in range(clients)]
    own = int(size * (100 - (clients - 1) * skew) / 100)
    other = int(size * skew / 100)
    parts: list[list[torch.Tensor]] = [[] for _ in range(clients)]
    for i in range(clients):  # the official loop order: client i draws from every block j
        for j in range(clients):
            take = own if i == j else other
            pick = torch.randperm(len(blocks[j]), generator=generator)
            parts[i].append(blocks[j][pick[:take]])
            blocks[j] = blocks[j][pick[take:]]
    return [torch.cat(p).sort().values for p in parts]


def iid_like(parts: list[torch.Tensor], generator: torch.Generator) -> list[torch.Tensor]:
    """The IID control of a split: the same samples and the same number per client as
    ``parts``, dealt out at random (each client's classes then follow the whole data's)."""
    pool = torch.cat(parts)
    pool = pool[torch.randperm(len(pool), generator=generator)]
    return [p.sort().values for p in pool.split([len(p) for p in parts])]


# --------------------------------------------------------------------------------------------
# The α-slack aggregation (official SFAT.py + utils.average_weights_alpha)


def alpha_from_ratio(ratio: float) -> float:
    """The official option ``--pri`` is the weight ratio ``(1 + α) / (1 − α)``; its α."""
    if ratio < 1:
        raise CompanionError(f"the slack ratio (1+α)/(1−α) must be >= 1, got {ratio}")
    return (ratio - 1) / (ratio + 1)


def slack_weights(
    losses: Sequence[float] | torch.Tensor, alpha: float, topk: int = 1
) -> torch.Tensor:
    """SFAT's client weights (α-slack, paper Sec. 4): the ``topk`` clients with the smallest
    adversarial training loss get ``1 + α``, every other client ``1 − α``; the weights are
    then normalised to sum to one.

    Ties at the threshold are all up-weighted, as in the official code (``idt >= idtxnum``:
    its score is the *negative* loss). Unlike the official ``average_weights_alpha``, the
    normaliser is the actual sum of the weights, so the aggregate is a convex combination
    (the official normaliser assumes client 0 is up-weighted; see the tests).
    """
    losses = torch.as_tensor(losses, dtype=torch.float64)
    if not 0 <= alpha < 1:
        raise CompanionError(f"α must lie in [0, 1), got {alpha}")
    k = min(max(int(topk), 0), len(losses))
    weights = torch.full_like(losses, 1 - alpha)
    if k > 0:
        threshold = losses.sort().values[k - 1]
        weights[losses <= threshold] = 1 + alpha
    return (weights / weights.sum()).float()


def client_dissimilarity(messages: torch.Tensor) -> float:
    """How much the clients' local updates disagree: ``mean_k ‖Δ_k − Δ̄‖² / mean_k ‖Δ_k‖²``
    with ``Δ̄`` the plain mean of the updates ``Δ_k = θ_k − θ``. It is 0 when every client
    moves the same way and 1 when the updates cancel out on average; it does not depend on
    the size of the steps, so natural and adversarial training compare on one scale. (The
    numerator is the mean squared distance of the local models to their average.)"""
    messages = messages.double()
    spread = (messages - messages.mean(0)).square().sum(1).mean()
    energy = messages.square().sum(1).mean()
    return float(spread / energy) if energy > 0 else 0.0


def record_heterogeneity(updates: list[Update]) -> None:
    """Write the round's client heterogeneity into every update's ``info`` (so the shared
    loop logs it as ``client_<key>``): the update dissimilarity (:func:`client_dissimilarity`)
    and the spread (max − min) of the clients' training losses."""
    messages = torch.stack([u.message for u in updates])
    losses = [u.info["loss"] for u in updates]
    dissimilarity = client_dissimilarity(messages)
    spread = max(losses) - min(losses)
    for u in updates:
        u.info["dissimilarity"] = dissimilarity
        u.info["loss_spread"] = spread


def fedavg_weigh(updates: list[Update]) -> torch.Tensor:
    """FedAvg's weights as in the official ``average_weights`` (an unweighted mean), with the
    round's heterogeneity recorded (:func:`record_heterogeneity`)."""
    record_heterogeneity(updates)
    return torch.full((len(updates),), 1.0 / len(updates))


class SlackWeigh:
    """SFAT's ``weigh`` hook for :func:`companion.core.federated.run_rounds`: the α-slack
    weights (:func:`slack_weights`) from each client's adversarial loss ``info["loss"]``
    (the mean over the batches of its last local epoch, as the official score). Round 0 is
    plain FedAvg, as in the official ``SFAT.py`` (``if epoch > 0``)."""

    def __init__(self, alpha: float, topk: int = 1):
        self.alpha, self.topk = alpha, topk

    def __call__(self, updates: list[Update]) -> torch.Tensor:
        record_heterogeneity(updates)
        if updates[0].info.get("round", 1) == 0:
            return torch.full((len(updates),), 1.0 / len(updates))
        return slack_weights([u.info["loss"] for u in updates], self.alpha, self.topk)


class RandomSlackWeigh:
    """The control of SFAT's selection: the same α-slack weights, ``1 + α`` for ``topk``
    clients and ``1 − α`` for the rest, normalised, but the up-weighted clients are drawn at
    random each round (a generator seeded by ``(seed, round)``) instead of chosen by their
    adversarial loss. Round 0 is plain FedAvg, as in :class:`SlackWeigh`. What SFAT gains over
    this arm is what its selection by robust loss buys, not the unequal weights as such."""

    def __init__(self, alpha: float, topk: int, seed: int):
        self.alpha, self.topk, self.seed = alpha, topk, seed

    def __call__(self, updates: list[Update]) -> torch.Tensor:
        record_heterogeneity(updates)
        k, r = len(updates), int(updates[0].info.get("round", 1))
        if r == 0:
            return torch.full((k,), 1.0 / k)
        g = torch.Generator().manual_seed(6_151 * self.seed + 49_157 * r + 3)
        chosen = torch.randperm(k, generator=g)[: min(max(int(self.topk), 0), k)]
        scores = torch.ones(k)
        scores[chosen] = 0.0  # the chosen clients play the role of the smallest losses
        return slack_weights(scores, self.alpha, len(chosen))


# --------------------------------------------------------------------------------------------
# The official normaliser (utils.average_weights_alpha as published), kept to show what it does


def official_shrink(clients: int, top: int, first_is_top: bool, ratio: float) -> float:
    """The factor by which the official ``average_weights_alpha`` scales the *whole* model.

    It averages whole models, ``θ' = Σ_k p_k θ_k / Z`` with ``p_k = ratio`` for the ``top``
    up-weighted clients and 1 for the others, but its normaliser ``Z`` counts the *first*
    client of the round's list as up-weighted whether it is or not. When it is not,
    ``Z = (K − t − 1) + (t + 1)·ratio`` instead of ``Σ p_k = (K − t) + t·ratio``, and
    ``θ' = s · (correctly normalised SFAT model)`` with ``s = Σ p_k / Z < 1`` (5 clients,
    top-1: 0.963 at ratio 1.2, 0.931 at ratio 1.4). The first client is random in the
    official loop (``np.random.choice``), so the shrink hits (K − t)/K of the rounds."""
    if first_is_top:
        return 1.0
    right = (clients - top) + top * ratio
    return right / ((clients - top - 1) + (top + 1) * ratio)


def top_clients(losses: Sequence[float] | torch.Tensor, topk: int = 1) -> torch.Tensor:
    """Boolean mask of the clients SFAT up-weights: the ``topk`` smallest losses (ties at the
    threshold included, as :func:`slack_weights`)."""
    losses = torch.as_tensor(losses, dtype=torch.float64)
    k = min(max(int(topk), 0), len(losses))
    if k == 0:
        return torch.zeros(len(losses), dtype=torch.bool)
    return losses <= losses.sort().values[k - 1]


class ShrinkServer:
    """The server of the official-normaliser arms: ``θ ← s · (θ + aggregate)``, with the
    round's factor ``s`` set by the ``weigh`` hook (:class:`OfficialWeigh`) before the step.
    With messages ``Δ_k = θ_k − θ`` and normalised weights, ``θ + aggregate`` is the correctly
    normalised average of the local models, so this is the official ``Σ p_k θ_k / Z``."""

    def __init__(self):
        self.factor = 1.0

    def step(self, model: nn.Module, aggregated: torch.Tensor) -> None:
        from companion.core.federated import flat_params, set_flat_params

        set_flat_params(model, self.factor * (flat_params(model) + aggregated))

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


def first_client(seed: int, round: int, clients: int) -> int:
    """The client the official loop lists first in a round (its order is
    ``np.random.choice``): drawn uniformly from a generator seeded by ``(seed, round)``, so the
    two official-normaliser arms of one seed see the same draws."""
    g = torch.Generator().manual_seed(7_919 * seed + 104_729 * round + 17)
    return int(torch.randint(clients, (1,), generator=g))


class OfficialWeigh:
    """``weigh`` hook of the two arms that reproduce the official normaliser, with a
    :class:`ShrinkServer`:

    * ``slack=True`` ("SFAT, official normaliser"): SFAT's α-slack weights, and the model
      scaled by :func:`official_shrink` whenever the round's first client is not the top one;
    * ``slack=False`` ("FAT with the same shrink", the control): plain FedAvg weights and the
      *same* rule for the factor (top: the client with the smallest adversarial loss of this
      arm's own clients, the same first-client draws), i.e. the official aggregation with
      SFAT's reweighting removed and its shrink kept.

    Round 0 is plain FedAvg without shrink, as the official ``SFAT.py``. The factor is
    recorded in ``info["shrink"]``."""

    def __init__(self, server: ShrinkServer, ratio: float, topk: int, seed: int, slack: bool):
        self.server, self.ratio, self.topk, self.seed, self.slack = server, ratio, topk, seed, slack

    def __call__(self, updates: list[Update]) -> torch.Tensor:
        record_heterogeneity(updates)
        k, r = len(updates), int(updates[0].info.get("round", 1))
        losses = [u.info["loss"] for u in updates]
        uniform = torch.full((k,), 1.0 / k)
        if r == 0:
            factor, weights = 1.0, uniform
        else:
            top = top_clients(losses, self.topk)
            first = first_client(self.seed, r, k)
            factor = official_shrink(k, int(top.sum()), bool(top[first]), self.ratio)
            alpha = alpha_from_ratio(self.ratio)
            weights = slack_weights(losses, alpha, self.topk) if self.slack else uniform
        self.server.factor = factor
        for u in updates:
            u.info["shrink"] = factor
        return weights
