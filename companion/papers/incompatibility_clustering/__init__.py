"""Incompatibility Clustering as a Defense Against Backdoor Poisoning Attacks.

Jin, Sun, Rinard. ICLR 2023.
Paper: https://openreview.net/forum?id=mkJm5Uy4HrQ · Code: https://github.com/charlesjin/compatibility_clustering

* ``method``: the ISPL weak learner (``defense/weak.py``), its keep rule, boosting with a
  majority vote and self-paced refinement (``defense/boost.py``).
* ``experiment``: presets, ``run`` (a trigger backdoor in the training set, incompatibility made
  visible, the defense, networks trained with and without it).
* ``plots`` and ``claims``: the clusters, the removal, and the attack success before and after.
"""

from companion.papers.incompatibility_clustering.claims import check_claims
from companion.papers.incompatibility_clustering.experiment import (
    PRESETS,
    FabricTrainer,
    IncompatibilityConfig,
    IncompatibilityResult,
    ModelResult,
    build_model,
    load_data,
    measure,
    misclassified_filter,
    run,
)
from companion.papers.incompatibility_clustering.method import (
    DefenseRecord,
    ISPLSettings,
    Trainer,
    WeakLearnerRecord,
    ema_loss,
    filter_noise,
    ispl_core_set,
    learner_data_perc,
    mode_rand,
    refine_confidence,
    refit_iterations,
    trimmed_set,
    vote_keep,
)
from companion.papers.incompatibility_clustering.plots import (
    figures,
    plot_defense,
    plot_incompatibility,
    plot_keep_rule,
    plot_learners,
    plot_removal,
)

Config = IncompatibilityConfig
Result = IncompatibilityResult

__all__ = [
    "PRESETS",
    "Config",
    "DefenseRecord",
    "FabricTrainer",
    "ISPLSettings",
    "IncompatibilityConfig",
    "IncompatibilityResult",
    "ModelResult",
    "Result",
    "Trainer",
    "WeakLearnerRecord",
    "build_model",
    "check_claims",
    "ema_loss",
    "figures",
    "filter_noise",
    "ispl_core_set",
    "learner_data_perc",
    "load_data",
    "measure",
    "misclassified_filter",
    "mode_rand",
    "plot_defense",
    "plot_incompatibility",
    "plot_keep_rule",
    "plot_learners",
    "plot_removal",
    "refine_confidence",
    "refit_iterations",
    "run",
    "trimmed_set",
    "vote_keep",
]
