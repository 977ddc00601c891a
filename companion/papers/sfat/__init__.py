"""SFAT: Combating Exacerbated Heterogeneity for Robust Models in Federated Learning.

Zhu, Yao, Liu, Yao, Xu, Han. ICLR 2023.
Paper: https://openreview.net/forum?id=eKllxpLOOm · Code: https://github.com/ZFancy/SFAT

* ``method``: PGD adversarial examples, the official non-IID "skew" split, SFAT's α-slack
  client weights (with a normaliser that sums to one), the official normaliser's shrink (kept
  to show what it does) and the clients' heterogeneity.
* ``experiment``: presets, ``run`` (FedAvg, FAT and SFAT through the shared federated loop).
* ``plots`` and ``claims``: robust accuracy over rounds, heterogeneity, the thesis measured.
"""

from companion.papers.sfat.claims import arm_table, check_claims, late, late_rounds
from companion.papers.sfat.experiment import (
    LABELS,
    PRESETS,
    AdversarialClient,
    ArmResult,
    SFATConfig,
    SFATResult,
    build_model,
    client_table,
    load_data,
    robust_accuracy,
    run,
)
from companion.papers.sfat.method import (
    OfficialWeigh,
    RandomSlackWeigh,
    ShrinkServer,
    SlackWeigh,
    alpha_from_ratio,
    client_dissimilarity,
    fedavg_weigh,
    first_client,
    iid_like,
    official_shrink,
    pgd_attack,
    record_heterogeneity,
    skew_split,
    slack_weights,
    top_clients,
)
from companion.papers.sfat.plots import (
    COLORS,
    figures,
    plot_accuracy,
    plot_heterogeneity,
    plot_split,
)

Config = SFATConfig
Result = SFATResult

__all__ = [
    "COLORS",
    "LABELS",
    "PRESETS",
    "AdversarialClient",
    "ArmResult",
    "Config",
    "Result",
    "SFATConfig",
    "SFATResult",
    "OfficialWeigh",
    "RandomSlackWeigh",
    "ShrinkServer",
    "SlackWeigh",
    "arm_table",
    "first_client",
    "iid_like",
    "late",
    "late_rounds",
    "official_shrink",
    "top_clients",
    "alpha_from_ratio",
    "build_model",
    "check_claims",
    "client_dissimilarity",
    "client_table",
    "fedavg_weigh",
    "figures",
    "load_data",
    "pgd_attack",
    "plot_accuracy",
    "plot_heterogeneity",
    "plot_split",
    "record_heterogeneity",
    "robust_accuracy",
    "run",
    "skew_split",
    "slack_weights",
]
