"""The optimal commitment problem (OCP) and Bayes-OCP, on the paper's adaptive clinical trial.

Hüyük, Qian, van der Schaar, "When to Make and Break Commitments?", ICLR 2023; official code
alihanhyk/optcommit (``src/main.py``: the trial; ``src/algs.py``: the policies).

A *commitment* is the population a trial enrolls: a subset S of the subgroups. Committing costs
C(S) per patient and pays R(S) only when the commitment is *resolved*: a one-sided z-test on the
running mean of the outcomes of the patients enrolled since the commitment was made, run to its
fixed horizon T. At every step the decision maker may keep S, break it for a strict subset S'
(a new commitment: the test restarts) or stop (S' = ∅, utility 0). That is an optimal stopping
*and switching* problem.

Commitments are coded as integers whose bits are the subgroups: 0 = ∅ (stopped), 1 = {1},
2 = {2}, 3 = {1, 2} (everybody). Everything here works on arrays, vectorised over environments
and posterior samples (NumPy, float32 for samples; NumPy's and SciPy's kernels are the same on
every CPU, so runs are bit-identical across machines).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy.special import ndtr, ndtri

NIL, ALL = 0, 3
CODES = (0, 1, 2, 3)
MASKS = np.array([[0, 0], [1, 0], [0, 1], [1, 1]], dtype=np.float32)  # code -> subgroup mask
POLICIES = ("rct", "adaptive_enrichment", "futility_stopping", "greedy_bayes_ocp", "bayes_ocp")


@dataclasses.dataclass(frozen=True)
class Trial:
    """The paper's OCP instance (official ``src/main.py``): two subgroups of prevalence p_i,
    outcomes y ~ N(μ_x, 1), a one-sided z-test at level α after T patients of one commitment,
    reward R(S) = r·(Σ_{i∈S} p_i)^e on success, cost C(S) = (Σ_{i∈S} p_i)^(−e) per patient,
    a horizon of H patients in all, and a Gaussian prior μ_i ~ N(m₀, 1/n₀) per subgroup."""

    prevalence: tuple[float, float] = (0.5, 0.5)
    horizon: int = 1200  # H: patients in all (steps of the decision problem)
    test_horizon: int = 600  # T: patients of one test
    alpha: float = 0.05
    reward_scale: float = 1000.0
    exponent: float = 0.1
    prior_mean: float = 0.1
    prior_count: int = 10

    @property
    def z_alpha(self) -> float:
        """Φ⁻¹(1 − α): the test succeeds iff ȳ·√T > z_α."""
        return float(ndtri(1.0 - self.alpha))

    def share(self, code):
        """Σ_{i∈S} p_i of commitment ``code`` (0 for ∅)."""
        return MASKS[np.asarray(code)] @ np.asarray(self.prevalence, dtype=np.float32)

    def reward(self, code):
        """R(S) = r·(Σ_{i∈S} p_i)^e, paid once when S's test succeeds (0 for ∅)."""
        return self.reward_scale * self.share(code) ** self.exponent

    def cost(self, code):
        """C(S) = (Σ_{i∈S} p_i)^(−e) per enrolled patient: a narrower population is slower, hence
        dearer, to recruit (0 for ∅: a stopped trial costs nothing)."""
        share = self.share(code)
        return np.where(share > 0, np.maximum(share, 1e-12) ** -self.exponent, 0.0)

    def weights(self, code):
        """Prevalence weights within S, p_i / Σ_{j∈S} p_j: μ̄_S = Σ_i weight_i · μ_i."""
        w = MASKS[np.asarray(code)] * np.asarray(self.prevalence, dtype=np.float32)
        return w / np.maximum(w.sum(-1, keepdims=True), 1e-12)


def test_update(trial: Trial, n, mean, stat, y):
    """One patient enters the running test (official ``test_update``): while the test is open
    (stat = −1) count it and update the running mean ȳ; at n = T the test concludes,
    stat = 1 if ȳ·√T > z_α (success) else 0. Returns new (n, mean, stat)."""
    open_ = stat < 0
    n = n + open_
    mean = np.where(open_, mean + (y - mean) / np.maximum(n, 1), mean)
    done = n == trial.test_horizon
    passed = mean * np.sqrt(np.maximum(n, 1)) > trial.z_alpha
    stat = np.where(done, passed.astype(np.int8), np.int8(-1)).astype(np.int8)
    return n, mean, stat


def success_probability(trial: Trial, n, mean, stat, mu_bar):
    """P(the running test succeeds | true mean μ̄_S) (official ``test_predict``).

    With n patients seen at running mean ȳ, the remaining T − n must average above
    c = (z_α√T − nȳ)/(T − n), and their mean is N(μ̄_S, 1/(T − n)), so
    P = 1 − Φ((c − μ̄_S)·√(T − n)). A concluded test returns its verdict (0 or 1)."""
    T = trial.test_horizon
    left = np.maximum(T - np.asarray(n), 1)
    c = ((trial.z_alpha * math.sqrt(T) - mean * n) / left).astype(np.float32)
    p = ndtr((mu_bar - c) * np.sqrt(left).astype(np.float32))  # = 1 − Φ((c − μ̄)·√(T − n))
    stat = np.asarray(stat)
    if (stat >= 0).any():
        p = np.where(stat < 0, p, stat.astype(p.dtype))
    return p


