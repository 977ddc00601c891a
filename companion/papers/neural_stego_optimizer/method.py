"""LISO's pieces: the decoder, the learned iterative encoder, its loss, and the baselines that
optimize the image directly against a fixed decoder.

Steganography as constrained optimization (paper Sec. 3): given a cover image x and a message
m ∈ {0,1}^{b×H×W} (b bits per pixel), find a stego image x' close to x such that a decoder D
recovers m, i.e. minimize BCE(D(x'), m) while keeping ‖x' − x‖ small. LISO (Sec. 4) learns the
optimizer: a RAFT-style recurrent update that reads the gradient ∇ₓ BCE(D(x_{t−1}), m) and the
current perturbation x_{t−1} − x, and proposes the next step. Official code: cxy1997/LISO,
``liso/encoders.py`` (``ContextEncoder``, ``BasicEncoder``), ``liso/update.py``
(``BasicMotionEncoder``, ``SepConvGRU``, ``FlowHead``, ``BasicUpdateBlock``),
``liso/decoders.py`` (``BasicDecoder``), ``liso/models.py`` (``seq_loss``, quantization).

Pixels live in [−1, 1], as in the official code.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def conv3x3(c_in: int, c_out: int) -> nn.Conv2d:
    return nn.Conv2d(c_in, c_out, kernel_size=3, padding=1)


class Decoder(nn.Module):
    """D: image [N, C, H, W] -> one logit per bit per pixel [N, b, H, W] (``BasicDecoder``):
    three conv 3×3 + LeakyReLU + BatchNorm blocks, then a conv to ``bits`` channels."""

    def __init__(self, channels: int, bits: int, hidden: int):
        super().__init__()
        layers: list[nn.Module] = []
        c = channels
        for _ in range(3):
            layers += [conv3x3(c, hidden), nn.LeakyReLU(inplace=True), nn.BatchNorm2d(hidden)]
            c = hidden
        layers.append(conv3x3(hidden, bits))
        self.layers = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


class ContextEncoder(nn.Module):
    """Context network on the cover and the message (``ContextEncoder``): features of the image,
    concatenated with the message bits, three more convs and a tanh. Its ``hidden`` output
    channels are split in half: the GRU's initial state h₀ and the context c."""

    def __init__(self, channels: int, bits: int, hidden: int):
        super().__init__()
        self.features = nn.Sequential(
            conv3x3(channels, hidden), nn.LeakyReLU(inplace=True), nn.BatchNorm2d(hidden)
        )
        self.layers = nn.Sequential(
            conv3x3(hidden + bits, hidden),
            nn.LeakyReLU(inplace=True),
            nn.BatchNorm2d(hidden),
            conv3x3(hidden, hidden),
            nn.LeakyReLU(inplace=True),
            nn.BatchNorm2d(hidden),
            conv3x3(hidden, hidden),
            nn.Tanh(),
        )

    def forward(self, image: torch.Tensor, message: torch.Tensor) -> torch.Tensor:
        return self.layers(torch.cat([self.features(image), message], dim=1))


