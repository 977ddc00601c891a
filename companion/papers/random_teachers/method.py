"""Self-distillation from a random teacher (Sarnthein et al., ICML 2023), as in safelix/dinopl.

A network g = h ∘ f is an encoder f (the representation that gets probed) followed by a DINO
head h. The teacher g_T is drawn at random and frozen; the student g_S sees the same single view
x of every image (no augmentation, no multi-crop) and minimises the objective (Eq. 1)

    L(θ_S) = E_x [ H( softmax(g_T(x)/τ_t), softmax(g_S(x)/τ_s) ) ]
           = E_x [ −Σ_k p_T,k(x) log p_S,k(x) ]                                       (Eq. 1)

with τ_t = τ_s = 1 and no centering (``configs/cifar10_distillation_v2.json``: ``t_temp=1``,
``s_temp=1``, ``t_cmom=nan``). Since H(p_T) does not depend on θ_S, this is KL(p_T ‖ p_S) up to
a constant; we log both.

Head (``dinopl/core.py`` ``DINOHead``, ``modules/l2bottleneck.py`` with ``'-/lb/fn/wn/l/-'``):
an MLP with GELU, a linear map with bias into a bottleneck, L2 normalisation, and a linear map
without bias to ``out_dim`` logits. Initialisation as in the official code: convolutions
Kaiming-normal (fan_out, ReLU), linear layers truncated normal (std 0.02, bias 0), normalisation
layers weight 1 and bias 0.

Student initialisation (``configuration.py``, ``s_init='interpolated'`` with
``s_init_var_preserving``): with θ_T the teacher and θ_R an independent random draw,

    θ_S(0) = ((1 − α) θ_T + α θ_R) / √(α² + (1 − α)²)                                (interpolation)

α = 0 is the paper's default (the student starts as a copy of the teacher), α = 1 is an
independent initialisation; the divisor keeps the variance of i.i.d. weights unchanged.

Why the student moves at all when it starts as an exact copy: the teacher runs in evaluation
mode, so its BatchNorm layers use their untouched running statistics (mean 0, variance 1), while
the student runs in training mode and normalises with batch statistics. With identical weights
*and* identical modes the two outputs would coincide, the loss would sit at its minimum H(p_T)
and the gradient would be exactly zero.

Evaluation (``dinopl/probing.py``): embeddings f(x) of train and test images, standardised with
the training mean and standard deviation, then a linear probe (AdamW, lr 1e-3) and a k-nearest
neighbour classifier (k = 20, Euclidean distance, majority vote).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from companion.core.probes import knn_accuracy, linear_probe_accuracy, standardize

NORM_LAYERS = (nn.modules.batchnorm._NormBase, nn.GroupNorm, nn.LayerNorm)


# ---------------------------------------------------------------------------------------------
# Encoders
# ---------------------------------------------------------------------------------------------


class ConvEncoder(nn.Module):
    """A VGG-style encoder: [3×3 conv → BatchNorm → ReLU (→ 2×2 max-pool)] per width, then
    global average pooling. The small-scale stand-in for the paper's VGG11/ResNet18."""

    def __init__(self, in_channels: int, widths: Sequence[int], pool_after: Sequence[int] = ()):
        super().__init__()
        layers: list[nn.Module] = []
        c = in_channels
        for i, w in enumerate(widths):
            layers += [nn.Conv2d(c, w, 3, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU()]
            if i in pool_after:
                layers.append(nn.MaxPool2d(2))
            c = w
        self.features = nn.Sequential(*layers)
        self.embed_dim = c

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.features(x).mean(dim=(2, 3))


class BasicBlock(nn.Module):
    """ResNet basic block: two 3×3 conv-BN layers and a (projected) skip connection."""

    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.shortcut = nn.Identity()
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class ResNet18(nn.Module):
    """ResNet-18 for small images (``tiny_input`` in the official code): a 3×3 stride-1 stem and
    no max-pool, four stages of two basic blocks (64, 128, 256, 512), global average pooling."""

    def __init__(self, in_channels: int = 3):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU()
        )
        blocks, c = [], 64
        for i, width in enumerate((64, 128, 256, 512)):
            stride = 1 if i == 0 else 2
            blocks += [BasicBlock(c, width, stride), BasicBlock(width, width, 1)]
            c = width
        self.blocks = nn.Sequential(*blocks)
        self.embed_dim = c

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(self.stem(x)).mean(dim=(2, 3))


