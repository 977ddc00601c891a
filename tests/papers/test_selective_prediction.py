"""selective_prediction against independent computations (the official code's formulas on tiny
inputs, a grid search, brute-force pair counts, scipy)."""

import math

import numpy as np
import pytest
import torch

from companion.errors import CompanionError
from companion.papers import selective_prediction as paper


def official_auroc(kappa, correct):
    """The official ``AUROC`` of uncertainty_metrics.py: concordant over all (correct, incorrect)
    pairs, written as a double loop."""
    n_s = n_d = 0
    for i in range(len(kappa)):
        for j in range(len(kappa)):
            if correct[i] and not correct[j]:
                if kappa[i] > kappa[j]:
                    n_s += 1
                elif kappa[i] < kappa[j]:
                    n_d += 1
                else:
                    n_s += 0.5
                    n_d += 0.5
    return n_s / (n_s + n_d)


def official_aurc(kappa, correct):
    """The official ``AURC_calc`` loop."""
    order = np.argsort(-kappa, kind="stable")
    errors, total = 0, 0.0
    for i, k in enumerate(order):
        errors += 1 - int(correct[k])
        total += errors / (i + 1)
    return total / len(kappa)


def test_metrics_match_the_official_formulas():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(60, 5)) * 3
    labels = rng.integers(0, 5, 60)
    out = paper.uncertainty_metrics(logits, labels)
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    kappa, correct = p.max(1), p.argmax(1) == labels
    assert out["accuracy"] == pytest.approx(correct.mean())
    assert out["auroc"] == pytest.approx(official_auroc(kappa, correct), abs=1e-12)
    assert out["aurc"] == pytest.approx(official_aurc(kappa, correct), abs=1e-12)
    r = 1 - correct.mean()
    assert out["e_aurc"] == pytest.approx(out["aurc"] - (r + (1 - r) * math.log(1 - r)))
    nll = -np.log(p[np.arange(60), labels]).mean()
    assert out["nll"] == pytest.approx(nll, rel=1e-9)


def test_sac_is_the_largest_coverage_reaching_the_target():
    # κ sorted: correct, correct, wrong, correct, wrong -> selective accuracy 1, 1, 2/3, 3/4, 3/5
    logits = np.array([[5.0, 0], [4, 0], [3, 0], [2, 0], [1, 0]])
    labels = np.array([0, 0, 1, 0, 1])
    out = paper.uncertainty_metrics(logits, labels, sac_targets=(0.99, 0.75, 0.6))
    assert out["sac_99"] == pytest.approx(2 / 5)
    assert out["sac_75"] == pytest.approx(4 / 5)
    assert out["sac_60"] == pytest.approx(1.0)


def test_temperature_minimizes_the_nll_on_a_grid():
    torch.manual_seed(0)
    labels = torch.randint(0, 4, (300,))
    logits = torch.randn(300, 4) * 4 + 3 * torch.nn.functional.one_hot(labels, 4)
    t = paper.fit_temperature(logits, labels)
    grid = np.linspace(0.3, 8, 3000)
    best = grid[np.argmin([paper.nll(logits, labels, g) for g in grid])]
    assert t == pytest.approx(best, abs=0.01)
    assert paper.nll(logits, labels, t) <= paper.nll(logits, labels, 1.0)


def test_temperature_changes_the_order_of_confidences_across_samples():
    # a large margin over three rivals vs a small margin over one (κ written out by hand)
    logits = torch.tensor([[5.0, 0.0, 0.0, 0.0], [2.0, 0.0, -20.0, -20.0]])
    k1, _ = paper.max_softmax(logits, 1.0)
    k4, _ = paper.max_softmax(logits, 4.0)
    e = math.exp
    by_hand = [
        e(5) / (e(5) + 3),
        e(2) / (e(2) + 1 + 2 * e(-20)),
        e(1.25) / (e(1.25) + 3),
        e(0.5) / (e(0.5) + 1 + 2 * e(-5)),
    ]
    np.testing.assert_allclose([*k1, *k4], by_hand, rtol=1e-12)
    assert k1[0] > k1[1] and k4[0] < k4[1]
    # ... so AUROC can change, while accuracy cannot
    labels = np.array([1, 0])  # the first is wrong, the second right
    a1 = paper.uncertainty_metrics(logits, labels, 1.0)
    a4 = paper.uncertainty_metrics(logits, labels, 4.0)
    assert (a1["auroc"], a4["auroc"]) == (0.0, 1.0)
    assert a1["accuracy"] == a4["accuracy"] == 0.5


def test_distillation_loss_closed_form():
    torch.manual_seed(1)
    s, t = torch.randn(8, 5), torch.randn(8, 5)
    y = torch.randint(0, 5, (8,))
    T, alpha = 3.0, 0.7
    ps, pt = torch.softmax(s / T, -1), torch.softmax(t / T, -1)
    kl = (pt * (pt.log() - ps.log())).sum(-1).mean()
    ce = -torch.log_softmax(s, -1)[torch.arange(8), y].mean()
    expected = alpha * T * T * kl + (1 - alpha) * ce
    torch.testing.assert_close(paper.distillation_loss(s, t, y, T, alpha), expected)


