"""Evaluation metrics for trusting a model's outputs: OOD detection, selective prediction,
calibration and retrieval. One tested place, so that "FPR95" or "AURC" means the same thing in
every notebook.

Conventions (stated once, used everywhere):

- **Detection** (:func:`auroc`, :func:`aupr`, :func:`fpr_at_tpr`): ``scores`` are higher for the
  *positive* class. In OOD detection the in-distribution samples are the positives (the OOD
  literature's convention, as in CIDER's and KNN-OOD's code), so FPR95 is the fraction of OOD
  samples accepted when 95 % of in-distribution samples are.
- **Selective prediction** (:func:`risk_coverage`, :func:`aurc`, :func:`e_aurc`,
  :func:`selective_coverage`): ``confidence`` κ ranks the samples, higher first; ``correct`` says
  whether each prediction was right. Risk is the error rate among the accepted samples.
- **Calibration** (:func:`ece`): equal-width confidence bins.
- **Retrieval** (:func:`recall_at_k`, :func:`map_at_r`): every sample queries all the others.

Inputs may be numpy arrays or tensors; the work is done in float64 numpy.
"""

from __future__ import annotations

import numpy as np

from companion.errors import CompanionError


def _array(x, dtype=np.float64) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=dtype)


def _binary(scores, positive) -> tuple[np.ndarray, np.ndarray]:
    scores, positive = _array(scores), _array(positive, bool)
    if scores.shape != positive.shape or scores.ndim != 1:
        raise CompanionError(
            f"scores and labels must be 1-D of one length, got {scores.shape} and {positive.shape}"
        )
    if positive.all() or not positive.any():
        raise CompanionError("detection metrics need both positive and negative samples")
    return scores, positive


# --------------------------------------------------------------------------------------------
# Detection: AUROC, AUPR, FPR at a true-positive rate
# --------------------------------------------------------------------------------------------


def auroc(scores, positive) -> float:
    """Area under the ROC curve: the probability that a random positive scores higher than a
    random negative, ties counting one half (scikit-learn's ``roc_auc_score``)."""
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(*reversed(_binary(scores, positive))))


def aupr(scores, positive) -> float:
    """Area under the precision–recall curve of the positives (scikit-learn's
    ``average_precision_score``, the step-wise sum used by the OOD literature)."""
    from sklearn.metrics import average_precision_score

    return float(average_precision_score(*reversed(_binary(scores, positive))))


def fpr_at_tpr(scores, positive, tpr: float = 0.95) -> float:
    """False-positive rate at the highest threshold whose true-positive rate reaches ``tpr``
    (FPR95 for the default): accept every sample scoring ≥ t, where t is the largest threshold
    that accepts at least ``tpr`` of the positives."""
    if not 0 < tpr <= 1:
        raise CompanionError(f"tpr must lie in (0, 1], got {tpr}")
    scores, positive = _binary(scores, positive)
    pos = np.sort(scores[positive])[::-1]
    threshold = pos[int(np.ceil(tpr * len(pos))) - 1]
    return float((scores[~positive] >= threshold).mean())


# --------------------------------------------------------------------------------------------
# Selective prediction: risk-coverage curve, AURC, E-AURC, coverage at a target accuracy
# --------------------------------------------------------------------------------------------


def _ranked(confidence, correct) -> np.ndarray:
    """Error indicators in order of decreasing confidence, with ties averaged: samples of equal
    confidence share their group's error rate, which is the expectation over every order of the
    tied samples. Without it AURC would depend on the input order (one multiset of confidences
    gave 0.333 or 0.624)."""
    confidence, correct = _array(confidence), _array(correct, bool)
    if confidence.shape != correct.shape or confidence.ndim != 1 or len(confidence) == 0:
        raise CompanionError(
            "confidence and correct must be 1-D of one non-zero length, "
            f"got {confidence.shape} and {correct.shape}"
        )
    order = np.argsort(-confidence, kind="stable")  # most confident first
    values, group = np.unique(-confidence[order], return_inverse=True)
    errors = (~correct[order]).astype(np.float64)
    rate = np.bincount(group, weights=errors) / np.bincount(group)
    return rate[group]


def risk_coverage(confidence, correct) -> tuple[np.ndarray, np.ndarray]:
    """The risk–coverage curve: accepting the k most confident samples (k = 1…N) gives coverage
    k/N and risk (errors among them)/k, the expected errors where the k-th sample is tied with
    others (ties are accepted in random order). Returns (coverage, risk), each of length N."""
    errors = _ranked(confidence, correct)
    k = np.arange(1, len(errors) + 1)
    return k / len(errors), np.cumsum(errors) / k


