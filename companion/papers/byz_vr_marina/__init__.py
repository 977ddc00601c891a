"""Byz-VR-MARINA: Variance Reduction is an Antidote to Byzantines: Better Rates, Weaker
Assumptions and Communication Compression as a Cherry on the Top.

Gorbunov, Horváth, Richtárik, Gidel. ICLR 2023.
Paper: https://arxiv.org/abs/2206.00529 · Code: https://github.com/SamuelHorvath/VR_Byzantine

* ``method``: Algorithm 1 (MARINA-style variance reduction with a shared coin, compressed
  gradient differences, robust aggregation after bucketing), unbiased RandK, the workers of
  robust SGD and momentum SGD, ℓ2 logistic regression and its optimum.
* ``experiment``: presets, ``run`` (every attack × method through the shared federated loop).
* ``plots`` and ``claims``: the paper's Fig. 1 at small scale (gap against rounds and bits), and
  its thesis measured.
"""

from companion.papers.byz_vr_marina.claims import check_claims, log_gap, log_gap_at_bits
from companion.papers.byz_vr_marina.experiment import (
    ATTACKS,
    METHODS,
    PRESETS,
    ArmResult,
    ByzVrMarinaConfig,
    ByzVrMarinaResult,
    build_arm,
    load_problem,
    read_libsvm,
    run,
)
from companion.papers.byz_vr_marina.method import (
    BucketedAggregator,
    GradientServer,
    MarinaServer,
    MarinaWorker,
    MomentumWorker,
    SGDWorker,
    alie_z,
    logistic_grad,
    logistic_loss,
    marina_probability,
    message_bits,
    rand_k,
    rand_k_omega,
    smoothness,
    solve_optimum,
)
from companion.papers.byz_vr_marina.plots import figures, plot_attack, plot_gap

Config = ByzVrMarinaConfig
Result = ByzVrMarinaResult

__all__ = [
    "ATTACKS",
    "METHODS",
    "PRESETS",
    "ArmResult",
    "BucketedAggregator",
    "ByzVrMarinaConfig",
    "ByzVrMarinaResult",
    "Config",
    "GradientServer",
    "MarinaServer",
    "MarinaWorker",
    "MomentumWorker",
    "Result",
    "SGDWorker",
    "build_arm",
    "check_claims",
    "figures",
    "load_problem",
    "log_gap",
    "log_gap_at_bits",
    "logistic_grad",
    "logistic_loss",
    "alie_z",
    "marina_probability",
    "message_bits",
    "plot_attack",
    "plot_gap",
    "rand_k",
    "rand_k_omega",
    "read_libsvm",
    "run",
    "smoothness",
    "solve_optimum",
]
