"""Aggregating the votes of several prompt chains: majority vote and the label model.

AMA (Arora et al., 2023) asks one question in several formats ("prompt chains"); each chain's
answer is a noisy vote λ_j(x) ∈ {0, …, K−1} or an abstain (−1). The paper combines the votes with
weak supervision: a latent-variable model in which the true label Y is hidden and each chain's
vote depends on Y through its own confusion matrix, learned from the unlabelled votes (section
3.4; the official ``boosting/`` folder and MeTaL's ``LabelModel``). Without dependencies the graph
has no edges between chains: the votes are conditionally independent given Y, so

    P(λ_1, …, λ_m, Y = y) = π_y ∏_j θ_j[y, λ_j]                                   (label model)

with θ_j[y, l] = P(λ_j = l | Y = y) (MeTaL's μ, one row block per chain) and abstains left out of
the product. MeTaL fits μ by matching the second moments O = E[λλᵀ] ≈ μPμᵀ; we fit the same
model by maximum likelihood with EM (Dawid & Skene, 1979): same parameters, same prediction rule
P(Y | λ) ∝ π_y ∏_j θ_j[y, λ_j]. The dependency step (Varma et al., 2019) is not reproduced.

Arms: ``majority_vote``, ``dawid_skene`` (the counted aggregator), ``pooled_dawid_skene`` (the
control: one confusion matrix shared by all chains), ``weighted_vote`` (log-odds weights, for the
oracle reference), and the diagnostics ``phi_matrix`` and ``shuffle_votes``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

ABSTAIN = -1


def majority_vote(votes: np.ndarray, k: int, prior: np.ndarray | None = None) -> np.ndarray:
    """The most frequent non-abstain vote of each row.

    Ties (and rows where every chain abstains) go to the tied class with the larger ``prior``
    (the dev class balance), then to the lower index. The official code uses
    ``Counter.most_common``, which breaks ties by first appearance; ours does not depend on the
    order of the chains."""
    votes = np.asarray(votes)
    counts = np.stack([(votes == c).sum(axis=1) for c in range(k)], axis=1).astype(float)
    prior = np.zeros(k) if prior is None else np.asarray(prior, dtype=float)
    # lexicographic: counts first, then prior, then lower index
    order = np.argsort(-prior, kind="stable")
    rank_bonus = np.empty(k)
    rank_bonus[order] = np.arange(k)[::-1]
    score = counts * (k + 1) + rank_bonus / 1.0
    return np.argmax(score, axis=1)


@dataclasses.dataclass
class LabelModelFit:
    """The fitted label model: class balance ``pi`` (K), confusion matrices ``theta`` (m × K × K,
    theta[j, y, l] = P(λ_j = l | Y = y)), posteriors ``T`` (n × K), and per iteration the
    objective EM increases (log-likelihood + α Σ log θ)."""

    pi: np.ndarray
    theta: np.ndarray
    T: np.ndarray
    log_likelihood: list[float]

    def predict(self) -> np.ndarray:
        return np.argmax(self.T, axis=1)

    def accuracies(self) -> np.ndarray:
        """Each chain's estimated accuracy Σ_y π_y θ_j[y, y] (abstains excluded)."""
        return np.einsum("y,jyy->j", self.pi, self.theta)


def _one_hot_mv(votes: np.ndarray, k: int) -> np.ndarray:
    """Majority-vote initialisation of T: the share of each class among the most voted ones
    (ties split equally; all-abstain rows uniform)."""
    counts = np.stack([(votes == c).sum(axis=1) for c in range(k)], axis=1).astype(float)
    top = counts == counts.max(axis=1, keepdims=True)
    return top / top.sum(axis=1, keepdims=True)


def _one_hot(votes: np.ndarray, k: int) -> np.ndarray:
    """n × m × K indicators of the votes (all zeros where a chain abstains)."""
    return (votes[:, :, None] == np.arange(k)[None, None, :]).astype(float)


def posteriors(votes: np.ndarray, pi: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, float]:
    """E-step: T_iy ∝ π_y ∏_{j: λ_ij ≠ −1} θ_j[y, λ_ij]; also the log-likelihood Σ_i log P(λ_i)."""
    L = _one_hot(votes, len(pi))
    log_theta = np.log(theta)  # m × K × K
    # log P(λ_i, Y = y) = log π_y + Σ_j Σ_l L_ijl log θ_j[y, l]
    joint = np.log(pi)[None, :] + np.einsum("ijl,jyl->iy", L, log_theta)
    top = joint.max(axis=1, keepdims=True)
    norm = top[:, 0] + np.log(np.exp(joint - top).sum(axis=1))
    return np.exp(joint - norm[:, None]), float(norm.sum())


