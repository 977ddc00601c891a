"""Neural Architecture Design and Robustness: A Dataset.

Steffen Jung, Jovita Lukasik and Margret Keuper. ICLR 2023.
Paper: https://openreview.net/forum?id=p8coElqiSDw · arXiv: https://arxiv.org/abs/2306.06712
· Code and data: https://github.com/steffen-jung/robustness-dataset, http://robustness.vision

Every one of the 6,466 non-isomorphic networks of NAS-Bench-201 is evaluated clean, under four
L∞ attacks (FGSM, PGD, APGD-CE, Square) at several ε and under 15 common corruptions. Use cases:
how well Jacobian- and Hessian-based measures predict robust accuracy (Kendall τ), NAS on
robust accuracy, and design analysis (at equal parameter count, mean adversarial accuracy
ranges over 20-41 % on CIFAR-10).

* ``method``: the cell space (strings, isomorphism, the ops), the network, FGSM and PGD, three
  corruptions, the Jacobian and Hessian proxies, and a reader for the released database.
* ``experiment``: presets and ``run`` (a zoo of one-cell networks trained on digits, or the
  database at the ``full`` preset).
* ``plots`` and ``claims``: the figures at small scale, and the thesis measured.
"""

from companion.papers.nas_robustness.claims import check_claims, kendall_tau
from companion.papers.nas_robustness.experiment import (
    PRESETS,
    ArchRecord,
    NasRobustnessConfig,
    NasRobustnessResult,
    run,
    sample_zoo,
    train_and_measure,
)
from companion.papers.nas_robustness.method import (
    OPS,
    CellNet,
    RobustnessDatabase,
    all_archs,
    canonical,
    fgsm,
    has_path,
    hessian_top_eigenvalue,
    jacobian_norm,
    pgd,
)
from companion.papers.nas_robustness.plots import (
    figures,
    plot_accuracy_vs_eps,
    plot_arch,
    plot_params,
    plot_proxies,
)

Config = NasRobustnessConfig
Result = NasRobustnessResult

__all__ = [
    "OPS",
    "PRESETS",
    "ArchRecord",
    "CellNet",
    "Config",
    "NasRobustnessConfig",
    "NasRobustnessResult",
    "Result",
    "RobustnessDatabase",
    "all_archs",
    "canonical",
    "check_claims",
    "fgsm",
    "figures",
    "has_path",
    "hessian_top_eigenvalue",
    "jacobian_norm",
    "kendall_tau",
    "pgd",
    "plot_accuracy_vs_eps",
    "plot_arch",
    "plot_arch",
    "plot_params",
    "plot_proxies",
    "run",
    "sample_zoo",
    "train_and_measure",
]
