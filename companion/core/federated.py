"""Federated rounds, simulated in one process: clients, aggregation rules, attacks, a server.

One round of federated learning (McMahan et al. 2017) or of distributed training with
Byzantine workers (Blanchard et al. 2017) has the same shape, so one loop serves every paper:

1. the server picks the round's participants (``select``; by default every client);
2. each participant computes an :class:`Update` from the global model: a *message* (a flat
   vector: a model delta after local steps, or a gradient), a weight and scalar ``info``;
3. Byzantine participants' messages are replaced by an *attack* that sees the honest ones;
4. an *aggregator* reduces the messages to one vector (mean, coordinate-wise median, Krum,
   ...), optionally after *bucketing*;
5. the *server* applies it to the global model (default: ``x <- x + lr * aggregate``);
6. the model's floating-point buffers (BatchNorm's running mean and variance) become the
   weighted mean of the participants' (as FedAvg averages a whole ``state_dict``); integer
   buffers (BatchNorm's batch count) keep the server's value.

Everything a paper changes is a plug-in: the client (LeadFL's regulariser, SFAT's adversarial
training, MARINA's compressed gradient differences), ``select`` (bursty attackers), ``weigh``
(SFAT's slack weights), the attack, the aggregator and the server (MARINA's state ``g^k``).

Every random draw of round ``r`` comes from generators seeded by ``(seed, r)``, so
:func:`run_rounds` resumes from a checkpoint to exactly the result of an uninterrupted run.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import torch

from companion.core import training
from companion.core.runtime import progress, progress_enabled
from companion.core.training import History
from companion.errors import CompanionError, unknown

if TYPE_CHECKING:  # Fabric is imported where one is made (training.make_fabric)
    from lightning_fabric import Fabric

# --------------------------------------------------------------------------------------------
# Messages are flat vectors of a model's parameters


def flat_params(model: torch.nn.Module) -> torch.Tensor:
    """All parameters of ``model`` as one detached flat vector (``parameters_to_vector``)."""
    return torch.nn.utils.parameters_to_vector(model.parameters()).detach().clone()


def set_flat_params(model: torch.nn.Module, vector: torch.Tensor) -> None:
    """Write a flat vector back into ``model``'s parameters (in place, no autograd)."""
    with torch.no_grad():
        torch.nn.utils.vector_to_parameters(vector, model.parameters())


def _float_buffers(model: torch.nn.Module) -> list[torch.Tensor]:
    return [b for b in model.buffers() if b.is_floating_point()]


def flat_buffers(model: torch.nn.Module) -> torch.Tensor | None:
    """``model``'s floating-point buffers (BatchNorm's running statistics) as one detached flat
    vector; ``None`` for a model without any."""
    buffers = _float_buffers(model)
    if not buffers:
        return None
    return torch.cat([b.detach().reshape(-1) for b in buffers]).clone()


def set_flat_buffers(model: torch.nn.Module, vector: torch.Tensor) -> None:
    """Write a flat vector back into ``model``'s floating-point buffers (in place)."""
    position = 0
    with torch.no_grad():
        for b in _float_buffers(model):
            b.copy_(vector[position : position + b.numel()].view_as(b))
            position += b.numel()


@dataclasses.dataclass
class Update:
    """What one client sends in one round.

    ``message`` is a flat vector (a model delta ``local - global`` or a gradient), ``weight``
    its weight in a weighted mean (FedAvg uses the number of local samples), ``info`` scalars
    the server may use (SFAT's adversarial loss) and :func:`run_rounds` logs. ``buffers`` are
    the local model's floating-point buffers after training (:func:`flat_buffers`; ``None``
    when the model has none, or when the message is a gradient).
    """

    message: torch.Tensor
    weight: float = 1.0
    info: dict[str, float] = dataclasses.field(default_factory=dict)
    buffers: torch.Tensor | None = None


class Client(Protocol):
    """A client is any callable ``client(model, round, generator) -> Update``.

    ``model`` is the global model: read it, never modify it (copy it to train locally).
    ``generator`` is seeded by ``(seed, round, client index)``: draw every random number from it.
    """

    def __call__(
        self, model: torch.nn.Module, round: int, generator: torch.Generator
    ) -> Update: ...


