"""Simulated adaptive trials, vectorised over environments and policies (official ``_simulate``
and ``src/eval.py``).

All arms (a policy and its threshold) run in lockstep on the same environments with common
random numbers: at step t every arm of environment e sees the same uniform (which subgroup the
next patient is from, given the enrolled population), the same outcome noise and the same
posterior draws, as the official code reuses one key per environment for every policy.
"""

from __future__ import annotations

import numpy as np

from companion.papers.optimal_commitment.method import (
    ALL,
    MASKS,
    NIL,
    Trial,
    decide,
    posterior_update,
    test_update,
)

METRICS = ("utility", "fwer", "switches", "success", "time")


def draw_environments(trial: Trial, n_envs: int, rng: np.random.Generator) -> np.ndarray:
    """True subgroup means drawn from the prior, μ_i ~ N(m₀, 1/n₀) (official ``main.py``):
    [n_envs, 2]."""
    z = rng.standard_normal((n_envs, 2))
    return trial.prior_mean + z / np.sqrt(trial.prior_count)


def oracle_rct(trial: Trial, mu: np.ndarray) -> dict[str, np.ndarray]:
    """The Oracle-RCT of official ``eval.py``: knowing μ, run the best fixed trial or none.

    Expected utility of a fresh trial on S is R(S)·P(success | μ̄_S) − C(S)·T. Type *green*: the
    trial on everybody is best; *amber*: a trial on one subgroup is best; *red*: no trial
    (utility 0). Returns the type (0 green, 1 amber, 2 red), its utility and success chance."""
    from companion.papers.optimal_commitment.method import success_probability

    T = trial.test_horizon
    utils, succs = [], []
    for code in (ALL, 1, 2):
        mu_bar = mu @ trial.weights(code)
        p = success_probability(trial, 0, 0.0, -1, mu_bar)
        utils.append(trial.reward(code) * p - trial.cost(code) * T)
        succs.append(p)
    green_u, green_p = utils[0], succs[0]
    amber_i = np.where(utils[2] > utils[1], 2, 1)  # ties: the first subgroup, as eval.py
    amber_u = np.where(amber_i == 2, utils[2], utils[1])
    amber_p = np.where(amber_i == 2, succs[2], succs[1])
    table = np.stack([green_u, amber_u, np.zeros_like(green_u)])
    kind = table.argmax(0)  # ties: the first type (green, amber, red), as max() in eval.py
    utility = table[kind, np.arange(len(kind))]
    success = np.stack([green_p, amber_p, np.zeros_like(green_p)])[kind, np.arange(len(kind))]
    return {"type": kind, "utility": utility, "success": success}


def simulate(
    trial: Trial,
    arms: list[tuple[str, float]],
    mu: np.ndarray,
    n_samples: int,
    rng: np.random.Generator,
    decide_fn=decide,
) -> dict[str, np.ndarray]:
    """Run every arm (policy, threshold) on every environment ``mu`` [E, 2] for the horizon.

    ``decide_fn`` (default :func:`~.method.decide`) takes ``decide``'s arguments and returns
    the next commitments: another rule can be tried on the same trials.

    Per step (official ``_simulate``): a patient is drawn from the enrolled population, its
    outcome updates the posterior and the running test; the policy proposes the next
    commitment; a successful test stops the trial (reward R(S)), a failed one stops it unless
    the policy switches; a switch restarts the test. Returns per-arm, per-environment metrics
    [A, E]: utility (reward on success − summed costs), fwer (a success on a population whose
    true mean is < 0), switches (changes of commitment, the stop after a concluded test not
    counted, as ``eval.py``), success (utility > 0, as ``eval.py``), time (patients enrolled).
    """
    A, E = len(arms), len(mu)
    code = np.full((A, E), ALL, dtype=np.int8)
    n = np.zeros((A, E), dtype=np.int64)
    mean = np.zeros((A, E))
    stat = np.full((A, E), -1, dtype=np.int8)
    count = np.full((A, E, 2), float(trial.prior_count))
    post = np.full((A, E, 2), trial.prior_mean)
    spent = np.zeros((A, E))
    steps = np.zeros((A, E), dtype=np.int64)
    visited = np.full((A, E), 1 << ALL, dtype=np.int64)
    concluded = np.zeros((A, E), dtype=bool)
    won = np.zeros((A, E), dtype=np.int8)  # the commitment whose test succeeded (0: none)
    policies = np.array([p for p, _ in arms])
    thresholds = np.array([t for _, t in arms], dtype=np.float64)
    p0 = trial.prevalence[0]
    env = np.broadcast_to(np.arange(E), (A, E))
    for _ in range(trial.horizon):
        u = rng.random(E)
        eps = rng.standard_normal(E)
        active = code != NIL
        if not active.any():
            break
        # posterior draws of every environment (shared by its arms; drawn for all, so that an
        # arm's outcome does not depend on which other arms run beside it)
        z = rng.standard_normal((E, n_samples, 2), dtype=np.float32)
        # the next patient: subgroup 0 w.p. p_0 within everybody, else the enrolled subgroup
        x = np.where(code == ALL, (u >= p0).astype(np.int64), np.where(code == 2, 1, 0))
        y = mu[env, x] + eps
        a_idx, e_idx = np.nonzero(active)
        c2, m2 = posterior_update(count[active], post[active], x[active], y[active])
        count[active], post[active] = c2, m2
        n[active], mean[active], stat[active] = test_update(
            trial, n[active], mean[active], stat[active], y[active]
        )
        spent[active] += trial.cost(code[active])
        steps[active] += 1
        concluded |= active & (stat >= 0)
        proposal = code.copy()
        for policy in np.unique(policies[a_idx]):
            sel = policies[a_idx] == policy
            a, e = a_idx[sel], e_idx[sel]
            proposal[a, e] = decide_fn(
                trial,
                str(policy),
                thresholds[a],
                code[a, e],
                n[a, e],
                mean[a, e],
                stat[a, e],
                count[a, e],
                post[a, e],
                z[e],
            )
        nxt = np.where(active, proposal, code)
        success = active & (stat == 1)
        won = np.where(success, code, won)
        nxt = np.where(success, NIL, nxt)
        nxt = np.where(active & (stat == 0) & (nxt == code), NIL, nxt).astype(np.int8)
        switched = nxt != code
        n[switched], mean[switched], stat[switched] = 0, 0.0, -1
        visited |= np.left_shift(1, nxt.astype(np.int64))
        code = nxt
    reward = np.where(won > 0, trial.reward(won), 0.0)
    utility = reward - spent
    true_mean = (mu[None] * trial.weights(won)).sum(-1)
    fwer = (won > 0) & (true_mean < 0)
    n_visited = np.zeros((A, E), dtype=np.int64)
    for c in range(4):
        n_visited += (visited >> c) & 1
    switches = n_visited - 1 - concluded
    return {
        "utility": utility,
        "fwer": fwer.astype(float),
        "switches": switches.astype(float),
        "success": (utility > 0).astype(float),
        "time": steps.astype(float),
    }


__all__ = ["MASKS", "METRICS", "draw_environments", "oracle_rct", "simulate"]