def posterior_update(count, mean, x, y):
    """Gaussian posterior of each subgroup's mean with unit noise: a pseudo-count n_i and mean
    m_i, so μ_i | data ~ N(m_i, 1/n_i); a patient of subgroup x with outcome y adds one count
    and moves m_x by (y − m_x)/n_x (official ``post_update``). ``count``, ``mean``: [..., 2]."""
    hit = np.arange(count.shape[-1]) == np.asarray(x)[..., None]
    count = count + hit
    mean = np.where(hit, mean + (y[..., None] - mean) / count, mean)
    return count, mean


def sample_means(count, mean, z):
    """Posterior samples μ_i = m_i + z_i/√n_i from shared standard normals ``z`` [K, M, 2]:
    every commitment is scored on the *same* draws (common random numbers, as the official
    code reuses one key for the current commitment and every alternative). Returns
    [K, M, 2] in float32."""
    sd = (1.0 / np.sqrt(count)).astype(np.float32)
    return mean.astype(np.float32)[:, None, :] + z * sd[:, None, :]


def commitment_utility(trial: Trial, code, n, mean, stat, mu):
    """The expected utility of keeping commitment S to the end of its test, per posterior
    sample ``mu`` [K, M, 2] of the subgroup means (official ``_policy_utility``):
    U(S) = R(S)·P(success | n, ȳ, μ̄_S) − C(S)·(T − n), μ̄_S = Σ_{i∈S} p_i μ_i / Σ_{i∈S} p_i.
    A fresh commitment has n = 0, ȳ = 0. ``code``, ``n``, ``mean``, ``stat``: [K].
    Returns [K, M]."""
    w = trial.weights(code)  # [K, 2]
    mu_bar = mu[..., 0] * w[:, :1] + mu[..., 1] * w[:, 1:]
    n = np.asarray(n)
    p = success_probability(trial, n[:, None], np.asarray(mean)[:, None], stat[:, None], mu_bar)
    left = (trial.test_horizon - n)[:, None]
    return (trial.reward(code)[:, None] * p - (trial.cost(code)[:, None] * left)).astype(np.float32)


def best_alternative(trial: Trial, code, mu):
    """The alternatives S' ⊊ S scored on fresh tests, and the best one by mean utility
    (official ``_policy_search``): stopping (∅, utility 0) first, then each strict subset of S
    among the single subgroups, taken when its mean utility is strictly higher.
    ``mu``: posterior samples [K, M, 2] (the same draws that score S).

    Returns (best code [K], its utility samples [K, M])."""
    K, M = mu.shape[0], mu.shape[1]
    best = np.zeros(K, dtype=np.int8)
    best_u = np.zeros((K, M), dtype=np.float32)
    best_mean = np.zeros(K, dtype=np.float32)
    fresh = np.zeros(K, dtype=np.int64), np.zeros(K), np.full(K, -1, dtype=np.int8)
    for alt in (1, 2):
        strict = ((code & alt) == alt) & (code != alt)
        if not strict.any():
            continue
        u = commitment_utility(trial, np.full(K, alt), *fresh, mu)
        u_mean = u.mean(-1)
        take = strict & (u_mean > best_mean)
        best = np.where(take, alt, best).astype(np.int8)
        best_u = np.where(take[:, None], u, best_u)
        best_mean = np.where(take, u_mean, best_mean)
    return best, best_u


def decide(trial: Trial, policy: str, threshold, code, n, mean, stat, count, post_mean, z):
    """The next commitment of ``policy`` for K running trials (official ``src/algs.py``).

    * ``bayes_ocp``: break S for the best alternative S' iff Pr(U(S') > U(S)) ≥ threshold,
      the probability over paired posterior samples (the paper's Bayes-OCP).
    * ``greedy_bayes_ocp``: switch iff E[U(S')] > E[U(S)] (no threshold: the control).
    * ``adaptive_enrichment``: the same mean comparison, only at the interim n = T/2.
    * ``futility_stopping``: the only alternative is stopping; stop iff Pr(0 > U(S)) ≥ threshold.
    * ``rct``: never switch.

    ``threshold``: [K] (a sweep runs several in one batch); ``z``: standard normals [K, M, 2].
    Returns the next codes [K]."""
    if policy == "rct":
        return code.copy()
    if policy == "adaptive_enrichment":  # only the interim look needs the posterior
        interim = n == trial.test_horizon // 2
        out = code.copy()
        if interim.any():
            i = np.flatnonzero(interim)
            out[i] = decide(
                trial,
                "greedy_bayes_ocp",
                threshold[i],
                code[i],
                n[i],
                mean[i],
                stat[i],
                count[i],
                post_mean[i],
                z[i],
            )
        return out
    mu = sample_means(count, post_mean, z)
    u_now = commitment_utility(trial, code, n, mean, stat, mu)
    if policy == "futility_stopping":
        stop = (u_now < 0).mean(-1) >= threshold
        return np.where(stop, NIL, code).astype(np.int8)
    alt, u_alt = best_alternative(trial, code, mu)
    if policy == "bayes_ocp":
        switch = (u_alt > u_now).mean(-1) >= threshold
    elif policy == "greedy_bayes_ocp":
        switch = u_alt.mean(-1) > u_now.mean(-1)
    else:
        raise ValueError(f"unknown policy {policy!r}; valid: {', '.join(POLICIES)}")
    return np.where(switch, alt, code).astype(np.int8)