def test_label_smoothing_loss_against_soft_targets():
    torch.manual_seed(2)
    z, y = torch.randn(6, 4), torch.randint(0, 4, (6,))
    target = torch.full((6, 4), 0.1 / 4)
    target[torch.arange(6), y] += 0.9
    expected = -(target * torch.log_softmax(z, -1)).sum(-1).mean()
    torch.testing.assert_close(paper.label_smoothing_loss(z, y, 0.1), expected)


def test_ensemble_logits_is_log_mean_softmax():
    torch.manual_seed(3)
    parts = [torch.randn(4, 3) for _ in range(3)]
    mean = torch.stack([p.softmax(-1) for p in parts]).mean(0)
    torch.testing.assert_close(paper.ensemble_logits(parts).exp(), mean)


def test_spearman_is_pearson_of_average_ranks_by_a_loop():
    rng = np.random.default_rng(4)
    a, b = rng.integers(0, 5, 30).astype(float), rng.normal(size=30)

    def ranks(x):  # 1 + number below + half the number of ties (its own excluded)
        return np.array([1 + (x < v).sum() + ((x == v).sum() - 1) / 2 for v in x])

    expected = np.corrcoef(ranks(a), ranks(b))[0, 1]
    assert paper.spearman(a, b) == pytest.approx(expected, abs=1e-12)
    with pytest.raises(CompanionError, match="1-D arrays"):
        paper.spearman(a[:2], b[:2])


def test_ts_split_is_stratified_and_disjoint():
    labels = np.repeat(np.arange(5), 40)
    val, test = paper.ts_split(labels, 50, seed=0)
    assert len(val) == 50 and len(set(val) & set(test)) == 0 and len(val) + len(test) == 200
    assert np.bincount(labels[val]).tolist() == [10] * 5


def test_read_logits_refuses_a_file_without_labels(tmp_path):
    np.savez(tmp_path / "m.npz", logits=np.zeros((3, 2)))
    with pytest.raises(CompanionError, match="labels"):
        paper.read_logits(tmp_path / "m.npz")


def test_bad_options_name_the_choices():
    cfg = paper.PRESETS["smoke"]
    with pytest.raises(CompanionError, match="valid: vanilla"):
        cfg.replace(regimes=("vanilla", "mixup"))
    with pytest.raises(CompanionError, match="unknown architecture"):
        cfg.replace(architectures=("wide",))
    with pytest.raises(CompanionError, match="valid: zoo, logits_folder"):
        cfg.replace(source="timm")
    assert paper.hidden_widths("64x32") == [64, 32] and paper.hidden_widths("linear") == []


def test_twins_share_initial_weights_and_training_is_reproducible():
    cfg = paper.PRESETS["smoke"].replace(
        architectures=("16",),
        regimes=("vanilla", "distilled"),
        teachers=1,
        epochs=2,
        device="cpu",
    )
    a, b = paper.run(cfg), paper.run(cfg)
    assert a.members["16/vanilla"].before == b.members["16/vanilla"].before
    assert set(a.members) == {"16/vanilla", "16/distilled"} and a.teacher is not None
    assert len(a.twins("distilled")) == 1
    report = paper.check_claims(a)
    assert str(report).splitlines()[-1].startswith("claims hold: ")
    assert all(inv.holds for inv in report.invariants)


def _member(name, auroc, accuracy, aurc, after_auroc=None):
    arch, regime = name.split("/")
    before = {"auroc": auroc, "accuracy": accuracy, "aurc": aurc, "ece": 0.1}
    after = dict(before, auroc=auroc if after_auroc is None else after_auroc, ece=0.01)
    return paper.MemberResult(
        name=name, architecture=arch, regime=regime, temperature=1.0, before=before,
        after=after, coverage=[1.0], risk=[1 - accuracy], risk_ts=[1 - accuracy], n_test=100,
        seconds=0.0,
    )  # fmt: skip


def _result(teacher_auroc, control_auroc=None):
    spec = {
        "16/vanilla": (0.80, 0.90, 0.020),
        "16/distilled": (0.79, 0.89, 0.022),
        "64/vanilla": (0.85, 0.92, 0.015),
        "64/distilled": (0.88, 0.921, 0.014),
        "64x64/vanilla": (0.86, 0.93, 0.012),
        "64x64/distilled": (0.89, 0.932, 0.011),
    }
    if control_auroc is not None:  # the control: distilled from class-shuffled teacher outputs
        spec["64/distilled_shuffled"] = (control_auroc, 0.92, 0.015)
        spec["64x64/distilled_shuffled"] = (control_auroc + 0.01, 0.93, 0.012)
    members = {n: _member(n, *v) for n, v in spec.items()}
    teacher = _member("t/ensemble", teacher_auroc, 0.97, 0.005)
    return paper.Result(config={}, members=members, teacher=teacher)


