"""Energy and feature change (Ren, Guo, Bae & Sutherland, ICLR 2023, "How to prepare your task
head for finetuning"), reconstructed from the abstract and Fig. 1: no official code.

The pipeline is pretrain (PT) → head probing (HP, only a fresh head trains on the frozen
backbone for τ epochs) → finetune (FT, all parameters). With cross-entropy, a feature
``z = f(x)`` receives the gradient ``∂L/∂z = Vᵀ (p(x) − e_y)``: its size is set by the
"energy" ``e_y − p(x)`` left by the head at the start of FT. Operational definition (ours,
the paper's exact formula was not reachable): the average initial energy

    AIE = mean_x ‖e_y − p₀(x)‖₂ ,

measured on the training set at FT start. The paper's prediction: as AIE grows, ‖z_FT − z₀‖
and the cosine distance grow, while z_FT·z₀ and ‖z_FT‖ first rise, then fall.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def average_initial_energy(logits: torch.Tensor, y: torch.Tensor) -> float:
    """AIE = mean over samples of ‖e_y − softmax(logits)‖₂ (the energy term of the gradient
    ``∂L/∂z = Vᵀ(p − e_y)``)."""
    p = F.softmax(logits.double(), dim=1)
    e = F.one_hot(y, p.shape[1]).double()
    return float((e - p).norm(dim=1).mean())


def feature_change(z0: torch.Tensor, z: torch.Tensor) -> dict[str, float]:
    """How far features moved from ``z0`` (before FT) to ``z`` (after), averaged over samples:
    Euclidean distance ‖z − z₀‖, cosine distance 1 − cos(z, z₀), dot product z·z₀, norm ‖z‖."""
    z0, z = z0.double(), z.double()
    return {
        "euclidean": float((z - z0).norm(dim=1).mean()),
        "cosine": float((1 - F.cosine_similarity(z, z0, dim=1)).mean()),
        "dot": float((z * z0).sum(dim=1).mean()),
        "norm": float(z.norm(dim=1).mean()),
    }


def spearman(a, b) -> float:
    """Spearman rank correlation (no ties expected; ties get their order of appearance)."""
    a = torch.as_tensor(a, dtype=torch.float64)
    b = torch.as_tensor(b, dtype=torch.float64)
    ra = a.argsort(stable=True).argsort().double()
    rb = b.argsort(stable=True).argsort().double()
    ra, rb = ra - ra.mean(), rb - rb.mean()
    return float((ra * rb).sum() / (ra.norm() * rb.norm()))