# ---------------------------------------------------------------------------------------------
# DINO head and model
# ---------------------------------------------------------------------------------------------


class DINOHead(nn.Module):
    """MLP (GELU) → Linear+bias → L2-normalise → Linear (no bias) → logits.

    ``weight_norm=True`` normalises each row of the last weight to unit length (DINO's
    weight-normalised prototypes, ``wn`` in the official ``l2bot_cfg``). The official
    ``Linear.forward`` ignores the normalised weight it is handed, so the published runs used a
    plain last layer: ``weight_norm=False`` (the default here) computes what that code computes.
    """

    def __init__(
        self,
        embed_dim: int,
        hidden_dims: Sequence[int],
        bottleneck_dim: int,
        out_dim: int,
        weight_norm: bool = False,
    ):
        super().__init__()
        layers: list[nn.Module] = []
        d = embed_dim
        for h in hidden_dims:
            layers += [nn.Linear(d, h), nn.GELU()]
            d = h
        self.mlp = nn.Sequential(*layers)
        self.bottleneck = nn.Linear(d, bottleneck_dim)
        self.last_layer = nn.Linear(bottleneck_dim, out_dim, bias=False)
        self.weight_norm = weight_norm

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = F.normalize(self.bottleneck(self.mlp(x)), dim=-1)  # on the unit sphere
        w = self.last_layer.weight
        if self.weight_norm:
            w = F.normalize(w, dim=-1)
        return F.linear(z, w)


class DINOModel(nn.Module):
    """g = h ∘ f: ``embed`` is the encoder's representation (probed), ``forward`` the logits."""

    def __init__(self, encoder: nn.Module, head: DINOHead):
        super().__init__()
        self.encoder = encoder
        self.head = head

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x))


@torch.no_grad()
def reset_parameters(model: nn.Module, generator: torch.Generator) -> nn.Module:
    """The official initialisation, every draw from ``generator`` (so a seed fixes a network).

    Convolutions: Kaiming normal (fan_out, ReLU gain); linear layers: truncated normal with
    std 0.02 and zero bias; normalisation layers: weight 1, bias 0, fresh running statistics.
    """
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(
                m.weight, mode="fan_out", nonlinearity="relu", generator=generator
            )
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=0.02, generator=generator)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, NORM_LAYERS):
            if m.weight is not None:
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            if getattr(m, "running_mean", None) is not None:
                m.reset_running_stats()
    return model


# ---------------------------------------------------------------------------------------------
# Teacher and student
# ---------------------------------------------------------------------------------------------


@torch.no_grad()
def interpolate(teacher: nn.Module, other: nn.Module, alpha: float) -> nn.Module:
    """A copy of ``teacher`` whose parameters are ((1 − α) θ_T + α θ_R) / √(α² + (1 − α)²).

    ``other`` holds θ_R (an independent random draw of the same architecture). Buffers (BatchNorm
    running statistics) are the teacher's, i.e. fresh ones. α = 0 gives an exact copy.
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
    student = copy.deepcopy(teacher)
    scale = math.sqrt(alpha**2 + (1 - alpha) ** 2)
    for p_s, p_t, p_r in zip(student.parameters(), teacher.parameters(), other.parameters()):
        p_s.copy_(((1 - alpha) * p_t + alpha * p_r) / scale)
    return student


def make_teacher_student(
    build: Callable[[], nn.Module], alpha: float, seed: int
) -> tuple[nn.Module, nn.Module]:
    """(teacher, student) as in ``init_student_teacher`` of the official code.

    One generator seeded with ``seed`` draws the teacher first and then θ_R, so the teacher is the
    same for every α. The teacher is frozen (no gradients) and put in evaluation mode.
    """
    generator = torch.Generator().manual_seed(seed)
    teacher = reset_parameters(build(), generator)
    other = reset_parameters(build(), generator)
    student = interpolate(teacher, other, alpha)
    student.requires_grad_(True)
    teacher.requires_grad_(False).eval()
    return teacher, student


def distillation_loss(
    student_logits: torch.Tensor,
    teacher_logits: torch.Tensor,
    student_temp: float = 1.0,
    teacher_temp: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 1 on a batch: (cross-entropy, KL), each averaged over the batch.

    CE = −Σ_k p_T,k log p_S,k with p_T = softmax(teacher_logits / τ_t), p_S = softmax(
    student_logits / τ_s); KL = CE − H(p_T). No gradient flows into the teacher's logits.
    """
    log_p_t = F.log_softmax(teacher_logits.detach() / teacher_temp, dim=-1)
    p_t = log_p_t.exp()
    log_p_s = F.log_softmax(student_logits / student_temp, dim=-1)
    ce = -(p_t * log_p_s).sum(dim=-1)
    entropy_t = -(p_t * log_p_t).sum(dim=-1)
    return ce.mean(), (ce - entropy_t).mean()


