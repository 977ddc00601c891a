"""contextual_similarity against independent computations: loops over sets and pairs that
follow the official formulas (losses.py), written without matrix algebra."""

import dataclasses

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from companion.errors import CompanionError
from companion.papers import contextual_similarity as paper


def batch(n=12, d=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    labels = torch.arange(n) % 3
    x = torch.randn(n, d, generator=g, dtype=torch.float64) + 2.0 * F.one_hot(labels, d)
    f = F.normalize(x, dim=1)
    return f @ f.T, labels


def loop_contextual_similarity(scores, k, eps):
    """Steps 1-3 with Python sets: neighbourhoods, overlaps, reciprocal query expansion."""
    s = scores.tolist()
    n = len(s)
    d = [[max(2 - 2 * s[i][j], 0.0) for j in range(n)] for i in range(n)]

    def hood(i, kk):
        kth = sorted(d[i])[kk - 1]
        return {j for j in range(n) if d[i][j] <= kth + eps}

    hoods = [hood(i, k) for i in range(n)]
    w = [[0.0] * n for _ in range(n)]
    everyone = set(range(n))
    for i in range(n):
        out_i = everyone - hoods[i]
        for j in range(n):
            if j in hoods[i]:
                shared = len(hoods[i] & hoods[j]) / len(hoods[i])
                shared_not = len(out_i & (everyone - hoods[j])) / max(len(out_i), 1)
                w[i][j] = 0.5 * (shared + shared_not)
    halves = [hood(i, k // 2) for i in range(n)]
    recip = [
        [1.0 if (j in halves[i] and i in halves[j]) else 0.0 for j in range(n)] for i in range(n)
    ]
    j_mat = [
        [sum(recip[i][m] * w[m][j] for m in range(n)) / sum(recip[i]) for j in range(n)]
        for i in range(n)
    ]
    return np.array([[0.5 * (j_mat[i][j] + j_mat[j][i]) for j in range(n)] for i in range(n)])


@pytest.mark.parametrize("k, eps", [(4, 0.05), (4, 0.0), (6, 0.1)])
def test_contextual_similarity_matches_a_loop_over_sets(k, eps):
    scores, _ = batch()
    ours = paper.contextual_similarity(scores, k, eps).numpy()
    np.testing.assert_allclose(ours, loop_contextual_similarity(scores, k, eps), atol=1e-12)
    assert np.allclose(ours, ours.T) and ours.min() >= 0 and ours.max() <= 1 + 1e-12


def test_heaviside_has_the_heuristic_gradient():
    x = torch.tensor([0.3, -0.2, 0.5], requires_grad=True)
    y = torch.tensor([0.0, 0.0, 0.6], requires_grad=True)
    out = paper.GreaterThan.apply(x, y)
    assert out.tolist() == [1.0, 0.0, 0.0]
    out.backward(torch.tensor([1.0, 2.0, 3.0]))
    assert x.grad.tolist() == [10.0, 20.0, 30.0]
    assert y.grad.tolist() == [-10.0, -20.0, -30.0]
    row_threshold = torch.zeros(2, 1, requires_grad=True)  # broadcast along a row: summed
    paper.GreaterThan.apply(torch.ones(2, 3), row_threshold).sum().backward()
    assert row_threshold.grad.flatten().tolist() == [-30.0, -30.0]


def test_contextual_similarity_has_a_gradient_only_through_the_heuristic():
    scores, labels = batch(seed=1)
    scores = scores.clone().requires_grad_(True)
    same = (labels[:, None] == labels[None, :]).double()
    paper.contextual_loss(scores, same).backward()
    assert scores.grad.abs().sum() > 0  # an exact step would give exactly zero


def test_losses_match_loops_over_pairs():
    scores, labels = batch(seed=2)
    n = len(labels)
    same = (labels[:, None] == labels[None, :]).double()
    j = loop_contextual_similarity(scores, 4, 0.05)
    by_hand = (
        sum(
            (1 - j[a, b]) ** 2 if labels[a] == labels[b] else j[a, b] ** 2
            for a in range(n)
            for b in range(n)
            if a != b
        )
        / n**2
    )
    assert paper.contextual_loss(scores, same).item() == pytest.approx(by_hand, rel=1e-10)

    pos = [
        0.75 - scores[a, b].item()
        for a in range(n)
        for b in range(n)
        if labels[a] == labels[b] and scores[a, b] < 0.75
    ]
    neg = [
        scores[a, b].item() - 0.6
        for a in range(n)
        for b in range(n)
        if labels[a] != labels[b] and scores[a, b] > 0.6
    ]
    expected = (np.mean(pos) if pos else 0.0) + (np.mean(neg) if neg else 0.0)
    assert paper.margin_contrastive(scores, same, 0.75, 0.6).item() == pytest.approx(expected)
    assert paper.similarity_regularizer(scores, 0.25).item() == pytest.approx(
        (scores.mean().item() - 0.25) ** 2
    )


def test_hybrid_is_the_weighted_sum_and_the_baseline_its_own_margin():
    scores, labels = batch(seed=3)
    f = torch.linalg.cholesky(scores + 1e-9 * torch.eye(len(labels))).float()  # rows: f f^T = S
    value, parts = paper.retrieval_loss("hybrid", f, labels, lam=0.3, gamma=0.2)
    expected = 0.3 * parts["context"] + 0.2 * parts["reg"] + 0.5 * parts["contrast"]
    assert value.item() == pytest.approx(expected, rel=1e-5)
    base, _ = paper.retrieval_loss("contrastive", f, labels, baseline_pos_margin=0.9)
    same = (labels[:, None] == labels[None, :]).float()
    assert base.item() == pytest.approx(
        paper.margin_contrastive(f @ f.T, same, 0.9, 0.6).item(), rel=1e-5
    )
    with pytest.raises(CompanionError, match="valid"):
        paper.retrieval_loss("triplet", f, labels)
    with pytest.raises(CompanionError, match="k must lie"):
        paper.contextual_similarity(scores, k=40)


def test_a_batch_with_no_active_hinge_still_backpropagates():
    f = F.normalize(torch.eye(4)[[0, 0, 1, 1]] + 0.0, dim=1).requires_grad_(True)
    loss, _ = paper.retrieval_loss("contrastive", f, torch.tensor([0, 0, 1, 1]))
    assert loss.item() == 0.0
    loss.backward()  # zero, but in the graph


def test_symmetric_noise_moves_labels_to_other_classes():
    labels = torch.arange(3000) % 5 + 2  # classes 2..6
    noisy = paper.symmetric_noise(labels, 0.3, seed=4)
    changed = noisy != labels
    assert abs(changed.double().mean().item() - 0.3) < 0.03
    assert set(noisy.unique().tolist()) == set(range(2, 7))
    counts = torch.bincount(noisy[changed] - 2, minlength=5).double()  # spread over the others
    assert (counts / counts.sum() - 0.2).abs().max() < 0.03
    assert torch.equal(noisy, paper.symmetric_noise(labels, 0.3, seed=4))
    assert torch.equal(paper.symmetric_noise(labels, 0.0, seed=4), labels)


def test_class_batches_are_balanced_distinct_and_resumable():
    labels = torch.arange(100) % 10
    sampler = paper.ClassBatches(labels, per_batch=4, per_class=4, seed=1)
    rows = sampler(7)
    assert len(rows) == 16 and len(set(rows.tolist())) == 16
    per_class = torch.bincount(labels[rows], minlength=10)
    assert sorted(per_class.tolist(), reverse=True)[:4] == [4, 4, 4, 4] and per_class.sum() == 16
    assert torch.equal(rows, paper.ClassBatches(labels, 4, 4, seed=1)(7))
    assert not torch.equal(rows, sampler(8))


def test_config_refuses_bad_settings():
    cfg = paper.PRESETS["smoke"]
    with pytest.raises(CompanionError, match="valid"):
        cfg.replace(dataset="cifar")
    with pytest.raises(CompanionError, match="at least k"):
        cfg.replace(samples_per_class=2)
    with pytest.raises(CompanionError, match=r"\[0, 1\)"):
        cfg.replace(noise_levels=(0.0, 1.0))


def test_the_control_is_the_hybrid_loss_without_its_contextual_term():
    scores, labels = batch(seed=5)
    f = torch.linalg.cholesky(scores + 1e-9 * torch.eye(len(labels))).float()
    control, parts = paper.retrieval_loss("no_context", f, labels)
    full, hybrid_parts = paper.retrieval_loss("hybrid", f, labels)
    assert parts["context"] == 0.0 and hybrid_parts["context"] > 0
    # the same margins, regularizer and weights: only λ·L_context is missing
    assert parts["contrast"] == hybrid_parts["contrast"] and parts["reg"] == hybrid_parts["reg"]
    assert control.item() == pytest.approx(0.1 * parts["reg"] + 0.5 * parts["contrast"], rel=1e-6)
    assert full.item() == pytest.approx(control.item() + 0.4 * hybrid_parts["context"], rel=1e-5)


def test_smoke_run_saves_loads_and_claims_can_fail(tmp_path):
    cfg = paper.PRESETS["smoke"]
    result = paper.run(cfg, out_dir=tmp_path)
    assert set(result.arms) == {f"{loss}@{p}" for loss in paper.LOSSES for p in ("0", "0.4")}
    arm = result.arm("hybrid", 0.4)
    assert len(arm.loss_values) == cfg.steps and len(arm.gallery) == cfg.gallery_queries
    assert 0 <= arm.recall["1"] <= arm.recall["8"] <= 1
    assert 0 < result.baseline_recall <= 1 and 0 < result.baseline_map <= 1
    loaded = paper.Result.load(tmp_path / "result.json")
    assert loaded.arm("hybrid", 0.4).recall == arm.recall
    assert loaded.baseline_map == result.baseline_map
    report = paper.check_claims(result)
    assert len(report.rows) == 6 and [i.holds for i in report.invariants] == [True]
    assert [r.claim.startswith("premise:") for r in report.rows] == [True, True] + [False] * 4

    def with_recalls(**recalls):
        arms = dict(result.arms)
        for key, r1 in recalls.items():
            arms[key] = dataclasses.replace(arms[key], recall={"1": r1})
        return paper.Result(result.config, 0.5, arms, result.baseline_map)

    # the claims are computed: a hybrid that beats the control under noise holds ...
    good = paper.check_claims(
        with_recalls(**{"no_context@0": 0.9, "no_context@0.4": 0.6, "hybrid@0.4": 0.8})
    )
    assert [r.holds for r in good.rows[:4]] == [True, True, True, True]
    # a gain as large on clean labels as under noise is not robustness: the fourth row fails
    general = paper.check_claims(
        with_recalls(
            **{"no_context@0": 0.7, "hybrid@0": 0.9, "no_context@0.4": 0.6, "hybrid@0.4": 0.8}
        )
    )
    assert general.rows[2].holds and general.rows[3].premise_ok and not general.rows[3].holds
    # ... one that does not beat the control fails; when the clean control does not beat the
    # pixels (0.5 here) by the margin, the claim is not tested, however well the hybrid does
    tie = paper.check_claims(
        with_recalls(**{"no_context@0": 0.9, "no_context@0.4": 0.7, "hybrid@0.4": 0.7})
    )
    assert tie.rows[2].premise_ok and not tie.rows[2].holds
    below = paper.check_claims(
        with_recalls(**{"no_context@0": 0.52, "no_context@0.4": 0.3, "hybrid@0.4": 0.9})
    )
    assert below.rows[0].holds and not below.rows[1].holds
    assert not below.rows[2].premise_ok and not below.rows[2].holds
    # noise that does not hurt the control also leaves the claim untested
    harmless = paper.check_claims(
        with_recalls(**{"no_context@0": 0.9, "no_context@0.4": 0.89, "hybrid@0.4": 0.99})
    )
    assert not harmless.rows[0].holds and not harmless.rows[2].premise_ok
    # on clean labels a hybrid far behind the baseline fails both clean rows
    behind = dataclasses.replace(result.arm("hybrid", 0.0), recall={"1": 0.0}, map_at_r=0.0)
    worse = paper.check_claims(
        paper.Result(result.config, 0.5, dict(result.arms, **{"hybrid@0": behind}))
    )
    assert [r.holds for r in worse.rows[4:]] == [False, False]
    # "better" and "no worse" are different rows: a tie is no worse, but not better
    tied = dataclasses.replace(
        result.arm("hybrid", 0.0),
        recall=result.arm("contrastive", 0.0).recall,
        map_at_r=result.arm("contrastive", 0.0).map_at_r,
    )
    even = paper.check_claims(
        paper.Result(result.config, 0.5, dict(result.arms, **{"hybrid@0": tied}))
    )
    assert [r.holds for r in even.rows[4:]] == [False, True]


# ---------------------------------------------------------------------------------------------
# The notebook's exercise checks, run against a correct answer and against trivial ones
# ---------------------------------------------------------------------------------------------


def _notebook_cell(marker):
    import json
    from pathlib import Path

    nb = json.loads(Path("notebooks/contextual_similarity.ipynb").read_text())
    sources = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    (source,) = [s for s in sources if marker in s]
    return source


def _fails():
    from companion.core.exercises import ExerciseError

    return (ExerciseError, RuntimeError, TypeError, ValueError, AttributeError)


def test_exercise_1_check_accepts_the_method_and_refuses_trivial_answers():
    scores, _ = batch(n=20, d=6)
    cfg = paper.PRESETS["notebook"]
    source = _notebook_cell('report_ok("contextual similarity")')

    def run_check(answer):
        exec(source, dict(paper=paper, cfg=cfg, S=scores, my_contextual_similarity=answer))

    run_check(paper.contextual_similarity)
    planted = (
        lambda s, k, eps: torch.zeros_like(s),  # a constant
        lambda s, k, eps: None,
        lambda s, k, eps: s,  # the cosine similarity copied from the input
    )
    for answer in planted:
        with pytest.raises(_fails()):
            run_check(answer)


def _recall_at_1_by_hand(x, labels):
    u = F.normalize(x.flatten(1).float(), dim=1)
    sim = u @ u.T
    sim.fill_diagonal_(-float("inf"))
    return (labels[sim.argmax(1)] == labels).float().mean().item()


def test_exercise_2_check_accepts_recall_at_1_and_refuses_trivial_answers():
    from companion.core import metrics

    cfg = paper.PRESETS["smoke"]
    _, test = paper.load_data(cfg)
    source = _notebook_cell('report_ok("Recall@1 by hand")')

    def run_check(answer):
        env = dict(paper=paper, cfg=cfg, metrics=metrics, test=test, pixels=test.x.flatten(1))
        exec(source, env | {"my_recall_at_1": answer})

    run_check(_recall_at_1_by_hand)
    planted = (
        lambda x, y: 0.9,  # a constant
        lambda x, y: None,
        lambda x, y: 1.0,  # the query retrieves itself
        lambda x, y: _recall_at_1_by_hand(x, y[torch.randperm(len(y))]),  # labels ignored
    )
    for answer in planted:
        with pytest.raises(_fails()):
            run_check(answer)


def test_exercise_3_check_accepts_the_clean_gain_and_refuses_trivial_answers():
    cfg = paper.PRESETS["smoke"].replace(steps=120)
    noisiest = max(cfg.noise_levels)
    result = paper.run(cfg)
    source = _notebook_cell('report_ok("clean against noisy')

    def r1(loss, p):
        return result.arm(loss, p).recall["1"]

    def run_check(answer):
        exec(source, dict(cfg=cfg, result=result, noisiest=noisiest, gain_clean=answer))

    right = r1("hybrid", 0.0) - r1("no_context", 0.0)
    run_check(right)
    planted = (
        0.0,
        None,
        r1("hybrid", noisiest) - r1("no_context", noisiest),  # the noisy gap copied
        r1("hybrid", 0.0),  # the hybrid's Recall@1, not a difference
        r1("hybrid", 0.0) - r1("contrastive", 0.0),  # against the baseline, not the control
    )
    for answer in planted[:2]:
        with pytest.raises(_fails()):
            run_check(answer)
    for answer in planted[2:]:
        assert answer != pytest.approx(right, abs=1e-6)
        with pytest.raises(_fails()):
            run_check(answer)
