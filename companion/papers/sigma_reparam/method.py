"""σReparam and attention entropy (Zhai et al., ICML 2023, arXiv:2303.06296).

σReparam reparametrizes every weight matrix W of a network as

    Ŵ = (γ / σ(W)) · W                                                        (Eq. 3)

with σ(W) the spectral norm (largest singular value) of W and γ a learned scalar. σ(W) is
estimated by one step of power iteration per training step, as in apple/ml-sigma-reparam
(``vision/layers.py``):

    v ← normalize(W u),   u ← normalize(Wᵀ v),   σ(W) ≈ vᵀ W u                  (power iteration)

where u and v are not differentiated through, but σ is (gradients flow into W through σ).
u starts at the top right-singular vector of W (one SVD at construction) and is stored only in
training mode; in eval mode one step is taken from the stored u and nothing is stored.
γ starts at σ(W₀), so Ŵ = W₀ at initialization: a converted model computes the same function as
the original one at step 0 and only its training dynamics differ. This follows the official vision
code; the paper's text and the official JAX speech code start γ at 1. Each weight matrix gets its
own σ and γ: the companion's ViT has separate q, k, v maps where the official ViT fuses them into
one qkv layer (one σ and γ for the three).

Attention entropy of query row i, with A = softmax(QKᵀ/√d):  Ent(A_i) = −Σ_j A_ij log A_ij.
Theorem 3.1: if the logits z of a row have ‖z‖₂ ≤ σ (T keys), then

    Ent(softmax(z)) ≥ log(1 + (T−1)β) + σ √(T(T−1)) β / (1 + (T−1)β),   β = exp(−σ √(T/(T−1)))

and the bound is tight: it is reached by z ∝ (T−1, −1, …, −1). Since entropy is shift-invariant,
‖z − mean(z)‖₂ can be used for σ. The bound falls exponentially fast in σ, so a large spectral
norm of the attention logits is what permits entropy collapse; σReparam controls it.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def power_iteration_step(
    weight: torch.Tensor, u: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """One power-iteration step on ``weight`` [out, in] from the right vector ``u`` [in].

    Returns ``(u_new, v)`` with v = normalize(W u) and u_new = normalize(Wᵀ v).
    """
    v = F.normalize(weight @ u, dim=0)
    u_new = F.normalize(weight.T @ v, dim=0)
    return u_new, v


class SigmaReparam(nn.Module):
    """Ŵ = γ · W / σ(W) for a linear map or a convolution (weights flattened to [out, in]).

    Wraps an existing ``nn.Linear`` or ``nn.Conv2d`` and keeps its weights, where the official
    ``convert_to_sn`` draws new ones from trunc_normal(0.02). The ViT in ``companion.nn``
    initializes its linear layers that way already; its patch-embedding convolution keeps
    PyTorch's default (Kaiming-uniform) initialization. γ starts at σ(W₀), as in the official
    vision code (``SNLinear``), so that Ŵ = W₀.
    """

    def __init__(self, layer: nn.Linear | nn.Conv2d):
        super().__init__()
        if not isinstance(layer, (nn.Linear, nn.Conv2d)):
            raise TypeError(f"SigmaReparam wraps nn.Linear or nn.Conv2d, not {type(layer)}")
        self.conv = (
            dict(
                stride=layer.stride,
                padding=layer.padding,
                dilation=layer.dilation,
                groups=layer.groups,
            )
            if isinstance(layer, nn.Conv2d)
            else None
        )
        self.weight = nn.Parameter(layer.weight.detach().clone())
        self.bias = None if layer.bias is None else nn.Parameter(layer.bias.detach().clone())
        with torch.no_grad():
            _, s, vh = torch.linalg.svd(self.matrix(), full_matrices=False)
        self.register_buffer("u", vh[0].clone())
        self.register_buffer("sigma", s[0].clone())  # last estimate, for monitoring
        self.gamma = nn.Parameter(s[0].clone())  # γ₀ = σ(W₀): Ŵ = W₀ at init

    def matrix(self) -> torch.Tensor:
        """The weight as a matrix [out, in] (a convolution's kernel flattened)."""
        return self.weight.flatten(1)

    def spectral_norm(self) -> torch.Tensor:
        """σ(W) by one power-iteration step (u stored in training mode only)."""
        w = self.matrix()
        with torch.no_grad():
            u, v = power_iteration_step(w, self.u)
            if self.training:
                self.u.copy_(u)
        sigma = torch.einsum("o,oi,i->", v, w, u)  # vᵀ W u, differentiable in W
        if self.training:
            self.sigma.copy_(sigma.detach())
        return sigma

    def reparametrized_weight(self) -> torch.Tensor:
        """Ŵ = γ / σ(W) · W  (Eq. 3), in the layer's own shape."""
        return self.gamma / self.spectral_norm() * self.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.reparametrized_weight()
        if self.conv is None:
            return F.linear(x, w, self.bias)
        return F.conv2d(x, w, self.bias, **self.conv)


def convert_to_sigma_reparam(model: nn.Module) -> nn.Module:
    """Replace every ``nn.Linear`` and ``nn.Conv2d`` in ``model`` (in place) by σReparam."""
    for name, child in model.named_children():
        if isinstance(child, (nn.Linear, nn.Conv2d)):
            setattr(model, name, SigmaReparam(child))
        else:
            convert_to_sigma_reparam(child)
    return model


def remove_normalization(model: nn.Module) -> nn.Module:
    """Replace LayerNorm/BatchNorm/GroupNorm layers by Identity (the paper's "no LN" runs)."""
    norms = (nn.LayerNorm, nn.BatchNorm1d, nn.BatchNorm2d, nn.GroupNorm)
    for name, child in model.named_children():
        if isinstance(child, norms):
            setattr(model, name, nn.Identity())
        else:
            remove_normalization(child)
    return model


def attention_entropy(probs: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """Ent(A_i) = −Σ_j A_ij log A_ij for every query row; ``probs`` [..., T, T] → [..., T]."""
    return -(probs * (probs + eps).log()).sum(dim=-1)


def entropy_lower_bound(sigma: torch.Tensor | float, T: int) -> torch.Tensor:
    """Theorem 3.1: the least entropy of softmax(z) over logits with ‖z‖₂ ≤ σ, T entries."""
    sigma = torch.as_tensor(sigma, dtype=torch.float64)
    beta = torch.exp(-sigma * math.sqrt(T / (T - 1)))
    denom = 1 + (T - 1) * beta
    return torch.log(denom) + sigma * math.sqrt(T * (T - 1)) * beta / denom


def centered_logit_norm(scores: torch.Tensor) -> torch.Tensor:
    """‖z_i − mean(z_i)‖₂ per query row: the σ for which Theorem 3.1 bounds that row."""
    return (scores - scores.mean(dim=-1, keepdim=True)).norm(dim=-1)
