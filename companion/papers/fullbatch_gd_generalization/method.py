"""The paper's objects: full-batch GD on the empirical risk, its replace-one stability, and the
path-dependent generalization bound built from the two.

Notation (the paper's): a sample S = (z_1, …, z_n) of i.i.d. points, a loss f(w, z) ≥ 0 that is
β-smooth in w for every z, the empirical risk R_S(w) = (1/n) Σ_i f(w, z_i), the population risk
R(w) = E_z f(w, z), and the generalization error of an algorithm A,

    ε_gen = E_S [R(A(S)) − R_S(A(S))].

Full-batch GD runs w_{t+1} = w_t − η_t ∇R_S(w_t) from w_0 = 0. S^(i) is S with z_i replaced by an
independent copy z'_i, and the *average output stability* is

    ε_stab(A) = (1/n) Σ_i E ‖A(S) − A(S^(i))‖².

Two steps make the bound (reconstructed: the theorem statements and constants of the paper were
not reachable, so both are re-derived here with the argument its abstract names; see the
notebook):

1. Generalization from stability (any symmetric algorithm, f ≥ 0 and β-smooth, no Lipschitz
   constant; the role of the paper's central bound). Swapping z_i and z'_i, ε_gen = (1/n) Σ_i
   E[f(A(S^(i)), z_i) − f(A(S), z_i)]; smoothness, the self-bounding property
   ‖∇f(w, z)‖² ≤ 2β f(w, z) and Cauchy–Schwarz give the one-sided bound

       ε_gen ≤ √(2β E[R_S(A(S))]) · √ε_stab + (β/2) ε_stab                    (Bound 1)

   (the on-average model stability bound of Lei & Ying, 2020, for nonnegative smooth losses,
   with its free parameter optimised; the lower side would need E R instead of E R_S).

2. Stability of full-batch GD along its path. One step of GD on S^(i) is (1 + η_t γ)-Lipschitz,
   γ = 0 for convex f and η_t ≤ 2/β, γ = β otherwise; the two runs differ by the gradient of one
   of n points, so δ_t = ‖w_t − w_t^(i)‖ obeys δ_{t+1} ≤ (1 + η_t γ) δ_t + (η_t/n) g_t with
   g_t = ‖∇f(w_t, z_i)‖ + ‖∇f(w_t, z'_i)‖ ≤ √(2β)(√f(w_t, z_i) + √f(w_t, z'_i)). Unrolled,
   δ_T ≤ Σ_t c_t g_t with c_t = (η_t/n) Π_{s>t}(1 + η_s γ), and a weighted Cauchy–Schwarz gives

       ε_stab ≤ (Σ_t c_t) · Σ_t c_t · 4β (E R_S(w_t) + E R(w_t)),               (Bound 2)

   a sum of the optimisation path's risks: small losses along the path, small ε_stab. Convex,
   constant η: ε_stab ≤ 4βη²T/n² · Σ_t (E R_S(w_t) + E R(w_t)), so the bound grows like ηT/n.
   Nonconvex with the decreasing steps η_t = 1/(β(t + 1)): c_t = (T + 1)/(nβ(t + 1)(t + 2)).

Bound 1 fed with Bound 2 is the *path-dependent bound*; fed with the measured ε_stab it is the
*stability bound*. The control removes only the path dependence: it bounds every per-point
gradient norm along the path by one constant L, as a Lipschitz analysis (Hardt et al., 2016)
does, so δ_T ≤ 2L Σ_t c_t and ε_stab ≤ (2L Σ_t c_t)², and feeds that to the same Bound 1.
"""

from __future__ import annotations

import dataclasses

import numpy as np

# sup |tanh''(u)| = 4 / (3√3), reached at tanh(u)² = 1/3
TANH_CURVATURE = 4.0 / (3.0 * np.sqrt(3.0))


