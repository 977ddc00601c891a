"""CounTS: counterfactual explanations by abduction, action and prediction (Yan & Wang, ICML 2023).

No official code was released (github.com/Wang-ML-Lab/self-interpretable-time-series was
announced, no snapshot exists), and only the paper's abstract and introduction were available
here. What the abstract states is kept: a *variational Bayesian* model of the time series x and
its label y built on a structural causal model, with *actionable* and *non-actionable*
variables, whose counterfactual explanation of a prediction runs three steps:

    1. abduction:  infer the non-actionable exogenous variables from the observed series,
    2. action:     intervene on the actionable variables only,
    3. prediction: propagate the intervention through the model and predict the new label.

Everything below that is more precise than those sentences is the companion's reconstruction
(marked "[house]"), chosen to be the smallest model with those three steps.

The simulator (:class:`Simulator`) is a dosing story with a known causal graph, so every
counterfactual has a ground truth (Pearl's three steps on the true SCM)::

    c   ~ N(0, 1)                                   severity (static confounder, non-actionable)
    a_t = a₀ + k·c + η_t,  η_t = φ η_{t−1} + s_a ξ_t  dose (actionable; sicker patients get more)
    b_t = ρ b_{t−1} + β a_{t−1} − δ c + s_b ν_t       vital sign (responds to the dose)
    y   = 1[ mean(b over the last w steps) − γ c + s_y ε > θ ]   good outcome

Exogenous noise: (c, ξ, ν, ε). The true counterfactual of an action do(a = a′) re-runs these
equations with the *same* c, ν and ε (abduction is exact in the simulator).

The model (:class:`CounTS`) [house] mirrors that graph with a latent u for the non-actionable
exogenous part:

    prior        p(u) = N(0, I)
    dose         p(a | u)      = N(f_a(u), σ² I)                     (MLP)
    vital sign   p(b | a, u)   = N(f_b(a, u), σ² I),  f_b(a, u)_t = Σ_{k=1..L} w_k a_{t−k} + g(u)_t
    outcome      p(y | b, u)   = Bernoulli(sigmoid h(b, u))   (h linear: a logistic regression)
    posterior    q(u | x)      = N(μ(x), diag σ_q²(x))                (MLP over x = [a, b])

trained on the negative ELBO  −E_q[log p(a|u) + log p(b|a,u) + log p(y|b,u)] + KL(q ‖ p).
Counterfactual inference (:func:`counts_counterfactual`):

    abduction   u* = μ(x),  e_b = b − f_b(a, u*)          (additive exogenous noise of b)
    action      a′ = a + m ⊙ δ     (m: the actionable mask; δ found by gradient descent on
                BCE(h(b′, u*), y′) + λ‖δ‖₁ / T)
    prediction  b′ = f_b(a′, u*) + e_b,   ŷ′ = h(b′, u*)

The baseline (:func:`wachter_counterfactual`) is Wachter et al.'s gradient search on a black-box
classifier f(a, b) with the same loss, mask, budget and λ, but no model of how b responds: its
counterfactual keeps b as observed.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F
from torch import nn

from companion.nn import MLP


# ---------------------------------------------------------------- the simulator (ground truth)
@dataclasses.dataclass(frozen=True)
class Simulator:
    """The structural causal model of the data (module docstring). All arguments are the
    equation's coefficients; ``confounding`` is k (how much more dose a sicker patient gets)."""

    length: int = 24
    dose_base: float = 1.0  # a₀
    confounding: float = 0.8  # k
    dose_ar: float = 0.7  # φ
    dose_noise: float = 0.5  # s_a
    vital_ar: float = 0.6  # ρ
    dose_effect: float = 0.3  # β
    vital_confounding: float = 0.6  # δ
    vital_noise: float = 0.3  # s_b
    outcome_confounding: float = 1.0  # γ
    outcome_noise: float = 0.3  # s_y
    window: int = 8  # w
    threshold: float = 0.75  # θ: the outcome's mean score, so the classes are about balanced

    def noise(self, n: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
        """Exogenous noise of n patients: c [n], ξ [n, T], ν [n, T], ε [n]."""
        t = self.length
        return {
            "c": torch.randn(n, generator=generator),
            "xi": torch.randn(n, t, generator=generator),
            "nu": torch.randn(n, t, generator=generator),
            "eps": torch.randn(n, generator=generator),
        }

    def dose(self, noise: dict[str, torch.Tensor]) -> torch.Tensor:
        """The observed (natural) dose a [n, T]: a₀ + k c + AR(1) noise."""
        xi, c = noise["xi"], noise["c"]
        eta = torch.zeros_like(xi)
        eta[:, 0] = self.dose_noise * xi[:, 0] / (1 - self.dose_ar**2) ** 0.5  # stationary start
        for t in range(1, self.length):
            eta[:, t] = self.dose_ar * eta[:, t - 1] + self.dose_noise * xi[:, t]
        return self.dose_base + self.confounding * c[:, None] + eta

    def vital(self, dose: torch.Tensor, noise: dict[str, torch.Tensor]) -> torch.Tensor:
        """The vital sign b [n, T] under the dose series ``dose`` (observed or intervened).
        b₀ starts at the steady state of the base dose for the patient's severity."""
        c, nu = noise["c"], noise["nu"]
        b = torch.zeros_like(dose)
        steady = (self.dose_effect * self.dose_base - self.vital_confounding * c) / (
            1 - self.vital_ar
        )
        b[:, 0] = steady + self.vital_noise * nu[:, 0]
        for t in range(1, self.length):
            b[:, t] = (
                self.vital_ar * b[:, t - 1]
                + self.dose_effect * dose[:, t - 1]
                - self.vital_confounding * c
                + self.vital_noise * nu[:, t]
            )
        return b

    def score(self, vital: torch.Tensor, noise: dict[str, torch.Tensor]) -> torch.Tensor:
        """mean(b over the last w steps) − γ c + s_y ε − θ: the outcome is good when > 0."""
        return (
            vital[:, -self.window :].mean(1)
            - self.outcome_confounding * noise["c"]
            + self.outcome_noise * noise["eps"]
            - self.threshold
        )

    def sample(self, n: int, generator: torch.Generator):
        """n patients: (x [n, 2, T] with channels (dose, vital), y [n], noise)."""
        noise = self.noise(n, generator)
        a = self.dose(noise)
        b = self.vital(a, noise)
        y = (self.score(b, noise) > 0).float()
        return torch.stack([a, b], 1), y, noise

    def counterfactual(self, dose: torch.Tensor, noise: dict[str, torch.Tensor]):
        """The true counterfactual of do(a = dose) for the patients of ``noise``: the same
        exogenous c, ν, ε (abduction is exact here), the dose replaced (action), the equations
        re-run (prediction). Returns (x′ [n, 2, T], y′ [n])."""
        b = self.vital(dose, noise)
        return torch.stack([dose, b], 1), (self.score(b, noise) > 0).float()


# ---------------------------------------------------------------- the CounTS model [house]
class CounTS(nn.Module):
    """The variational model of the module docstring: q(u|x), p(a|u), p(b|a,u), p(y|b,u).

    ``x`` is [n, 2, T] with channel 0 the dose (actionable) and channel 1 the vital sign.
    """

    def __init__(
        self, length: int, latent: int = 2, hidden: int = 64, sigma: float = 0.5, lags: int = 8
    ):
        super().__init__()
        self.length, self.latent, self.sigma = length, latent, sigma
        self.encoder = MLP(2 * length, (hidden, hidden), 2 * latent)  # q(u | x): μ, log σ²
        self.dose_decoder = MLP(latent, (hidden,), length)  # p(a | u)
        # p(b | a_{<t}, u): a causal convolution of the last ``lags`` doses (kernel w_1..w_L,
        # the same at every step) plus a level set by u
        self.dose_response = nn.Parameter(torch.zeros(lags + 1))  # w_k, k = t − s (w_0 unused)
        t = torch.arange(length)
        lag = t[:, None] - t[None, :]
        self.register_buffer("lag", lag.clamp(min=0, max=lags))
        self.register_buffer("causal", ((lag >= 1) & (lag <= lags)).float())
        self.vital_base = MLP(latent, (hidden,), length)
        self.predictor = MLP(length + latent, (), 1)  # p(y | b, u): logistic regression

    def posterior(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """q(u | x): mean and log-variance, each [n, latent]."""
        mu, logvar = self.encoder(x).chunk(2, dim=-1)
        return mu, logvar.clamp(-8.0, 8.0)

    def vital_mean(self, dose: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        """f_b(a_{<t}, u)_t = Σ_{k=1..L} w_k a_{t−k} + g(u)_t: the mean vital sign [n, T].
        Step t responds to the L doses before t only."""
        return dose @ self.response_matrix().T + self.vital_base(u)

    def response_matrix(self) -> torch.Tensor:
        """W [T, T] with W_ts = w_{t−s} for 1 <= t − s <= L and 0 elsewhere (causal, Toeplitz)."""
        return self.dose_response[self.lag] * self.causal

    def outcome_logit(self, vital: torch.Tensor, u: torch.Tensor):
        """h(b, u): the logit of a good outcome [n]. The dose acts on the outcome only through
        the vital sign (the graph of the module docstring)."""
        return self.predictor(torch.cat([vital, u], -1)).squeeze(-1)

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """The prediction at test time: h(b, μ(x)) [n] (a logit)."""
        mu, _ = self.posterior(x)
        return self.outcome_logit(x[:, 1], mu)


def negative_elbo(model: CounTS, x: torch.Tensor, y: torch.Tensor, sample: bool = True):
    """−ELBO per example, averaged over the batch and divided by T (a scale for the step size):

        ‖a − f_a(u)‖²/2σ² + ‖b − f_b(a, u)‖²/2σ² + BCE(h(b, u), y) + KL(q(u|x) ‖ N(0, I))

    (Gaussian constants dropped), with u ~ q(u | x) by the reparametrization trick
    (``sample=False``: u = μ(x)). Returns (loss, parts): the four terms, for logging.
    """
    mu, logvar = model.posterior(x)
    u = mu + torch.randn_like(mu) * (0.5 * logvar).exp() if sample else mu
    dose, vital = x[:, 0], x[:, 1]
    two_var = 2 * model.sigma**2
    rec_a = (dose - model.dose_decoder(u)).pow(2).sum(-1) / two_var
    rec_b = (vital - model.vital_mean(dose, u)).pow(2).sum(-1) / two_var
    nll_y = F.binary_cross_entropy_with_logits(model.outcome_logit(vital, u), y, reduction="none")
    kl = 0.5 * (mu.pow(2) + logvar.exp() - 1 - logvar).sum(-1)
    loss = (rec_a + rec_b + nll_y + kl).mean() / model.length
    parts = {  # detached tensors (``.item()`` would fail on the meta device FLOPs are counted on)
        "rec_dose": rec_a.mean().detach(),
        "rec_vital": rec_b.mean().detach(),
        "nll_y": nll_y.mean().detach(),
        "kl": kl.mean().detach(),
    }
    return loss, parts


# ---------------------------------------------------------------- counterfactual inference
@dataclasses.dataclass
class Counterfactual:
    """What a method proposes for each patient: the action a′ and the series and label it
    says will follow (its *claimed* counterfactual), as tensors."""

    dose: torch.Tensor  # a′ [n, T]
    vital: torch.Tensor  # the b′ the method claims [n, T]
    logit: torch.Tensor  # the method's own prediction for (a′, b′) [n]


def abduction(model: CounTS, x: torch.Tensor, use_posterior: bool = True):
    """Step 1. The non-actionable exogenous variables of each patient: u* = μ(x) and the vital
    sign's additive noise e_b = b − f_b(a, u*). ``use_posterior=False`` is the control without
    abduction: u* = 0 (the prior's mean) and e_b = 0, the same for every patient."""
    if not use_posterior:
        u = torch.zeros(len(x), model.latent)
        return u, torch.zeros_like(x[:, 1])
    u, _ = model.posterior(x)
    return u, x[:, 1] - model.vital_mean(x[:, 0], u)


def prediction(model: CounTS, dose: torch.Tensor, u: torch.Tensor, e_b: torch.Tensor):
    """Step 3. The vital sign under the dose, b′ = f_b(a′, u*) + e_b, and the outcome's logit."""
    vital = model.vital_mean(dose, u) + e_b
    return vital, model.outcome_logit(vital, u)


def search_action(
    predict,
    x: torch.Tensor,
    target: torch.Tensor,
    mask: torch.Tensor,
    lam: float,
    steps: int,
    lr: float,
) -> torch.Tensor:
    """Step 2, the action: a′ = a + m ⊙ δ with δ minimizing

        BCE(predict(a′), y′) + λ · mean_t |m ⊙ δ|       (per patient, summed over the batch)

    by Adam from δ = 0. ``predict(a′)`` returns the logit of a good outcome; ``mask`` [T] is 1
    where the dose may change. Shared by CounTS and the Wachter baseline. Returns a′ [n, T].
    """
    dose = x[:, 0].detach()
    delta = torch.zeros_like(dose, requires_grad=True)
    opt = torch.optim.Adam([delta], lr=lr)
    for _ in range(steps):
        new = dose + mask * delta
        loss = F.binary_cross_entropy_with_logits(predict(new), target, reduction="sum")
        loss = loss + lam * (mask * delta).abs().mean(-1).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return (dose + mask * delta).detach()


def counts_counterfactual(
    model: CounTS,
    x: torch.Tensor,
    target: torch.Tensor,
    mask: torch.Tensor,
    lam: float,
    steps: int,
    lr: float,
    use_posterior: bool = True,
) -> Counterfactual:
    """Abduction, action, prediction (module docstring); the model's weights stay fixed."""
    for p in model.parameters():
        p.requires_grad_(False)
    try:
        with torch.no_grad():
            u, e_b = abduction(model, x, use_posterior)
        dose = search_action(
            lambda a: prediction(model, a, u, e_b)[1], x, target, mask, lam, steps, lr
        )
        with torch.no_grad():
            vital, logit = prediction(model, dose, u, e_b)
    finally:
        for p in model.parameters():
            p.requires_grad_(True)
    return Counterfactual(dose, vital, logit)


def wachter_counterfactual(
    classifier: nn.Module,
    x: torch.Tensor,
    target: torch.Tensor,
    mask: torch.Tensor,
    lam: float,
    steps: int,
    lr: float,
) -> Counterfactual:
    """Wachter et al. (2017) on a black-box classifier f(x): the same search over the dose,
    with the vital sign held at its observed value (the classifier has no model of how it
    would respond). The claimed counterfactual is (a′, b)."""
    for p in classifier.parameters():
        p.requires_grad_(False)
    vital = x[:, 1].detach()
    try:
        dose = search_action(
            lambda a: classifier(torch.stack([a, vital], 1)).squeeze(-1),
            x,
            target,
            mask,
            lam,
            steps,
            lr,
        )
        with torch.no_grad():
            logit = classifier(torch.stack([dose, vital], 1)).squeeze(-1)
    finally:
        for p in classifier.parameters():
            p.requires_grad_(True)
    return Counterfactual(dose, vital.clone(), logit)


def evaluate_counterfactual(
    sim: Simulator,
    x: torch.Tensor,
    cf: Counterfactual,
    target: torch.Tensor,
    noise: dict[str, torch.Tensor],
) -> dict[str, float]:
    """Judge a counterfactual by the simulator, never by the model:

    * ``validity``: share of patients whose *true* outcome under do(a = a′) is the target;
    * ``model_validity``: share the method's own model says reach it;
    * ``cf_error``: mean |b′ claimed − b′ true| (the claimed counterfactual series against the
      simulator's, for the same action; the dose channel is equal by construction);
    * ``action_l1``: mean |a′ − a| per time step (how much the dose changed).
    """
    true_x, true_y = sim.counterfactual(cf.dose, noise)
    return {
        "validity": (true_y == target).float().mean().item(),
        "model_validity": ((cf.logit > 0).float() == target).float().mean().item(),
        "cf_error": (cf.vital - true_x[:, 1]).abs().mean().item(),
        "action_l1": (cf.dose - x[:, 0]).abs().mean().item(),
    }
