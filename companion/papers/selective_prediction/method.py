"""The paper's measurements of a classifier's uncertainty: confidence κ, temperature scaling,
and the metrics of selective prediction and calibration (Galil, Dabbah & El-Yaniv, ICLR 2023,
Sec. 2-3; official code ``utils/uncertainty_metrics.py``, ``utils/temperature_scaling.py`` and
``benchmark_models.py``), and the training regimes the zoo is made of (label smoothing,
knowledge distillation).

The metrics themselves live in :mod:`companion.core.metrics` (AUROC, AURC, E-AURC, SAC, ECE);
this module decides *what* they are computed on: κ is the maximum softmax probability, computed
in float64 from the logits (in float32 a saturated softmax gives many exact ties at 1.0, and
ties change AUROC and the risk–coverage curve).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from companion.core import metrics
from companion.errors import CompanionError


def _logits64(logits) -> torch.Tensor:
    if isinstance(logits, np.ndarray):
        logits = torch.from_numpy(logits)
    return logits.detach().cpu().to(torch.float64)


def max_softmax(logits, temperature: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """κ(x) = max_y softmax(f(x)/T)_y and the predicted class ŷ = argmax_y f(x)_y (Sec. 2: the
    paper's confidence score, softmax response). Float64, so that confident samples keep
    distinct values."""
    probs = torch.softmax(_logits64(logits) / temperature, dim=1)
    kappa, predicted = probs.max(dim=1)
    return kappa.numpy(), predicted.numpy()


def fit_temperature(
    logits, labels, init: float = 1.5, lr: float = 1.0, max_iter: int = 100
) -> float:
    """Temperature scaling (Guo et al., 2017): the one scalar T > 0 that minimizes the mean
    negative log-likelihood of softmax(logits / T) on held-out samples, found by L-BFGS started
    at T₀ = 1.5 as in the official ``ModelWithTemperature``. The official code takes up to 5,000
    fixed steps of lr 0.01; here L-BFGS uses a strong-Wolfe line search, which reaches the same
    minimum (the NLL is convex in 1/T) in a few dozen evaluations. Dividing every logit by T
    never changes the argmax, so accuracy is untouched."""
    z = _logits64(logits)
    y = torch.as_tensor(np.asarray(labels), dtype=torch.long)
    temperature = torch.full((1,), float(init), dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.LBFGS(
        [temperature],
        lr=lr,
        max_iter=max_iter,
        line_search_fn="strong_wolfe",
        tolerance_grad=1e-10,
        tolerance_change=1e-12,
    )

    def closure():
        optimizer.zero_grad()
        loss = F.cross_entropy(z / temperature.clamp_min(1e-3), y)
        loss.backward()
        return loss

    optimizer.step(closure)
    value = float(temperature.detach())
    if not np.isfinite(value) or value <= 1e-3:
        raise CompanionError(f"temperature scaling diverged (T = {value}); check the logits")
    return value


def nll(logits, labels, temperature: float = 1.0) -> float:
    """Mean negative log-likelihood of the labels under softmax(logits / T)."""
    y = torch.as_tensor(np.asarray(labels), dtype=torch.long)
    return float(F.cross_entropy(_logits64(logits) / temperature, y))


def uncertainty_metrics(
    logits, labels, temperature: float = 1.0, sac_targets=(0.99, 0.95)
) -> dict[str, float]:
    """The paper's table for one model (``benchmark_models.metrics_calculations``), with κ the
    max softmax of logits / T:

    * accuracy;
    * **AUROC** of κ for telling correct from incorrect predictions (Eq. 1: the share of
      (correct, incorrect) pairs that κ orders correctly), ``metrics.auroc(κ, correct)``;
    * **AURC** and **E-AURC**: area under the risk–coverage curve, and its excess over a perfect
      ranking with the same error rate;
    * **SAC** at each target accuracy: the largest coverage whose selective accuracy reaches it
      (``metrics.selective_coverage``: the *last* coverage that satisfies the target, counted
      from the first sample, k/N). The official code instead stops at the *first violation*
      after the 200 most confident samples and divides by N + 1; the two differ when the
      selective accuracy dips below the target and then recovers;
    * **ECE** with 15 equal-width bins, and the NLL.

    AUROC is undefined when a model makes no error (or only errors): it is then NaN.
    """
    labels = np.asarray(labels)
    kappa, predicted = max_softmax(logits, temperature)
    correct = predicted == labels
    probs = torch.softmax(_logits64(logits) / temperature, dim=1).numpy()
    both = correct.any() and not correct.all()
    out = {
        "accuracy": float(correct.mean()),
        "auroc": metrics.auroc(kappa, correct) if both else float("nan"),
        "aurc": metrics.aurc(kappa, correct),
        "e_aurc": metrics.e_aurc(kappa, correct),
        "ece": metrics.ece(probs, labels, bins=15),
        "nll": nll(logits, labels, temperature),
    }
    for target in sac_targets:
        out[sac_key(target)] = metrics.selective_coverage(kappa, correct, target)
    return out


def sac_key(target: float) -> str:
    """The result key of SAC at a target accuracy: ``sac_99`` for 0.99, ``sac_95`` for 0.95."""
    return f"sac_{round(100 * target):d}"


def risk_coverage_curve(logits, labels, temperature: float = 1.0, points: int = 200):
    """The risk–coverage curve of κ (``metrics.risk_coverage``) kept at ``points`` coverages
    spread evenly over (0, 1], as two lists (coverage, risk) small enough to store."""
    kappa, predicted = max_softmax(logits, temperature)
    coverage, risk = metrics.risk_coverage(kappa, predicted == np.asarray(labels))
    keep = np.unique(np.linspace(0, len(coverage) - 1, min(points, len(coverage))).round())
    keep = keep.astype(int)
    return coverage[keep].tolist(), risk[keep].tolist()


def evaluate_with_temperature_scaling(
    val_logits,
    val_labels,
    test_logits,
    test_labels,
    sac_targets=(0.99, 0.95),
    curve_points: int = 200,
    ts_init: float = 1.5,
    ts_lr: float = 1.0,
    ts_max_iter: int = 100,
) -> dict:
    """One model's evaluation, as the official ``models_comparison``: metrics of the raw
    softmax, then T fitted on the validation samples and the metrics again with softmax(z/T).
    Unlike the official code (raw metrics on all 50,000 images, "_TS" metrics on the other
    45,000), both are computed on the *same* test samples, so the difference is TS alone."""
    temperature = fit_temperature(val_logits, val_labels, ts_init, ts_lr, ts_max_iter)
    before = uncertainty_metrics(test_logits, test_labels, 1.0, sac_targets)
    after = uncertainty_metrics(test_logits, test_labels, temperature, sac_targets)
    cov, risk = risk_coverage_curve(test_logits, test_labels, 1.0, curve_points)
    _, risk_ts = risk_coverage_curve(test_logits, test_labels, temperature, curve_points)
    return {
        "temperature": temperature,
        "before": before,
        "after": after,
        "coverage": cov,
        "risk": risk,
        "risk_ts": risk_ts,
    }


# --------------------------------------------------------------------------------------------
# Training regimes of the zoo (the paper compares timm's models trained these ways, Sec. 4)
# --------------------------------------------------------------------------------------------


def distillation_loss(
    student_logits: torch.Tensor,
    teacher_logits: torch.Tensor,
    labels: torch.Tensor,
    temperature: float = 4.0,
    alpha: float = 0.9,
) -> torch.Tensor:
    """Knowledge distillation (Hinton et al., 2015):
    α·T²·KL(softmax(t/T) ‖ softmax(s/T)) + (1 − α)·CE(s, y). The T² keeps the soft term's
    gradients on the scale of the hard term's as T grows."""
    soft = F.kl_div(
        F.log_softmax(student_logits / temperature, dim=-1),
        F.log_softmax(teacher_logits / temperature, dim=-1),
        log_target=True,
        reduction="batchmean",
    )
    hard = F.cross_entropy(student_logits, labels)
    return alpha * temperature**2 * soft + (1 - alpha) * hard


def label_smoothing_loss(logits: torch.Tensor, labels: torch.Tensor, eps: float = 0.1):
    """Cross-entropy against (1 − ε)·one-hot + ε/K (Szegedy et al., 2016)."""
    return F.cross_entropy(logits, labels, label_smoothing=eps)


def spearman(a, b) -> float:
    """Spearman's rank correlation (``scipy.stats.spearmanr``: ties share their average rank).
    Used across the zoo (accuracy vs AURC)."""
    from scipy.stats import spearmanr

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or len(a) < 3:
        raise CompanionError(f"spearman needs two 1-D arrays of one length >= 3, got {a.shape}")
    return float(spearmanr(a, b).statistic)
