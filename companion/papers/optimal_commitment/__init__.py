"""When to Make and Break Commitments? (Bayes-OCP).

Hüyük, Qian, van der Schaar. ICLR 2023.
Paper: https://openreview.net/forum?id=q8vgHfPdoQP · Code: https://github.com/alihanhyk/optcommit

* ``method``: the optimal commitment problem on an adaptive trial with two subgroups (the test,
  its success probability, the Gaussian posterior, the utility of a commitment) and the policies
  (Bayes-OCP, greedy Bayes-OCP, adaptive enrichment, futility stopping, RCT).
* ``simulate``: trials vectorised over environments and policies, with common random numbers;
  the Oracle-RCT.
* ``experiment``: presets, ``run`` (the paper's Table 3 and a threshold sweep).
* ``plots`` and ``claims``: the table as bars, the sweep, and the thesis measured.
"""

from companion.papers.optimal_commitment.claims import check_claims, sweep_arms
from companion.papers.optimal_commitment.experiment import (
    LABELS,
    PRESETS,
    TYPES,
    OptimalCommitmentConfig,
    OptimalCommitmentResult,
    arm_name,
    run,
    run_fold,
    summary_table,
)
from companion.papers.optimal_commitment.method import (
    ALL,
    NIL,
    POLICIES,
    Trial,
    best_alternative,
    commitment_utility,
    decide,
    posterior_update,
    sample_means,
    success_probability,
    test_update,
)
from companion.papers.optimal_commitment.plots import figures, plot_arms, plot_sweep, plot_table
from companion.papers.optimal_commitment.simulate import draw_environments, oracle_rct, simulate

Config = OptimalCommitmentConfig
Result = OptimalCommitmentResult

__all__ = [
    "ALL",
    "LABELS",
    "NIL",
    "POLICIES",
    "PRESETS",
    "TYPES",
    "Config",
    "OptimalCommitmentConfig",
    "OptimalCommitmentResult",
    "Result",
    "Trial",
    "arm_name",
    "best_alternative",
    "check_claims",
    "commitment_utility",
    "decide",
    "draw_environments",
    "figures",
    "oracle_rct",
    "plot_arms",
    "plot_sweep",
    "plot_table",
    "posterior_update",
    "run",
    "run_fold",
    "sample_means",
    "simulate",
    "success_probability",
    "summary_table",
    "sweep_arms",
    "test_update",
]
