"""Uni-modal features, paired features, and the two late-fusion recipes of the paper.

Du et al. (ICML 2023) split what a multi-modal model can learn into **uni-modal features**
(learnable from one modality alone) and **paired features** (learnable only from both together).
Late-fusion joint training under-learns the uni-modal features of each encoder ("modality
laziness"); the paper proposes two remedies and a rule to choose between them:

* **UME**, the Uni-Modal Ensemble: train one model per modality on its own and combine their
  predictions, ``p(y | x_a, x_b) = ½ (softmax(f_a(x_a)) + softmax(f_b(x_b)))``.
* **UMT**, the Uni-Modal Teacher: train the late-fusion model with cross-entropy on the fused
  output plus a distillation term that pulls each encoder's features towards those of the
  uni-modal model of its modality (frozen):
  ``L = CE(h([φ_a(x_a), φ_b(x_b)]), y) + α Σ_m ‖φ_m(x_m) − φ_m^teacher(x_m)‖² / d``.
* **The guiding rule**: paired features matter when joint training beats the ensemble of
  uni-modal models; so, on the *validation* split, pick UME when its accuracy is at least that of
  naive late fusion and UMT otherwise.

Reconstructed (the paper's body and code were not reachable; see the package docstring): the
data model, the exact combination of UME (mean of probabilities here), the distillation layer
(the encoder's output) and weight α, and the form of the rule (UME vs naive fusion on
validation). The names and the structure of the losses follow the paper's abstract and the
2021 UMT paper.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from companion.core.probes import ridge_probe_accuracy

MODALITIES = ("a", "b")


# --------------------------------------------------------------------------------------------
# Data: two modalities with controlled uni-modal and paired signal
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class World:
    """What stays fixed across the splits of one dataset: modality a's class means
    (``[classes, uni_dims]``, unit rows) and the strengths of each kind of signal."""

    means_a: np.ndarray
    strength_a: float  # modality a: class means at this distance scale (easy, linear)
    strength_b: float  # modality b: XOR-coded label bits at this amplitude (hard, nonlinear)
    copies_b: int  # independent XOR pairs per label bit in modality b
    paired: float  # amplitude of the cross-modal code (0: no paired features)
    noise_dims: int


def draw_world(
    seed: int,
    classes: int = 4,
    uni_dims: int = 8,
    strength_a: float = 2.0,
    strength_b: float = 1.5,
    copies_b: int = 2,
    paired: float = 0.0,
    noise_dims: int = 22,
) -> World:
    """Modality a's class means on the unit sphere of ``uni_dims`` dimensions."""
    rng = np.random.default_rng([seed, 17])
    m = rng.standard_normal((classes, uni_dims))
    return World(
        m / np.linalg.norm(m, axis=1, keepdims=True),
        strength_a,
        strength_b,
        copies_b,
        paired,
        noise_dims,
    )


def class_bits(classes: int) -> int:
    """Bits of a label: ⌈log₂ classes⌉."""
    return max(1, math.ceil(math.log2(classes)))


def input_dims(world_or_sizes) -> tuple[int, int]:
    """Input dimensions of modality a and b."""
    w = world_or_sizes
    bits = class_bits(len(w.means_a))
    return (w.means_a.shape[1] + bits + w.noise_dims, 2 * bits * w.copies_b + bits + w.noise_dims)


def _bits(v: np.ndarray, bits: int) -> np.ndarray:
    """±1 code of the binary digits of ``v``: ``[n, bits]``."""
    return 2.0 * ((v[:, None] >> np.arange(bits)) & 1) - 1.0


def sample(world: World, n: int, rng: np.random.Generator):
    """``n`` labelled pairs ``(x_a, x_b, y)`` (float64 arrays, int64 labels). Every entry gets
    N(0, 1) noise; the signal is, per modality ``[uni-modal part | paired part | noise dims]``:

    * modality a, uni-modal: ``strength_a · μ[y]``, linear in the input: quick to learn;
    * modality b, uni-modal: each bit ``s`` of y as ``copies_b`` pairs ``strength_b · (u, u·s)``
      with a fresh random sign ``u``: the bit is the XOR of the pair's signs, which no linear
      read-out of the raw input (or of random features) sees well: slow to learn;
    * paired: the bits of a random key ``r`` in modality a, those of ``r XOR y`` in modality b,
      at amplitude ``paired``. Each alone is independent of y; together they give y.
    """
    classes = len(world.means_a)
    bits = class_bits(classes)
    y = rng.integers(0, classes, n)
    key = rng.integers(0, 2**bits, n)
    u = rng.choice([-1.0, 1.0], size=(n, bits, world.copies_b))
    s = _bits(y, bits)[:, :, None]
    xor_pairs = np.stack([u, u * s], axis=-1).reshape(n, -1)
    noise = np.zeros((n, world.noise_dims))
    xa = np.concatenate(
        [world.strength_a * world.means_a[y], world.paired * _bits(key, bits), noise], axis=1
    )
    xb = np.concatenate(
        [world.strength_b * xor_pairs, world.paired * _bits(key ^ y, bits), noise], axis=1
    )
    return (
        xa + rng.standard_normal(xa.shape),
        xb + rng.standard_normal(xb.shape),
        y.astype(np.int64),
    )


