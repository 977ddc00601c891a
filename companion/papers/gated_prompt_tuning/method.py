"""Gated prompt tuning on a frozen self-supervised ViT, and the MAE pre-training it starts from.

Names follow the paper (Yoo et al., ICML 2023, Sec. 3-4) and the official code
(ryongithub/GatedPromptTuning, ``src/models/vit_prompt/vit_mae.py``, class
``PromptedVisionTransformer``; the attention with a temperature is in
``src/models/vit_backbones/vit_mae.py``):

* **VPT** (Jia et al., 2022, shallow): ``P`` learnable prompt tokens are put after the class
  token and before the patch tokens; only the prompts and a linear head train. The paper's
  observation: for self-supervised backbones (MAE, MoCo-v3), *inserting the prompts at a later
  block k* (run blocks ``0..k-1`` on the image tokens only, then concatenate) often beats the
  input (k = 0). :class:`PromptedViT` with ``insert_block=k`` does that.
* **Gated prompt tuning**: prompts enter at the input, and after every block ``i < L-1`` the
  prompt tokens are a convex combination of the block's output and its input,

  P_{i+1} = g_i · Block_i(x_i)[prompts] + (1 − g_i) · P_i,   g_i = σ(ℓ_i),

  with ``ℓ_i`` initialized to ``−gate_init`` (official: ``GATE_INIT`` = 5, so g ≈ 0.0067), so the
  prompts are almost not updated by a block until training opens its gate: the model *learns*
  where prompts should start acting. The class and patch tokens take the block output as usual.
* **Learnable attention temperature** per block: ``softmax(QKᵀ/√d_h / τ_i)`` for *all* tokens,
  ``τ_i`` initialized to 1 and clamped to [0.01, 10] before every forward (official
  ``reinit_temp`` writes the clamp into ``.data``).

The backbone is :class:`companion.nn.ViT`; this module composes its parts (``patch_embed``,
``blocks``, each block's ``attn.q/k/v/proj``, ``norm1/2``, ``mlp``) instead of changing it.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from companion.nn import ViT
from companion.nn.vit import Block

TEMP_MIN, TEMP_MAX = 0.01, 10.0  # official reinit_temp clamp


# ----------------------------------------------------------------------------- frozen blocks
def attention_with_temperature(block: Block, x: torch.Tensor, temp: torch.Tensor | float = 1.0):
    """The block's self-attention with logits divided by ``temp`` (official ``Attention.forward``:
    ``attn = (q @ kᵀ) * scale; attn = (attn / temp).softmax(-1)``)."""
    attn = block.attn
    q, k, v = attn.split_heads(attn.q(x)), attn.split_heads(attn.k(x)), attn.split_heads(attn.v(x))
    scores = q @ k.transpose(-2, -1) / math.sqrt(attn.head_dim)
    probs = (scores / temp).softmax(dim=-1)
    out = attn.dropout(probs) @ v
    return attn.proj(out.transpose(1, 2).reshape(x.shape))


def block_forward(block: Block, x: torch.Tensor, temp: torch.Tensor | float = 1.0) -> torch.Tensor:
    """One pre-norm block, x + Attn_τ(Norm(x)), then x + MLP(Norm(x)); ``temp=1`` is the block."""
    x = x + attention_with_temperature(block, block.norm1(x), temp)
    return x + block.mlp(block.norm2(x))


def prompt_init_bound(patch_size: int, channels: int, dim: int) -> float:
    """VPT's uniform init range √(6 / (fan_in + fan_out)) of the patch embedding (Xavier):
    the official code writes fan_in as 3·p² for RGB; here it is channels·p²."""
    return math.sqrt(6.0 / (channels * patch_size * patch_size + dim))


# ----------------------------------------------------------------------------- prompted model
class PromptedViT(nn.Module):
    """A frozen ViT with ``num_prompts`` learnable prompt tokens and a linear head.

    ``insert_block=k`` (VPT at block k): blocks ``0..k-1`` see the image tokens only, then the
    prompts are put after the class token. ``gated=True`` (GatedPT): prompts at the input,
    ``depth − 1`` gates ``g_i = σ(ℓ_i)`` and ``depth`` learnable temperatures (official
    ``GATE_NUM = depth − 1``, ``TEMP_NUM = depth``). ``num_prompts=0``: a linear probe.
    Readout as the official MAE model: LayerNorm (the backbone's, frozen) of the mean over all
    tokens but the class token, prompts included. ``gated=True, use_gates=False`` is the
    control without gates: prompts at the input with the learned temperatures (VPT at block 0
    plus the temperatures).
    """

    def __init__(
        self,
        backbone: ViT,
        num_classes: int,
        num_prompts: int = 10,
        insert_block: int = 0,
        gated: bool = False,
        gate_init: float = 5.0,
        use_gates: bool = True,
        learn_temperature: bool = True,
        prompt_dropout: float = 0.1,
        channels: int = 1,
    ):
        super().__init__()
        depth = len(backbone.blocks)
        if not 0 <= insert_block < depth:
            raise ValueError(f"insert_block {insert_block} is not in 0..{depth - 1}")
        if gated and insert_block != 0:
            raise ValueError("gated prompts enter at the input (insert_block=0)")
        self.backbone = backbone.requires_grad_(False)
        self.num_prompts, self.insert_block, self.gated = num_prompts, insert_block, gated
        dim = backbone.pos_embed.shape[-1]
        patch = backbone.patch_embed.kernel_size[0]
        bound = prompt_init_bound(patch, channels, dim)
        self.prompts = nn.Parameter(torch.empty(1, num_prompts, dim).uniform_(-bound, bound))
        self.prompt_dropout = nn.Dropout(prompt_dropout)
        self.use_gates = gated and use_gates
        if self.use_gates:
            self.gate_logit = nn.Parameter(torch.full((depth - 1,), -float(gate_init)))
        if gated:
            self.temperature = nn.Parameter(torch.ones(depth), requires_grad=learn_temperature)
        self.head = nn.Linear(dim, num_classes)

    def train(self, mode: bool = True):
        """The backbone stays in eval mode (official ``train``); prompt dropout follows ``mode``."""
        super().train(mode)
        self.backbone.eval()
        return self

    def gates(self) -> torch.Tensor:
        """g_i = σ(ℓ_i), one per block but the last (empty for VPT and the control)."""
        return self.gate_logit.sigmoid() if self.use_gates else torch.empty(0)

    def clamp_temperature(self) -> None:
        """Official ``reinit_temp``: clamp τ to [0.01, 10] in place, outside autograd."""
        if self.gated:
            with torch.no_grad():
                self.temperature.clamp_(TEMP_MIN, TEMP_MAX)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        vit, n = self.backbone, self.num_prompts
        h = vit.tokens(x)
        if self.gated:
            self.clamp_temperature()
            gates, temps = self.gates(), self.temperature
        for i, block in enumerate(vit.blocks):
            if i == self.insert_block and n:
                prompts = self.prompt_dropout(self.prompts.expand(len(h), -1, -1))
                h = torch.cat([h[:, :1], prompts, h[:, 1:]], dim=1)
            if not self.gated:
                h = block_forward(block, h)
                continue
            prompt_in = h[:, 1 : 1 + n]
            h = block_forward(block, h, temps[i])
            if i < len(gates):  # the last block has no gate (GATE_NUM = depth - 1)
                mixed = gates[i] * h[:, 1 : 1 + n] + (1 - gates[i]) * prompt_in
                h = torch.cat([h[:, :1], mixed, h[:, 1 + n :]], dim=1)
        return vit.norm(h[:, 1:].mean(dim=1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


# ----------------------------------------------------------------------------- MAE pre-training
def patchify(x: torch.Tensor, p: int) -> torch.Tensor:
    """Images [B, C, H, W] to patches [B, N, p²·C] in the order of the patch embedding."""
    b, c, h, w = x.shape
    x = x.reshape(b, c, h // p, p, w // p, p)
    return x.permute(0, 2, 4, 3, 5, 1).reshape(b, (h // p) * (w // p), p * p * c)


def random_masking(batch: int, n: int, mask_ratio: float, generator=None, device=None):
    """MAE's per-sample random masking: (indices of kept patches [B, n_keep], mask [B, N] with
    1 = masked), from a random permutation of the patches."""
    n_keep = max(1, int(round(n * (1 - mask_ratio))))
    noise = torch.rand(batch, n, generator=generator, device=device)
    order = noise.argsort(dim=1)
    keep = order[:, :n_keep]
    mask = torch.ones(batch, n, device=device)
    mask.scatter_(1, keep, 0.0)
    return keep, mask


class MAE(nn.Module):
    """A masked autoencoder (He et al., 2022) around a :class:`companion.nn.ViT` encoder.

    The encoder sees the class token and the *visible* patches only; a light decoder (one
    block) gets the encoded tokens back in place, mask tokens elsewhere, and predicts the pixels
    of every patch; the loss is the MSE on masked patches of per-patch-normalized pixels
    (MAE's ``norm_pix_loss``).
    """

    def __init__(
        self,
        encoder: ViT,
        decoder_dim: int = 32,
        decoder_heads: int = 2,
        mask_ratio: float = 0.75,
        channels: int = 1,
    ):
        super().__init__()
        self.encoder, self.mask_ratio = encoder, mask_ratio
        dim = encoder.pos_embed.shape[-1]
        self.patch = encoder.patch_embed.kernel_size[0]
        n = encoder.num_patches
        self.decoder_embed = nn.Linear(dim, decoder_dim)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, decoder_dim))
        self.decoder_pos = nn.Parameter(torch.randn(1, n + 1, decoder_dim) * 0.02)
        self.decoder = Block(decoder_dim, decoder_heads, mlp_ratio=2.0)
        self.decoder_norm = nn.LayerNorm(decoder_dim)
        self.predict = nn.Linear(decoder_dim, self.patch * self.patch * channels)
        nn.init.normal_(self.mask_token, std=0.02)

    def encode(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        vit = self.encoder
        h = vit.patch_embed(x).flatten(2).transpose(1, 2) + vit.pos_embed[:, 1:]
        h = torch.gather(h, 1, keep[..., None].expand(-1, -1, h.shape[-1]))
        cls = (vit.cls_token + vit.pos_embed[:, :1]).expand(len(h), -1, -1)
        h = torch.cat([cls, h], dim=1)
        for block in vit.blocks:
            h = block(h)
        return vit.norm(h)

    def loss(self, x: torch.Tensor) -> torch.Tensor:
        n = self.encoder.num_patches
        keep, mask = random_masking(len(x), n, self.mask_ratio, device=x.device)
        z = self.decoder_embed(self.encode(x, keep))
        full = self.mask_token.expand(len(x), n, -1).clone()
        full.scatter_(1, keep[..., None].expand(-1, -1, z.shape[-1]), z[:, 1:])
        d = torch.cat([z[:, :1], full], dim=1) + self.decoder_pos
        pred = self.predict(self.decoder_norm(self.decoder(d)))[:, 1:]
        target = patchify(x, self.patch)
        mean, var = target.mean(-1, keepdim=True), target.var(-1, keepdim=True)
        target = (target - mean) / (var + 1e-6).sqrt()
        per_patch = (pred - target).pow(2).mean(-1)
        return (per_patch * mask).sum() / mask.sum()


def mae_step(model: MAE, batch):
    """The MAE step for :func:`companion.core.fit`: loss on masked patches."""
    (x,) = batch[:1]
    loss = model.loss(x)
    return loss, {}


def classification_step(model: nn.Module, batch):
    """Cross-entropy step for prompt tuning, with batch accuracy."""
    x, y = batch
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    return loss, {"accuracy": (logits.argmax(-1) == y).float().mean().item()}
