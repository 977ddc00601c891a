"""Checks for notebook exercises: each failure says what is wrong, not just that it is.

A check cell calls these on the reader's answer. On the student version (solutions replaced by
``raise NotImplementedError``) the exercise cell itself raises, so the checks never pass there.
"""

from __future__ import annotations

import torch


class ExerciseError(AssertionError):
    """The answer is not right yet; the message says what differs."""


def check(condition: bool, message: str) -> None:
    if not condition:
        raise ExerciseError(message)


def check_close(
    actual, expected, name: str = "your answer", atol: float = 1e-5, rtol: float = 1e-4
) -> None:
    """``actual`` equals ``expected`` up to tolerance; shapes must match."""
    actual_t = torch.as_tensor(actual, dtype=torch.float64)
    expected_t = torch.as_tensor(expected, dtype=torch.float64)
    if actual_t.shape != expected_t.shape:
        raise ExerciseError(
            f"{name} has shape {tuple(actual_t.shape)}, expected {tuple(expected_t.shape)}"
        )
    if not torch.allclose(actual_t, expected_t, atol=atol, rtol=rtol):
        err = (actual_t - expected_t).abs().max().item()
        raise ExerciseError(
            f"{name} differs from the expected value by up to {err:.3g} "
            f"(tolerance atol={atol}, rtol={rtol}); "
            f"got {_short(actual_t)}, expected {_short(expected_t)}"
        )


def _short(t: torch.Tensor) -> str:
    flat = t.flatten()
    text = ", ".join(f"{v:.4g}" for v in flat[:4].tolist())
    return f"[{text}{', ...' if flat.numel() > 4 else ''}]"


def report_ok(name: str) -> None:
    print(f"✓ {name}: correct")