def test_distillation_claim_needs_its_premise_and_counts_only_wide_students():
    from companion.papers.selective_prediction import claims

    good = paper.check_claims(_result(0.95))
    premise, kd = good.rows[0], good.rows[1]
    assert premise.claim.startswith("premise: ") and premise.holds
    assert kd.holds and kd.verdict == "yes"  # 64 and 64x64 gain 0.03; the 16 student is excluded
    assert claims.kd_gains(_result(0.95), 64) == pytest.approx({"64": 0.03, "64x64": 0.03})
    bad = paper.check_claims(_result(0.865))  # barely better than the 64x64 vanilla student
    assert not bad.rows[0].holds
    assert bad.rows[1].verdict == "not tested: premise failed" and not bad.rows[1].holds


def test_near_accuracy_pairs_by_brute_force():
    from companion.papers.selective_prediction import claims

    r = _result(0.95)
    d_auroc, d_aurc = claims.near_accuracy_pairs(r, near=0.005)
    ms = [m.before for m in r.members.values()]
    sd_u, sd_c = np.std([m["auroc"] for m in ms]), np.std([m["aurc"] for m in ms])
    expected = sorted(
        (abs(a["auroc"] - b["auroc"]) / sd_u, abs(a["aurc"] - b["aurc"]) / sd_c)
        for k, a in enumerate(ms)
        for b in ms[k + 1 :]
        if abs(a["accuracy"] - b["accuracy"]) <= 0.005
    )
    assert len(expected) == 2
    np.testing.assert_allclose(sorted(zip(d_auroc, d_aurc)), expected)


def test_cnn_teacher_reads_flat_square_images():
    cfg = paper.PRESETS["notebook"]
    model = paper.build_teacher(cfg, 14 * 14, 10)
    assert model(torch.zeros(3, 196)).shape == (3, 10)
    with pytest.raises(CompanionError, match="square"):
        paper.build_teacher(cfg, 50, 10)
    with pytest.raises(CompanionError, match="valid: cnn, mlp"):
        cfg.replace(teacher_kind="resnet")


def test_control_row_needs_the_premise_and_can_fail():
    from companion.papers.selective_prediction import claims

    # distilled 0.88 / 0.89; control 0.86 / 0.87: gains 0.02 each
    good = paper.check_claims(_result(0.95, control_auroc=0.86))
    control = [r for r in good.rows if "shuffled" in r.claim]
    assert len(control) == 1 and control[0].holds
    assert claims.kd_gains(_result(0.95, 0.86), 64, against="distilled_shuffled") == (
        pytest.approx({"64": 0.02, "64x64": 0.02})
    )
    same = paper.check_claims(_result(0.95, control_auroc=0.88))  # the control ranks as well
    assert not [r for r in same.rows if "shuffled" in r.claim][0].holds
    assert "class-level" in same.note
    no_premise = paper.check_claims(_result(0.865, control_auroc=0.80))
    row = [r for r in no_premise.rows if "shuffled" in r.claim][0]
    assert row.verdict == "not tested: premise failed" and not row.holds
    # without the control arm, no control row
    assert not [r for r in paper.check_claims(_result(0.95)).rows if "shuffled" in r.claim]


def test_near_accuracy_row_fails_when_auroc_follows_accuracy():
    """The decoupling row can fail: a zoo whose AUROC is a function of accuracy (as AURC nearly
    is) separates equal-accuracy pairs no better with AUROC than with AURC."""
    rng = np.random.default_rng(0)
    acc = np.round(rng.uniform(0.85, 0.95, 24), 3)

    def zoo(auroc_noise):
        members = {}
        for k, a in enumerate(acc):
            auroc = 0.5 + 0.4 * a + auroc_noise * rng.normal()
            aurc = (1 - a) ** 2 + 1e-4 * rng.normal()
            members[f"{k}/vanilla"] = _member(f"{k}/vanilla", auroc, a, aurc)
        return paper.Result(config={}, members=members, teacher=None)

    row = lambda r: [x for x in paper.check_claims(r).rows if "nearly equal" in x.claim][0]  # noqa: E731
    assert not row(zoo(0.0)).holds
    assert row(zoo(0.02)).holds


def test_shuffle_within_class_keeps_labels_and_drops_the_pairing():
    labels = torch.arange(60) % 3
    logits = torch.randn(60, 3)
    out = paper.shuffle_within_class(logits, labels, seed=1)
    assert torch.equal(out, paper.shuffle_within_class(logits, labels, seed=1))
    for c in range(3):  # each class gets a permutation of its own rows
        rows = sorted(map(tuple, out[labels == c].tolist()))
        assert rows == sorted(map(tuple, logits[labels == c].tolist()))
    assert not torch.equal(out, logits)
