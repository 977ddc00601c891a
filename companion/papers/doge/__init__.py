"""DOGE: When Data Geometry Meets Deep Function: Generalizing Offline Reinforcement Learning.

Jianxiong Li, Xianyuan Zhan, Haoran Xu, Xiangyu Zhu, Jingjing Liu, Ya-Qin Zhang. ICLR 2023.
Paper: https://openreview.net/forum?id=lMO7TC7cuuh · Code: https://github.com/Facebear-ljx/DOGE

Deep Q-functions interpolate well inside the convex hull of the data and extrapolate badly
outside it. DOGE constrains the policy with a learned state-conditioned distance function g(s, a)
(the expected distance from a to the dataset's actions at s, Eq. 5), through a Lagrangian with a
dual variable λ (Eq. 8), instead of a behaviour-cloning (support) constraint: the policy may leave
the data, but not the data's geometry.

* ``method``: the networks, the distance regression, the TD3 critic, the DOGE / TD3+BC /
  unconstrained actor losses, the dual update.
* ``experiment``: a one-step navigation task with a gap in the data, presets, ``run``.
* ``claims`` and ``plots``: the thesis measured, the figures.
"""

from companion.papers.doge.claims import check_claims
from companion.papers.doge.experiment import (
    ARMS,
    PRESETS,
    ArmResult,
    DOGEConfig,
    DOGEResult,
    GapBandit,
    behaviour_actions,
    expected_distance,
    goal,
    hull_mask,
    load_data,
    make_dataset,
    reward,
    run,
)
from companion.papers.doge.method import (
    Actor,
    DistanceNetwork,
    DoubleCritic,
    critic_loss,
    distance_loss,
    doge_actor_loss,
    dual_update,
    td3_bc_actor_loss,
    unconstrained_actor_loss,
)
from companion.papers.doge.plots import (
    draw_probe,
    plot_distance,
    plot_policies,
    plot_q_error,
    plot_training,
)

Config = DOGEConfig
Result = DOGEResult

__all__ = [
    "ARMS",
    "PRESETS",
    "Actor",
    "ArmResult",
    "Config",
    "DOGEConfig",
    "DOGEResult",
    "DistanceNetwork",
    "DoubleCritic",
    "GapBandit",
    "Result",
    "behaviour_actions",
    "check_claims",
    "critic_loss",
    "distance_loss",
    "doge_actor_loss",
    "draw_probe",
    "dual_update",
    "expected_distance",
    "goal",
    "hull_mask",
    "load_data",
    "make_dataset",
    "plot_distance",
    "plot_policies",
    "plot_q_error",
    "plot_training",
    "reward",
    "run",
    "td3_bc_actor_loss",
    "unconstrained_actor_loss",
]