@dataclasses.dataclass(frozen=True)
class Problem:
    """A data distribution and a loss. ``x`` lies on the unit sphere of R^d (covariance I/d);
    ``y = link(x·w*) + noise``.

    ``kind="linear"``: squared loss f(w, z) = ½(x·w − y)² with Gaussian noise of sd ``sigma``
    (convex, β = sup‖x‖² = 1, *not* Lipschitz: the residual is unbounded).
    ``kind="tanh"``: one tanh neuron, f(w, z) = ½(tanh(x·w) − y)², noise uniform on
    [−sigma, sigma] (nonconvex, β = 1 + sup|tanh''| (1 + sup|y|))."""

    kind: str
    d: int
    sigma: float

    @property
    def beta(self) -> float:
        """The smoothness constant of f(·, z) for every z (‖x‖ = 1)."""
        if self.kind == "linear":
            return 1.0
        y_max = 1.0 + self.sigma  # |tanh| < 1, plus the bounded noise
        return 1.0 + TANH_CURVATURE * (1.0 + y_max)

    @property
    def convex(self) -> bool:
        return self.kind == "linear"

    def sample_x(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        x = rng.standard_normal((*shape, self.d))
        return x / np.linalg.norm(x, axis=-1, keepdims=True)

    def sample(self, rng, shape, w_star):
        """Points (x, y) of the distribution, ``shape`` of them (leading axes)."""
        x = self.sample_x(rng, shape)
        u = x @ w_star
        if self.kind == "linear":
            return x, u + self.sigma * rng.standard_normal(shape)
        return x, np.tanh(u) + self.sigma * rng.uniform(-1.0, 1.0, shape)

    @staticmethod
    def margin(x, w):
        """u = x·w per point: x (..., n, d), w (..., d) -> (..., n)."""
        return np.matmul(x, w[..., None])[..., 0]

    def predict(self, x, w):
        u = self.margin(x, w)
        return u if self.kind == "linear" else np.tanh(u)

    def losses(self, x, y, w):
        """f(w, z) for every point: x (..., n, d), y (..., n), w (..., d)."""
        return 0.5 * (self.predict(x, w) - y) ** 2

    def grad(self, x, y, w):
        """∇_w R_S(w) = (1/n) Σ_i ∇f(w, z_i), batched over leading axes."""
        r = self.derivative(x, y, w)
        return np.matmul(r[..., None, :], x)[..., 0, :] / x.shape[-2]

    def derivative(self, x, y, w):
        """∂f/∂u per point (u = x·w); ∇f(w, z) = (∂f/∂u) x."""
        u = self.margin(x, w)
        if self.kind == "linear":
            return u - y
        t = np.tanh(u)
        return (t - y) * (1.0 - t * t)

    def losses_and_grad_norms(self, x, y, w):
        """f(w, z) and ‖∇f(w, z)‖ per point, from one product x·w."""
        u = self.margin(x, w)
        if self.kind == "linear":
            r = u - y
            return 0.5 * r * r, np.abs(r)
        t = np.tanh(u)
        return 0.5 * (t - y) ** 2, np.abs((t - y) * (1.0 - t * t))

    def grad_norm(self, x, y, w):
        """‖∇f(w, z)‖ per point (‖x‖ = 1, so it is |∂f/∂u|)."""
        return np.abs(self.derivative(x, y, w))

    def population_risk(self, w, w_star, pool=None):
        """R(w), exact. Linear (x uniform on the sphere, covariance I/d):
        ½(‖w − w*‖²/d + σ²). Tanh neuron (x uniform over the finite ``pool``, noise uniform on
        [−σ, σ] with variance σ²/3): ½ mean_pool (tanh(x·w) − tanh(x·w*))² + σ²/6."""
        if self.kind == "linear":
            return 0.5 * (np.sum((w - w_star) ** 2, axis=-1) / self.d + self.sigma**2)
        diff = np.tanh(w @ pool.T) - np.tanh(pool @ w_star)  # (..., m)
        return 0.5 * np.mean(diff**2, axis=-1) + self.sigma**2 / 6.0


def step_sizes(eta: float, steps: int, decreasing: bool, beta: float) -> np.ndarray:
    """η_t for t = 0..T−1: the constant η (the paper's convex choice, η ≤ 1/β), or the
    decreasing η_t = 1/(β(t + 1)) of its nonconvex result."""
    if decreasing:
        return 1.0 / (beta * np.arange(1, steps + 1))
    return np.full(steps, float(eta))


def gd_step(problem: Problem, x, y, w, eta: float):
    """One full-batch GD step, w ← w − η ∇R_S(w), batched over resampled training sets."""
    return w - eta * problem.grad(x, y, w)


def stability_weights(etas: np.ndarray, n: int, gamma: float, upto: int) -> np.ndarray:
    """c_t = (η_t/n) Π_{s=t+1}^{T−1} (1 + η_s γ), t < T = ``upto`` (Bound 2's unrolled
    recursion; γ = 0 for convex f with η_t ≤ 2/β, γ = β otherwise)."""
    e = np.asarray(etas[:upto], dtype=float)
    growth = np.ones_like(e)
    if gamma:
        factors = 1.0 + e * gamma
        # suffix products Π_{s>t}: cumulative product from the end, shifted by one
        suffix = np.cumprod(factors[::-1])[::-1]
        growth = np.append(suffix[1:], 1.0)
    return e / n * growth


def stability_bound(
    etas: np.ndarray,
    n: int,
    beta: float,
    gamma: float,
    path_rs: np.ndarray,
    path_r: np.ndarray,
) -> np.ndarray:
    """Bound 2 at every T = 1..len(etas): ε_stab(T) ≤ (Σ_{t<T} c_t) Σ_{t<T} c_t 4β(R_S(w_t) +
    R(w_t)), from the mean risks along the path (``path_rs[t]``, ``path_r[t]``, t = 0..T−1)."""
    out = np.empty(len(etas))
    for T in range(1, len(etas) + 1):
        c = stability_weights(etas, n, gamma, T)
        out[T - 1] = c.sum() * np.sum(c * 4.0 * beta * (path_rs[:T] + path_r[:T]))
    return out


def generalization_bound(beta: float, train_risk, eps_stab):
    """Bound 1: ε_gen ≤ √(2β E R_S(A(S))) √ε_stab + (β/2) ε_stab."""
    train_risk, eps_stab = np.asarray(train_risk), np.asarray(eps_stab)
    return np.sqrt(2.0 * beta * train_risk * eps_stab) + 0.5 * beta * eps_stab


def lipschitz_bound(
    etas: np.ndarray, n: int, beta: float, gamma: float, lipschitz: float, train_risk
) -> np.ndarray:
    """The control: Bound 2 with the path's per-point gradient norms replaced by one constant
    L (δ_T ≤ 2L Σ_{t<T} c_t, so ε_stab ≤ (2L Σ_{t<T} c_t)², as in a Lipschitz analysis),
    fed to the same Bound 1 with the same ``train_risk[T]``, at every T = 1..len(etas).
    Only the path dependence of the stability term differs from the path-dependent bound."""
    eps = np.array(
        [
            (2.0 * lipschitz * stability_weights(etas, n, gamma, T).sum()) ** 2
            for T in range(1, len(etas) + 1)
        ]
    )
    return generalization_bound(beta, np.asarray(train_risk)[1 : len(etas) + 1], eps)


def loglog_slope(x, y) -> float:
    """The least-squares slope of log y on log x (the fitted scaling exponent)."""
    lx, ly = np.log(np.asarray(x, float)), np.log(np.asarray(y, float))
    return float(np.polyfit(lx, ly, 1)[0])