class DistillationStep:
    """The step for :func:`companion.core.fit`: the frozen teacher labels the batch, the student
    (in training mode, set by ``fit``) is pulled towards it by Eq. 1. Labels are never used."""

    def __init__(self, teacher: nn.Module, student_temp: float = 1.0, teacher_temp: float = 1.0):
        self.teacher = teacher
        self.student_temp = student_temp
        self.teacher_temp = teacher_temp

    def __call__(self, student: nn.Module, batch) -> tuple[torch.Tensor, dict[str, float]]:
        x = batch[0]
        self.teacher.eval()  # BatchNorm with its untouched running statistics
        with torch.no_grad():
            teacher_logits = self.teacher(x)
        ce, kl = distillation_loss(student(x), teacher_logits, self.student_temp, self.teacher_temp)
        return ce, {"kl": kl.item()}


@torch.no_grad()
def parameter_distance(a: nn.Module, b: nn.Module) -> float:
    """‖θ_a − θ_b‖₂ over all parameters (the paper's "distance from init" when b is the start)."""
    total = sum(((p - q).double() ** 2).sum() for p, q in zip(a.parameters(), b.parameters()))
    return float(torch.as_tensor(total).sqrt())


@torch.no_grad()
def recalibrate_batchnorm(model: nn.Module, x: torch.Tensor, batch_size: int = 1024) -> nn.Module:
    """A copy of ``model`` whose BatchNorm running statistics are re-estimated on ``x``
    (a cumulative average over batches; weights untouched), returned in evaluation mode.

    Not part of the method: a control for the question "does the student only win because its
    BatchNorm layers have seen the data while the teacher's still hold mean 0, variance 1?".
    """
    model = copy.deepcopy(model)
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None  # cumulative moving average: every batch counts equally
    model.train()
    for chunk in x.split(batch_size):
        model(chunk)
    return model.eval()


# ---------------------------------------------------------------------------------------------
# Probing the encoder
# ---------------------------------------------------------------------------------------------


@torch.no_grad()
def embed(encoder: nn.Module, x: torch.Tensor, batch_size: int = 1024) -> torch.Tensor:
    """Encoder features of ``x`` in evaluation mode (the mode is restored afterwards)."""
    mode = encoder.training
    encoder.eval()
    out = torch.cat([encoder(chunk) for chunk in x.split(batch_size)])
    encoder.train(mode)
    return out


def probe(
    encoder: nn.Module | None,
    train: tuple[torch.Tensor, torch.Tensor],
    test: tuple[torch.Tensor, torch.Tensor],
    num_classes: int,
    k: int = 20,
    epochs: int = 10,
    batch_size: int = 256,
    lr: float = 1e-3,
    seed: int = 0,
) -> dict[str, float]:
    """Linear-probe and kNN accuracy of ``encoder``'s standardised features (``None``: the
    flattened inputs themselves, the paper's "input" baseline)."""
    if encoder is None:
        train_f, test_f = train[0].flatten(1), test[0].flatten(1)
    else:
        train_f, test_f = embed(encoder, train[0]), embed(encoder, test[0])
    train_f, test_f = standardize(train_f.float(), test_f.float())
    return {
        "linear": linear_probe_accuracy(
            train_f, train[1], test_f, test[1], num_classes, epochs, batch_size, lr, seed
        ),
        "knn": knn_accuracy(train_f, train[1], test_f, test[1], k, num_classes),
    }
