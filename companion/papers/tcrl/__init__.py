"""TCRL: Simplified Temporal Consistency Reinforcement Learning.

Yi Zhao, Wenshuai Zhao, Rinu Boney, Juho Kannala, Joni Pajarinen. ICML 2023.
Paper: https://proceedings.mlr.press/v202/zhao23k.html (arXiv:2306.09466) ·
Code: https://github.com/zhaoyi11/tcrl

A latent dynamics model trained only by temporal consistency: encode the first observation,
roll the latent model forward with the data's actions, and match each predicted latent to an
EMA target encoder's latent of the real observation (cosine), plus the reward. No
reconstruction. Here it is trained offline on random Pendulum-v1 data and used to plan with MPPI.

* ``method``: networks, the consistency loss, the EMA target, the reconstruction and ensemble
  models it is compared with, batched Pendulum equations, MPPI.
* ``experiment``: presets, data (D4RL-style transitions with provenance), ``run``.
* ``plots`` and ``claims``: the figures, and the thesis measured.
"""

from companion.papers.tcrl.claims import check_claims
from companion.papers.tcrl.experiment import (
    ARMS,
    PRESETS,
    ArmResult,
    Planner,
    TCRLConfig,
    TCRLResult,
    collect_random,
    count_costs,
    load_data,
    plan_returns,
    prediction_errors,
    run,
    sequence_starts,
    train_model,
)
from companion.papers.tcrl.method import (
    EnsembleModel,
    LatentModel,
    ReconstructionModel,
    TargetEncoder,
    consistency_loss,
    cosine_consistency,
    ema_update,
    ensemble_loss,
    latent_rollout_rewards,
    mppi,
    pendulum_step,
    reconstruction_loss,
    reward_scale,
)
from companion.papers.tcrl.plots import (
    figures,
    plot_arm,
    plot_loss,
    plot_prediction,
    plot_returns,
)

Config = TCRLConfig
Result = TCRLResult

__all__ = [
    "ARMS",
    "PRESETS",
    "ArmResult",
    "Config",
    "EnsembleModel",
    "LatentModel",
    "Planner",
    "ReconstructionModel",
    "Result",
    "TCRLConfig",
    "TCRLResult",
    "TargetEncoder",
    "check_claims",
    "collect_random",
    "consistency_loss",
    "cosine_consistency",
    "count_costs",
    "ema_update",
    "ensemble_loss",
    "figures",
    "latent_rollout_rewards",
    "load_data",
    "plan_returns",
    "plot_arm",
    "plot_loss",
    "plot_prediction",
    "plot_returns",
    "mppi",
    "pendulum_step",
    "prediction_errors",
    "reconstruction_loss",
    "reward_scale",
    "run",
    "sequence_starts",
    "train_model",
]
