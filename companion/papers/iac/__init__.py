"""IAC: In-sample Actor Critic for Offline Reinforcement Learning.

Zhang, Mao, Wang, He, Xu, Ji. ICLR 2023. Paper: https://openreview.net/forum?id=dfDv0WU853R
No official code was found, and only the abstract and introduction were available: the SIR
details, the behaviour model and the actor are reconstructed (see ``method``).

* ``method``: SIR weights and resampling (in-sample policy evaluation), the four TD targets
  compared (naive, IAC, SARSA, importance-weighted SARSA), the shared AWR actor.
* ``experiment``: presets, ``run`` (a random finite MDP, offline data from a behaviour policy
  that never takes some actions, four actor-critics scored by exact policy evaluation).
* ``continuous``: the same targets as MLP critics on offline Pendulum-v1 data, scored against
  Monte Carlo returns of the target policy.
* ``plots`` and ``claims``: the critics' errors and the policies' returns, and the thesis.
"""

from companion.papers.iac.claims import check_claims
from companion.papers.iac.continuous import (
    CONTINUOUS_CRITICS,
    ContinuousResult,
    collect,
    continuous_sir_weights,
    fit_behaviour,
    gaussian_log_density,
    monte_carlo_q,
    pendulum_step,
    policy_mean,
    run_continuous,
    train_continuous_critic,
)
from companion.papers.iac.experiment import (
    PRESETS,
    ArmResult,
    IACConfig,
    IACResult,
    make_problem,
    run,
    train_arm,
)
from companion.papers.iac.method import (
    CRITICS,
    actor_step,
    behaviour_policy,
    critic_step,
    effective_sample_size,
    empirical_behaviour,
    exact_values,
    in_support,
    random_mdp,
    sir_sample,
    sir_weights,
    softmax,
    td_targets,
    update_variances,
)
from companion.papers.iac.plots import (
    figures,
    plot_critic,
    plot_evaluation,
    plot_pendulum,
    plot_returns,
)

Config = IACConfig
Result = IACResult

__all__ = [
    "CONTINUOUS_CRITICS",
    "CRITICS",
    "ContinuousResult",
    "collect",
    "continuous_sir_weights",
    "fit_behaviour",
    "gaussian_log_density",
    "monte_carlo_q",
    "pendulum_step",
    "plot_pendulum",
    "policy_mean",
    "run_continuous",
    "train_continuous_critic",
    "PRESETS",
    "ArmResult",
    "Config",
    "IACConfig",
    "IACResult",
    "Result",
    "actor_step",
    "behaviour_policy",
    "check_claims",
    "critic_step",
    "effective_sample_size",
    "empirical_behaviour",
    "exact_values",
    "figures",
    "in_support",
    "make_problem",
    "plot_critic",
    "plot_evaluation",
    "plot_returns",
    "random_mdp",
    "run",
    "sir_sample",
    "sir_weights",
    "softmax",
    "td_targets",
    "train_arm",
    "update_variances",
]
