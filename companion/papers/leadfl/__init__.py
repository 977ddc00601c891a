"""LeadFL: Client Self-Defense against Model Poisoning in Federated Learning.

Zhu, Roos, Chen. ICML 2023.
Paper: https://proceedings.mlr.press/v202/zhu23j.html · Code: https://github.com/chaoyitud/LeadFL

* ``method``: LeadFL's local training of a benign client (the regularizer as in the official
  code: ``fltk/core/client.py``), and the bursty participation schedule of the attackers.
* ``experiment``: presets, ``run`` (a robust aggregator with and without LeadFL under a bursty
  trigger backdoor, against a step-matched control (plain SGD at 2η) and a no-attack floor, on
  the shared federated loop ``companion.core.federated``).
* ``plots`` and ``claims``: attack success, target rate and clean accuracy per round, and the
  thesis measured (the residual backdoor after the last burst, above the clean floor).
"""

from companion.papers.leadfl.claims import check_claims
from companion.papers.leadfl.experiment import (
    PRESETS,
    ArmResult,
    LeadFLConfig,
    LeadFLResult,
    accuracy_and_asr,
    build_model,
    client_data,
    make_clients,
    run,
)
from companion.papers.leadfl.method import (
    bursty_schedule,
    leadfl_regularizer,
    local_training,
    regularized_names,
)
from companion.papers.leadfl.plots import figures, plot_rounds, plot_summary

Config = LeadFLConfig
Result = LeadFLResult

__all__ = [
    "PRESETS",
    "ArmResult",
    "Config",
    "LeadFLConfig",
    "LeadFLResult",
    "Result",
    "accuracy_and_asr",
    "build_model",
    "bursty_schedule",
    "check_claims",
    "client_data",
    "figures",
    "leadfl_regularizer",
    "local_training",
    "make_clients",
    "plot_rounds",
    "plot_summary",
    "regularized_names",
    "run",
]
