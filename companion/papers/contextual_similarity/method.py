"""Contextual similarity optimization for metric learning (Liao, Tsiligkaridis & Kulis, ICML 2023).

A retrieval embedding is judged by its ranking: are the nearest neighbours of a query from the
query's class? The usual pairwise losses pull each same-label pair together and push each
different-label pair apart, so one wrong label is obeyed as faithfully as a right one. The paper
adds a loss on **contextual similarity**: two samples are similar when their *neighbourhoods*
overlap, a quantity borrowed from unsupervised re-ranking (k-reciprocal neighbours, Zhong et
al., 2017). A mislabelled sample whose neighbours all disagree with its label gets little pull
from it.

For a batch of L2-normalised embeddings with cosine similarities S and squared distances
D = 2 − 2S (paper Sec. 3, official ``losses.py: get_jaccard_similarity``):

1. k-neighbourhoods: N_ij = 𝟙[D_ij ≤ D_i,(k) + ε], D_i,(k) the k-th smallest distance in row i
   (self included). The Heaviside step has no useful gradient; the paper's heuristic passes the
   incoming gradient straight through, times 10 (:class:`GreaterThan`).
2. Overlap of neighbourhoods, counting shared neighbours and shared non-neighbours:
   W̃_ij = ½ (|N_i ∩ N_j| / |N_i| + |N̄_i ∩ N̄_j| / |N̄_i|) · N_ij (denominators detached).
3. Query expansion over reciprocal k/2-neighbours R = N′ ⊙ N′ᵀ: J = (R W̃) / rowsum(R), then
   symmetrised, J ← ½ (J + Jᵀ). J is the contextual similarity.

Losses, with w_ij = 𝟙[y_i = y_j] (``contrastive_jaccard``, ``margin_contrastive``, ``main.py``):

- L_context = (1/B²) Σ_{i≠j} [ w_ij (1 − J_ij)² + (1 − w_ij) J_ij² ]
- L_contrast = mean of the active relu(m₊ − S_ij) over positives + mean of the active
  relu(S_ij − m₋) over negatives (each mean over the pairs whose hinge is non-zero)
- L_reg = (mean S − s_reg)²
- L_hybrid = λ L_context + γ L_reg + (1 − λ − γ) L_contrast,  λ = 0.4, γ = 0.1.

The paper's baseline, the plain contrastive loss, is ``margin_contrastive`` with m₊ = 0.9 and
m₋ = 0.6 (``main.py --loss contrastive``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from companion.errors import CompanionError, unknown

HEURISTIC_GRADIENT = 10.0  # the official GreaterThan.backward scale


class GreaterThan(torch.autograd.Function):
    """The Heaviside step 𝟙[x ≥ y] with the paper's heuristic gradient: backward returns
    10·g to ``x`` and −10·g to ``y`` (straight-through, scaled), as ``losses.py: GreaterThan``.
    An exact step would have zero gradient almost everywhere."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        ctx.y_shape = y.shape
        return (x >= y).to(x.dtype)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        grad_y = None
        if ctx.needs_input_grad[1]:  # y broadcasts along rows: sum back to its shape
            grad_y = (-HEURISTIC_GRADIENT * grad).sum_to_size(ctx.y_shape)
        return HEURISTIC_GRADIENT * grad, grad_y


def neighbourhood_mask(distances: torch.Tensor, k: int, eps: float) -> torch.Tensor:
    """N_ij = 𝟙[D_ij ≤ D_i,(k) + ε] (step 1): the k nearest samples of row i, self included,
    widened by ε; the threshold is detached, the step has the heuristic gradient."""
    kth = distances.topk(k, dim=1, largest=False).values[:, -1:]
    return GreaterThan.apply(-distances + eps, -kth.detach())


