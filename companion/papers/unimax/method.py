"""Language sampling for multilingual pretraining: temperature sampling and UniMax.

Notation of the paper (Chung et al., ICLR 2023): language l has a corpus of c_l characters;
training may use a total budget of C characters; UniMax allows at most N epochs (passes over a
corpus) per language. A sampling distribution p gives language l a budget U_l = p_l · C, which
is U_l / c_l = p_l · C / c_l epochs of its corpus.

Temperature sampling (mT5, XLM-R; mT5 used α = 1/τ = 0.3):

    p_l = c_l^{1/τ} / Σ_k c_k^{1/τ}                                            (temperature)

τ = 1 samples in proportion to size; τ → ∞ is uniform. The budget never enters, so a tail
language's number of epochs p_l · C / c_l grows without limit as the budget grows.

UniMax (the paper's Algorithm 1): visit languages from the smallest corpus to the largest; give
each the uniform share of what is left, unless that is more than N epochs of its corpus:

    sort languages by c_l ascending;  B ← C
    for the i-th language l (i = 0 … L−1):
        b_l ← B / (L − i)                  remaining budget per remaining language
        U_l ← min(b_l, N · c_l)            at most N epochs of l
        B ← B − U_l
    p_l ← U_l / Σ_k U_k                                                         (Algorithm 1)

Equivalently U_l = min(N · c_l, λ) with the "water level" λ chosen so that Σ_l U_l = C: every
language that is not capped gets the same budget λ, and no language is repeated more than N
times. This needs C ≤ N · Σ_l c_l; for a larger budget Algorithm 1 would give every language
N epochs and still leave budget unspent, so :func:`unimax_budgets` refuses it.
"""

from __future__ import annotations

import math

import numpy as np

from companion.errors import CompanionError


def _counts(counts) -> np.ndarray:
    """Corpus sizes c_l as a float array; every one must be positive and finite."""
    c = np.asarray(counts, dtype=np.float64)
    if c.ndim != 1 or len(c) == 0:
        raise CompanionError(f"counts must be a non-empty 1-D list of sizes, got shape {c.shape}")
    if not np.all(np.isfinite(c)) or np.any(c <= 0):
        bad = c[~(np.isfinite(c) & (c > 0))][0]
        raise CompanionError(f"every corpus size must be positive and finite, got {bad!r}")
    return c


def max_budget(counts, max_epochs: float) -> float:
    """The largest budget UniMax can spend: N epochs of every language, N · Σ_l c_l."""
    return float(max_epochs * _counts(counts).sum())


def unimax_budgets(counts, budget: float, max_epochs: float) -> np.ndarray:
    """U_l of Algorithm 1: the per-language budgets (same units as ``counts``), summing to C.

    ``counts``: c_l for every language (any order; the result is in the same order).
    ``budget``: C, the total to spend. ``max_epochs``: N, at most N epochs of any language.
    Raises CompanionError when C > N · Σ c_l (the budget cannot be met within N epochs).
    """
    c = _counts(counts)
    if not (budget > 0 and math.isfinite(budget)):
        raise CompanionError(f"budget must be positive and finite, got {budget!r}")
    if not (max_epochs > 0 and math.isfinite(max_epochs)):
        raise CompanionError(f"max_epochs N must be positive and finite, got {max_epochs!r}")
    cap = max_epochs * c.sum()
    if budget > cap * (1 + 1e-12):  # 1e-12: float rounding of the sum itself
        raise CompanionError(
            f"budget C={budget:.6g} exceeds N·Σc = {max_epochs:g} × {c.sum():.6g} = {cap:.6g}: "
            f"UniMax cannot spend it without more than N={max_epochs:g} epochs of some language; "
            f"lower the budget to at most {cap:.6g} or raise max_epochs"
        )
    order = np.argsort(c, kind="stable")  # smallest corpus first
    budgets = np.empty_like(c)
    remaining = float(budget)  # B
    for i, lang in enumerate(order):
        share = remaining / (len(c) - i)  # b_l = B / (L − i)
        budgets[lang] = min(share, max_epochs * c[lang])  # U_l: uniform share, at most N epochs
        remaining -= budgets[lang]
    return budgets


def unimax(counts, budget: float, max_epochs: float) -> np.ndarray:
    """p_l = U_l / Σ U: UniMax's sampling distribution (Algorithm 1)."""
    budgets = unimax_budgets(counts, budget, max_epochs)
    return budgets / budgets.sum()


def temperature_sampling(counts, tau: float) -> np.ndarray:
    """p_l ∝ c_l^{1/τ}, normalized; τ = 1 is proportional, ``math.inf`` is uniform."""
    c = _counts(counts)
    if not tau > 0:
        raise CompanionError(f"temperature tau must be positive, got {tau!r}")
    # in log space: c_l^{1/τ} over-/underflows for trillions of characters and small τ
    logits = np.log(c) / tau
    w = np.exp(logits - logits.max())
    return w / w.sum()


def epochs_per_language(probs, counts, budget: float) -> np.ndarray:
    """E_l = p_l · C / c_l: how many times language l's corpus is seen in training."""
    return np.asarray(probs, dtype=np.float64) * budget / _counts(counts)
