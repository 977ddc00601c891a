"""Byz-VR-MARINA (Gorbunov, Horváth, Richtárik, Gidel, ICLR 2023, arXiv:2206.00529).

n workers minimise f(x) = (1/|G|) Σ_{i∈G} f_i(x); the good workers G are honest, the others are
Byzantine and send anything. Each f_i is a mean over m samples. Algorithm 1 of the paper:

    g⁰ = ARAgg(∇f_1(x⁰), …, ∇f_n(x⁰))                       (full gradients at the start)
    for k = 0, 1, …:
        c_k ~ Bernoulli(p)                                  (one coin, shared by everyone)
        x^{k+1} = x^k − γ g^k
        good worker i sends
            g_i^{k+1} = ∇f_i(x^{k+1})                                if c_k = 1
            g_i^{k+1} = g^k + Q(Δ̂_i(x^{k+1}, x^k))                  if c_k = 0
        with Δ̂_i = (1/b) Σ_{j∈I} [∇f_ij(x^{k+1}) − ∇f_ij(x^k)], the *same* b samples at both
        points (a variance-reduced estimate of the gradient difference);
        g^{k+1} = ARAgg(g_1^{k+1}, …, g_n^{k+1})

ARAgg is a (δ, c)-agnostic robust aggregator: coordinate-wise median, RFA (geometric median)
or Krum applied after *bucketing* (shuffle, average buckets of s = 2, aggregate the means;
Karimireddy et al. 2022). Q is an unbiased compressor, E Q(x) = x, E‖Q(x) − x‖² ≤ ω‖x‖², here
RandK: keep K coordinates chosen uniformly at random, scaled by d/K (ω = d/K − 1). The paper's
coin probability is p = min{b/m, 1/(1 + ω)} (Theorems 2.1 and 2.2).

Why it helps: with the coin at 0 the honest messages differ only by the compressed, sampled
difference Δ̂_i, whose variance shrinks with ‖x^{k+1} − x^k‖², so as the iterates settle the
good messages agree and the robust aggregator has nothing to be fooled by. Plain robust SGD sends
fresh stochastic gradients whose variance never shrinks: it stalls at a noise floor.

Differences from the official code (SamuelHorvath/VR_Byzantine, ``code/worker.py``,
``code/compressors/random_sparsification.py``, ``code/run_a9a.py``), where this module follows
the paper instead: the official RandK zeroes the sampled coordinates and keeps the rest (biased);
its ``MarinaWorker`` adds Q(Δ̂_i) to its *own* previous message, not to the server's g^k; and it
takes a full gradient at the start of every epoch with no coin (``full_grad_prob = 0``).

The baselines are robust SGD (each worker sends a minibatch gradient) and robust momentum SGD
(BR-SGDm, Karimireddy et al. 2021: each worker sends m_i = β m_i + (1 − β) ∇f_i(x; batch)), both
through the same aggregator, with the same step x ← x − γ · aggregate.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from typing import Any

import torch

from companion.core.federated import Update, bucketing, flat_params, set_flat_params
from companion.errors import CompanionError

FLOAT_BITS = 32  # one float32 coordinate

# --------------------------------------------------------------------------------------------
# The problem: ℓ2-regularised logistic regression (the paper's Sec. 4 experiments)


def logistic_loss(w: torch.Tensor, X: torch.Tensor, y: torch.Tensor, lam: float) -> torch.Tensor:
    """f(w) = (1/m) Σ_j [log(1 + exp(a_jᵀw)) − y_j a_jᵀw] + (λ/2)‖w‖², labels y ∈ {0, 1}."""
    z = X @ w
    return (torch.nn.functional.softplus(z) - y * z).mean() + 0.5 * lam * (w @ w)


def logistic_grad(w: torch.Tensor, X: torch.Tensor, y: torch.Tensor, lam: float) -> torch.Tensor:
    """∇f(w) = (1/m) Xᵀ(σ(Xw) − y) + λw, in closed form (no autograd: it runs every round)."""
    return X.T @ (torch.sigmoid(X @ w) - y) / len(y) + lam * w


def solve_optimum(
    X: torch.Tensor, y: torch.Tensor, lam: float, iterations: int = 50
) -> tuple[torch.Tensor, float]:
    """(x*, f*) by Newton's method in float64 (f is λ-strongly convex, d is small).

    Newton converges quadratically here, so the gap f(x) − f* can be trusted down to ~1e-14.
    """
    X, y = X.double(), y.double()
    w = torch.zeros(X.shape[1], dtype=torch.float64)
    eye = torch.eye(X.shape[1], dtype=torch.float64)
    for _ in range(iterations):
        p = torch.sigmoid(X @ w)
        hessian = (X.T * (p * (1 - p))) @ X / len(y) + lam * eye
        step = torch.linalg.solve(hessian, logistic_grad(w, X, y, lam))
        w = w - step
        if step.abs().max() < 1e-15:
            break
    return w, float(logistic_loss(w, X, y, lam))


def smoothness(X: torch.Tensor, lam: float) -> float:
    """L = λ_max(XᵀX)/(4m) + λ: the gradient's Lipschitz constant (σ' ≤ 1/4)."""
    X = X.double()
    return float(torch.linalg.eigvalsh(X.T @ X / len(X)).max()) / 4 + lam


# --------------------------------------------------------------------------------------------
# Compression: unbiased RandK


def rand_k(x: torch.Tensor, k: int, generator: torch.Generator) -> torch.Tensor:
    """RandK: keep ``k`` of the d coordinates, chosen uniformly without replacement, and scale
    them by d/k, so that E Q(x) = x and E‖Q(x) − x‖² = (d/k − 1)‖x‖² (ω = d/k − 1)."""
    d = x.numel()
    if not 1 <= k <= d:
        raise CompanionError(f"RandK needs 1 <= k <= d = {d}, got k = {k}")
    keep = torch.randperm(d, generator=generator)[:k]
    out = torch.zeros_like(x)
    out[keep] = x[keep] * (d / k)
    return out


def rand_k_omega(d: int, k: int) -> float:
    """RandK's variance parameter ω = d/k − 1."""
    return d / k - 1


