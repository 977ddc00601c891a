"""Ask Me Anything: A simple strategy for prompting language models.

Simran Arora, Avanika Narayan, Mayee F. Chen, Laurel Orr, Neel Guha, Kush Bhatia, Ines Chami,
Frederic Sala, Christopher Ré. ICLR 2023. Paper: https://openreview.net/forum?id=bhUPJnS2g0X ·
Code: https://github.com/HazyResearch/ama_prompting (label model: mayeechen/metal-ama)

A small LM answers a task badly with one restrictive prompt ("True or False?"). AMA asks the
same question through several *prompt chains* (rewrite the statement as an open question, then
answer it from the context), treats each chain's answer as a noisy vote, and combines the votes
with weak supervision: a latent-variable label model that learns how accurate each chain is from
how the chains agree, without labels.

* ``items``: three generated tasks (claim / sentiment / topic), labels correct by construction.
* ``prompts``: five chains per task plus the few-shot baseline; ``answer_to_label``.
* ``lm``, ``generate``: SmolLM2-135M-Instruct on the CPU, answers cached in
  ``data/ama_prompting/outputs.jsonl`` (the notebook reads the cache, never the LM).
* ``method``: majority vote, the label model without dependencies fitted by EM (Dawid–Skene),
  the pooled control, diagnostics.
* ``experiment``, ``plots``, ``claims``: presets, ``run`` (a seed resamples the items), figures,
  the claims with premise rows and the pooled control.
"""

from companion.papers.ama_prompting.claims import check_claims, correlations, premises
from companion.papers.ama_prompting.experiment import (
    ARMS,
    OUTPUTS_FILE,
    PRESETS,
    AmaConfig,
    AmaResult,
    StubLM,
    TaskRun,
    TaskVotes,
    load_outputs,
    resample,
    run,
    run_task,
)
from companion.papers.ama_prompting.items import NUM_CLASSES, TASKS, generate_items, load_items
from companion.papers.ama_prompting.method import (
    ABSTAIN,
    LabelModelFit,
    accuracy,
    chain_accuracy,
    dawid_skene,
    m_step,
    majority_vote,
    mean_offdiag,
    phi_matrix,
    pooled_dawid_skene,
    posteriors,
    shuffle_votes,
    weighted_vote,
)
from companion.papers.ama_prompting.plots import (
    figures,
    plot_accuracies,
    plot_cost,
    plot_estimated,
    plot_phi,
)
from companion.papers.ama_prompting.prompts import CHAINS, answer_to_label, build_prompt

Config = AmaConfig
Result = AmaResult

__all__ = [
    "ABSTAIN",
    "ARMS",
    "CHAINS",
    "NUM_CLASSES",
    "OUTPUTS_FILE",
    "PRESETS",
    "TASKS",
    "AmaConfig",
    "AmaResult",
    "Config",
    "LabelModelFit",
    "Result",
    "StubLM",
    "TaskRun",
    "TaskVotes",
    "accuracy",
    "answer_to_label",
    "build_prompt",
    "chain_accuracy",
    "check_claims",
    "correlations",
    "dawid_skene",
    "figures",
    "generate_items",
    "load_items",
    "load_outputs",
    "m_step",
    "majority_vote",
    "mean_offdiag",
    "phi_matrix",
    "plot_accuracies",
    "plot_cost",
    "plot_estimated",
    "plot_phi",
    "pooled_dawid_skene",
    "posteriors",
    "premises",
    "resample",
    "run",
    "run_task",
    "shuffle_votes",
    "weighted_vote",
]