def local_sgd(
    model: torch.nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    loss_fn: Callable[[torch.nn.Module, torch.Tensor, torch.Tensor], torch.Tensor],
    *,
    steps: int,
    batch_size: int,
    lr: float,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    generator: torch.Generator,
    after_step: Callable[[torch.nn.Module, torch.optim.Optimizer, int], None] | None = None,
) -> tuple[torch.Tensor, float, torch.Tensor | None]:
    """``steps`` SGD steps on a copy of ``model``; returns ``(local - global, mean loss,
    local buffers)``: the parameter delta, the mean batch loss, and the local model's
    floating-point buffers after training (:func:`flat_buffers`; BatchNorm's running
    statistics, which the server averages; ``None`` for a model without buffers).

    Mini-batches are drawn without replacement within each pass over ``(x, y)`` (a fresh
    permutation from ``generator`` per pass). ``loss_fn(local_model, xb, yb)`` gives the loss
    of a batch; it may do anything first (e.g. craft PGD examples against ``local_model``).
    The optimizer starts fresh every round, as in FedAvg. ``after_step(local_model, optimizer,
    step)``, if given, runs right after each optimizer step, with that step's gradients still
    in ``.grad`` (a client defence can add a term and step again, as LeadFL does).
    """
    start = flat_params(model)
    local = copy.deepcopy(model)
    local.train()
    optimizer = torch.optim.SGD(
        local.parameters(), lr=lr, momentum=momentum, weight_decay=weight_decay
    )
    n = len(x)
    batch_size = min(batch_size, n)
    order, position, total = torch.randperm(n, generator=generator), 0, 0.0
    for step in range(steps):
        if position + batch_size > n:
            order, position = torch.randperm(n, generator=generator), 0
        index = order[position : position + batch_size]
        position += batch_size
        loss = loss_fn(local, x[index], y[index])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if after_step is not None:
            after_step(local, optimizer, step)
        total += float(loss.detach())
    return flat_params(local) - start, total / max(steps, 1), flat_buffers(local)


def iid_split(n: int, clients: int, generator: torch.Generator) -> list[torch.Tensor]:
    """Indices ``0..n-1`` shuffled and cut into ``clients`` parts of (almost) equal size."""
    if not 1 <= clients <= n:
        raise ValueError(f"cannot split {n} samples among {clients} clients")
    return list(torch.randperm(n, generator=generator).tensor_split(clients))


# --------------------------------------------------------------------------------------------
# Aggregators: fn(messages [k, d], weights [k]) -> [d]