def message_bits(d: int, k: int | None) -> int:
    """Bits of one message: d float32 values, or with RandK k values plus k indices of
    ⌈log₂ d⌉ bits each (what a worker must send so that the server can place them)."""
    if k is None:
        return FLOAT_BITS * d
    return k * (FLOAT_BITS + math.ceil(math.log2(d)))


def alie_z(n: int, f: int) -> float:
    """ALIE's z from its own formula (Baruch et al. 2019), as the official code computes it:
    s = ⌊n/2 + 1⌋ − f supporters are needed, z = Φ⁻¹((n − f − s)/(n − f)).
    With n = 5 workers and f = 1 Byzantine this is z = 0 (the honest mean); with the
    official 15 + 5 workers, z ≈ 0.25."""
    s = math.floor(n / 2 + 1) - f
    return float(statistics.NormalDist().inv_cdf((n - f - s) / (n - f)))


def marina_probability(b: int, m: int, omega: float = 0.0) -> float:
    """The coin's probability p = min{b/m, 1/(1 + ω)} (paper, Theorems 2.1-2.2)."""
    return min(b / m, 1.0 / (1.0 + omega))


# --------------------------------------------------------------------------------------------
# Servers (hold g^k, the previous point and the shared coin) and clients (the workers)


@dataclasses.dataclass
class GradientServer:
    """x ← x − γ · aggregate: the server of robust SGD and momentum SGD.

    ``round`` counts steps taken (the bucketing aggregator seeds its shuffle from it), and
    ``clients`` lists workers with state (momentum buffers), saved with the server's state so
    that an interrupted run resumes exactly.
    """

    lr: float
    seed: int = 0
    round: int = 0
    clients: tuple = ()

    def step(self, model: torch.nn.Module, aggregated: torch.Tensor) -> None:
        set_flat_params(model, flat_params(model) - self.lr * aggregated)
        self.round += 1

    def state_dict(self) -> dict[str, Any]:
        return {"round": self.round, "clients": [c.state_dict() for c in self.clients]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.round = int(state["round"])
        for client, s in zip(self.clients, state["clients"]):
            client.load_state_dict(s)


@dataclasses.dataclass
class MarinaServer:
    """The server of Algorithm 1: keeps g^k and x^k, and tosses the shared coin c_k.

    Round r of the federated loop computes the messages at the current model x^r. Round 0 is the
    start (everyone sends ∇f_i(x⁰)); in round r ≥ 1 the coin decides between full gradients and
    compressed differences against the previous point x^{r−1}. ``step`` sets
    g^r = aggregate and moves the model to x^{r+1} = x^r − γ g^r.
    """

    lr: float
    p: float
    seed: int = 0
    round: int = 0
    g: torch.Tensor | None = None
    x_prev: torch.Tensor | None = None
    _coins: dict = dataclasses.field(default_factory=dict, repr=False)

    def coin(self, r: int) -> bool:
        """c = 1 (full gradients) in round r: always at r = 0, else with probability p.

        Drawn from a generator seeded by (seed, r), so every worker sees the same coin and a
        resumed run draws the same coins."""
        if r == 0:
            return True
        if r not in self._coins:
            g = torch.Generator().manual_seed(seed_of(self.seed, r, -7))
            self._coins = {r: bool(torch.rand((), generator=g) < self.p)}
        return self._coins[r]

    def step(self, model: torch.nn.Module, aggregated: torch.Tensor) -> None:
        x = flat_params(model)
        self.g, self.x_prev = aggregated.detach().clone(), x
        set_flat_params(model, x - self.lr * self.g)
        self.round += 1

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {"round": self.round}
        if self.g is not None:
            state.update(g=self.g, x_prev=self.x_prev)
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.round = int(state["round"])
        self.g, self.x_prev = state.get("g"), state.get("x_prev")


def seed_of(seed: int, r: int, salt: int) -> int:
    """A generator seed from (seed, round, salt): distinct streams per use.

    Salts are negative and offset below -1, so these streams never coincide with the ones
    ``core.federated.round_generator`` gives the server (``client=-1``) and the workers
    (``client >= 0``) of any round, for fewer than 10,000 workers."""
    if salt >= 0:
        raise CompanionError(f"salt {salt!r} is not valid; valid: a negative integer")
    return ((seed * 1_000_003 + r) * 10_007 + salt - 1) % 2**63


class _Worker:
    """A worker holding the whole data set (homogeneous, as in the paper's experiments).

    ``label_flip``: a Byzantine data attack, the worker trains on labels 1 − y (the official
    ``LableFlippingWorker``); it then runs the same algorithm as an honest worker.
    ``k``: RandK's k, or None for no compression.
    """

    def __init__(
        self,
        X: torch.Tensor,
        y: torch.Tensor,
        lam: float,
        batch_size: int,
        k: int | None = None,
        label_flip: bool = False,
    ):
        self.X, self.y = X, (1 - y) if label_flip else y
        self.lam, self.batch_size, self.k = lam, min(batch_size, len(y)), k
        self.label_flip = label_flip
        self.d = X.shape[1]

    def batch(self, generator: torch.Generator) -> torch.Tensor:
        """b sample indices drawn uniformly at random (with replacement)."""
        return torch.randint(len(self.y), (self.batch_size,), generator=generator)

    def grad(self, w: torch.Tensor, rows: torch.Tensor | None = None) -> torch.Tensor:
        if rows is None:
            return logistic_grad(w, self.X, self.y, self.lam)
        return logistic_grad(w, self.X[rows], self.y[rows], self.lam)

    def grad_difference(self, x_new: torch.Tensor, x_old: torch.Tensor, rows: torch.Tensor):
        """Δ̂ = ∇f(x_new; rows) − ∇f(x_old; rows): both points on the same samples (one
        gather, one matrix product for the two points)."""
        Xb = self.X[rows]
        s = torch.sigmoid(Xb @ torch.stack([x_new, x_old], 1))
        return Xb.T @ (s[:, 0] - s[:, 1]) / len(rows) + self.lam * (x_new - x_old)

    def compress(self, v: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        return v if self.k is None else rand_k(v, self.k, generator)

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass


class SGDWorker(_Worker):
    """Robust SGD's worker: sends Q(∇f_i(x; batch)), a (compressed) minibatch gradient."""

    def __call__(self, model: torch.nn.Module, round: int, generator: torch.Generator) -> Update:
        w = flat_params(model)
        g = self.compress(self.grad(w, self.batch(generator)), generator)
        return Update(g, info={"bits": message_bits(self.d, self.k)})


class MomentumWorker(_Worker):
    """BR-SGDm's worker (Karimireddy et al. 2021): m_i ← β m_i + (1 − β) ∇f_i(x; batch),
    m_i⁰ = the first gradient; sends Q(m_i)."""

    def __init__(self, *args, beta: float = 0.9, **kwargs):
        super().__init__(*args, **kwargs)
        self.beta, self.m = beta, None

    def __call__(self, model: torch.nn.Module, round: int, generator: torch.Generator) -> Update:
        g = self.grad(flat_params(model), self.batch(generator))
        self.m = g if self.m is None else self.beta * self.m + (1 - self.beta) * g
        return Update(self.compress(self.m, generator), info={"bits": message_bits(self.d, self.k)})

    def state_dict(self) -> dict[str, Any]:
        return {} if self.m is None else {"m": self.m}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.m = state.get("m")


class MarinaWorker(_Worker):
    """Byz-VR-MARINA's worker (Algorithm 1, line 7), reading g^k, x^k and the coin from
    ``server``: the full gradient ∇f_i(x^{k+1}) when the coin is 1, else
    g^k + Q(Δ̂_i) with Δ̂_i the minibatch gradient difference on the same b samples."""

    def __init__(self, *args, server: MarinaServer, **kwargs):
        super().__init__(*args, **kwargs)
        self.server = server

    def __call__(self, model: torch.nn.Module, round: int, generator: torch.Generator) -> Update:
        x_new = flat_params(model)
        if self.server.coin(round):
            return Update(self.grad(x_new), info={"bits": message_bits(self.d, None)})
        delta = self.grad_difference(x_new, self.server.x_prev, self.batch(generator))
        # the worker sends Q(Δ̂_i) only; the server adds its own g^k
        message = self.server.g + self.compress(delta, generator)
        return Update(message, info={"bits": message_bits(self.d, self.k)})


# --------------------------------------------------------------------------------------------
# The aggregator with bucketing, seeded per round


class BucketedAggregator:
    """ARAgg = ``aggregator`` after bucketing of size ``s`` (s ≤ 1: no bucketing).

    The shuffle of round r uses a generator seeded by (seed, server.round), so it is the same
    after a resume. ``kwargs`` go to the aggregator (e.g. ``f`` for Krum)."""

    def __init__(self, aggregator, s: int, server, seed: int, **kwargs):
        self.aggregator, self.s, self.server, self.seed = aggregator, s, server, seed
        self.kwargs = kwargs

    def __call__(self, messages: torch.Tensor, weights: torch.Tensor | None = None):
        if self.s <= 1:
            return self.aggregator(messages, None, **self.kwargs)
        g = torch.Generator().manual_seed(seed_of(self.seed, self.server.round, -3))
        return bucketing(messages, self.s, self.aggregator, g, **self.kwargs)
