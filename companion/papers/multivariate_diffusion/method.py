"""Linear multivariate diffusions (MDM) and their ELBO.

Singhal, Goldstein, Ranganath. *Where to Diffuse, How to Diffuse, and How to Get Back: Automated
Learning for Multivariate Diffusions.* ICLR 2023.
Official code: rajesh-lab/MultivariateDiffusionModels (``mdm/models/mdm.py``, ``qd_params.py``,
``sde_lib.py``).

Every data coordinate ``x_j`` carries ``K − 1`` auxiliary variables; the state of one coordinate
is ``y_j = (x_j, v_j) ∈ R^K`` and the whole state is stored as ``[batch, d, K]``. The inference
SDE (paper Eq. 16) is

    dy = −β(s) (Q + D) ∇H(y) ds + √(2 β(s) D) dB,     ∇H(y) = Σ∞⁻¹ y,

with Q skew-symmetric, D positive semi-definite and ``Σ∞ = I`` (stationary variances 1, as in
the official configs), so the drift matrix ``A = −(Q + D)`` is one K×K matrix shared by every
coordinate and ``N(0, I)`` is stationary for any (Q, D). The K×K algebra runs in float64 (the
brief's pitfall: D₀₀ = 0 makes Σ nearly singular at small s).
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

SPECS = ("vpsde", "cld", "learned")


def beta_fn(s: torch.Tensor, beta0: float, beta1: float) -> torch.Tensor:
    """β(s) = β₀ + s(β₁ − β₀), the linear schedule of the official ``sde_lib.py``."""
    return beta0 + s * (beta1 - beta0)


def int_beta_fn(s: torch.Tensor, beta0: float, beta1: float) -> torch.Tensor:
    """∫₀ˢ β(u) du = β₀ s + s²(β₁ − β₀)/2."""
    return beta0 * s + 0.5 * s**2 * (beta1 - beta0)


class Diffusion(nn.Module):
    """The (Q, D) of a linear MDM, fixed or learned.

    Learned, as in the official ``qd_params.py``: ``Q = G − Gᵀ`` (skew-symmetric for any G) and
    ``D = diag(softplus(d) + 10⁻³)`` (the code's default diagonal D; PSD by construction), with
    G and d drawn like ``nn.Linear`` weights. Fixed: Q and D given as matrices (VPSDE, CLD).
    """

    def __init__(
        self,
        K: int,
        Q: torch.Tensor | None = None,
        D: torch.Tensor | None = None,
        beta0: float = 0.1,
        beta1: float = 10.0,
        init_aux_var: float = 0.01,
        learned: bool = False,
    ):
        super().__init__()
        self.K, self.beta0, self.beta1, self.init_aux_var = K, beta0, beta1, init_aux_var
        self.learned = learned
        if learned:
            self.G = nn.Parameter(nn.Linear(K, K, bias=False).weight.detach().clone())
            # official qd_params.py rand_weight(n_vars, 1): nn.Linear(K, 1).weight, uniform ±1/√K
            self.d = nn.Parameter(nn.Linear(K, 1, bias=False).weight.detach().clone().squeeze(0))
        else:
            self.register_buffer("Q_fixed", torch.as_tensor(Q, dtype=torch.float64))
            self.register_buffer("D_fixed", torch.as_tensor(D, dtype=torch.float64))

    def Q(self) -> torch.Tensor:
        """Skew-symmetric Q (K×K, float64)."""
        if self.learned:
            G = self.G.double()
            return G - G.T
        return self.Q_fixed

    def D(self) -> torch.Tensor:
        """Positive semi-definite D (K×K, float64)."""
        if self.learned:
            return torch.diag(F.softplus(self.d.double()) + 1e-3)
        return self.D_fixed

    def A(self) -> torch.Tensor:
        """Drift matrix A = −(Q + D) Σ∞⁻¹ with Σ∞ = I (paper Eq. 14)."""
        return -(self.Q() + self.D())

    def beta(self, s: torch.Tensor) -> torch.Tensor:
        return beta_fn(s.double(), self.beta0, self.beta1)

    def sigma_0(self) -> torch.Tensor:
        """Σ₀ of the hybrid kernel (official ``get_sigma_0``): 0 for x, ``init_aux_var`` for v."""
        s0 = torch.eye(self.K, dtype=torch.float64) * self.init_aux_var
        s0[0, 0] = 0.0
        return s0

    def transition(self, s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The hybrid transition kernel q(y_s | x) = N(M_s y₀, Σ_s) with v₀ set to 0 in y₀ and
        Σ₀ = :meth:`sigma_0` (paper Eq. 14–15, official ``transition_mean``/``transition_var``).

        With B = ∫₀ˢβ: M_s = expm(B·A), and Σ_s = C H⁻¹ where
        [C; H] = expm([[B·A, B·2D], [0, −B·Aᵀ]]) [Σ₀; I] (so H⁻¹ = expm(B·Aᵀ)).
        Returns ``(M, Sigma)``, each ``[len(s), K, K]`` in float64.
        """
        B = int_beta_fn(s.double(), self.beta0, self.beta1).reshape(-1, 1, 1)
        A, D = self.A(), self.D()
        intA, int2D = B * A, B * 2 * D
        upper = torch.cat([intA, int2D], dim=2)
        lower = torch.cat([torch.zeros_like(intA), -intA.transpose(1, 2)], dim=2)
        big = torch.linalg.matrix_exp(torch.cat([upper, lower], dim=1))
        CH0 = torch.cat([self.sigma_0(), torch.eye(self.K, dtype=torch.float64)])
        C = (big @ CH0)[:, : self.K, :]
        Sigma = C @ torch.linalg.matrix_exp(intA.transpose(1, 2))
        Sigma = 0.5 * (Sigma + Sigma.transpose(1, 2))  # symmetric up to rounding
        return torch.linalg.matrix_exp(intA), Sigma


def make_diffusion(
    spec: str,
    K: int = 2,
    gamma: float = 2.0,
    beta0: float = 0.1,
    beta1: float = 10.0,
    init_aux_var: float = 0.01,
) -> Diffusion:
    """``"vpsde"``: K = 1, Q = 0, D = ½ (dx = −½β x ds + √β dB, the VPSDE).
    ``"cld"``: K = 2, Q = [[0, −1], [1, 0]], D = diag(0, γ) (critically damped Langevin for
    γ = 2 with unit mass: dx = β v ds, dv = β(−x − γ v) ds + √(2βγ) dB).
    ``"learned"``: K auxiliary-augmented, (Q, D) trainable (:class:`Diffusion`)."""
    kw = dict(beta0=beta0, beta1=beta1, init_aux_var=init_aux_var)
    if spec == "vpsde":
        return Diffusion(1, torch.zeros(1, 1), torch.full((1, 1), 0.5), **kw)
    if spec == "cld":
        return Diffusion(
            2, torch.tensor([[0.0, -1.0], [1.0, 0.0]]), torch.diag(torch.tensor([0.0, gamma])), **kw
        )
    return Diffusion(K, learned=True, **kw)


def log_normal_std(y: torch.Tensor) -> torch.Tensor:
    """log N(y; 0, I) summed over all but the batch dimension."""
    return (-0.5 * y.pow(2) - 0.5 * math.log(2 * math.pi)).flatten(1).sum(1)


def elbo(
    diffusion: Diffusion,
    eps_model,
    x: torch.Tensor,
    t_min: float = 1e-3,
    T: float = 1.0,
    importance: str = "vp",
) -> torch.Tensor:
    """One-sample DSM estimate of the ELBO (nats, one value per example; paper Eq. 12–13,
    official ``mdm/bin/evaluate.py``):

        log p(x) ≥ E[ log π(y_T) + ℓ_s / r(s) − log q(v₀ | x) ],  s ~ r(s) on [t_min, T],
        ℓ_s = ½‖∇log q_{s|0}‖²_{2βD} − ½‖s_θ − ∇log q_{s|0}‖²_{2βD} + ∇·f(y_s, s),

    with y_s = M_s y₀ + L_s ε (L_s the Cholesky factor of Σ_s), ∇log q_{s|0} = −L_s⁻ᵀε, the
    score model s_θ = −L_s⁻ᵀ ε_θ(y_s, s) and ∇·f = d·β(s)·tr A. ``eps_model(y, s)`` maps
    ``[B, d, K]`` states and ``[B]`` times to ε_θ of shape ``[B, d, K]``. The prior term uses
    y_T ~ q(y_T | x) and −log q(v₀|x) its closed form, the entropy of N(0, init_aux_var)
    per auxiliary variable. The time density r(s) (:func:`sample_time`) is the same for every
    diffusion: ``"vp"`` (the official VP importance density, default of the experiment),
    ``"log"`` (r ∝ 1/s) or ``"uniform"``.
    """
    n, d = x.shape
    K = diffusion.K
    s, weight = sample_time(n, t_min, T, importance, diffusion.beta0, diffusion.beta1)
    y0 = torch.zeros(n, d, K, dtype=torch.float64)
    y0[:, :, 0] = x.double()  # hybrid: v₀ replaced by its mean 0
    M, Sigma = diffusion.transition(torch.cat([s, torch.full((1,), T, dtype=torch.float64)]))
    L = small_cholesky(Sigma)
    Ms, MT, Ls, LT = M[:n], M[n:], L[:n], L[n:]
    eps = torch.randn(n, d, K, dtype=torch.float64)
    y_s = y0 @ Ms.transpose(1, 2) + eps @ Ls.transpose(1, 2)
    y_T = y0 @ MT.transpose(1, 2) + torch.randn(n, d, K, dtype=torch.float64) @ LT.transpose(1, 2)
    eps_theta = eps_model(y_s.float(), s.float()).double()
    LinvT = torch.linalg.inv(Ls.transpose(1, 2))  # L⁻ᵀ, [n, K, K]
    g = eps @ LinvT.transpose(1, 2)  # −∇log q_{s|0}, row vectors per coordinate
    r = (eps_theta - eps) @ LinvT.transpose(1, 2)  # −(s_θ − ∇log q_{s|0})
    beta = diffusion.beta(s).reshape(-1, 1, 1)
    twoD = 2 * beta * diffusion.D()  # [n, K, K]

    def sq_norm(u):  # ‖u‖²_{2βD} summed over coordinates
        return ((u @ twoD) * u).sum((1, 2))

    div_f = d * beta.reshape(-1) * torch.trace(diffusion.A())
    ell = 0.5 * sq_norm(g) - 0.5 * sq_norm(r) + div_f
    entropy_v0 = d * (K - 1) * 0.5 * math.log(2 * math.pi * math.e * diffusion.init_aux_var)
    return log_normal_std(y_T) + weight * ell + entropy_v0


def sample_time(
    n: int, t_min: float, T: float, importance: str, beta0: float = 0.1, beta1: float = 10.0
):
    """n times s ~ r(s) on [t_min, T] and their weights 1/r(s) (float64).

    ``"vp"`` is the official ``VPImpSamp`` (``mdm/utils/importance_sampling.py``):
    r(s) ∝ β(s) / (1 − e^{−B(s)}), B(s) = ∫₀ˢβ, whose cumulative weight is
    F(s) = log(e^{B(s)} − 1) − log(e^{B(t_min)} − 1). The official code inverts F by bisection;
    here it is inverted in closed form (the same distribution): e^{B(s)} − 1 = (e^{B(t_min)} − 1)
    e^{uF(T)}, then s solves the quadratic B(s) = β₀s + s²(β₁ − β₀)/2. ``"log"`` is r ∝ 1/s,
    ``"uniform"`` r = 1/(T − t_min)."""
    u = torch.rand(n, dtype=torch.float64)
    if importance == "uniform":
        return t_min + (T - t_min) * u, torch.full((n,), T - t_min, dtype=torch.float64)
    if importance == "vp":
        t = torch.tensor([t_min, T], dtype=torch.float64)
        log_em1 = torch.log(torch.expm1(int_beta_fn(t, beta0, beta1)))  # log(e^B − 1)
        Z = log_em1[1] - log_em1[0]
        B = torch.log1p(torch.exp(log_em1[0] + u * Z))
        s = 2 * B / (beta0 + torch.sqrt(beta0**2 + 2 * (beta1 - beta0) * B))
        s = s.clamp(t_min, T)
        r = (beta0 + s * (beta1 - beta0)) / -torch.expm1(-int_beta_fn(s, beta0, beta1))
        return s, Z / r
    s = t_min * (T / t_min) ** u
    return s, s * math.log(T / t_min)


def small_cholesky(S: torch.Tensor) -> torch.Tensor:
    """Cholesky factor of a batch of small SPD matrices ``[B, K, K]`` by the textbook loop over
    entries (same result as ``torch.linalg.cholesky``; its backward is far cheaper for K ≤ 4
    than the batched triangular solves of the library's)."""
    K = S.shape[-1]
    cols: list[list[torch.Tensor]] = [[None] * K for _ in range(K)]
    zero = torch.zeros_like(S[:, 0, 0])
    for j in range(K):
        diag = S[:, j, j] - sum((cols[j][k] ** 2 for k in range(j)), zero)
        cols[j][j] = diag.clamp_min(1e-300).sqrt()
        for i in range(j + 1, K):
            off = S[:, i, j] - sum((cols[i][k] * cols[j][k] for k in range(j)), zero)
            cols[i][j] = off / cols[j][j]
    rows = [torch.stack([cols[i][k] if k <= i else zero for k in range(K)], -1) for i in range(K)]
    return torch.stack(rows, -2)


def bits_per_dim(elbo_nats: torch.Tensor | float, d: int) -> float:
    """−ELBO / (d ln 2): the paper's metric (lower is better)."""
    return float(-torch.as_tensor(elbo_nats).mean() / (d * math.log(2)))


def gaussian_elbo_closed_form(
    diffusion: Diffusion, data_var: torch.Tensor, t_min: float = 1e-3, T: float = 1.0
) -> float:
    """The expected ELBO (nats per example) when x ~ N(0, diag(data_var)) and s_θ is the exact
    score of the marginal q_s: then E[ELBO] = −H(q_{t_min}) − KL(q_T ‖ π) + H(q(v₀ | x)), all
    Gaussian (coordinates are independent, each with marginal covariance
    P_s = M_s diag(σ_j², 0, …) M_sᵀ + Σ_s)."""
    K = diffusion.K
    M, Sigma = diffusion.transition(torch.tensor([t_min, T], dtype=torch.float64))
    total = 0.0
    for var in data_var.double().tolist():
        S0 = torch.zeros(K, K, dtype=torch.float64)
        S0[0, 0] = var
        P = M @ S0 @ M.transpose(1, 2) + Sigma
        logdet0, logdetT = torch.logdet(P[0]).item(), torch.logdet(P[1]).item()
        entropy0 = 0.5 * (K * math.log(2 * math.pi * math.e) + logdet0)
        kl_T = 0.5 * (torch.trace(P[1]).item() - K - logdetT)
        total += (
            -entropy0
            - kl_T
            + (K - 1) * 0.5 * math.log(2 * math.pi * math.e * diffusion.init_aux_var)
        )
    return total


def exact_gaussian_eps_model(diffusion: Diffusion, data_var: torch.Tensor):
    """ε_θ of the exact score for x ~ N(0, diag(data_var)): s = −P_s⁻¹ y, so ε_θ = L_sᵀ P_s⁻¹ y."""

    def eps_model(y: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        M, Sigma = diffusion.transition(s.double())
        L = torch.linalg.cholesky(Sigma)
        out = torch.empty_like(y, dtype=torch.float64)
        for j, var in enumerate(data_var.double().tolist()):
            S0 = torch.zeros(diffusion.K, diffusion.K, dtype=torch.float64)
            S0[0, 0] = var
            P = M @ S0 @ M.transpose(1, 2) + Sigma
            z = torch.linalg.solve(P, y[:, j, :].double().unsqueeze(-1))
            out[:, j, :] = (L.transpose(1, 2) @ z).squeeze(-1)
        return out

    return eps_model


def moments_by_ode(
    diffusion: Diffusion, s_end: float, steps: int = 2000
) -> tuple[torch.Tensor, torch.Tensor]:
    """(M_s, Σ_s) by RK4 on the moment ODEs dM/ds = β A M, dΣ/ds = β(AΣ + ΣAᵀ + 2D) from
    M₀ = I, Σ₀ = :meth:`Diffusion.sigma_0`: an independent check of :meth:`Diffusion.transition`."""
    A, D = diffusion.A().detach(), diffusion.D().detach()

    def rhs(s, M, S):
        b = beta_fn(s, diffusion.beta0, diffusion.beta1)
        return b * A @ M, b * (A @ S + S @ A.T + 2 * D)

    M = torch.eye(diffusion.K, dtype=torch.float64)
    S = diffusion.sigma_0()
    h = s_end / steps
    for i in range(steps):
        s = i * h
        k1 = rhs(s, M, S)
        k2 = rhs(s + h / 2, M + h / 2 * k1[0], S + h / 2 * k1[1])
        k3 = rhs(s + h / 2, M + h / 2 * k2[0], S + h / 2 * k2[1])
        k4 = rhs(s + h, M + h * k3[0], S + h * k3[1])
        M = M + h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        S = S + h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
    return M, S


class ScoreNet(nn.Module):
    """ε_θ(y, s): an MLP on the flattened state and the time, the same for every diffusion
    (its input and output width are d·K)."""

    def __init__(self, d: int, K: int, hidden: int = 128, depth: int = 3):
        super().__init__()
        layers, width = [], d * K + 1
        for _ in range(depth):
            layers += [nn.Linear(width, hidden), nn.SiLU()]
            width = hidden
        layers.append(nn.Linear(width, d * K))
        self.net = nn.Sequential(*layers)
        self.d, self.K = d, K

    def forward(self, y: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        h = torch.cat([y.flatten(1), s.reshape(-1, 1)], dim=1)
        return self.net(h).reshape(-1, self.d, self.K)