def contextual_similarity(scores: torch.Tensor, k: int = 4, eps: float = 0.05) -> torch.Tensor:
    """The contextual similarity J [B, B] of a batch whose cosine similarities are ``scores``
    (steps 1–3 of the module docstring; ``get_jaccard_similarity`` of the official code)."""
    b = scores.shape[0]
    if scores.ndim != 2 or scores.shape[1] != b:
        raise CompanionError(f"scores must be a square [B, B] matrix, got {list(scores.shape)}")
    if not 2 <= k <= b:
        raise CompanionError(f"k must lie in [2, {b}] (the batch size), got {k}")
    distances = (2.0 - 2.0 * scores).clamp(min=0.0)
    n = neighbourhood_mask(distances, k, eps)
    shared = (n @ n.T) / n.sum(1, keepdim=True).detach()
    n_not = 1.0 - n
    # clamp: a row whose neighbourhood is the whole batch has no non-neighbours (the official
    # code would divide by zero there)
    shared_not = (n_not @ n_not.T) / n_not.sum(1, keepdim=True).detach().clamp(min=1.0)
    w_tilde = 0.5 * (shared + shared_not) * n
    half = neighbourhood_mask(distances, k // 2, eps)
    reciprocal = half * half.T
    j = (reciprocal @ w_tilde) / reciprocal.sum(1, keepdim=True)
    return 0.5 * (j + j.T)


def contextual_loss(scores: torch.Tensor, same: torch.Tensor, k: int = 4, eps: float = 0.05):
    """L_context = (1/B²) Σ_{i≠j} [w_ij (1 − J_ij)² + (1 − w_ij) J_ij²]: J pulled to 1 for
    same-label pairs and to 0 for the others (``contrastive_jaccard``)."""
    j = contextual_similarity(scores, k, eps)
    off = 1.0 - torch.eye(len(j), device=j.device, dtype=j.dtype)
    per_pair = same * (1.0 - j).square() + (1.0 - same) * j.square()
    return (per_pair * off).sum() / len(j) ** 2


def margin_contrastive(
    scores: torch.Tensor, same: torch.Tensor, pos_margin: float, neg_margin: float
) -> torch.Tensor:
    """The contrastive loss with margins on cosine similarity: the mean of the active hinges
    relu(m₊ − S_ij) over same-label pairs plus the mean of the active relu(S_ij − m₋) over the
    other pairs; a term with no active pair is 0 (``margin_contrastive``)."""
    pos = F.relu(pos_margin - scores) * same
    neg = F.relu(scores - neg_margin) * (1.0 - same)
    total = (scores * 0.0).sum()  # zero, but in the graph: a batch with no active pair still steps
    for hinge in (pos, neg):
        active = (hinge > 0).sum()
        if active > 0:
            total = total + hinge.sum() / active
    return total


def similarity_regularizer(scores: torch.Tensor, s_reg: float) -> torch.Tensor:
    """L_reg = (mean S − s_reg)²: keeps the average cosine similarity of the batch near
    ``s_reg``, so the embedding cannot satisfy the contextual loss by collapsing."""
    return (scores.mean() - s_reg).square()


LOSSES = ("contrastive", "no_context", "hybrid")


def retrieval_loss(
    loss: str,
    embeddings: torch.Tensor,
    labels: torch.Tensor,
    *,
    lam: float = 0.4,
    gamma: float = 0.1,
    k: int = 4,
    eps: float = 0.05,
    pos_margin: float = 0.75,
    neg_margin: float = 0.6,
    s_reg: float = 0.25,
    baseline_pos_margin: float = 0.9,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The training loss of a batch of L2-normalised ``embeddings`` [B, d] with ``labels``.

    ``"hybrid"``: λ L_context + γ L_reg + (1 − λ − γ) L_contrast (the paper's loss, with
    m₊ = ``pos_margin``); ``"contrastive"``: the baseline, margin_contrastive with
    m₊ = ``baseline_pos_margin`` and the same m₋; ``"no_context"``: the control, the hybrid
    loss with its contextual term removed (γ L_reg + (1 − λ − γ) L_contrast, the same margins
    and weights), so that it differs from ``"hybrid"`` only by the paper's mechanism. Computed
    in float32 under mixed precision, as the official code (autocast off for the loss).
    """
    if loss not in LOSSES:
        raise unknown("loss", loss, LOSSES)
    with torch.autocast(embeddings.device.type, enabled=False):
        f = embeddings.float()
        scores = f @ f.T
        same = (labels[:, None] == labels[None, :]).float()
        if loss == "contrastive":
            value = margin_contrastive(scores, same, baseline_pos_margin, neg_margin)
            return value, {}
        context = (
            contextual_loss(scores, same, k, eps) if loss == "hybrid" else scores.new_zeros(())
        )
        reg = similarity_regularizer(scores, s_reg)
        contrast = margin_contrastive(scores, same, pos_margin, neg_margin)
        value = lam * context + gamma * reg + (1.0 - lam - gamma) * contrast
        return value, {"context": context.item(), "contrast": contrast.item(), "reg": reg.item()}


class Embedder(nn.Module):
    """backbone → linear map to ``dim`` → L2 normalisation (the paper's ResNet-50 → Linear(2048,
    512) → normalise, here with any backbone that outputs ``features`` numbers)."""

    def __init__(self, backbone: nn.Module, features: int, dim: int):
        super().__init__()
        self.backbone = backbone
        self.remap = nn.Linear(features, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.remap(self.backbone(x)), dim=-1)
