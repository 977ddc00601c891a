"""Mega's layer: a multi-dimensional damped EMA feeding single-head gated attention.

Ma, Zhou, Kong, He, Gui, Neubig, May, Zettlemoyer. "Mega: Moving Average Equipped Gated
Attention", ICLR 2023 (arXiv 2209.10655). Official code: facebookresearch/mega,
``fairseq/modules/exponential_moving_average.py`` (``MultiHeadEMA``),
``fairseq/modules/moving_average_gated_attention.py`` (``MovingAverageGatedAttention``),
``fairseq/modules/relative_positional_bias.py`` and ``fairseq/utils.py`` (``laplace``).

Tensors here are batch-first ``[B, L, D]`` (the official code is time-first ``[L, B, D]``).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from companion.errors import CompanionError, unknown

ATTENTIONS = ("laplace", "softmax")


# ---------------------------------------------------------------------------------- the EMA
class MultiDimEMA(nn.Module):
    """The paper's multi-dimensional damped EMA, one per channel with ``ndim`` components.

    For channel d and component j, with u_t = β_dj x_t (the expansion):

        h_t = α_dj u_t + (1 − α_dj δ_dj) h_{t−1},        y_t = (1/√n) Σ_j γ_dj h_t

    α = σ(``alpha``) and δ = σ(``delta``) lie in (0, 1): α is the weight of the new input, δ the
    damping. Unrolled, y is a causal convolution of x with the kernel

        K_d[l] = (1/√n) Σ_j γ_dj α_dj β_dj (1 − α_dj δ_dj)^l,

    computed here by FFT of length 2L (a shorter FFT would wrap the sequence around). The layer
    returns X′ = SiLU(EMA(X) + ω ⊙ X) . ``bidirectional``: a second kernel runs right to
    left, shifted by one so the current token is counted once (the official code's ``shift``).
    Initialization as the official code: α, δ logits N(0, 0.2); β alternating ±1 plus N(0, 0.02);
    γ, ω N(0, 1).
    """

    def __init__(self, embed_dim: int, ndim: int = 2, bidirectional: bool = False):
        super().__init__()
        self.embed_dim, self.ndim, self.bidirectional = embed_dim, ndim, bidirectional
        self.scale = math.sqrt(1.0 / ndim)
        kernels = 2 * embed_dim if bidirectional else embed_dim
        self.alpha = nn.Parameter(torch.empty(kernels, ndim, 1))
        self.delta = nn.Parameter(torch.empty(kernels, ndim, 1))
        self.beta = nn.Parameter(torch.empty(kernels, ndim, 1))
        self.gamma = nn.Parameter(torch.empty(kernels, ndim))
        self.omega = nn.Parameter(torch.empty(embed_dim))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        with torch.no_grad():
            nn.init.normal_(self.alpha, 0.0, 0.2)
            nn.init.normal_(self.delta, 0.0, 0.2)
            sign = torch.ones(self.ndim, 1)
            sign[1::2] = -1.0  # β = [1, −1, 1, −1, ...]: "seems more stable" (official code)
            self.beta.normal_(0.0, 0.02).add_(sign)
            nn.init.normal_(self.gamma, 0.0, 1.0)
            nn.init.normal_(self.omega, 0.0, 1.0)

    def coeffs(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(α, 1 − αδ), each ``[kernels, ndim, 1]``."""
        alpha, delta = torch.sigmoid(self.alpha), torch.sigmoid(self.delta)
        return alpha, 1.0 - alpha * delta

    def kernel(self, length: int) -> torch.Tensor:
        """K[d, l] for l = 0..length−1, ``[kernels, length]`` (first ``embed_dim`` rows: the
        left-to-right kernels; with ``bidirectional``, then the right-to-left ones)."""
        alpha, q = self.coeffs()
        powers = torch.exp(torch.arange(length, device=q.device, dtype=q.dtype) * torch.log(q))
        return torch.einsum("dnl,dn->dl", alpha * self.beta * powers, self.gamma * self.scale)

    def full_kernel(self, length: int) -> torch.Tensor:
        """The kernel the FFT applies: ``[D, length]`` causal, or ``[D, 2·length]`` with the
        right-to-left part at indices L+1..2L−1, which a length-2L circular convolution reads
        as offsets −(L−1)..−1 (as the official ``shift=True``)."""
        k = self.kernel(length)
        if not self.bidirectional:
            return k
        k1, k2 = k.split(self.embed_dim, dim=0)
        return F.pad(k1, (0, length)) + F.pad(k2[:, 1:].flip(-1), (length + 1, 0))

    def ema(self, x: torch.Tensor) -> torch.Tensor:
        """EMA(X) by FFT convolution, ``x`` ``[B, L, D]`` → ``[B, L, D]`` (before ω and SiLU)."""
        length = x.shape[1]
        k = self.full_kernel(length).float()
        n = 2 * length  # circular convolution of length 2L: offsets −(L−1)..L−1 never wrap
        x_f = torch.fft.rfft(x.transpose(1, 2).float(), n=n)
        y = torch.fft.irfft(x_f * torch.fft.rfft(k, n=n), n=n)[..., :length]
        return y.transpose(1, 2).to(x.dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """X′ = SiLU(EMA(X) + ω ⊙ X) ."""
        return F.silu(self.ema(x) + self.omega * x)


def ema_recurrence(ema: MultiDimEMA, x: torch.Tensor) -> torch.Tensor:
    """EMA(X) by the recurrence, one step at a time (the slow, O(L) sequential form
    the FFT replaces; causal kernels only). ``x`` ``[B, L, D]`` → ``[B, L, D]``."""
    if ema.bidirectional:
        raise CompanionError("ema_recurrence runs the causal EMA only (bidirectional=False)")
    alpha, q = ema.coeffs()  # [D, n, 1]
    alpha, q, beta = alpha[..., 0], q[..., 0], ema.beta[..., 0]  # [D, n]
    h = x.new_zeros(x.shape[0], ema.embed_dim, ema.ndim)
    out = []
    for t in range(x.shape[1]):
        u = beta * x[:, t, :, None]  # expand each channel to n components
        h = alpha * u + q * h  # damped EMA
        out.append((h * ema.gamma).sum(-1) * ema.scale)  # project back with γ (η in the paper)
    return torch.stack(out, dim=1)


# ----------------------------------------------------------------------- gated attention
def laplace(x: torch.Tensor, mu: float = 0.707107, sigma: float = 0.282095) -> torch.Tensor:
    """The paper's laplace attention function (paper, "laplace attention function"; official
    ``fairseq/utils.py``): ½[1 + erf((x − μ)/(σ√2))], with μ = √½ and σ = √(1/4π) chosen so it
    approximates relu² near 0 and saturates at 1."""
    return 0.5 * (1.0 + torch.erf((x - mu) / (sigma * math.sqrt(2.0))))


class RelativePositionBias(nn.Module):
    """A learned scalar b[j − i] per relative offset (official ``SimpleRelativePositionalBias``):
    ``forward(L)`` is the ``[L, L]`` matrix B[i, j] = b[j − i], for L ≤ ``max_positions``."""

    def __init__(self, max_positions: int):
        super().__init__()
        self.max_positions = max_positions
        self.bias = nn.Parameter(torch.empty(2 * max_positions - 1).normal_(0.0, 0.02))

    def forward(self, length: int) -> torch.Tensor:
        if length > self.max_positions:
            raise CompanionError(
                f"sequence (or chunk) length {length} exceeds max_positions {self.max_positions}"
            )
        pos = torch.arange(length, device=self.bias.device)
        return self.bias[pos[None, :] - pos[:, None] + self.max_positions - 1]


class MegaLayer(nn.Module):
    """Moving average equipped gated attention (the paper's gated attention; official
    ``MovingAverageGatedAttention``), pre-norm, one head.

        X′ = EMA-layer(Norm(X))                               (X′ = Norm(X) if not ``use_ema``)
        Z  = SiLU(X′W_z)                      shared representation, width z
        Q  = κ_q ⊙ Z + μ_q,  K = κ_k ⊙ Z + μ_k    per-dimension scale and offset
        V  = SiLU(Norm(X) W_v)                 from the normed input, not X′
        O  = f(QKᵀ/L + b_rel) V   (laplace, L the keys per row)  or softmax(QKᵀ/√z + b_rel) V
        γ  = SiLU(X′W_γ)   reset gate;   φ = σ(X′W_φ)   update gate
        H  = SiLU(X′W_h + (γ ⊙ O)U_h)
        Y  = φ ⊙ H + (1 − φ) ⊙ X

    With ``chunk_size`` c > 0 (Mega-chunk), queries attend only to keys in their own
    chunk of c tokens, so attention costs O(L·c) instead of O(L²); the EMA still runs over the
    whole sequence and carries information between chunks. L must be divisible by c.
    """

    def __init__(
        self,
        embed_dim: int,
        zdim: int,
        hdim: int,
        ndim: int,
        attention: str = "laplace",
        chunk_size: int = -1,
        max_positions: int = 1024,
        use_ema: bool = True,
        bidirectional: bool = False,
    ):
        super().__init__()
        if attention not in ATTENTIONS:
            raise unknown("attention", attention, ATTENTIONS)
        self.embed_dim, self.zdim, self.hdim = embed_dim, zdim, hdim
        self.attention, self.chunk_size, self.use_ema = attention, chunk_size, use_ema
        self.norm = nn.LayerNorm(embed_dim)
        self.move = MultiDimEMA(embed_dim, ndim, bidirectional) if use_ema else None
        self.v_proj = nn.Linear(embed_dim, hdim)
        # one projection of X′ for the update gate φ, Z and the reset gate γ, and X′W_h
        self.mx_proj = nn.Linear(embed_dim, embed_dim + zdim + hdim + embed_dim)
        self.h_proj = nn.Linear(hdim, embed_dim)  # U_h
        self.kappa = nn.Parameter(torch.empty(2, zdim))  # κ_q, κ_k (``gamma`` in the code)
        self.mu = nn.Parameter(torch.zeros(2, zdim))  # μ_q, μ_k (``beta`` in the code)
        self.rel_pos_bias = RelativePositionBias(chunk_size if chunk_size > 0 else max_positions)
        for lin in (self.v_proj, self.mx_proj, self.h_proj):
            nn.init.normal_(lin.weight, 0.0, 0.02)
            nn.init.zeros_(lin.bias)
        nn.init.normal_(self.kappa, 0.0, 0.02)

    def attention_weights(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """A for queries and keys ``[B, K, C, z]`` (K chunks of C tokens) → ``[B, K, C, C]``."""
        length = k.shape[2]
        bias = self.rel_pos_bias(length)
        if self.attention == "softmax":
            return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.zdim) + bias, dim=-1)
        return laplace(q @ k.transpose(-2, -1) / length + bias)

    def forward(self, x: torch.Tensor, return_attention: bool = False):
        b, length, _ = x.shape
        residual = x
        x = self.norm(x)
        v = F.silu(self.v_proj(x))
        mx = self.move(x) if self.use_ema else x
        phi, zr, hx = self.mx_proj(mx).split(
            [self.embed_dim, self.zdim + self.hdim, self.embed_dim], dim=-1
        )
        phi = torch.sigmoid(phi)  # update gate φ
        z, r = F.silu(zr).split([self.zdim, self.hdim], dim=-1)  # Z, reset gate
        q, k = (z.unsqueeze(2) * self.kappa + self.mu).unbind(dim=2)  # Q and K
        c = length if self.chunk_size <= 0 or self.chunk_size >= length else self.chunk_size
        if length % c:
            raise CompanionError(f"sequence length {length} is not divisible by chunk_size {c}")
        q, k = q.reshape(b, length // c, c, self.zdim), k.reshape(b, length // c, c, self.zdim)
        att = self.attention_weights(q, k)  # [B, K, C, C]
        o = (att @ v.reshape(b, length // c, c, self.hdim)).reshape(b, length, self.hdim)
        h = F.silu(hx + self.h_proj(o * r))
        out = residual + phi * (h - residual)  # φ ⊙ H + (1 − φ) ⊙ X
        return (out, att) if return_attention else out


class NormalizedFFN(nn.Module):
    """The feed-forward sublayer after each Mega layer (official ``NormalizedFeedForwardNetwork``):
    X + W₂ SiLU(W₁ Norm(X))."""

    def __init__(self, embed_dim: int, ffn_dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(embed_dim)
        self.fc1, self.fc2 = nn.Linear(embed_dim, ffn_dim), nn.Linear(ffn_dim, embed_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(F.silu(self.fc1(self.norm(x))))


class MegaClassifier(nn.Module):
    """Token embedding → ``depth`` × (MegaLayer, NormalizedFFN) → Norm → mean pool → linear."""

    def __init__(
        self,
        vocab: int,
        classes: int,
        embed_dim: int,
        zdim: int,
        hdim: int,
        ndim: int,
        depth: int,
        ffn_dim: int,
        attention: str = "laplace",
        chunk_size: int = -1,
        max_positions: int = 1024,
        use_ema: bool = True,
        bidirectional: bool = False,
    ):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed_dim)
        nn.init.normal_(self.embed.weight, 0.0, embed_dim**-0.5)
        self.layers = nn.ModuleList(
            MegaLayer(
                embed_dim,
                zdim,
                hdim,
                ndim,
                attention,
                chunk_size,
                max_positions,
                use_ema,
                bidirectional,
            )
            for _ in range(depth)
        )
        self.ffns = nn.ModuleList(NormalizedFFN(embed_dim, ffn_dim) for _ in range(depth))
        self.norm = nn.LayerNorm(embed_dim)
        self.head = nn.Linear(embed_dim, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        for layer, ffn in zip(self.layers, self.ffns):
            x = ffn(layer(x))
        return self.head(self.norm(x).mean(dim=1))
