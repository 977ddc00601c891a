"""data2vec 2.0 for images, as in fairseq's ``examples/data2vec`` (Baevski et al., ICML 2023).

One training step (paper, method section; ``models/data2vec2.py`` ``Data2VecMultiModel.forward``):

1. **Teacher.** An exponential moving average (EMA) of the whole student encoder, patch
   embedding included, sees the *unmasked* image once, without gradients. Its decay rises
   linearly from τ₀ to τ_e over the first ``ema_anneal_end_step`` updates and then stays at τ_e
   (``set_num_updates``; ``EMAModule.step``):

       θ_teacher ← τ θ_teacher + (1 − τ) θ_student                                    (EMA)

2. **Contextualized targets** (the paper's "contextualized target representations";
   ``make_targets``). Take the output of the feed-forward network of each of the top K blocks,
   *before* it is added to the residual stream (``AltBlock`` with ``ffn_targets``), normalize each
   over the tokens of its image (instance norm), average the K, then layer-normalize:

       y_t = LN( (1/K) Σ_{l=L−K+1}^{L} IN(a_t^l) )                                    (targets)

3. **Multi-mask student.** Each image is cloned M times, each clone with its own mask; the
   teacher's target is computed once and reused for all M clones (``clone_batch``). The student
   encodes *only the visible patches* (masked tokens are dropped before the first block, as in
   MAE), with fixed 2-D sin-cos positions and a class token.

4. **Inverse block masking** (``compute_block_mask_2d`` with ``inverse_mask=True``):
   choose random centres, *keep* the B×B squares around them, then add or remove random patches
   until exactly (1 − r)·L are kept; everything else (a share r) is masked.

5. **Light convolutional decoder** (``modalities/modules.py`` ``Decoder2d``): visible slots get
   the encoder's outputs, masked slots N(0, 0.01²) noise; then layers of
   [grouped 3×3 conv → LayerNorm without affine → GELU], each with a residual, and a linear map.

6. **Loss** (``d2v_loss``, ``cls_loss``): the squared error divided by √D, summed over the D
   features, averaged over masked positions, plus a weight times the same error of the class
   token against the mean of the target over tokens, averaged over clones. The official code
   multiplies its CLS term (``cls_loss`` = 0.01) by the number of masked positions before the
   trainer divides everything by that number, so the CLS errors are *summed* over a GPU's
   clones: with 16 images × 16 clones per GPU that is 0.01 × 256 = 2.56 times their mean. We
   write it as a weight on the mean (default 2.56), so that it does not change with M.

Two things of the official code are deliberately *not* copied: ``AltBlock``'s pre-LN branch
returns 2·FFN instead of x + FFN (dormant there, since the image configs use post-LN); here the
blocks are ``companion.nn.vit.Block`` (pre-LN), whose residual is kept. And the minimum-variance
checks (``min_target_var``, ``min_pred_var``) that raise after 5,000 updates are logged here
(``target_var``, ``pred_var``), never raised.
"""

from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from torch import nn

from companion.nn import ViT
from companion.nn.vit import Block

# ---------------------------------------------------------------------------------------------
# Positions and masks
# ---------------------------------------------------------------------------------------------


def sincos_positions_2d(dim: int, grid: int) -> torch.Tensor:
    """Fixed 2-D sin-cos position embeddings ``[grid², dim]`` (MAE's ``get_2d_sincos_pos_embed``,
    used by ``modalities/images.py`` with ``fixed_positions``): half the features encode the row,
    half the column, each as sin and cos at geometrically spaced frequencies."""
    if dim % 4:
        raise ValueError(f"dim {dim} must be divisible by 4 for 2-D sin-cos positions")
    quarter = dim // 4
    omega = 1.0 / 10000 ** (torch.arange(quarter, dtype=torch.float64) / quarter)
    rows, cols = torch.meshgrid(
        torch.arange(grid, dtype=torch.float64),
        torch.arange(grid, dtype=torch.float64),
        indexing="ij",
    )

    def embed(pos: torch.Tensor) -> torch.Tensor:
        angles = pos.reshape(-1, 1) * omega
        return torch.cat([angles.sin(), angles.cos()], dim=1)

    # MAE's order: the first half from the column (w) index, the second from the row (h) index
    return torch.cat([embed(cols), embed(rows)], dim=1).float()


