"""In-sample Actor Critic (IAC; Zhang, Mao, Wang, He, Xu, Ji, ICLR 2023) on a finite MDP.

No official code was found and the paper's method section was not available: only the
abstract and introduction. What the abstract states is implemented as stated; everything else
is **reconstructed** and marked so in each docstring.

Stated by the paper (abstract): the critic is trained by *in-sample* policy evaluation. Its TD
target only uses target Q-values at dataset actions,

    Q(s, a) ← r + γ Q̄(s', a')        (s, a, r, s', a') consecutive steps of the dataset,   (1)

and *sampling-importance resampling* (SIR) draws the minibatch so that a' follows the learned
policy π instead of the behaviour policy μ:

    P(pick transition i) = w_i / Σ_j w_j,   w_i = π(a'_i | s'_i) / μ̂(a'_i | s'_i).            (2)

Reconstructed (standard SIR and a standard in-sample actor; not verified against the paper):

* μ̂ is the empirical behaviour policy n(s, a) / n(s) (the maximum-likelihood behaviour model
  of a finite MDP); π in (2) is π restricted to the actions the data took at s' (renormalised),
  so the resampled (s, a, s') keep the dataset's frequencies and a' | s' follows π there;
* the weights are recomputed from the current π at every step (stale weights bias evaluation);
* the actor (identical for every critic here) is advantage-weighted regression on dataset
  actions, ``loss = −mean_i min(exp(A_i / β), u_max) log π(a_i | s_i)`` with the in-sample
  baseline A(s, a) = Q(s, a) − Σ_b μ̂(b|s) Q(s, b); a third-party reimplementation builds IAC on
  an AWR codebase;
* a tabular critic with a Polyak-averaged target table Q̄.

Critic targets compared (everything else is shared):

* ``naive``: r + γ Q̄(s', a'), a' ~ π(·|s') drawn from the policy: it queries Q̄ at actions the
  data never took at s' (extrapolation error);
* ``iac``: (1) on a SIR minibatch (2);
* ``sarsa``: (1) on a uniform minibatch: in-sample, but evaluates μ, not π (the control that
  removes the resampling);
* ``is_sarsa``: (1) on a uniform minibatch with the weights of (2) as loss weights
  (importance sampling: same expectation as SIR, the paper's variance argument).
"""

from __future__ import annotations

import numpy as np

from companion.core.mdp import policy_evaluation
from companion.errors import CompanionError, unknown

CRITICS = ("naive", "iac", "sarsa", "is_sarsa")


