"""Contrastive losses shared by the self-supervised papers.

:func:`info_nce` is the InfoNCE loss of van den Oord et al. (2018) on a score matrix whose
positives lie on the diagonal (CPC scores a context against future codes this way);
:func:`nt_xent` is SimCLR's form of it (Chen et al., 2020): two augmented views of each image,
cosine similarity divided by a temperature τ, every other view in the batch a negative.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from companion.errors import CompanionError


def info_nce(scores: torch.Tensor) -> torch.Tensor:
    """InfoNCE of a score matrix ``scores`` [B, C] whose row i has its positive in column i and
    negatives elsewhere: mean over i of −log softmax(scores_i)_i, i.e. cross-entropy with
    targets 0…B−1 (C ≥ B)."""
    if scores.ndim != 2 or scores.shape[1] < scores.shape[0]:
        raise CompanionError(f"info_nce needs scores [B, C] with C >= B, got {list(scores.shape)}")
    targets = torch.arange(scores.shape[0], device=scores.device)
    return F.cross_entropy(scores.float(), targets)


def nt_xent(
    z_a: torch.Tensor, z_b: torch.Tensor, temperature: float | torch.Tensor
) -> torch.Tensor:
    """SimCLR's normalized-temperature cross-entropy of two views ``z_a``, ``z_b`` [B, d].

    With u the 2B L2-normalised outputs and s_ij = u_i·u_j / τ, the loss of view i with partner
    p(i) is ℓ_i = −log( exp(s_{i,p(i)}) / Σ_{k≠i} exp(s_ik) ), averaged over all 2B views.
    ``temperature`` may be a 0-d tensor (a schedule changes it every step).
    """
    if z_a.shape != z_b.shape or z_a.ndim != 2 or len(z_a) < 2:
        raise CompanionError(
            f"nt_xent needs two views of shape [B, d] with B >= 2, got {list(z_a.shape)} "
            f"and {list(z_b.shape)}"
        )
    if float(temperature) <= 0:
        raise CompanionError(f"temperature must be positive, got {float(temperature)}")
    with torch.autocast(z_a.device.type, enabled=False):  # similarities in float32
        u = F.normalize(torch.cat([z_a, z_b]).float(), dim=1)
        n = len(u)
        s = (u @ u.T) / temperature
        s = s.masked_fill(torch.eye(n, dtype=torch.bool, device=u.device), float("-inf"))
        partner = torch.arange(n, device=u.device).roll(n // 2)
        return F.cross_entropy(s, partner)
