"""SIE: Split Invariant-Equivariant representations (Garrido, Najman, LeCun, ICML 2023).

Two views x and y of one object differ by a known transformation with parameters z (on
3DIEBench, the relative 3-D rotation as a quaternion; here, an in-plane rotation by
Δ = θ_y − θ_x, given as z = (cos Δ, sin Δ)). The encoder's representation r = f(x) is split in two
(Sec. 3.2, official ``src/models.py``, class ``SIE``)::

    r = [ r_inv | r_eq ]          the first D − e dimensions and the last e dimensions

and each part has its own projector (Linear-BN-ReLU blocks, then a bias-free Linear; ``Projector``
in ``src/models.py``), giving embeddings e_inv = h_inv(r_inv) and e_eq = h_eq(r_eq). The loss is

    L = λ_sim · ‖e_inv(x) − e_inv(y)‖²                 invariance term on the invariant part
      + ε · λ_sim · ‖W(z) e_eq(x) − e_eq(y)‖²          equivariance term, predictor W(z)
      + λ_std · (S([e_inv, e_eq](x), [e_inv, e_eq](y)) + S_pred(ŷ))
      + λ_cov · C([e_inv, e_eq](x), [e_inv, e_eq](y))                              (Eq. 5-6)

with ‖·‖² the mean squared error, S the VICReg variance hinge ½·mean ReLU(1 − √(Var + 10⁻⁴)) per
view, S_pred the same hinge on the predictions ŷ = W(z) e_eq(x), and C VICReg's covariance term
(sum of squared off-diagonal covariances divided by the dimension), both taken on the
*concatenated* embeddings so that the two parts are also decorrelated from each other.

The predictor is a hypernetwork (``src/hypernetwork.py``, ``ParametrizedNet`` with
``--hypernetwork linear``): a bias-free linear map from z to the d × d entries of a matrix,

    W(z) = Σ_k z_k W_k,        ŷ = W(z) · e_eq(x)                                  (Eq. 4)

Because W(z) has no constant term it cannot be the identity for every z, so the equivariant part
cannot satisfy the equivariance term by becoming invariant (the "collapse to invariance" an MLP
predictor that takes [e, z] allows). VICReg (Bardes et al., 2022) is the same model without the
split and the predictor: one projector and the invariance term on the whole embedding.

Coefficients from the official README command: λ_sim = 10, λ_std = 10, λ_cov = 1, ε = 0.45 (the
argparse default is 4.5). The official covariance divides by ``args.batch_size − 1``; here by the
number of rows − 1 (the same when the last batch is full).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

STD_EPS = 1e-4  # inside the square root of the variance hinge (official value)


def relative_rotation(theta_x: torch.Tensor, theta_y: torch.Tensor) -> torch.Tensor:
    """z for an in-plane rotation from view x to view y: (cos Δ, sin Δ) with Δ = θ_y − θ_x.

    The 2-D analogue of the official ``rot_1.inv() * rot_2`` as a quaternion; (cos, sin) has no
    sign ambiguity (a quaternion q and −q are the same rotation)."""
    delta = theta_y - theta_x
    return torch.stack([delta.cos(), delta.sin()], dim=-1)


def projector(in_dim: int, widths: Sequence[int]) -> nn.Sequential:
    """``Projector`` of the official code: (Linear-BatchNorm-ReLU) for every width but the last,
    then a bias-free Linear to the last width."""
    dims = [in_dim, *widths]
    layers: list[nn.Module] = []
    for a, b in zip(dims[:-2], dims[1:-1]):
        layers += [nn.Linear(a, b), nn.BatchNorm1d(b), nn.ReLU()]
    layers.append(nn.Linear(dims[-2], dims[-1], bias=False))
    return nn.Sequential(*layers)


def split_widths(widths: Sequence[int], share: float) -> list[int]:
    """A part's projector widths: the full widths scaled by the part's share of the
    representation, rounded (official: ``np.round(mlp_dims * ratio)``)."""
    return [int(round(w * share)) for w in widths]


class HyperNetPredictor(nn.Module):
    """ŷ = W(z)·e with W(z) = reshape(H z) a d × d matrix and H a bias-free linear map
    (Eq. 4; official ``ParametrizedNet`` with one layer, ``HyperNet`` linear, no bias).

    The official code builds W(z) for every sample ([B, d, d], then ``bmm``): B·d² numbers, 1 G
    at the paper's d = 1024 and B = 1024. Since H is linear and bias-free,
    W(z)·e = Σ_k z_k (W_k e) with W_k the k-th column of H reshaped, which :meth:`forward`
    computes with B·m·d numbers; :meth:`matrices` gives the official form (the tests compare)."""

    def __init__(self, dim: int, z_dim: int):
        super().__init__()
        self.dim, self.z_dim = dim, z_dim
        self.hypernet = nn.Linear(z_dim, dim * dim, bias=False)

    def matrices(self, z: torch.Tensor) -> torch.Tensor:
        """W(z) for each row of z: [B, d, d] (out × in, as ``nn.Linear`` weights)."""
        return self.hypernet(z).view(-1, self.dim, self.dim)

    def basis(self) -> torch.Tensor:
        """The matrices W_k with W(z) = Σ_k z_k W_k: [m, d, d]."""
        return self.hypernet.weight.T.reshape(self.z_dim, self.dim, self.dim)

    def forward(self, e: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return torch.einsum("nk,koi,ni->no", z, self.basis(), e)


class MLPPredictor(nn.Module):
    """The predictor SIE replaces (official ``src/predictors.py``, ``MLPPredictor`` with two
    layers): ŷ = Linear(ReLU(Linear([z, e]))). It takes z as an *input*, so it can learn to
    ignore z and copy e, which lets an invariant e_eq satisfy the equivariance term: the
    "collapse to invariance" the paper's hypernetwork rules out (Sec. 3.2)."""

    def __init__(self, dim: int, z_dim: int):
        super().__init__()
        self.dim, self.z_dim = dim, z_dim
        self.pred = nn.Sequential(nn.Linear(dim + z_dim, dim), nn.ReLU(), nn.Linear(dim, dim))

    def forward(self, e: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return self.pred(torch.cat([z, e], dim=1))


PREDICTORS = ("hypernet", "mlp")


def variance_loss(x: torch.Tensor) -> torch.Tensor:
    """mean_j ReLU(1 − √(Var(x_j) + 10⁻⁴)) over the columns of x [n, d] (VICReg's hinge on the
    standard deviation; the variance is unbiased, as ``torch.var``)."""
    std = torch.sqrt(x.var(dim=0) + STD_EPS)
    return F.relu(1 - std).mean()


def off_diagonal(m: torch.Tensor) -> torch.Tensor:
    """The off-diagonal entries of a square matrix, flattened (official trick)."""
    n = m.shape[0]
    return m.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten()


def covariance_loss(x: torch.Tensor) -> torch.Tensor:
    """Σ_{i≠j} Cov(x)_ij² / d for x [n, d], with Cov = x̄ᵀx̄ / (n − 1) of the centred x̄."""
    x = x - x.mean(dim=0)
    cov = x.T @ x / (x.shape[0] - 1)
    return off_diagonal(cov).pow(2).sum() / x.shape[1]


def vicreg_regularizers(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(std, cov) terms of VICReg on two views' embeddings: the hinge halved per view
    (½ S(x) + ½ S(y)) and the covariance terms summed (C(x) + C(y)), as the official code."""
    std = variance_loss(x) / 2 + variance_loss(y) / 2
    cov = covariance_loss(x) + covariance_loss(y)
    return std, cov


def vicreg_loss(
    x: torch.Tensor,
    y: torch.Tensor,
    sim_coeff: float = 10.0,
    std_coeff: float = 10.0,
    cov_coeff: float = 1.0,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """VICReg: λ_sim·MSE(x, y) + λ_std·std + λ_cov·cov (official class ``VICReg``)."""
    inv = F.mse_loss(x, y)
    std, cov = vicreg_regularizers(x, y)
    loss = sim_coeff * inv + std_coeff * std + cov_coeff * cov
    return loss, {"inv": inv, "std": std, "cov": cov}


def sie_loss(
    x_inv: torch.Tensor,
    x_eq: torch.Tensor,
    y_inv: torch.Tensor,
    y_eq: torch.Tensor,
    y_pred: torch.Tensor,
    sim_coeff: float = 10.0,
    std_coeff: float = 10.0,
    cov_coeff: float = 1.0,
    equi_factor: float = 0.45,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The SIE loss (Eq. 5-6, official class ``SIE``) from both views' embeddings and the
    prediction ŷ = W(z)·e_eq(x):

    λ_sim·MSE(x_inv, y_inv) + ε·λ_sim·MSE(ŷ, y_eq) + λ_std·(std + pred_std) + λ_cov·cov,

    std and cov on the concatenations [x_inv, x_eq] and [y_inv, y_eq]; pred_std = ½ S(ŷ)."""
    inv = F.mse_loss(x_inv, y_inv)
    equi = F.mse_loss(y_pred, y_eq)
    std, cov = vicreg_regularizers(torch.cat([x_inv, x_eq], 1), torch.cat([y_inv, y_eq], 1))
    pred_std = variance_loss(y_pred) / 2
    loss = (
        sim_coeff * inv
        + equi_factor * sim_coeff * equi
        + std_coeff * (std + pred_std)
        + cov_coeff * cov
    )
    return loss, {"inv": inv, "equi": equi, "std": std, "pred_std": pred_std, "cov": cov}


class SIE(nn.Module):
    """Encoder → r = [r_inv | r_eq] → two projectors; the hypernetwork predictor on e_eq.

    ``equi_dims`` is e, the size of the equivariant part of the representation (the last e
    dimensions, as the official code); ``widths`` are the projector widths of the whole model,
    split between the parts in proportion to their share of the representation. ``predictor``:
    "hypernet" (SIE) or "mlp" (the control without the hypernetwork)."""

    def __init__(
        self,
        encoder: nn.Module,
        repr_dim: int,
        equi_dims: int,
        widths: Sequence[int],
        z_dim: int = 2,
        predictor: str = "hypernet",
    ):
        super().__init__()
        if predictor not in PREDICTORS:
            raise ValueError(f"predictor must be one of {PREDICTORS}, got {predictor!r}")
        if not 0 < equi_dims < repr_dim:
            raise ValueError(f"equi_dims must lie in (0, {repr_dim}), got {equi_dims}")
        self.encoder, self.repr_dim, self.equi_dims = encoder, repr_dim, equi_dims
        self.inv_dims = repr_dim - equi_dims
        self.projector_inv = projector(
            self.inv_dims, split_widths(widths, self.inv_dims / repr_dim)
        )
        eq_widths = split_widths(widths, equi_dims / repr_dim)
        self.projector_equi = projector(equi_dims, eq_widths)
        if predictor == "hypernet":
            self.predictor = HyperNetPredictor(eq_widths[-1], z_dim)
        else:  # the paper's comparison: the same model with an MLP predictor on [z, e]
            self.predictor = MLPPredictor(eq_widths[-1], z_dim)

    def split(self, r: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(r_inv, r_eq): the first D − e and the last e dimensions."""
        return r[:, : self.inv_dims], r[:, self.inv_dims :]

    def embed(self, r: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        r_inv, r_eq = self.split(r)
        return self.projector_inv(r_inv), self.projector_equi(r_eq)

    def forward(self, x, y, z, **coeffs) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The SIE loss for a batch of view pairs (x, y) related by the transformation z."""
        x_inv, x_eq = self.embed(self.encoder(x))
        y_inv, y_eq = self.embed(self.encoder(y))
        y_pred = self.predictor(x_eq, z)
        return sie_loss(x_inv, x_eq, y_inv, y_eq, y_pred, **coeffs)


class VICReg(nn.Module):
    """The baseline: encoder → one projector → VICReg loss; z is ignored."""

    def __init__(self, encoder: nn.Module, repr_dim: int, widths: Sequence[int]):
        super().__init__()
        self.encoder, self.repr_dim = encoder, repr_dim
        self.projector = projector(repr_dim, widths)

    def forward(self, x, y, z, sim_coeff=10.0, std_coeff=10.0, cov_coeff=1.0, **_):
        return vicreg_loss(
            self.projector(self.encoder(x)),
            self.projector(self.encoder(y)),
            sim_coeff,
            std_coeff,
            cov_coeff,
        )


# ----------------------------------------------------------------------------- evaluation


def mean_reciprocal_rank(scores: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """MRR of the true candidate: ``scores`` [n, K] (higher is better), ``target`` [n] indices.

    The rank is 1 + the number of candidates scored strictly higher (official
    ``eval_MRR_Hk.py`` ranks by argsort; the two agree without ties)."""
    true = scores.gather(1, target[:, None])
    rank = 1 + (scores > true).sum(dim=1)
    return (1.0 / rank.double()).mean()


def chance_mrr(k: int) -> float:
    """MRR of a uniformly random ranking of k candidates: (1/k) Σ_{r=1..k} 1/r."""
    return sum(1.0 / r for r in range(1, k + 1)) / k


def r2_score(pred: torch.Tensor, target: torch.Tensor) -> float:
    """Coefficient of determination, averaged over output columns (scikit-learn's
    ``r2_score`` with ``multioutput="uniform_average"``): 1 − SS_res/SS_tot per column."""
    ss_res = ((target - pred) ** 2).sum(dim=0)
    ss_tot = ((target - target.mean(dim=0)) ** 2).sum(dim=0)
    return float((1 - ss_res / ss_tot).mean())


def bilinear_ridge_r2(
    train: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    test: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    ridge: float = 1.0,
) -> float:
    """Test R² of predicting z from a pair of representations (r(x), r(y)) with ridge
    regression on the features r(x) ⊗ r(y) (all products r_i(x)·r_j(y)), solved in its dual
    (kernel) form: k((a, b), (a', b')) = (a·a')(b·b') + 1.

    Each tuple is (r_x [n, d], r_y [n, d], z [n, m]); features are standardized with the
    training statistics. A relative rotation is a *bilinear* function of the two views of an
    equivariant representation (cos Δ = cos θ_x cos θ_y + sin θ_x sin θ_y), so a linear probe
    on [r(x), r(y)] could not read it; the official code uses an MLP on [r(x), r(y)]."""
    (ax, ay, z), (bx, by, zt) = train, test
    mean = torch.cat([ax, ay]).mean(0)
    std = torch.cat([ax, ay]).std(0).clamp_min(1e-6)
    ax, ay, bx, by = [((t - mean) / std).double() for t in (ax, ay, bx, by)]
    d = ax.shape[1]
    k_train = (ax @ ax.T) * (ay @ ay.T) / d**2 + 1
    k_test = (bx @ ax.T) * (by @ ay.T) / d**2 + 1
    z_mean = z.double().mean(0)
    eye = torch.eye(len(ax), dtype=torch.float64)
    alpha = torch.linalg.solve(k_train + ridge * eye, z.double() - z_mean)
    return r2_score(k_test @ alpha + z_mean, zt.double())


def fit_linear_hypernet(
    e_x: torch.Tensor, e_y: torch.Tensor, z: torch.Tensor, ridge: float = 1.0
) -> torch.Tensor:
    """The best bias-free linear hypernetwork for given embeddings, in closed form: the
    matrices W_k [m, d, d] minimizing Σ ‖Σ_k z_k W_k e_x − e_y‖² + λ Σ ‖W_k‖² (ridge on the
    features z ⊗ e_x). Used to give a model trained without a predictor (VICReg) the same
    predictor SIE learns, fitted on its frozen embeddings."""
    n, d = e_x.shape
    feats = (z.double()[:, :, None] * e_x.double()[:, None, :]).reshape(n, -1)  # [n, m·d]
    gram = feats.T @ feats + ridge * torch.eye(feats.shape[1], dtype=torch.float64)
    w = torch.linalg.solve(gram, feats.T @ e_y.double())  # [m·d, d]
    return w.T.reshape(d, z.shape[1], d).permute(1, 0, 2).float()  # [m, out, in]


def apply_linear_hypernet(weights: torch.Tensor, e: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """ŷ = Σ_k z_k W_k e for ``weights`` [m, d, d] (as :func:`fit_linear_hypernet` returns)."""
    return torch.einsum("nk,koi,ni->no", z, weights, e)


def rotation_share(e: torch.Tensor) -> float:
    """How much of an embedding's variance comes from rotating the image: for ``e`` [n, K, d]
    (n images, each at K rotations), the within-image variance over rotations divided by the
    total variance. 0: invariant to rotation; near 1: rotation is all the embedding sees."""
    within = e.var(dim=1, unbiased=False).sum(-1).mean()
    total = e.reshape(-1, e.shape[-1]).var(dim=0, unbiased=False).sum()
    return float(within / total)


def grid_angles(k: int) -> torch.Tensor:
    """K evenly spaced angles 2πj/K, j = 0..K−1 (radians)."""
    return torch.arange(k, dtype=torch.float32) * (2 * math.pi / k)