def aurc(confidence, correct) -> float:
    """Area under the risk–coverage curve, AURC = (1/N) Σ_k (errors among the top k)/k
    (Geifman et al., 2019; ``uncertainty_metrics.py`` of Galil et al.). Lower is better."""
    return float(risk_coverage(confidence, correct)[1].mean())


def e_aurc(confidence, correct) -> float:
    """Excess AURC: AURC minus that of a perfect ranking with the same error rate r, whose AURC
    is r + (1 − r) ln(1 − r) in the continuous limit (the official formula)."""
    r = 1 - _array(correct, bool).mean()
    optimal = r + (1 - r) * np.log(1 - r) if r < 1 else 1.0
    return aurc(confidence, correct) - float(optimal)


def selective_coverage(confidence, correct, target: float = 0.99) -> float:
    """SAC: the largest coverage k/N at which the selective accuracy of the k most confident
    samples is still ≥ ``target`` (1.0 when the whole set reaches it, 0.0 when even the single
    most confident sample is wrong)."""
    if not 0 < target <= 1:
        raise CompanionError(f"target accuracy must lie in (0, 1], got {target}")
    coverage, risk = risk_coverage(confidence, correct)
    ok = np.flatnonzero(1 - risk >= target - 1e-12)
    return float(coverage[ok[-1]]) if len(ok) else 0.0


# --------------------------------------------------------------------------------------------
# Calibration
# --------------------------------------------------------------------------------------------


def ece(probs, labels, bins: int = 15) -> float:
    """Expected calibration error with ``bins`` equal-width bins of the top-class confidence
    (Guo et al., 2017): Σ_b (n_b / N) |accuracy_b − confidence_b|; bins are (lo, hi], the
    first also holding confidence 0."""
    probs, labels = _array(probs), _array(labels, np.int64)
    if probs.ndim != 2 or len(probs) != len(labels):
        raise CompanionError(f"probs must be [N, classes] for N labels, got {probs.shape}")
    if bins < 1:
        raise CompanionError(f"bins must be at least 1, got {bins}")
    confidence = probs.max(1)
    hit = probs.argmax(1) == labels
    which = np.clip(np.ceil(confidence * bins).astype(int) - 1, 0, bins - 1)
    total = 0.0
    for b in range(bins):
        members = which == b
        if members.any():
            total += members.mean() * abs(hit[members].mean() - confidence[members].mean())
    return float(total)


# --------------------------------------------------------------------------------------------
# Retrieval
# --------------------------------------------------------------------------------------------


def _neighbours(embeddings, labels) -> tuple[np.ndarray, np.ndarray]:
    """Labels of every sample's neighbours, nearest first (cosine similarity of L2-normalised
    embeddings, the query itself excluded), and the labels."""
    x, labels = _array(embeddings), _array(labels, np.int64)
    if x.ndim != 2 or len(x) != len(labels) or len(x) < 2:
        raise CompanionError(f"embeddings must be [N >= 2, d] for N labels, got {x.shape}")
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    sim = x @ x.T
    np.fill_diagonal(sim, -np.inf)
    order = np.argsort(-sim, axis=1, kind="stable")[:, :-1]  # drop the query (last, at −inf)
    return labels[order], labels


def recall_at_k(embeddings, labels, ks=(1,)) -> dict[int, float]:
    """Recall@K of retrieval: the fraction of queries with at least one sample of their own class
    among their K nearest neighbours (cosine similarity; the query is not its own neighbour)."""
    neighbour_labels, labels = _neighbours(embeddings, labels)
    hits = neighbour_labels == labels[:, None]
    return {int(k): float(hits[:, :k].any(1).mean()) for k in ks}


def map_at_r(embeddings, labels) -> float:
    """MAP@R (Musgrave et al., 2020): for a query with R other samples of its class, the mean
    over its R nearest neighbours of precision@i at every i where the i-th neighbour is
    relevant (zero elsewhere), averaged over queries with R ≥ 1."""
    neighbour_labels, labels = _neighbours(embeddings, labels)
    scores = []
    for row, label in zip(neighbour_labels, labels):
        r = int((row == label).sum())
        if r == 0:
            continue
        relevant = row[:r] == label
        precision = np.cumsum(relevant) / np.arange(1, r + 1)
        scores.append(float((precision * relevant).sum() / r))
    if not scores:
        raise CompanionError("map_at_r needs at least one class with two samples")
    return float(np.mean(scores))
