"""Predictive coding, equilibrium propagation and contrastive Hebbian learning as one
energy-based model, and their weight updates at the infinitesimal inference limit.

Millidge, Song, Salvatori, Lukasiewicz & Bogacz, *Backpropagation at the Infinitesimal Inference
Limit of Energy-Based Models: Unifying Predictive Coding, Equilibrium Propagation, and
Contrastive Hebbian Learning*, ICLR 2023. Code: BerenMillidge/infinitesimal_inference_limit
(``pcn.py``: ``PC_Net2_GPU.gradient_infer``, ``PCLayer2_GPU.backward``).

The network is an MLP ``f_l(x) = φ(W_l x + b_l)`` (tanh hidden layers, the official ReLU as an
option; identity output) with the loss ``L(ŷ, y) = ½‖ŷ − y‖²`` on one-hot targets. Its
*activities* ``x_1 … x_{L−1}`` become free variables of an energy (the PC energy; ``x_0`` is the
clamped input)::

    E_β(x; θ) = Σ_{l=1}^{L−1} ½‖x_l − f_l(x_{l−1})‖² + β · L(f_L(x_{L−1}), y),          (1)

*Inference* lowers ``E`` over the activities, by gradient descent from the feed-forward pass
(``x ← x − μ ∂E/∂x``). With ``β = 0`` (the *free phase*) the feed-forward pass is the minimum and
every prediction error ``e_l = x_l − f_l(x_{l−1})`` is zero, so ``∂E/∂θ = 0`` there. A small
``β`` *nudges* the output towards the target and the equilibrium moves by ``O(β)``. The paper's
result: at the nudged equilibrium ``(1/β) ∂E/∂θ → ∂L/∂θ``, the backprop gradient, as ``β → 0``;
PC, EP and CHL are three ways of taking that limit (the equilibrium's first-order shift is the
backward pass). Three estimators of ``∂L/∂θ``, all through :func:`energy_param_grad`:

* **PC** (one nudged phase; the code's ``gradient_infer`` then the update divided by λ = β):
  ``g_PC = (1/β) ∂E_β/∂θ |_{x*_β}``;
* **EP** (two nudged phases; Scellier & Bengio's quotient, in the symmetric form of Laborieux
  et al. 2021): ``g_EP = (∂E_β/∂θ|_{x*_β} − ∂E_{−β}/∂θ|_{x*_{−β}}) / (2β)``. Its one-sided form
  ``(∂E_β/∂θ|_{x*_β} − ∂E_0/∂θ|_{x*_0}) / β`` is ``g_PC`` exactly on this energy, because the
  free phase's ``∂E_0/∂θ`` is zero; the symmetric form cancels the ``O(β)`` bias;
* **CHL** (a clamped and a free phase, the Hebbian contrast of Movellan 1991; the paper's exact
  CHL formula was not read, this follows its unification and the *weak feedback* of Xie & Seung
  2003): the output is pulled towards the target with a feedback weight ``β`` (the clamped
  phase) and the update is the difference of
  the two phases' ``∂E/∂θ``, each a product of a prediction error and a presynaptic activity:
  ``g_CHL = (∂E_β/∂θ|_{x*_β} − ∂E_0/∂θ|_{x_ff}) / β``. On this energy it is ``g_PC`` (the free
  phase's term is zero), which is the paper's point: one property of the free equilibrium, used
  three ways. ``β = 1`` is classical CHL, the output clamped with full weight: *not* backprop.

PC and CHL have an ``O(β)`` remainder, symmetric EP an ``O(β²)`` one; all three break at a
large ``β``.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

ACTIVATIONS = {"tanh": torch.tanh, "relu": torch.relu}


@dataclasses.dataclass
class Net:
    """An MLP's parameters ``[(W_1, b_1), …, (W_L, b_L)]`` and its hidden activation ``φ``
    (tanh here; the official code's ReLU makes the energy non-smooth, see the notebook)."""

    params: list[tuple[torch.Tensor, torch.Tensor]]
    activation: str = "tanh"

    def __post_init__(self) -> None:
        if self.activation not in ACTIVATIONS:
            raise ValueError(
                f"activation must be one of {sorted(ACTIVATIONS)}, got {self.activation!r}"
            )

    def with_params(self, params) -> Net:
        return Net(params, self.activation)

    def leaves(self) -> tuple[Net, list[torch.Tensor]]:
        """A copy whose parameters are fresh autograd leaves, and the flat list of them."""
        flat = [p.detach().clone().requires_grad_(True) for wb in self.params for p in wb]
        pairs = [(flat[2 * i], flat[2 * i + 1]) for i in range(len(self.params))]
        return self.with_params(pairs), flat

    def detached(self) -> Net:
        return self.with_params([(w.detach(), b.detach()) for w, b in self.params])


def init_mlp(
    sizes: tuple[int, ...], seed: int, activation: str = "tanh", dtype=torch.float64, device="cpu"
) -> Net:
    """PyTorch's default ``nn.Linear`` initialisation, U(±1/√fan_in) for weights and biases,
    drawn from NumPy's generator so that every CPU draws the same weights."""
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        bound = 1.0 / math.sqrt(fan_in)
        w = torch.tensor(rng.uniform(-bound, bound, (fan_out, fan_in)), dtype=dtype, device=device)
        b = torch.tensor(rng.uniform(-bound, bound, fan_out), dtype=dtype, device=device)
        params.append((w, b))
    return Net(params, activation)


def layer(net: Net, l: int, x: torch.Tensor) -> torch.Tensor:
    """``f_l(x) = φ(W_l x + b_l)`` for hidden layers, identity for the last (``l`` counts from
    0, the paper's ``f_{l+1}``)."""
    w, b = net.params[l]
    z = x @ w.T + b
    return z if l == len(net.params) - 1 else ACTIVATIONS[net.activation](z)


def forward(net: Net, x0: torch.Tensor) -> list[torch.Tensor]:
    """The feed-forward activities ``[x_1, …, x_L]`` (``x_L = ŷ``)."""
    xs, x = [], x0
    for l in range(len(net.params)):
        x = layer(net, l, x)
        xs.append(x)
    return xs


def loss(y_hat: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``L(ŷ, y) = ½ Σ ‖ŷ − y‖²`` over the batch, so that ``∂L/∂ŷ = ŷ − y`` (the code's
    ``utils.mse_loss``, used by its distance experiment; its training loop's summed MSE is twice
    this)."""
    return 0.5 * ((y_hat - y) ** 2).sum()


def bp_gradient(net: Net, x0: torch.Tensor, y: torch.Tensor) -> list[torch.Tensor]:
    """``∂L/∂θ`` by ``torch.autograd`` on the feed-forward network: the independent yardstick."""
    leafy, flat = net.leaves()
    return [g.detach() for g in torch.autograd.grad(loss(forward(leafy, x0)[-1], y), flat)]


def energy(
    net: Net, hidden: list[torch.Tensor], x0: torch.Tensor, y: torch.Tensor, beta: float
) -> torch.Tensor:
    """Eq. (1): the hidden layers' prediction errors plus ``β`` times the loss of the output
    predicted from the last hidden layer. ``hidden`` are ``x_1 … x_{L−1}``."""
    below = [x0, *hidden]
    e = sum(0.5 * ((hidden[l] - layer(net, l, below[l])) ** 2).sum() for l in range(len(hidden)))
    return e + beta * loss(layer(net, len(net.params) - 1, below[-1]), y)


def relax(
    net: Net, x0: torch.Tensor, y: torch.Tensor, beta: float, mu: float, steps: int
) -> tuple[list[torch.Tensor], float]:
    """Inference: ``steps`` gradient steps ``x_l ← x_l − μ ∂E/∂x_l`` on the hidden activities,
    from the feed-forward pass (the code's ``gradient_infer`` loop, ``mu_dt`` = μ). Returns the
    activities and the relative residual ``‖∂E/∂x‖_end / ‖∂E/∂x‖_start`` (0 when the start is
    already an equilibrium): how far from the equilibrium inference stopped."""
    fixed = net.detached()
    hidden = [x.clone().requires_grad_(True) for x in forward(fixed, x0)[:-1]]

    def grads_and_norm():
        grads = torch.autograd.grad(energy(fixed, hidden, x0, y, beta), hidden)
        return grads, math.sqrt(sum(float((g**2).sum()) for g in grads))

    grads, start = grads_and_norm()
    norm = start
    for _ in range(steps):
        with torch.no_grad():
            for x, g in zip(hidden, grads):
                x -= mu * g
        grads, norm = grads_and_norm()
    return [x.detach() for x in hidden], (norm / start if start > 0 else 0.0)


def energy_param_grad(
    net: Net, hidden: list[torch.Tensor], x0: torch.Tensor, y: torch.Tensor, beta: float
) -> list[torch.Tensor]:
    """``∂E_β/∂θ`` at fixed activities: for each layer, its prediction error times the
    presynaptic activity through φ' (the code's ``PCLayer2_GPU.backward``, a vector-Jacobian
    product), and for the output layer ``β`` times the loss gradient."""
    leafy, flat = net.leaves()
    return [g.detach() for g in torch.autograd.grad(energy(leafy, hidden, x0, y, beta), flat)]


def pc_update(net, x0, y, beta, mu, steps):
    """``g_PC = (1/β) ∂E_β/∂θ`` at the nudged equilibrium; returns it and the residual."""
    hidden, residual = relax(net, x0, y, beta, mu, steps)
    return [t / beta for t in energy_param_grad(net, hidden, x0, y, beta)], residual


def ep_update(net, x0, y, beta, mu, steps):
    """``g_EP = (∂E_β/∂θ|_{x*_β} − ∂E_{−β}/∂θ|_{x*_{−β}}) / (2β)`` (symmetric nudging); returns
    it and the larger residual of its two phases."""
    plus, r_plus = relax(net, x0, y, beta, mu, steps)
    minus, r_minus = relax(net, x0, y, -beta, mu, steps)
    gp = energy_param_grad(net, plus, x0, y, beta)
    gm = energy_param_grad(net, minus, x0, y, -beta)
    return [(a - b) / (2 * beta) for a, b in zip(gp, gm)], max(r_plus, r_minus)


def chl_update(net, x0, y, beta, mu, steps):
    """``g_CHL = (∂E_β/∂θ|clamped − ∂E_0/∂θ|free) / β``: the clamped phase relaxed with the output
    pulled to the target at feedback weight ``β``, the free phase the feed-forward pass with no
    pull (its term is zero up to rounding, computed all the same: it is the Hebbian contrast)."""
    clamped, residual = relax(net, x0, y, beta, mu, steps)
    free = [x.detach() for x in forward(net, x0)[:-1]]
    gc = energy_param_grad(net, clamped, x0, y, beta)
    gf = energy_param_grad(net, free, x0, y, 0.0)
    return [(a - b) / beta for a, b in zip(gc, gf)], residual


UPDATES = {"pc": pc_update, "ep": ep_update, "chl": chl_update}


def _flat(ts: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([t.reshape(-1).double() for t in ts])


def cosine(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    """Cosine similarity of two updates, every parameter flattened into one vector (float64)."""
    va, vb = _flat(a), _flat(b)
    return float(va @ vb / (va.norm() * vb.norm()))


def relative_error(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    """``‖a − b‖ / ‖b‖`` over all parameters: the gap of an update ``a`` from the gradient ``b``."""
    va, vb = _flat(a), _flat(b)
    return float((va - vb).norm() / vb.norm())


def loglog_slope(betas, gaps) -> float:
    """Least-squares slope of ``log gap`` against ``log β``: 1 for a first-order remainder, 2 for
    a second-order one."""
    return float(np.polyfit(np.log(np.asarray(betas)), np.log(np.asarray(gaps)), 1)[0])
