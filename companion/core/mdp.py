"""Exact values on small finite MDPs: the ground truth for every value estimate.

A finite MDP is a transition tensor ``P[s, a, s']`` (rows sum to one), a reward table
``R[s, a]`` (the expected reward of taking ``a`` in ``s``) and a discount γ < 1. A stochastic
policy is a table ``pi[s, a]``. Everything here is exact linear algebra (Sutton & Barto, 2018,
ch. 3-4), so learned critics can be checked against it:

- :func:`policy_evaluation` solves the Bellman equation Q^π = R + γ P V^π,
  V^π(s) = Σ_a π(a|s) Q^π(s, a), as one linear system;
- :func:`optimal_q` runs value iteration to the fixed point of Q* = R + γ P max_a Q*;
- :func:`state_distribution` gives the discounted state-visitation distribution d^π of a policy
  from a start distribution (what an on-policy dataset samples);
- :func:`sample_transitions` draws (s, a, r, s') from a behaviour policy, for offline learning.
"""

from __future__ import annotations

import numpy as np

from companion.errors import CompanionError


def _check(P: np.ndarray, R: np.ndarray, gamma: float) -> None:
    if P.ndim != 3 or P.shape[0] != P.shape[2] or R.shape != P.shape[:2]:
        raise CompanionError(f"expected P [S, A, S] and R [S, A], got {P.shape} and {R.shape}")
    if not np.allclose(P.sum(axis=2), 1.0):
        raise CompanionError("each P[s, a, :] must sum to one")
    if not 0.0 <= gamma < 1.0:
        raise CompanionError(f"gamma must lie in [0, 1), got {gamma}")


def policy_evaluation(
    P: np.ndarray, R: np.ndarray, pi: np.ndarray, gamma: float
) -> tuple[np.ndarray, np.ndarray]:
    """(Q^π [S, A], V^π [S]) by solving (I − γ P_π) V = R_π exactly.

    P_π[s, s'] = Σ_a π(a|s) P[s, a, s'] and R_π[s] = Σ_a π(a|s) R[s, a]; then
    Q^π = R + γ P V^π.
    """
    _check(P, R, gamma)
    if pi.shape != R.shape or not np.allclose(pi.sum(axis=1), 1.0) or (pi < 0).any():
        raise CompanionError(f"pi must be a [S, A] table of distributions, got shape {pi.shape}")
    S = len(R)
    P_pi = np.einsum("sa,sat->st", pi, P)
    R_pi = np.einsum("sa,sa->s", pi, R)
    V = np.linalg.solve(np.eye(S) - gamma * P_pi, R_pi)
    Q = R + gamma * P @ V
    return Q, V


def optimal_q(
    P: np.ndarray, R: np.ndarray, gamma: float, tol: float = 1e-10, max_iter: int = 100_000
) -> np.ndarray:
    """Q* by value iteration, iterated until the sup-norm change is below ``tol``."""
    _check(P, R, gamma)
    Q = np.zeros_like(R, dtype=float)
    for _ in range(max_iter):
        new = R + gamma * P @ Q.max(axis=1)
        if np.abs(new - Q).max() < tol:
            return new
        Q = new
    raise CompanionError(f"value iteration did not converge in {max_iter} iterations")


def state_distribution(
    P: np.ndarray, pi: np.ndarray, start: np.ndarray, gamma: float
) -> np.ndarray:
    """The normalised discounted visitation d^π = (1 − γ) start^T (I − γ P_π)^{-1}."""
    P_pi = np.einsum("sa,sat->st", pi, P)
    d = (1.0 - gamma) * np.linalg.solve((np.eye(len(start)) - gamma * P_pi).T, start)
    return d / d.sum()


def sample_transitions(
    P: np.ndarray,
    R: np.ndarray,
    behaviour: np.ndarray,
    states: np.ndarray,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """One transition from each state in ``states``: a ~ behaviour(·|s), s' ~ P(·|s, a),
    r = R[s, a]. Returns a dict with ``observations``, ``actions``, ``rewards`` and
    ``next_observations`` (integer states), the keys of :mod:`companion.data.offline_rl`."""
    states = np.asarray(states)
    cum_a = behaviour[states].cumsum(axis=1)
    actions = (rng.random((len(states), 1)) > cum_a).sum(axis=1)
    actions = np.minimum(actions, behaviour.shape[1] - 1)
    cum_s = P[states, actions].cumsum(axis=1)
    following = (rng.random((len(states), 1)) > cum_s).sum(axis=1)
    following = np.minimum(following, P.shape[2] - 1)
    return {
        "observations": states,
        "actions": actions,
        "rewards": R[states, actions],
        "next_observations": following,
    }
