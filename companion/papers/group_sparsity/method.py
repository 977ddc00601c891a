"""Diagonally grouped linear networks and the gradient-descent algorithms of Li et al. (2023).

Regression ``y = X w* + ε`` with the p coordinates of ``w`` split into L groups of size s. The
grouped network reparameterises group l as ``w_l = u_l^D · v_l`` with one scalar ``u_l`` and a
vector ``v_l ∈ ℝˢ`` (paper Sec. 3, depth D = 2 in all its experiments). Training minimises the
plain empirical risk ``L(w) = (1/m)‖y − X w‖²`` (``torch.nn.MSELoss``: no ½) with no penalty;
the implicit bias toward group-sparse ``w`` comes from the small initialisation of ``u``.

Everything is vectorised: ``u`` has shape (L,), ``V`` shape (L, s), and ``w = (u^D)[:, None] * V``
flattened row by row (group l holds coordinates l·s … l·s + s − 1), the layout of the official
``groupModel`` in ``src/group_model.py``.

* :func:`alg1_step` — paper Algorithm 1, official ``groupTrainer._one_epoch``: a gradient step on
  ``u`` with learning rate η; for each group a step on ``v_l`` with step size ``u_l^(−2D)`` (no η),
  then ``v_l ← v_l / ‖v_l‖``.
* :func:`alg2_step` — the second phase of paper Algorithm 2, official ``_small_lr_one_epoch``:
  plain gradient descent with rate η on ``(u, V)``, then each ``v_l`` renormalised.
* :func:`train_grouped` — Algorithm 2 (official ``_two_train``): Algorithm 1 until the largest
  relative change of ``u`` between epochs falls below ``tol``, then the second phase.
* Baselines: :func:`diagonal_step` (an ungrouped diagonal linear network ``w = a^N − b^N``, the
  signed form of the official ``sparseModel(only_pos=False)`` in ``src/model.py``) and
  :func:`linear_step` (plain gradient descent on ``w``).
"""

from __future__ import annotations

import torch

from companion.errors import CompanionError


def group_weights(u: torch.Tensor, V: torch.Tensor, depth: int = 2) -> torch.Tensor:
    """``w`` with ``w_l = u_l^D v_l`` (paper Eq. 2), flattened group by group to shape (L·s,)."""
    return (u**depth)[:, None].mul(V).reshape(-1)


