"""Prequential description length and its three estimators (Bornschein, Li & Hutter, ICLR 2023).

The prequential (predictive-sequential) code transmits the labels ``y₁ … y_N`` of a dataset in a
fixed order; sender and receiver share the inputs and run the same learner, so the label of
example ``t`` costs ``−log₂ p(y_t | x_t, θ̂(D_<t))`` bits, where ``θ̂(D_<t)`` was fitted only on
the examples already transmitted (the paper's Eq. 1)::

    L_preq(D) = Σ_t −log₂ p(y_t | x_t, θ̂(D_<t)).

The first examples, before anything was learned, are sent with the uniform code, ``log₂ C`` bits
each. The estimators differ only in how ``θ̂`` follows the growing prefix:

* *block-wise* (Blier & Ollivier 2018): split points ``s_0 < s_1 < … < s_K = N``; for each block
  a fresh network is trained on ``D_<s_k`` and encodes ``D[s_k : s_{k+1}]``;
* *online*: the data arrive in minibatches; each minibatch is first encoded with the current
  parameters, then trained on (one step, or several steps on it alone: the no-replay control);
* *online with rehearsal (replay)*: after the step on the new minibatch, extra steps on
  minibatches drawn uniformly from all examples already encoded (the reference behaviour the
  paper's replay streams approximate without an in-memory buffer);
* *forward calibration*: the encoder's predictions are sharpened or softened by a temperature
  ``p_β(y|x) ∝ exp(β z_y(x))`` whose ``β`` is fitted, before each minibatch, only on the
  encode-time logits of examples already transmitted (reconstructed: the paper's exact
  parametrisation was not reachable).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

LN2 = math.log(2.0)


def code_length_bits(logits: torch.Tensor, labels: torch.Tensor, beta: float = 1.0) -> torch.Tensor:
    """Per example ``−log₂ softmax(β·z)_y`` in bits (Eq. 1's summand); ``beta`` is the inverse
    temperature of forward calibration (1: uncalibrated)."""
    logp = F.log_softmax(beta * logits.double(), dim=-1)
    return -logp.gather(1, labels.view(-1, 1)).squeeze(1) / LN2


def uniform_code_bits(n: int, num_classes: int) -> float:
    """``n`` labels sent with the uniform code: ``n · log₂ C`` bits."""
    return n * math.log2(num_classes)


def fit_inverse_temperature(
    logits: torch.Tensor, labels: torch.Tensor, lo: float = 0.05, hi: float = 5.0, iters: int = 60
) -> float:
    """Forward calibration's fit: ``argmin_β Σ −log softmax(β z)_y`` over ``[lo, hi]``.

    The negative log-likelihood is convex in ``β`` (a log-sum-exp of linear functions minus a
    linear one), so a golden-section search finds its minimum; deterministic and cheap on the
    stored logits. Call it only with examples already encoded."""
    if len(labels) == 0:
        return 1.0
    z = logits.double()
    y = labels.view(-1, 1)

    def nll(beta: float) -> float:
        return float(-F.log_softmax(beta * z, dim=-1).gather(1, y).sum())

    g = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = nll(c), nll(d)
    for _ in range(iters):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = nll(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = nll(d)
    return (a + b) / 2.0


def block_boundaries(n: int, first: int, growth: float = 2.0) -> list[int]:
    """Split points ``s_0 = first, s_1 = growth·first, …, N`` of block-wise estimation (geometric,
    as in Blier & Ollivier's 0.1 %, 0.2 %, … splits); the first block ``[0, first)`` is sent with
    the uniform code."""
    points, s = [first], first
    while True:
        s = int(round(s * growth))
        if s >= n:
            break
        points.append(s)
    return points + [n]


def split_budget(total_steps: int, prefix_sizes: list[int]) -> list[int]:
    """Share ``total_steps`` gradient steps among the block-wise fits in proportion to each
    prefix's size (the same number of epochs for every prefix), summing exactly to the total."""
    weights = np.asarray(prefix_sizes, dtype=float)
    raw = total_steps * weights / weights.sum()
    steps = np.floor(raw).astype(int)
    for i in np.argsort(-(raw - steps))[: total_steps - int(steps.sum())]:
        steps[i] += 1
    return [int(s) for s in steps]


class MLP(nn.Module):
    """The learner: ``in → hidden… → C`` with ReLU (``hidden=()`` is logistic regression),
    initialised from NumPy (Kaiming-uniform like torch's default) so that the initial weights are
    the same on every CPU."""

    def __init__(self, in_dim: int, hidden: tuple[int, ...], classes: int, seed: int, dtype):
        super().__init__()
        rng = np.random.default_rng(seed)
        dims = (in_dim, *hidden, classes)
        self.layers = nn.ModuleList()
        for a, b in zip(dims[:-1], dims[1:]):
            layer = nn.Linear(a, b, dtype=dtype)
            bound = 1.0 / math.sqrt(a)
            with torch.no_grad():
                layer.weight.copy_(torch.from_numpy(rng.uniform(-bound, bound, (b, a))))
                layer.bias.copy_(torch.from_numpy(rng.uniform(-bound, bound, b)))
            self.layers.append(layer)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.flatten(1)
        for layer in self.layers[:-1]:
            x = F.relu(layer(x))
        return self.layers[-1](x)


def sgd_step(model: nn.Module, optimizer, x: torch.Tensor, y: torch.Tensor) -> None:
    """One gradient step on the mean cross-entropy of ``(x, y)``."""
    optimizer.zero_grad(set_to_none=True)
    F.cross_entropy(model(x), y).backward()
    optimizer.step()


@torch.no_grad()
def encode(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The logits the sender (and receiver) use to code a minibatch, before any step on it."""
    return model(x).detach().double()


def online_code_length(
    model: nn.Module,
    optimizer,
    x: torch.Tensor,
    y: torch.Tensor,
    num_classes: int,
    batch_size: int,
    steps_on_new: int = 1,
    replay_steps: int = 0,
    rng: np.random.Generator | None = None,
):
    """Online prequential coding of ``(x, y)`` in their given order (the online estimators).

    Minibatch ``b`` (examples ``[bB, (b+1)B)``) is encoded with the current parameters, its bits
    added, and only then trained on: ``steps_on_new`` steps on the minibatch itself, followed by
    ``replay_steps`` steps each on ``B`` examples drawn uniformly (with replacement) from
    ``[0, (b+1)B)``, everything already encoded. The first minibatch is sent with the uniform
    code. No step follows the last minibatch (nothing is left to encode).

    Returns ``(bits per example, encode-time logits [N, C] (uniform batch: zeros), steps)``."""
    n = len(y)
    bits = torch.empty(n, dtype=torch.float64)
    logits = torch.zeros(n, num_classes, dtype=torch.float64)
    rng = rng if rng is not None else np.random.default_rng(0)
    steps = 0
    starts = list(range(0, n, batch_size))
    for i, start in enumerate(starts):
        end = min(start + batch_size, n)
        if i == 0:
            bits[start:end] = math.log2(num_classes)
        else:
            z = encode(model, x[start:end])
            logits[start:end] = z
            bits[start:end] = code_length_bits(z, y[start:end])
        if i == len(starts) - 1:
            break
        model.train()
        for _ in range(steps_on_new):
            sgd_step(model, optimizer, x[start:end], y[start:end])
            steps += 1
        for _ in range(replay_steps):
            idx = torch.from_numpy(rng.integers(0, end, batch_size))
            sgd_step(model, optimizer, x[idx], y[idx])
            steps += 1
    return bits, logits, steps


def forward_calibrated_bits(
    logits: torch.Tensor, y: torch.Tensor, batch_size: int, window: int, first: int
):
    """Forward calibration of stored encode-time logits (same predictions, recalibrated).

    Before minibatch ``b`` is encoded, ``β_b`` is fitted on the encode-time logits of the at most
    ``window`` examples encoded just before it (never on minibatch ``b`` itself, never on
    examples whose logits came from a model that had already trained on them); the first
    ``first`` examples (uniform code) and minibatches with fewer than one earlier model-coded
    minibatch keep ``β = 1``. Returns ``(bits per example with the uniform first block left at
    log₂ C, β per minibatch)``."""
    n, num_classes = logits.shape
    bits = code_length_bits(logits, y)
    bits[:first] = math.log2(num_classes)
    betas = []
    for start in range(0, n, batch_size):
        end = min(start + batch_size, n)
        if start < first:
            betas.append(1.0)
            continue
        lo = max(first, start - window)
        beta = fit_inverse_temperature(logits[lo:start], y[lo:start]) if start > lo else 1.0
        betas.append(beta)
        bits[start:end] = code_length_bits(logits[start:end], y[start:end], beta)
    return bits, betas


def blockwise_code_length(
    make_model,
    make_optimizer,
    x: torch.Tensor,
    y: torch.Tensor,
    num_classes: int,
    batch_size: int,
    boundaries: list[int],
    steps_per_block: list[int],
    rng: np.random.Generator,
):
    """Block-wise prequential coding: ``[0, s_0)`` with the uniform code; for each ``k`` a fresh
    model (``make_model()``, the same initialisation every time) is trained for
    ``steps_per_block[k]`` minibatch steps on ``D[:s_k]`` (epochs of reshuffled minibatches of
    ``batch_size``) and encodes ``D[s_k : s_{k+1}]``.

    Returns ``(bits per example, encode-time logits, steps)``."""
    n = len(y)
    first = boundaries[0]
    bits = torch.empty(n, dtype=torch.float64)
    logits = torch.zeros(n, num_classes, dtype=torch.float64)
    bits[:first] = math.log2(num_classes)
    steps = 0
    for k, (s, e) in enumerate(zip(boundaries[:-1], boundaries[1:])):
        model = make_model()
        optimizer = make_optimizer(model)
        model.train()
        order = np.empty(0, dtype=np.int64)
        for _ in range(steps_per_block[k]):
            if len(order) < min(batch_size, s):
                order = np.concatenate([order, rng.permutation(s)])
            idx, order = order[: min(batch_size, s)], order[min(batch_size, s) :]
            idx = torch.from_numpy(idx)
            sgd_step(model, optimizer, x[idx], y[idx])
            steps += 1
        z = encode(model, x[s:e])
        logits[s:e] = z
        bits[s:e] = code_length_bits(z, y[s:e])
    return bits, logits, steps


def hindsight_calibrated_bits(logits: torch.Tensor, y: torch.Tensor, first: int) -> float:
    """Diagnostic, not a code: the bits if one β were fitted on *all* encode-time logits in
    hindsight (the receiver could not know it). ``L_uncalibrated − this`` is the most a single
    temperature could save: the room forward calibration has."""
    n, num_classes = logits.shape
    beta = fit_inverse_temperature(logits[first:], y[first:])
    return float(code_length_bits(logits[first:], y[first:], beta).sum()) + first * math.log2(
        num_classes
    )