def block_squares(centres: torch.Tensor, grid: int, block: int) -> torch.Tensor:
    """0/1 grids ``[B, grid²]``: per row, the union of the block×block squares around that row's
    ``centres`` (``[B, n]`` flat indices). As ``compute_block_mask_2d``: offsets
    ``i − block // 2`` for i < block, and squares clipped at the border."""
    offsets = torch.arange(block) - block // 2
    r = (centres // grid)[..., None, None] + offsets[:, None]  # [B, n, block, 1]
    c = (centres % grid)[..., None, None] + offsets[None, :]  # [B, n, 1, block]
    cells = r.clamp(0, grid - 1) * grid + c.clamp(0, grid - 1)  # [B, n, block, block]
    out = torch.zeros(centres.shape[0], grid * grid)
    return out.scatter_(1, cells.flatten(1), 1.0)


def inverse_block_mask(
    batch: int,
    grid: int,
    mask_ratio: float,
    block: int,
    adjust: float = 0.07,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Inverse block masking: bool ``[batch, grid²]``, True = masked (the student does not see it).

    ``compute_block_mask_2d(inverse_mask=True, require_same_masks=True)``: with keep share
    ``1 − r``, draw ``int(L (1 − r + adjust) / block²)`` random centres, *keep* the squares
    around them, then mask random kept patches (too many) or keep random masked ones (too few)
    until exactly ``int(L (1 − r))`` are kept, so every row has the same number of visible
    patches and clones stack into one batch. The adjustment is done for all rows at once: each
    patch gets ``kept + u`` with u ~ U[0, 1), and the top ``int(L (1 − r))`` scores are kept,
    which picks a uniformly random subset of the kept patches, or all of them plus a uniformly
    random subset of the rest, as the official code's ``torch.multinomial`` calls do.
    """
    if not 0 < mask_ratio < 1:
        raise ValueError(f"mask_ratio must be in (0, 1), got {mask_ratio}")
    length = grid * grid
    keep_share = 1 - mask_ratio
    n_keep = int(length * keep_share)
    n_centres = max(1, int(length * (keep_share + adjust) / block**2))
    centres = torch.randint(0, length, (batch, n_centres), generator=generator)
    kept = block_squares(centres, grid, block)
    score = kept + torch.rand(batch, length, generator=generator)
    keep = score.topk(n_keep, dim=1).indices
    mask = torch.ones(batch, length, dtype=torch.bool)
    return mask.scatter_(1, keep, False)


def visible_indices(mask: torch.Tensor) -> torch.Tensor:
    """Indices ``[batch, n_visible]`` of the unmasked patches of each row, in grid order."""
    n_visible = int((~mask[0]).sum())
    return torch.argsort(mask.to(torch.int8), dim=1, stable=True)[:, :n_visible]


# ---------------------------------------------------------------------------------------------
# Encoder (student and, as its EMA copy, teacher)
# ---------------------------------------------------------------------------------------------


def block_forward(block: Block, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One pre-LN ``companion.nn.vit.Block`` split open: returns ``(output, ffn)`` where ``ffn``
    is the feed-forward output *before* the residual add (the teacher's target layer, as
    ``AltBlock`` returns it with ``ffn_targets``) and ``output = x' + ffn`` (the residual kept,
    unlike the official pre-LN branch, which returns 2·ffn)."""
    x = x + block.attn(block.norm1(x))
    ffn = block.mlp(block.norm2(x))
    return x + ffn, ffn


class Encoder(nn.Module):
    """The student's encoder: patch embedding, fixed 2-D sin-cos positions, a class token,
    ``prenet_depth`` modality blocks, ``depth`` shared blocks and a final LayerNorm.

    Built from ``companion.nn.ViT`` (its patch embedding, class token, blocks and norm); the
    learned positions are replaced by fixed sin-cos ones and the classification head removed.
    Only the shared blocks give teacher targets (``ema_blocks = tm.blocks`` in the code).
    """

    def __init__(
        self,
        image_size: int,
        patch_size: int,
        in_channels: int,
        dim: int,
        depth: int,
        heads: int,
        prenet_depth: int = 1,
        mlp_ratio: float = 4.0,
    ):
        super().__init__()
        vit = ViT(
            image_size=image_size,
            patch_size=patch_size,
            in_channels=in_channels,
            num_classes=1,
            dim=dim,
            depth=prenet_depth + depth,
            heads=heads,
            mlp_ratio=mlp_ratio,
        )
        self.grid = image_size // patch_size
        self.patch_size, self.dim, self.prenet_depth = patch_size, dim, prenet_depth
        self.patch_embed, self.cls_token, self.norm = vit.patch_embed, vit.cls_token, vit.norm
        self.blocks = vit.blocks
        self.register_buffer("positions", sincos_positions_2d(dim, self.grid)[None])

    @property
    def num_patches(self) -> int:
        return self.grid * self.grid

    def patch_tokens(self, images: torch.Tensor) -> torch.Tensor:
        """Images ``[B, C, H, W]`` → patch tokens with positions ``[B, L, dim]``."""
        return self.patch_embed(images).flatten(2).transpose(1, 2) + self.positions

    def forward(
        self, images: torch.Tensor, keep: torch.Tensor | None = None, collect: bool = False
    ):
        """Encode ``images``; with ``keep`` (``[B, n]`` patch indices), only those patches.

        Returns the final-normed tokens ``[B, 1 + n, dim]`` (class token first) and, with
        ``collect``, the FFN outputs of the shared blocks on the patch tokens (class token
        dropped), each ``[B, n, dim]``.
        """
        x = self.patch_tokens(images)
        if keep is not None:  # drop masked tokens *before* the encoder: the student's saving
            x = torch.gather(x, 1, keep.unsqueeze(-1).expand(-1, -1, x.shape[-1]))
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)
        ffns = []
        for i, block in enumerate(self.blocks):
            x, ffn = block_forward(block, x)
            if i >= self.prenet_depth:
                ffns.append(ffn[:, 1:])
        x = self.norm(x)
        return (x, ffns) if collect else x

    def features(self, images: torch.Tensor) -> torch.Tensor:
        """Mean-pooled final patch tokens of the unmasked image: what the linear probe reads."""
        return self(images)[:, 1:].mean(dim=1)


# ---------------------------------------------------------------------------------------------
# Targets and the EMA teacher
# ---------------------------------------------------------------------------------------------


def instance_norm_tokens(x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """``F.instance_norm`` over the tokens of each image, per feature: ``x`` is ``[B, T, D]``."""
    return F.instance_norm(x.transpose(1, 2).float(), eps=eps).transpose(1, 2)


def make_targets(ffns: list[torch.Tensor], top_k: int) -> torch.Tensor:
    """The targets: instance-norm each of the top-K blocks' FFN outputs, average, layer-norm."""
    if not 1 <= top_k <= len(ffns):
        raise ValueError(f"top_k must be between 1 and {len(ffns)}, got {top_k}")
    layers = [instance_norm_tokens(a) for a in ffns[-top_k:]]
    y = torch.stack(layers).mean(dim=0)
    return F.layer_norm(y, y.shape[-1:])


def ema_decay(step: int, start: float, end: float, end_step: int) -> float:
    """τ at update ``step``: linear from ``start`` to ``end`` over ``end_step`` updates, then
    ``end`` (``data2vec2.py`` ``set_num_updates`` with ``ema_anneal_end_step``)."""
    if step >= end_step:
        return end
    return start + (end - start) * step / end_step


@torch.no_grad()
def ema_update(teacher: nn.Module, student: nn.Module, decay: float) -> None:
    """θ_teacher ← τ θ_teacher + (1 − τ) θ_student, parameters and buffers alike."""
    for t, s in zip(teacher.parameters(), student.parameters()):
        t.lerp_(s.detach(), 1 - decay)
    for t, s in zip(teacher.buffers(), student.buffers()):
        t.copy_(s)


# ---------------------------------------------------------------------------------------------
# Decoder and loss
# ---------------------------------------------------------------------------------------------


def decoder_input(
    visible: torch.Tensor, keep: torch.Tensor, num_patches: int, noise_std: float = 0.01
) -> torch.Tensor:
    """The full grid ``[B, L, D]``: encoder outputs at the visible slots, N(0, noise_std²) noise
    at the masked ones (``decoder_input`` in ``modalities/base.py``, ``mask_noise_std``)."""
    b, _, d = visible.shape
    x = torch.randn(b, num_patches, d, device=visible.device, dtype=visible.dtype) * noise_std
    return x.scatter(1, keep.unsqueeze(-1).expand(-1, -1, d), visible)


class Decoder2d(nn.Module):
    """``Decoder2d``: ``layers`` × [Conv2d(k, groups) → LayerNorm (no affine) → GELU], each
    with a residual, on the token grid, then a linear map to ``out_dim``."""

    def __init__(
        self,
        dim: int,
        grid: int,
        decoder_dim: int,
        layers: int = 2,
        kernel: int = 3,
        groups: int = 4,
        out_dim: int | None = None,
    ):
        super().__init__()
        self.grid = grid
        self.convs = nn.ModuleList(
            nn.Conv2d(
                dim if i == 0 else decoder_dim,
                decoder_dim,
                kernel,
                padding=kernel // 2,
                groups=groups,
            )
            for i in range(layers)
        )
        self.proj = nn.Linear(decoder_dim, out_dim or dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, length, d = x.shape
        x = x.transpose(1, 2).reshape(b, d, self.grid, self.grid)
        for conv in self.convs:
            y = conv(x)
            y = F.layer_norm(y.permute(0, 2, 3, 1), y.shape[1:2]).permute(0, 3, 1, 2)
            y = F.gelu(y)
            # the residual only where the shapes agree (``add_residual``)
            x = x + y if y.shape == x.shape else y
        return self.proj(x.flatten(2).transpose(1, 2))


def d2v_loss(prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """``d2v_loss``: squared error scaled by 1/√D and summed over the D features, per row."""
    d = prediction.shape[-1]
    return ((prediction.float() - target.float()) ** 2).sum(dim=-1) / math.sqrt(d)


def patchify(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """``[B, C, H, W]`` → ``[B, L, p²·C]`` pixel patches in grid order."""
    b, c, h, w = images.shape
    p = patch_size
    x = images.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 3, 5, 1)
    return x.reshape(b, (h // p) * (w // p), p * p * c)


def pixel_targets(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """MAE's normalized-pixel target (``recon_loss`` path): each patch minus its mean, over
    √(variance + 1e-6)."""
    t = patchify(images, patch_size)
    mean, var = t.mean(dim=-1, keepdim=True), t.var(dim=-1, keepdim=True)
    return (t - mean) / (var + 1e-6) ** 0.5


def feature_std(y: torch.Tensor) -> float:
    """``compute_var``: the mean over features of the standard deviation over rows (logged as
    ``target_var`` / ``pred_var``; the official code aborts below a minimum, we only log)."""
    y = y.reshape(-1, y.shape[-1]).float()
    return torch.sqrt(y.var(dim=0) + 1e-6).mean().item()


# ---------------------------------------------------------------------------------------------
# The whole model
# ---------------------------------------------------------------------------------------------

TARGETS = ("contextualized", "pixels")


class Data2Vec2(nn.Module):
    """Student encoder + decoder (+ EMA teacher for contextualized targets).

    ``model(images)`` runs one training step's forward: EMA update of the teacher, the teacher's
    targets, M masked clones, the student on visible patches, the decoder, the loss. It returns
    ``(loss, metrics)``. ``target="pixels"`` is the MAE-style arm: the same masked student and
    decoder regress normalized pixels, with no teacher.
    """

    def __init__(
        self,
        encoder: Encoder,
        target: str = "contextualized",
        clones: int = 1,
        top_k: int = 1,
        mask_ratio: float = 0.8,
        mask_block: int = 2,
        mask_adjust: float = 0.07,
        decoder_dim: int | None = None,
        decoder_layers: int = 2,
        decoder_kernel: int = 3,
        decoder_groups: int = 4,
        mask_noise_std: float = 0.01,
        cls_loss: float = 2.56,
        ema_start: float = 0.9998,
        ema_end: float = 0.99999,
        ema_anneal_end_step: int = 100_000,
        in_channels: int = 1,
    ):
        super().__init__()
        if target not in TARGETS:
            raise ValueError(f"unknown target {target!r}; valid: {', '.join(TARGETS)}")
        self.student = encoder
        self.target, self.clones, self.top_k = target, clones, top_k
        self.mask_ratio, self.mask_block, self.mask_adjust = mask_ratio, mask_block, mask_adjust
        self.mask_noise_std, self.cls_loss = mask_noise_std, cls_loss
        self.ema_start, self.ema_end, self.ema_anneal_end_step = (
            ema_start,
            ema_end,
            ema_anneal_end_step,
        )
        out_dim = (
            encoder.dim if target == "contextualized" else (encoder.patch_size**2 * in_channels)
        )
        self.decoder = Decoder2d(
            encoder.dim,
            encoder.grid,
            decoder_dim or encoder.dim,
            decoder_layers,
            decoder_kernel,
            decoder_groups,
            out_dim,
        )
        if target == "contextualized":
            self.teacher = copy.deepcopy(encoder).requires_grad_(False)
        else:
            self.teacher = None
        self.register_buffer("updates", torch.zeros((), dtype=torch.long))

    def masks(self, batch: int) -> torch.Tensor:
        """One inverse block mask per clone (from the global CPU generator: resumable)."""
        return inverse_block_mask(
            batch, self.student.grid, self.mask_ratio, self.mask_block, self.mask_adjust
        )

    @torch.no_grad()
    def targets(self, images: torch.Tensor) -> torch.Tensor:
        """The teacher's contextualized targets ``[B, L, D]`` of the unmasked images."""
        self.teacher.eval()
        _, ffns = self.teacher(images, collect=True)
        return make_targets(ffns, self.top_k)

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, dict[str, float]]:
        real = images.device.type != "meta"  # FLOPs are also counted on the meta device
        if self.training and self.teacher is not None:  # EMA step before the forward, as
            decay = ema_decay(  # ``set_num_updates`` runs before the model's forward
                int(self.updates) if real else 0,
                self.ema_start,
                self.ema_end,
                self.ema_anneal_end_step,
            )
            ema_update(self.teacher, self.student, decay)
        if self.training:
            self.updates += 1
        with torch.no_grad():
            if self.teacher is not None:
                y = self.targets(images)  # one teacher pass for all M clones
            else:
                y = pixel_targets(images.float(), self.student.patch_size)
        m = self.clones
        x = images.repeat_interleave(m, dim=0)  # clone i of image b sits at row b·M + i
        y = y.repeat_interleave(m, dim=0)
        mask = self.masks(x.shape[0])  # on the CPU: the same count of visible patches per row
        keep = visible_indices(mask).to(images.device)
        hidden = visible_indices(~mask).to(images.device)  # the masked positions
        z = self.student(x, keep=keep)
        cls, visible = z[:, 0], z[:, 1:]
        pred = self.decoder(
            decoder_input(visible, keep, self.student.num_patches, self.mask_noise_std)
        )
        at_masked = lambda t: torch.gather(  # noqa: E731
            t, 1, hidden.unsqueeze(-1).expand(-1, -1, t.shape[-1])
        )
        pred_m, y_m = at_masked(pred), at_masked(y)
        loss = d2v_loss(pred_m, y_m).mean()  # mean over masked positions of every clone
        metrics = {"regression": loss.item()} if real else {}
        if self.teacher is not None and self.cls_loss > 0:
            cls_loss = d2v_loss(cls, y.mean(dim=1)).mean() * self.cls_loss
            loss = loss + cls_loss
            if real:
                metrics["cls"] = cls_loss.item()
        if real:  # logged, never an abort (unlike min_target_var / min_pred_var)
            metrics["target_var"] = feature_std(y_m.detach())
            metrics["pred_var"] = feature_std(pred_m.detach())
        return loss, metrics