def mse(X: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Empirical risk ``(1/m)‖y − X w‖²`` (the official ``MSELoss``, without a ½)."""
    r = X @ w - y
    return r.pow(2).mean()


def risk_gradient(X: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """∇_w of :func:`mse`: ``(2/m) Xᵀ(X w − y)``."""
    return (2.0 / X.shape[0]) * (X.T @ (X @ w - y))


def _grads(X, y, u, V, depth):
    """(∂L/∂u, ∂L/∂V, g) with ``g = ∇_w L`` reshaped to (L, s), by the chain rule."""
    L, s = V.shape
    g = risk_gradient(X, y, group_weights(u, V, depth)).reshape(L, s)
    grad_u = depth * u ** (depth - 1) * (V * g).sum(1)
    grad_V = (u**depth)[:, None] * g
    return grad_u, grad_V, g


def normalize_rows(V: torch.Tensor) -> torch.Tensor:
    """Each ``v_l`` divided by its Euclidean norm (the official code divides with no guard)."""
    return V / V.norm(dim=-1, keepdim=True)


def normalize_or_keep(D: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    """``D_l/‖D_l‖``, or the old ``v_l`` where ``D_l`` is zero or not finite.

    Algorithm 1's direction for group l scales like ``u_l^D``; once a switched-off group's
    ``u_l`` decays below about 1e-19 its direction underflows to zero in float32 and the
    official code (step size ``u_l^(−2D)`` = ∞) would write NaN. Such a group contributes
    nothing to ``w``; keeping its ``v_l`` is our guard, not part of the paper.
    """
    n = D.norm(dim=-1, keepdim=True)
    ok = (n > 0) & torch.isfinite(n)
    return torch.where(ok, D / torch.where(ok, n, torch.ones_like(n)), V)


def alg1_step(
    X: torch.Tensor, y: torch.Tensor, u: torch.Tensor, V: torch.Tensor, lr: float, depth: int = 2
) -> tuple[torch.Tensor, torch.Tensor]:
    """One epoch of Algorithm 1 (official ``_one_epoch``); returns the new ``(u, V)``.

    Both gradients are taken at the current ``(u, V)``. The official step on ``v_l`` is
    ``v_l − u_l^(−2D) · u_l^D g_l = v_l − u_l^(−D) g_l`` followed by normalisation; with
    ``u₀ = 1e-6`` its step size is 1e24. Normalisation ignores a positive factor, so we compute
    the same direction as ``u_l^(2D) v_l − u_l^D g_l``, which never overflows.
    """
    grad_u, _, g = _grads(X, y, u, V, depth)
    ud = (u**depth)[:, None]
    V_new = normalize_or_keep(ud * ud * V - ud * g, V)
    u_new = u - lr * grad_u
    return u_new, V_new


def alg2_step(
    X: torch.Tensor, y: torch.Tensor, u: torch.Tensor, V: torch.Tensor, lr: float, depth: int = 2
) -> tuple[torch.Tensor, torch.Tensor]:
    """One epoch of Algorithm 2's second phase (official ``_small_lr_one_epoch``)."""
    grad_u, grad_V, _ = _grads(X, y, u, V, depth)
    return u - lr * grad_u, normalize_rows(V - lr * grad_V)


def relative_change(u_new: torch.Tensor, u_old: torch.Tensor, eps: float = 1e-12) -> float:
    """``max_l |u_new − u_old| / |u_old + ε|``: Algorithm 2's switching test (official code)."""
    return float(((u_new - u_old).abs() / (u_old + eps).abs()).max())


def init_grouped(L: int, s: int, init: float, dtype=torch.float32):
    """The official initialisation: ``u = init·𝟙``, ``v_l = 𝟙/√s``."""
    u = torch.full((L,), init, dtype=dtype)
    V = torch.full((L, s), 1.0 / s**0.5, dtype=dtype)
    return u, V


def train_grouped(
    X: torch.Tensor,
    y: torch.Tensor,
    group_size: int,
    epochs: int,
    lr: float = 0.01,
    init: float = 1e-6,
    tol: float = 3e-2,
    depth: int = 2,
    algorithm: str = "alg2",
    record_every: int = 1,
):
    """Algorithm 2 (or Algorithm 1 throughout with ``algorithm="alg1"``) from the official init.

    Returns ``(w, switch_epoch, ws)``: final weights, the epoch where Algorithm 2 switched to
    plain gradient descent (−1 if it never did) and the weights every ``record_every`` epochs
    (a tensor of shape (records, p), the first record after epoch 1).
    """
    if algorithm not in ("alg1", "alg2"):
        from companion.errors import unknown

        raise unknown("algorithm", algorithm, ("alg1", "alg2"))
    p = X.shape[1]
    if p % group_size:
        raise CompanionError(f"p = {p} is not divisible by group_size = {group_size}")
    u, V = init_grouped(p // group_size, group_size, init, X.dtype)
    prev_u = torch.ones_like(u)  # the official code starts the test from prev_u = 1
    phase1 = True
    switch = -1
    ws = []
    for epoch in range(epochs):
        if phase1:
            u, V = alg1_step(X, y, u, V, lr, depth)
            if algorithm == "alg2":
                change = relative_change(u, prev_u)
                prev_u = u
                if change < tol:
                    phase1, switch = False, epoch
        else:
            u, V = alg2_step(X, y, u, V, lr, depth)
        if (epoch + 1) % record_every == 0:
            ws.append(group_weights(u, V, depth))
    w = group_weights(u, V, depth)
    return w, switch, torch.stack(ws) if ws else w[None]


def diagonal_step(
    X: torch.Tensor, y: torch.Tensor, a: torch.Tensor, b: torch.Tensor, lr: float, depth: int = 2
) -> tuple[torch.Tensor, torch.Tensor]:
    """One gradient step on the ungrouped diagonal network ``w = a^N − b^N`` (N = ``depth``)."""
    g = risk_gradient(X, y, a**depth - b**depth)
    return a - lr * depth * a ** (depth - 1) * g, b + lr * depth * b ** (depth - 1) * g


def train_diagonal(X, y, epochs, lr=0.01, init=1e-6, depth=2, record_every=1):
    """Gradient descent on ``w = a^N − b^N`` from ``a = b = init·𝟙``; returns ``(w, ws)``."""
    a = torch.full((X.shape[1],), init, dtype=X.dtype)
    b = a.clone()
    ws = []
    for epoch in range(epochs):
        a, b = diagonal_step(X, y, a, b, lr, depth)
        if (epoch + 1) % record_every == 0:
            ws.append(a**depth - b**depth)
    w = a**depth - b**depth
    return w, torch.stack(ws) if ws else w[None]


def linear_step(X: torch.Tensor, y: torch.Tensor, w: torch.Tensor, lr: float) -> torch.Tensor:
    """One gradient step of the plain linear model on :func:`mse`."""
    return w - lr * risk_gradient(X, y, w)


def train_linear(X, y, epochs, lr=0.01, record_every=1):
    """Gradient descent on ``w`` from zero (its limit is the minimum-norm interpolant)."""
    w = torch.zeros(X.shape[1], dtype=X.dtype)
    ws = []
    for epoch in range(epochs):
        w = linear_step(X, y, w, lr)
        if (epoch + 1) % record_every == 0:
            ws.append(w)
    return w, torch.stack(ws) if ws else w[None]


def group_norms(w: torch.Tensor, group_size: int) -> torch.Tensor:
    """‖w_l‖ for every group l."""
    return w.reshape(-1, group_size).norm(dim=1)


def support_margin(w: torch.Tensor, support: torch.Tensor, group_size: int) -> float:
    """min over true groups of ‖w_l‖ divided by max over other groups of ‖w_l‖.

    Above 1, some threshold on group norms returns exactly the true group support.
    """
    n = group_norms(w, group_size)
    mask = torch.zeros_like(n, dtype=torch.bool)
    mask[support] = True
    return float(n[mask].min() / n[~mask].max().clamp_min(1e-30))


def estimation_error(w: torch.Tensor, w_star: torch.Tensor) -> float:
    """``‖w − w*‖²``."""
    return float((w - w_star).pow(2).sum())


# --- batched modules and an optimizer for the core training loop ------------------------------
# B independent regressions train at once (every sample size and draw of the experiment): data
# set b has its own parameters, and the loss is a sum of per-data-set risks, so each gets
# exactly the gradient it would get alone. Designs of different sizes m_b are padded with zero
# rows (zero rows add nothing to the loss or the gradient).


def batched_risk(
    X: torch.Tensor, y: torch.Tensor, w: torch.Tensor, m: torch.Tensor
) -> torch.Tensor:
    """``Σ_b (1/m_b)‖y_b − X_b w_b‖²`` for X (B, m_max, p), y (B, m_max), w (B, p), m (B,)."""
    r = torch.einsum("bmp,bp->bm", X, w) - y
    return (r.pow(2).sum(1) / m).sum()


class GroupedLinear(torch.nn.Module):
    """B diagonally grouped linear networks, ``w_{b,l} = u_{b,l}^D v_{b,l}``; the official init."""

    def __init__(self, batch: int, p: int, group_size: int, depth: int = 2, init: float = 1e-6):
        super().__init__()
        if p % group_size:
            raise CompanionError(f"p = {p} is not divisible by group_size = {group_size}")
        u, V = init_grouped(p // group_size, group_size, init)
        self.u = torch.nn.Parameter(u.repeat(batch, 1))
        self.V = torch.nn.Parameter(V.repeat(batch, 1, 1))
        self.depth = depth

    def weights(self) -> torch.Tensor:
        """(B, p)."""
        return ((self.u**self.depth)[..., None] * self.V).flatten(1)


class DiagonalLinear(torch.nn.Module):
    """B ungrouped diagonal linear networks ``w = a^N − b^N`` from ``a = b = init·𝟙``."""

    def __init__(self, batch: int, p: int, depth: int = 2, init: float = 1e-6):
        super().__init__()
        self.a = torch.nn.Parameter(torch.full((batch, p), init))
        self.b = torch.nn.Parameter(torch.full((batch, p), init))
        self.depth = depth

    def weights(self) -> torch.Tensor:
        return self.a**self.depth - self.b**self.depth


class PlainLinear(torch.nn.Module):
    """B plain linear models ``w`` from zero."""

    def __init__(self, batch: int, p: int):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(batch, p))

    def weights(self) -> torch.Tensor:
        return self.w


class GroupedGD(torch.optim.Optimizer):
    """Algorithm 2 (or 1) as an optimizer over ``[u, V]`` of a batched :class:`GroupedLinear`.

    It needs only the autograd gradients: ``∂L/∂V_l = u_l^D g_l``, so Algorithm 1's direction
    ``u_l^(2D) v_l − u_l^D g_l`` is ``u_l^(2D) v_l − ∂L/∂V_l``; the ``u`` step is the same in
    both phases. Each data set b switches phase on its own test. The phases, the previous ``u``
    and the switching steps live in the optimizer state, so a checkpoint resumes mid-phase.
    """

    def __init__(
        self,
        params,
        lr: float = 0.01,
        depth: int = 2,
        tol: float = 3e-2,
        algorithm: str = "alg2",
        eps: float = 1e-12,
    ):
        if algorithm not in ("alg1", "alg2"):
            from companion.errors import unknown

            raise unknown("algorithm", algorithm, ("alg1", "alg2"))
        defaults = dict(lr=lr, depth=depth, tol=tol, algorithm=algorithm, eps=eps)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1 or len(self.param_groups[0]["params"]) != 2:
            raise CompanionError("GroupedGD takes exactly the two parameters [u, V]")

    @torch.no_grad()
    def step(self, closure=None):
        group = self.param_groups[0]
        u, V = group["params"]
        lr, depth = group["lr"], group["depth"]
        state = self.state[u]
        if not state:
            # floats only: Optimizer.load_state_dict casts state tensors to the parameter dtype
            state["phase1"] = torch.ones_like(u[:, 0])
            state["prev_u"] = torch.ones_like(u)  # the official test starts from prev_u = 1
            state["switch"] = torch.full_like(u[:, 0], -1.0)
            state["step"] = torch.zeros((), device=u.device)
        phase1 = state["phase1"] > 0.5
        ud = (u**depth)[..., None]
        V_alg1 = normalize_or_keep(ud * ud * V - V.grad, V)
        V_alg2 = normalize_rows(V - lr * V.grad)
        V.copy_(torch.where(phase1[:, None, None], V_alg1, V_alg2))
        u.sub_(lr * u.grad)
        if group["algorithm"] == "alg2":
            change = ((u - state["prev_u"]).abs() / (state["prev_u"] + group["eps"]).abs()).amax(1)
            state["prev_u"] = u.detach().clone()
            switching = phase1 & (change < group["tol"])
            state["switch"] = torch.where(switching, state["step"], state["switch"])
            state["phase1"] = (phase1 & ~switching).to(u.dtype)
        state["step"] += 1
        return None

    def switch_steps(self) -> list[int]:
        """Per data set, the step where Algorithm 2 switched to plain gradient descent (−1: not)."""
        state = self.state[self.param_groups[0]["params"][0]]
        if not state:
            return [-1] * self.param_groups[0]["params"][0].shape[0]
        return [int(v) for v in state["switch"].tolist()]
