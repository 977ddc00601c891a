"""DWSL: Distance Weighted Supervised Learning for Offline Interaction Data.

Joey Hejna, Jensen Gao, Dorsa Sadigh. ICML 2023.
Paper: https://proceedings.mlr.press/v202/hejna23a.html (arXiv:2304.13774) ·
Code: https://github.com/jhejna/dwsl

Goal-conditioned policies from offline, sub-optimal interaction data with supervised losses
only (no bootstrapped targets). From hindsight-relabelled samples (s_t, a_t, s_{t+1}, g = s_j),
h = j − t steps apart:

* the distribution of time-steps  p_θ(k | s, g), a classifier over B bins trained with
  cross-entropy on k = min(h − 1, B − 1)                              (phase 1 of Fig. 1);
* the distance, a LogSumExp soft minimum of that distribution (bin k stands for k/B)
      d(s, g) = −α log Σ_k p_θ(k | s, g) exp(−(k/B)/α)               (phase 2);
* the policy, imitation weighted by how much an action reduces the distance
      A = d(s_t, g) − 1/B − d(s_{t+1}, g),  L_π = E[min(exp(A/β), w_max) · (−log π(a_t|s_t, g))]
                                                                    (phase 3).

The paper's Fig. 1 shows these three phases; the formulas here follow the official code
(``research/algs/dwsl.py``), whose normalization (bin k ↔ distance k/B) they keep.
GCBC, the baseline, is the same imitation loss with every weight 1.

* ``env``: a gymnasium gridworld (``GridMaze``), BFS shortest paths, the sub-optimal behaviour
  data, and D4RL-style ``.npz`` files.
* ``method``: relabelling, the classifier, the soft minimum, the weights, the losses.
* ``experiment``: presets, ``run`` (GCBC and DWSL on the same batches, several seeds).
* ``plots`` and ``claims``: the figures, and the thesis measured.
"""

from companion.papers.dwsl.claims import check_claims, distance_quality
from companion.papers.dwsl.env import (
    LAYOUTS,
    GridMaze,
    OfflineData,
    collect_dataset,
    load_d4rl,
    save_d4rl,
    shortest_path_lengths,
)
from companion.papers.dwsl.experiment import (
    PRESETS,
    DWSLConfig,
    DWSLResult,
    SeedResult,
    arm_name,
    run,
    shortest_observed,
)
from companion.papers.dwsl.method import (
    GoalConditionedMLP,
    GoalReachingAgent,
    HindsightBatches,
    action_weights,
    advantage,
    distance_from_distribution,
    distance_in_steps,
    distance_targets,
    dwsl_actor_loss,
    gcbc_loss,
    hindsight_relabel,
    rollout_table,
    soft_min_distance,
    steps_to_goal,
    training_loss,
)
from companion.papers.dwsl.plots import (
    draw_goal,
    figures,
    hardest_goal,
    plot_data,
    plot_distance,
    plot_goal,
    plot_pmf,
    plot_success,
)

Config = DWSLConfig
Result = DWSLResult

__all__ = [
    "LAYOUTS",
    "PRESETS",
    "Config",
    "DWSLConfig",
    "DWSLResult",
    "GoalConditionedMLP",
    "GoalReachingAgent",
    "GridMaze",
    "HindsightBatches",
    "OfflineData",
    "Result",
    "SeedResult",
    "action_weights",
    "advantage",
    "arm_name",
    "check_claims",
    "collect_dataset",
    "distance_from_distribution",
    "distance_in_steps",
    "distance_quality",
    "distance_targets",
    "draw_goal",
    "dwsl_actor_loss",
    "figures",
    "gcbc_loss",
    "hardest_goal",
    "hindsight_relabel",
    "load_d4rl",
    "plot_data",
    "plot_distance",
    "plot_goal",
    "plot_pmf",
    "plot_success",
    "rollout_table",
    "run",
    "shortest_observed",
    "save_d4rl",
    "shortest_path_lengths",
    "soft_min_distance",
    "steps_to_goal",
    "training_loss",
]
