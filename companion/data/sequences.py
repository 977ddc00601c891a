"""Synthetic sequence tasks for sequence models, generated from a seed.

``make_sequence_task(task, n, seq_len, vocab_size, seed)`` returns a ``TensorDataset`` of
``(inputs, targets)``. Inputs are always int64 tokens ``[n, seq_len]`` drawn uniformly from
``0 .. vocab_size - 1``. Targets depend on the task:

- ``copy``: int64 ``[n, seq_len]``, the input tokens unchanged;
- ``reverse``: int64 ``[n, seq_len]``, the input tokens in reverse order;
- ``sort``: int64 ``[n, seq_len]``, the input tokens sorted ascending;
- ``majority``: int64 ``[n]``, the most frequent token (ties go to the smallest token);
- ``parity``: int64 ``[n]``, the sum of the tokens mod 2 (binary tokens, ``vocab_size`` 2).

The first three are sequence-to-sequence tasks (one target per position); the last two are
sequence classification (one label per sequence, ``vocab_size`` classes for ``majority``, 2 for
``parity``). The same arguments always give the same tensors (a seeded ``torch.Generator``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.utils.data import TensorDataset

from companion.errors import CompanionError, unknown

TASKS = ("copy", "reverse", "sort", "majority", "parity")


def _check_positive(name: str, value: int, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise CompanionError(f"{name} {value!r} is not valid; valid: an integer >= {minimum}")


def _targets(task: str, tokens: torch.Tensor, vocab_size: int) -> torch.Tensor:
    if task == "copy":
        return tokens.clone()
    if task == "reverse":
        return tokens.flip(1)
    if task == "sort":
        return tokens.sort(dim=1).values
    if task == "majority":
        counts = F.one_hot(tokens, vocab_size).sum(dim=1)
        return counts.argmax(dim=1)  # argmax returns the first maximum: the smallest token
    return tokens.sum(dim=1) % 2  # parity


def make_sequence_task(
    task: str, n: int, seq_len: int, vocab_size: int, seed: int = 0
) -> TensorDataset:
    """Generate ``n`` examples of ``task`` (one of :data:`TASKS`); see the module docstring.

    ``parity`` draws binary tokens and needs ``vocab_size == 2``; the other tasks take any
    ``vocab_size >= 2``.
    """
    if task not in TASKS:
        raise unknown("sequence task", task, TASKS)
    _check_positive("n", n, 1)
    _check_positive("seq_len", seq_len, 1)
    _check_positive("vocab_size", vocab_size, 2)
    if task == "parity" and vocab_size != 2:
        raise CompanionError(
            f"vocab_size {vocab_size!r} is not valid for task 'parity'; valid: 2 (binary tokens)"
        )
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, vocab_size, (n, seq_len), generator=generator, dtype=torch.int64)
    return TensorDataset(tokens, _targets(task, tokens, vocab_size))