def m_step(
    votes: np.ndarray, T: np.ndarray, k: int, alpha: float = 1.0, pooled: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """M-step: π = mean T; θ_j[y, l] = (α + Σ_i T_iy [λ_ij = l]) / (Kα + Σ_i T_iy [λ_ij ≠ −1]).

    ``pooled``: one confusion matrix for all chains (the counts summed over j before
    normalising): the control that removes the per-prompt accuracies."""
    L = _one_hot(votes, k)
    counts = np.einsum("iy,ijl->jyl", T, L)  # m × K × K
    if pooled:
        counts = np.broadcast_to(counts.sum(axis=0, keepdims=True), counts.shape)
    theta = (alpha + counts) / (k * alpha + counts.sum(axis=2, keepdims=True))
    return T.mean(axis=0), theta


def dawid_skene(
    votes: np.ndarray,
    k: int,
    alpha: float = 1.0,
    iters: int = 200,
    tol: float = 1e-8,
    pooled: bool = False,
    class_balance: np.ndarray | None = None,
) -> LabelModelFit:
    """EM for the label model without dependencies (Dawid & Skene, 1979).

    T starts from majority vote (ties split equally), which fixes which latent class is which;
    each iteration is one M-step then one E-step (``iters=1``: one of each). ``alpha`` is an
    add-α smoothing of θ (a Dirichlet prior), so a chain that never emits a label keeps a finite
    θ; the tracked objective is therefore the log-likelihood plus the log prior,
    Σ_i log P(λ_i) + α Σ log θ, which EM never decreases. Stops when it improves by less than
    ``tol``. ``class_balance``: π fixed to the class balance of a labelled dev split (what the
    official ``run_ws.py`` passes as ``Y_dev``: the label model's only use of labels); ``None``
    learns π too."""
    votes = np.asarray(votes, dtype=int)
    T = _one_hot_mv(votes, k)
    history: list[float] = []
    pi = theta = None
    for _ in range(iters):
        pi, theta = m_step(votes, T, k, alpha, pooled)
        if class_balance is not None:
            pi = np.asarray(class_balance, dtype=float)
        pi = np.clip(pi, 1e-6, None)
        pi = pi / pi.sum()
        T, ll = posteriors(votes, pi, theta)
        objective = ll + alpha * float(
            np.log(theta).sum() if not pooled else np.log(theta[0]).sum()
        )
        done = bool(history) and objective - history[-1] < tol
        history.append(objective)
        if done:
            break
    return LabelModelFit(pi, np.array(theta), T, history)


def pooled_dawid_skene(
    votes: np.ndarray,
    k: int,
    alpha: float = 1.0,
    iters: int = 200,
    tol: float = 1e-8,
    class_balance: np.ndarray | None = None,
) -> LabelModelFit:
    """The control: the same EM, prior and class asymmetry, but one confusion matrix shared by
    every chain. For K = 2 its decision is a threshold on the number of positive votes, i.e.
    majority vote with a learned threshold: it keeps everything DS could gain over majority vote
    except the per-prompt accuracies."""
    return dawid_skene(votes, k, alpha, iters, tol, pooled=True, class_balance=class_balance)


def weighted_vote(votes: np.ndarray, k: int, accuracies: np.ndarray) -> np.ndarray:
    """Σ_j w_j [λ_j = y] with w_j = log(a_j (K−1) / (1 − a_j)): the Bayes rule for symmetric
    chains of accuracy a_j and a uniform prior (ties → lower index; a_j is clipped to
    [1e-3, 1 − 1e-3], so a chain below chance votes against its answer)."""
    a = np.clip(np.asarray(accuracies, dtype=float), 1e-3, 1 - 1e-3)
    w = np.log(a * (k - 1) / (1 - a))
    scores = np.einsum("ijl,j->il", _one_hot(np.asarray(votes), k), w)
    return np.argmax(scores, axis=1)


def accuracy(pred: np.ndarray, gold: np.ndarray) -> float:
    return float(np.mean(np.asarray(pred) == np.asarray(gold)))


def chain_accuracy(votes: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """Each chain's accuracy, an abstain counting as wrong (what a single prompt would score)."""
    return (np.asarray(votes) == np.asarray(gold)[:, None]).mean(axis=0)


def phi_matrix(votes: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """Pairwise φ (Pearson correlation) of the chains' error indicators [λ_j ≠ y]."""
    errors = (np.asarray(votes) != np.asarray(gold)[:, None]).astype(float)
    m = errors.shape[1]
    out = np.eye(m)
    for a in range(m):
        for b in range(a + 1, m):
            x, y = errors[:, a], errors[:, b]
            if x.std() == 0 or y.std() == 0:
                out[a, b] = out[b, a] = np.nan
            else:
                out[a, b] = out[b, a] = float(np.corrcoef(x, y)[0, 1])
    return out


def mean_offdiag(matrix: np.ndarray) -> float:
    m = matrix.shape[0]
    values = matrix[~np.eye(m, dtype=bool)]
    values = values[np.isfinite(values)]
    # pairs where a chain never errs have no φ; none at all (no errors): nothing correlated
    return float(values.mean()) if values.size else 0.0


def shuffle_votes(votes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each chain's votes permuted across items independently: keeps every chain's marginal,
    destroys the agreement between chains that the label model learns from."""
    votes = np.asarray(votes)
    return np.stack([votes[rng.permutation(len(votes)), j] for j in range(votes.shape[1])], axis=1)


def triplet_accuracies(votes: np.ndarray) -> np.ndarray:
    """(Used to check the exercise) The official ``_estimate_fs_accs`` for binary chains: with
    ±1 votes, M_ij = E[λ_i λ_j] = a'_i a'_j where a'_i = 2 a_i − 1, so
    a_i = ½ (√|M_ij M_ik / M_jk| + 1), averaged over the pairs (j, k)."""
    s = np.where(np.asarray(votes) == 1, 1.0, np.where(np.asarray(votes) == 0, -1.0, 0.0))
    M = s.T @ s / len(s)
    m = s.shape[1]
    out = np.zeros(m)
    for i in range(m):
        est = []
        for j in range(m):
            for k in range(j + 1, m):
                if i in (j, k) or M[j, k] == 0:
                    continue
                est.append(0.5 * (np.sqrt(abs(M[i, j] * M[i, k] / M[j, k])) + 1))
        out[i] = np.mean(est)
    return out