def random_mdp(
    n_states: int, n_actions: int, n_successors: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """A random finite MDP (P [S, A, S], R [S, A]): each (s, a) moves to ``n_successors``
    random states with Dirichlet(1) probabilities; rewards are costs, R ~ −U(0, 1)."""
    if n_successors < 1 or n_successors > n_states:
        raise CompanionError(f"n_successors must lie in [1, {n_states}], got {n_successors}")
    P = np.zeros((n_states, n_actions, n_states))
    for s in range(n_states):
        for a in range(n_actions):
            nxt = rng.choice(n_states, size=n_successors, replace=False)
            P[s, a, nxt] = rng.dirichlet(np.ones(n_successors))
    R = -rng.random((n_states, n_actions))
    return P, R


def behaviour_policy(n_states: int, n_actions: int, n_unseen: int, rng) -> np.ndarray:
    """μ [S, A]: at every state ``n_unseen`` random actions have probability 0 (the data never
    takes them), the others Dirichlet(1) probabilities."""
    if not 0 <= n_unseen < n_actions:
        raise CompanionError(f"n_unseen must lie in [0, {n_actions - 1}], got {n_unseen}")
    mu = np.zeros((n_states, n_actions))
    for s in range(n_states):
        seen = rng.permutation(n_actions)[: n_actions - n_unseen]
        mu[s, seen] = rng.dirichlet(np.ones(len(seen)))
    return mu


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax: the actor's policy π(a|s) from its logits θ[s, a]."""
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def empirical_behaviour(
    states: np.ndarray, actions: np.ndarray, n_states: int, n_actions: int
) -> np.ndarray:
    """μ̂(a|s) = n(s, a) / n(s) from the dataset (reconstructed: the paper's behaviour model is
    not known; this is the maximum-likelihood model of a finite MDP). Unvisited states get 0."""
    counts = np.zeros((n_states, n_actions))
    np.add.at(counts, (states, actions), 1.0)
    total = counts.sum(axis=1, keepdims=True)
    return np.divide(counts, total, out=np.zeros_like(counts), where=total > 0)


def in_support(pi: np.ndarray, mu_hat: np.ndarray) -> np.ndarray:
    """π restricted to the actions the data took (μ̂ > 0) and renormalised: the policy whose
    actions SIR can draw from the dataset (reconstructed). States without data keep π."""
    masked = np.where(mu_hat > 0, pi, 0.0)
    total = masked.sum(axis=1, keepdims=True)
    return np.where(total > 0, masked / np.where(total > 0, total, 1.0), pi)


def sir_weights(
    pi: np.ndarray, mu_hat: np.ndarray, next_states: np.ndarray, next_actions: np.ndarray
) -> np.ndarray:
    """Eq. (2)'s importance weights w_i = π(a'_i|s'_i) / μ̂(a'_i|s'_i), with π restricted to
    the data's actions (:func:`in_support`)."""
    target = in_support(pi, mu_hat)
    return target[next_states, next_actions] / mu_hat[next_states, next_actions]


def sir_sample(weights: np.ndarray, batch_size: int, rng: np.random.Generator) -> np.ndarray:
    """Sampling-importance resampling: ``batch_size`` indices drawn with replacement with
    probability w_i / Σ_j w_j (Eq. 2)."""
    p = weights / weights.sum()
    return rng.choice(len(weights), size=batch_size, p=p)


def effective_sample_size(weights: np.ndarray) -> float:
    """Kish's effective sample size (Σ w)² / Σ w², as a fraction of the number of weights."""
    return float(weights.sum() ** 2 / (weights**2).sum() / len(weights))


def td_targets(
    critic: str,
    q_target: np.ndarray,
    pi: np.ndarray,
    rewards: np.ndarray,
    next_states: np.ndarray,
    next_actions: np.ndarray,
    gamma: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """The TD target y_i of one minibatch.

    ``naive``: r + γ Q̄(s', a'~π) with a' drawn from the full policy (any action, also one the
    data never took at s'); every other critic: Eq. (1), r + γ Q̄(s', a'_data) with the
    dataset's next action (which minibatch, and with which loss weights, is what differs).
    """
    if critic not in CRITICS:
        raise unknown("critic", critic, CRITICS)
    if critic == "naive":
        cum = pi[next_states].cumsum(axis=1)
        drawn = (rng.random((len(next_states), 1)) > cum).sum(axis=1)
        next_actions = np.minimum(drawn, pi.shape[1] - 1)
    return rewards + gamma * q_target[next_states, next_actions]


def critic_step(
    q: np.ndarray,
    states: np.ndarray,
    actions: np.ndarray,
    targets: np.ndarray,
    loss_weights: np.ndarray,
    lr: float,
) -> np.ndarray:
    """One tabular TD step on the minibatch loss Σ_i c_i (Q(s_i, a_i) − y_i)² / 2, each pair's
    step divided by its count n in the minibatch: Q(s, a) += lr Σ_{i at (s,a)} c_i (y_i − Q) / n
    (loss weights c_i = 1 except for importance-weighted SARSA). Returns the new table."""
    grad = np.zeros_like(q)
    n = np.zeros_like(q)
    np.add.at(grad, (states, actions), loss_weights * (targets - q[states, actions]))
    np.add.at(n, (states, actions), 1.0)
    return q + lr * np.divide(grad, n, out=np.zeros_like(q), where=n > 0)


def actor_step(
    logits: np.ndarray,
    q: np.ndarray,
    mu_hat: np.ndarray,
    states: np.ndarray,
    actions: np.ndarray,
    beta: float,
    max_weight: float,
    lr: float,
) -> np.ndarray:
    """One step of advantage-weighted regression on dataset actions (reconstructed actor,
    identical for every critic): loss = −(1/B) Σ_i u_i log π(a_i|s_i), u_i = min(exp(A_i/β),
    u_max), A(s, a) = Q(s, a) − Σ_b μ̂(b|s) Q(s, b) (in-sample: only Q at dataset actions).
    ∂loss/∂θ[s_i, ·] = −u_i (e_{a_i} − π(·|s_i)) / B. Returns the new logits."""
    pi = softmax(logits)
    baseline = (mu_hat * q).sum(axis=1)
    adv = q[states, actions] - baseline[states]
    u = np.minimum(np.exp(np.clip(adv / beta, None, 50.0)), max_weight)
    grad = np.zeros_like(logits)
    np.add.at(grad, states, u[:, None] * pi[states])
    np.add.at(grad, (states, actions), -u)
    return logits - lr * grad / len(states) * logits.shape[0]


def exact_values(P, R, pi, gamma) -> tuple[np.ndarray, np.ndarray]:
    """(Q^π, V^π) by solving the Bellman equation exactly (``companion.core.mdp``): the
    simulator's yardstick for every critic and every policy."""
    return policy_evaluation(P, R, pi, gamma)


def update_variances(
    delta: np.ndarray, weights: np.ndarray, pair: np.ndarray, n_pairs: int
) -> tuple[float, float]:
    """Variance of a one-sample TD update at a pair, importance sampling vs resampling.

    ``delta`` are the TD errors y_i − Q(s_i, a_i) of the dataset's rows, ``weights`` their
    w_i (Eq. 2), ``pair`` the index of (s_i, a_i). Within a pair, importance-weighted SARSA
    draws a row uniformly and applies w_i δ_i; IAC draws it with probability ∝ w_i and applies
    δ_i. Returns (IS variance, SIR variance), each averaged over pairs with the data's
    frequencies (the paper's variance argument, measured exactly over the dataset).
    """
    n = np.bincount(pair, minlength=n_pairs).astype(float)
    sw = np.bincount(pair, weights, minlength=n_pairs)
    keep = (n > 0) & (sw > 0)

    def per_pair(values, probs_num, probs_den):
        m1 = np.bincount(pair, probs_num * values, minlength=n_pairs)[keep] / probs_den[keep]
        m2 = np.bincount(pair, probs_num * values**2, minlength=n_pairs)[keep] / probs_den[keep]
        return np.maximum(m2 - m1**2, 0.0)

    var_is = per_pair(weights * delta, np.ones_like(delta), n)
    var_sir = per_pair(delta, weights, sw)
    freq = n[keep] / n[keep].sum()
    return float(freq @ var_is), float(freq @ var_sir)