def mean(messages: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
    """The weighted mean ``Σ_i w_i m_i / Σ_i w_i`` (FedAvg); equal weights when ``None``."""
    if weights is None:
        return messages.mean(0)
    weights = weights.to(messages)
    return (weights[:, None] * messages).sum(0) / weights.sum()


def coordinate_median(messages: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
    """The median of each coordinate (Yin et al. 2018); the mean of the two middle values for
    an even count. Weights are ignored."""
    ordered, k = messages.sort(dim=0).values, len(messages)
    return ordered[(k - 1) // 2 : k // 2 + 1].mean(0)


def trimmed_mean(
    messages: torch.Tensor, weights: torch.Tensor | None = None, *, b: int = 1
) -> torch.Tensor:
    """Per coordinate, drop the ``b`` largest and ``b`` smallest values and average the rest
    (Yin et al. 2018). Weights are ignored."""
    k = len(messages)
    if not 0 <= 2 * b < k:
        raise ValueError(f"trimmed_mean needs 2*b < number of messages; got b={b}, k={k}")
    ordered = messages.sort(dim=0).values
    return ordered[b : k - b].mean(0)


def krum_scores(messages: torch.Tensor, f: int) -> torch.Tensor:
    """Krum's score of each message: the sum of squared distances to its ``k - f - 2`` nearest
    other messages (Blanchard et al. 2017, Sec. 4)."""
    k = len(messages)
    nearest = k - f - 2
    if nearest < 1:
        raise ValueError(f"Krum needs k - f - 2 >= 1; got k={k}, f={f}")
    distances = torch.cdist(messages[None].double(), messages[None].double())[0].square()
    distances.fill_diagonal_(math.inf)
    return distances.sort(dim=1).values[:, :nearest].sum(1)


def multi_krum(
    messages: torch.Tensor, weights: torch.Tensor | None = None, *, f: int = 1, m: int | None = None
) -> torch.Tensor:
    """The mean of the ``m`` messages with the lowest Krum scores (``m = k - f`` by default;
    Blanchard et al. 2017; ``m = 1`` is Krum). Weights are ignored."""
    m = len(messages) - f if m is None else m
    chosen = krum_scores(messages, f).argsort()[:m]
    return messages[chosen].mean(0)


def krum(
    messages: torch.Tensor, weights: torch.Tensor | None = None, *, f: int = 1
) -> torch.Tensor:
    """The single message with the lowest Krum score (Blanchard et al. 2017)."""
    return multi_krum(messages, f=f, m=1)


def geometric_median(
    messages: torch.Tensor,
    weights: torch.Tensor | None = None,
    *,
    iterations: int = 8,
    nu: float = 1e-6,
) -> torch.Tensor:
    """RFA: the geometric median ``argmin_z Σ_i ||z - m_i||`` by the smoothed Weiszfeld
    iteration ``z <- Σ_i β_i m_i / Σ_i β_i``, ``β_i = 1 / max(nu, ||z - m_i||)``, started from the
    mean (Pillutla et al. 2022, Algorithm 2, with equal weights). Weights are ignored."""
    z = messages.mean(0)
    for _ in range(iterations):
        beta = 1.0 / (messages - z).norm(dim=1).clamp_min(nu)
        z = (beta[:, None] * messages).sum(0) / beta.sum()
    return z


def bucketing(
    messages: torch.Tensor,
    s: int,
    aggregator: Callable[..., torch.Tensor],
    generator: torch.Generator,
    **kwargs: Any,
) -> torch.Tensor:
    """Bucketing (Karimireddy et al. 2022, Algorithm 1): shuffle the messages, average them in
    buckets of ``s`` (the last bucket may be smaller), and aggregate the bucket means."""
    shuffled = messages[torch.randperm(len(messages), generator=generator)]
    buckets = torch.stack([chunk.mean(0) for chunk in shuffled.split(s)])
    return aggregator(buckets, None, **kwargs)


AGGREGATORS: dict[str, Callable[..., torch.Tensor]] = {
    "mean": mean,
    "coordinate_median": coordinate_median,
    "trimmed_mean": trimmed_mean,
    "krum": krum,
    "multi_krum": multi_krum,
    "geometric_median": geometric_median,
}


def aggregate(
    name: str, messages: torch.Tensor, weights: torch.Tensor | None = None, **kwargs: Any
) -> torch.Tensor:
    """Apply the aggregator called ``name`` (a key of :data:`AGGREGATORS`)."""
    if name not in AGGREGATORS:
        raise unknown("aggregator", name, AGGREGATORS)
    return AGGREGATORS[name](messages, weights, **kwargs)


# --------------------------------------------------------------------------------------------
# Attacks on messages: fn(honest [h, d], byzantine [b, d], generator) -> [b, d]


def no_attack(
    honest: torch.Tensor, byzantine: torch.Tensor, generator: torch.Generator
) -> torch.Tensor:
    """Byzantine clients send what they computed (data attacks: label flips, backdoors)."""
    return byzantine


def bit_flip(
    honest: torch.Tensor, byzantine: torch.Tensor, generator: torch.Generator
) -> torch.Tensor:
    """Each Byzantine client sends the negation of its honest message."""
    return -byzantine


def alie(
    honest: torch.Tensor, byzantine: torch.Tensor, generator: torch.Generator, *, z: float = 1.0
) -> torch.Tensor:
    """ "A little is enough" (Baruch et al. 2019): every Byzantine client sends
    ``mean - z * std`` of the honest messages, per coordinate."""
    shifted = honest.mean(0) - z * honest.std(0, unbiased=len(honest) > 1)
    return shifted.expand_as(byzantine).clone()


def ipm(
    honest: torch.Tensor, byzantine: torch.Tensor, generator: torch.Generator, *, eps: float = 0.1
) -> torch.Tensor:
    """Inner-product manipulation (Xie et al. 2020): every Byzantine client sends
    ``-eps * mean`` of the honest messages."""
    return (-eps * honest.mean(0)).expand_as(byzantine).clone()


ATTACKS: dict[str, Callable[..., torch.Tensor]] = {
    "none": no_attack,
    "bit_flip": bit_flip,
    "alie": alie,
    "ipm": ipm,
}


def get_attack(name: str) -> Callable[..., torch.Tensor]:
    """The attack called ``name`` (a key of :data:`ATTACKS`)."""
    if name not in ATTACKS:
        raise unknown("attack", name, ATTACKS)
    return ATTACKS[name]


# --------------------------------------------------------------------------------------------
# The server and the loop


@dataclasses.dataclass
class DeltaServer:
    """The FedAvg server: ``x <- x + lr * aggregate`` (messages are model deltas)."""

    lr: float = 1.0

    def step(self, model: torch.nn.Module, aggregated: torch.Tensor) -> None:
        set_flat_params(model, flat_params(model) + self.lr * aggregated)

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass


def round_generator(seed: int, round: int, client: int = -1) -> torch.Generator:
    """The generator of one round (``client=-1``: the server's) from ``(seed, round, client)``."""
    return torch.Generator().manual_seed(((seed * 1_000_003 + round) * 10_007 + client + 1) % 2**63)


def run_rounds(
    fabric: Fabric,
    model: torch.nn.Module,
    clients: Sequence[Callable[[torch.nn.Module, int, torch.Generator], Update]],
    *,
    rounds: int,
    seed: int,
    select: Callable[[int, torch.Generator], Sequence[int]] | None = None,
    byzantine: Sequence[int] = (),
    attack: Callable[..., torch.Tensor] = no_attack,
    aggregator: Callable[..., torch.Tensor] = mean,
    server: Any = None,
    weigh: Callable[[list[Update]], torch.Tensor] | None = None,
    evaluate: Callable[[int, torch.nn.Module], dict[str, float]] | None = None,
    evaluate_every: int = 1,
    checkpoint: Path | None = None,
    checkpoint_every: int = 0,
    resume: bool = False,
    desc: str = "rounds",
) -> History:
    """Run ``rounds`` federated rounds on the global ``model`` (see the module docstring).

    Round ``r``: ``participants = select(r, g)`` (default: every client); client ``i`` returns
    ``clients[i](model, r, g_i)``; the messages of participants listed in ``byzantine`` are
    replaced by ``attack(honest, byzantine_messages, g)``; weights are ``weigh(updates)`` (the
    updates as the server receives them: attacked messages included) or each
    ``Update.weight``; ``server.step(model, aggregator(messages, weights))``. When the updates
    carry ``buffers``, the model's floating-point buffers become their mean under the same
    weights (every participant's, since attacks act on messages only).

    The History (step = round) holds ``participants``, ``byzantine``, the mean over honest
    participants of each ``Update.info`` key as ``client_<key>`` (read after ``weigh``, so
    ``weigh`` may add entries), and ``evaluate(r, model)``
    every ``evaluate_every`` rounds and at the last round (model in eval mode; gradients stay
    on, so an evaluation may run PGD: wrap plain forward passes in ``torch.no_grad()``).
    With ``checkpoint`` set, the model, the server's ``state_dict()``, the round and the
    history are saved every ``checkpoint_every`` rounds and at the end; ``resume=True``
    continues from there to the same result as an uninterrupted run.
    """
    server = DeltaServer() if server is None else server
    byzantine_set = set(byzantine)
    history, start = History(), 0
    if checkpoint is not None and resume and Path(checkpoint).exists():
        rest = fabric.load(checkpoint, {"model": model}, weights_only=True)
        start, history = int(rest["round"]), History(rest["history"])
        server.load_state_dict(rest["server"])
    metrics_file = Path(checkpoint).with_name("metrics.jsonl") if checkpoint else None
    if metrics_file is not None and fabric.is_global_zero:
        training.start_metrics_log(metrics_file, "round", start)

    def save(rounds_done: int) -> None:
        if checkpoint is not None:
            state = {
                "model": model,
                "round": rounds_done,
                "history": history.to_dict(),
                "server": server.state_dict(),
            }
            training._atomic_save(fabric, Path(checkpoint), state)

    bar = progress(
        range(start, rounds),
        desc=desc,
        initial=start,
        total=rounds,
        disable=not (fabric.is_global_zero and progress_enabled()),
    )
    has_buffers = bool(_float_buffers(model))
    for r in bar:
        g = round_generator(seed, r)
        participants = list(select(r, g)) if select is not None else list(range(len(clients)))
        updates = [clients[i](model, r, round_generator(seed, r, i)) for i in participants]
        bad = [j for j, i in enumerate(participants) if i in byzantine_set]
        good = [j for j in range(len(participants)) if j not in bad]
        messages = torch.stack([u.message for u in updates])
        if bad and good:
            messages[bad] = attack(messages[good], messages[bad], g)
            for j in bad:
                updates[j] = dataclasses.replace(updates[j], message=messages[j])
        weights = (
            weigh(updates)
            if weigh is not None
            else torch.tensor([u.weight for u in updates], dtype=messages.dtype)
        )
        server.step(model, aggregator(messages, weights))
        if any(u.buffers is not None for u in updates):
            set_flat_buffers(model, mean(torch.stack([u.buffers for u in updates]), weights))
        elif has_buffers:
            raise CompanionError(
                "the model has floating-point buffers (BatchNorm statistics) but the clients "
                "sent none: return Update(..., buffers=...) (local_sgd gives them), or the "
                "global model's statistics never change"
            )
        logged: dict[str, float] = {"participants": len(participants), "byzantine": len(bad)}
        for key in sorted({k for j in good for k in updates[j].info}):
            values = [updates[j].info[key] for j in good if key in updates[j].info]
            logged[f"client_{key}"] = sum(values) / len(values)
        if evaluate is not None and (r % evaluate_every == 0 or r == rounds - 1):
            was_training = model.training
            model.eval()
            logged.update(evaluate(r, model))
            model.train(was_training)
        history.log(r, **logged)
        if metrics_file is not None and fabric.is_global_zero:
            with metrics_file.open("a") as f:
                f.write(json.dumps({"round": r, **logged}) + "\n")
        if checkpoint_every and (r + 1) % checkpoint_every == 0:
            save(r + 1)
    save(rounds)
    bar.close()
    return history