# --------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------


class Encoder(nn.Module):
    """φ_m: a two-layer ReLU MLP from one modality to ``features`` dimensions."""

    def __init__(self, inputs: int, hidden: int, features: int):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, features), nn.ReLU()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class UniModalModel(nn.Module):
    """f_m = linear head ∘ φ_m, trained on modality m alone (a UME member, a UMT teacher)."""

    def __init__(self, inputs: int, hidden: int, features: int, classes: int):
        super().__init__()
        self.encoder = Encoder(inputs, hidden, features)
        self.head = nn.Linear(features, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x))


class LateFusion(nn.Module):
    """Late fusion: one encoder per modality, a fusion head on the concatenated features.
    The head is a one-hidden-layer MLP, so the fused model *can* represent paired features
    (a linear head on ``[φ_a, φ_b]`` is additive in the two modalities and cannot)."""

    def __init__(
        self, inputs: tuple[int, int], hidden: int, features: int, classes: int, head_hidden: int
    ):
        super().__init__()
        self.encoders = nn.ModuleDict(
            {m: Encoder(d, hidden, features) for m, d in zip(MODALITIES, inputs)}
        )
        self.head = nn.Sequential(
            nn.Linear(2 * features, head_hidden), nn.ReLU(), nn.Linear(head_hidden, classes)
        )

    def features(self, xa: torch.Tensor, xb: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"a": self.encoders["a"](xa), "b": self.encoders["b"](xb)}

    def forward(self, xa: torch.Tensor, xb: torch.Tensor, return_features: bool = False):
        feats = self.features(xa, xb)
        logits = self.head(torch.cat([feats["a"], feats["b"]], dim=1))
        return (logits, feats) if return_features else logits


# --------------------------------------------------------------------------------------------
# Losses and predictions
# --------------------------------------------------------------------------------------------


def distillation_loss(student: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
    """‖φ_m(x) − φ_m^teacher(x)‖² / d, averaged over the batch (MSE over the feature entries)."""
    return F.mse_loss(student, teacher.detach())


def umt_loss(
    logits: torch.Tensor,
    y: torch.Tensor,
    student_features: dict[str, torch.Tensor],
    teacher_features: dict[str, torch.Tensor],
    alpha: float,
) -> torch.Tensor:
    """UMT's objective: ``CE(fused logits, y) + α Σ_m MSE(φ_m(x_m), φ_m^teacher(x_m))``.
    With ``alpha = 0`` it is naive late fusion's cross-entropy."""
    loss = F.cross_entropy(logits, y)
    for m in MODALITIES:
        loss = loss + alpha * distillation_loss(student_features[m], teacher_features[m])
    return loss


def ume_probabilities(logits_a: torch.Tensor, logits_b: torch.Tensor) -> torch.Tensor:
    """UME's prediction: the mean of the two uni-modal models' class probabilities."""
    return 0.5 * (logits_a.softmax(-1) + logits_b.softmax(-1))


def guiding_rule(ume_val_accuracy: float, naive_val_accuracy: float) -> str:
    """The choice between the two recipes, from validation accuracies only: when naive late
    fusion does not beat the uni-modal ensemble, the paired features add little, and UME (which
    learns the uni-modal features fully) is chosen; otherwise the paired features matter and
    UMT (which learns them *and* keeps the uni-modal features) is."""
    return "UME" if ume_val_accuracy >= naive_val_accuracy else "UMT"


def probe_accuracy(train_features, train_y, test_features, test_y, classes: int) -> float:
    """Linear probe of a frozen encoder: ridge regression onto one-hot labels (closed form, on
    standardized features, float64), fit on the training split, scored on ``test``."""
    return ridge_probe_accuracy(
        torch.as_tensor(train_features, dtype=torch.float64),
        torch.as_tensor(train_y),
        torch.as_tensor(test_features, dtype=torch.float64),
        torch.as_tensor(test_y),
        classes,
    )


def accuracy(probabilities_or_logits: torch.Tensor, y: torch.Tensor) -> float:
    return (probabilities_or_logits.argmax(-1) == y).double().mean().item()