class MotionEncoder(nn.Module):
    """Features of the gradient and the current perturbation (``BasicMotionEncoder``): two convs
    on each, fused by a third; the perturbation itself is appended to the output."""

    def __init__(self, channels: int, hidden: int, out: int):
        super().__init__()
        self.convc1, self.convc2 = conv3x3(channels, hidden), conv3x3(hidden, hidden)
        self.convf1, self.convf2 = conv3x3(channels, hidden), conv3x3(hidden, hidden)
        self.conv = conv3x3(2 * hidden, out - channels)
        self.out = out

    def forward(self, noise: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        g = F.relu(self.convc2(F.relu(self.convc1(grad))))
        n = F.relu(self.convf2(F.relu(self.convf1(noise))))
        return torch.cat([F.relu(self.conv(torch.cat([g, n], dim=1))), noise], dim=1)


class ConvGRU(nn.Module):
    """A convolutional GRU (``SepConvGRU`` in the official code, which despite its name uses
    full 3×3 convolutions): z = σ(W_z[h, u]), r = σ(W_r[h, u]), q = tanh(W_q[r⊙h, u]),
    h ← (1 − z)⊙h + z⊙q."""

    def __init__(self, hidden: int, inputs: int):
        super().__init__()
        self.convz = conv3x3(hidden + inputs, hidden)
        self.convr = conv3x3(hidden + inputs, hidden)
        self.convq = conv3x3(hidden + inputs, hidden)

    def forward(self, h: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        hu = torch.cat([h, u], dim=1)
        z = torch.sigmoid(self.convz(hu))
        r = torch.sigmoid(self.convr(hu))
        q = torch.tanh(self.convq(torch.cat([r * h, u], dim=1)))
        return (1 - z) * h + z * q


class UpdateBlock(nn.Module):
    """One learned optimizer step (``BasicUpdateBlock``): motion features → ConvGRU over
    [context, features] → a two-conv head that outputs the step Δ (one value per pixel)."""

    def __init__(self, channels: int, hidden: int, motion_hidden: int, motion_out: int):
        super().__init__()
        self.encoder = MotionEncoder(channels, motion_hidden, motion_out)
        self.gru = ConvGRU(hidden, hidden + motion_out)
        self.head = nn.Sequential(
            conv3x3(hidden, motion_out), nn.ReLU(inplace=True), conv3x3(motion_out, channels)
        )

    def forward(self, h, context, grad, noise):
        features = self.encoder(noise, grad)
        h = self.gru(h, torch.cat([context, features], dim=1))
        return h, self.head(h)


def message_gradient(decoder: nn.Module, x: torch.Tensor, message: torch.Tensor) -> torch.Tensor:
    """∇ₓ Σ BCE(D(x), m), detached (``BasicEncoder.corr_fn``: summed, not averaged, BCE)."""
    with torch.enable_grad():
        x = x.detach().requires_grad_(True)
        loss = F.binary_cross_entropy_with_logits(decoder(x), message, reduction="sum")
        (grad,) = torch.autograd.grad(loss, x)
    return grad.detach()


class LISOEncoder(nn.Module):
    """The learned iterative optimizer (``BasicEncoder.forward``), paper Sec. 4 / Fig. 2.

    h₀, c = split(ContextEncoder(x, m)); h₀ ← tanh h₀, c ← relu c; x₀ = x; for t = 1..T:
    g_t = ∇ₓ BCE_sum(D(x_{t−1}), m) (detached), n_t = x_{t−1} − x,
    (h_t, Δ_t) = UpdateBlock(h_{t−1}, c, g_t, n_t), x_t = clip(x_{t−1} + η Δ_t, −1, 1),
    optionally also clipped to x ± ε. Returns [x_1, ..., x_T]. ``iters=1`` is a one-step
    encoder (a learned map from (x, m) to x' that never sees a second gradient).
    """

    def __init__(self, channels: int, bits: int, hidden: int, motion_hidden: int, motion_out: int):
        super().__init__()
        if hidden % 2:
            raise ValueError(f"hidden must be even (split into state and context), got {hidden}")
        self.hdim = hidden // 2
        self.cnet = ContextEncoder(channels, bits, hidden)
        self.update = UpdateBlock(channels, self.hdim, motion_hidden, motion_out)

    def forward(
        self,
        image: torch.Tensor,
        message: torch.Tensor,
        decoder: nn.Module,
        iters: int,
        step_size: float,
        constraint: float | None = None,
    ) -> list[torch.Tensor]:
        h, context = torch.split(self.cnet(image, message), [self.hdim, self.hdim], dim=1)
        h, context = torch.tanh(h), torch.relu(context)
        x, iterates = image, []
        for _ in range(iters):
            x = x.detach()  # the learned optimizer sees the gradient as an input, not a graph
            grad = message_gradient(decoder, x, message)
            h, delta = self.update(h, context, grad, x - image)
            x = torch.clamp(x + step_size * delta, -1.0, 1.0)
            if constraint is not None:
                x = torch.maximum(torch.minimum(x, image + constraint), image - constraint)
            iterates.append(x)
        return iterates


def sequence_loss(
    iterates: list[torch.Tensor],
    image: torch.Tensor,
    message: torch.Tensor,
    decoder: nn.Module,
    gamma: float = 0.8,
    mse_weight: float = 1.0,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Σ_t γ^{T−t} [w·MSE(x_t, x) + BCE(D(x_t), m)] (``seq_loss`` in liso/models.py, both terms
    averaged over elements; the last iterate has weight 1). Also returns the final iterate's
    MSE and bit accuracy (before quantization) as metrics."""
    T = len(iterates)
    mse = bce = 0.0
    for t, x in enumerate(iterates, start=1):
        w = gamma ** (T - t)
        mse = mse + w * F.mse_loss(x, image)
        bce = bce + w * F.binary_cross_entropy_with_logits(decoder(x), message)
    with torch.no_grad():
        last = iterates[-1]
        acc = ((decoder(last) >= 0) == (message >= 0.5)).float().mean().item()
    return mse_weight * mse + bce, {"mse": mse.item(), "bce": bce.item(), "accuracy": acc}


def quantize(x: torch.Tensor) -> torch.Tensor:
    """Round an image in [−1, 1] to the nearest of 256 levels (an 8-bit PNG), back in [−1, 1].

    The official ``_encode_decode(quantize=True)`` truncates (``.long()``) instead of rounding;
    rounding is the nearest 8-bit image and never moves a pixel by more than half a level."""
    levels = torch.round((x.clamp(-1.0, 1.0) + 1.0) * 127.5)
    return levels / 127.5 - 1.0


def bit_error(logits: torch.Tensor, message: torch.Tensor) -> torch.Tensor:
    """Per-image share of wrongly decoded bits: mean over bits of [D(x) ≥ 0] ≠ m."""
    wrong = (logits >= 0) != (message >= 0.5)
    return wrong.flatten(1).float().mean(1)


def psnr(x: torch.Tensor, cover: torch.Tensor) -> torch.Tensor:
    """Per-image PSNR in dB on the 0–255 scale (pixels in [−1, 1] → 255·(x+1)/2), capped at 100
    dB for an unchanged image."""
    mse = ((x - cover) * 127.5).pow(2).flatten(1).mean(1)
    return 10 * torch.log10(255.0**2 / mse.clamp_min(255.0**2 * 1e-10))


def select_best_iterate(errors: torch.Tensor, psnrs: torch.Tensor) -> torch.Tensor:
    """Per image, the index of the iterate the sender keeps (``train_bits.py``): among iterates
    with zero bit error the one with the highest PSNR, else the one with the lowest error.

    ``errors``, ``psnrs``: [T, N]. The sender knows the message, so this selection is legitimate
    for her; the receiver only decodes the image she sends."""
    cost = torch.where(errors == 0, -psnrs, errors)
    return cost.argmin(dim=0)


def optimize_image(
    decoder: nn.Module,
    image: torch.Tensor,
    message: torch.Tensor,
    iters: int,
    lr: float,
    method: str = "adam",
    constraint: float | None = None,
) -> list[torch.Tensor]:
    """The hand-designed optimizers LISO is compared with: minimize Σ BCE(D(x'), m) over the
    pixels x' with the decoder fixed (FNNS-style, Kishore et al. 2022), starting at the cover.
    The loss is each image's mean BCE over its bits, summed over images (so one image's
    gradient does not depend on the batch size). ``method="gd"``: x_t = clip(x_{t−1} − lr·g_t);
    ``"adam"``: torch's Adam on x' with learning rate ``lr``. Clipped to [−1, 1] (and to
    x ± ε if given) after every step. Returns [x_1, ..., x_T], detached."""
    x = image.detach().clone().requires_grad_(True)
    if method == "adam":
        opt = torch.optim.Adam([x], lr=lr)
    elif method == "gd":
        opt = torch.optim.SGD([x], lr=lr)
    else:
        raise ValueError(f"unknown method {method!r}; valid: adam, gd")
    iterates = []
    for _ in range(iters):
        opt.zero_grad(set_to_none=True)
        bce = F.binary_cross_entropy_with_logits(decoder(x), message, reduction="none")
        bce.flatten(1).mean(1).sum().backward()
        opt.step()
        with torch.no_grad():
            x.clamp_(-1.0, 1.0)
            if constraint is not None:
                x.copy_(torch.maximum(torch.minimum(x, image + constraint), image - constraint))
        iterates.append(x.detach().clone())
    return iterates
