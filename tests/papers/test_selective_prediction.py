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
        teacher_folds=2,
        epochs=2,
        device="cpu",
    )
    a, b = paper.run(cfg), paper.run(cfg)
    assert a.members["16/vanilla"].before == b.members["16/vanilla"].before
    assert set(a.members) == {"16/vanilla", "16/distilled"} and a.teacher is not None
    assert a.teacher_train is not None and 0 < a.teacher_train["accuracy"] <= 1
    m = a.members["16/vanilla"]
    assert len(m.kappa) == len(m.correct) == m.n_test
    assert np.mean(m.correct) == pytest.approx(m.before["accuracy"])
    assert paper.Result.from_dict(a.to_dict()).members["16/vanilla"].kappa == m.kappa
    assert len(a.twins("distilled")) == 1
    report = paper.check_claims(a)
    assert str(report).splitlines()[-1].startswith("claims hold: ")
    assert all(inv.holds for inv in report.invariants)


def _member(name, auroc, accuracy, aurc, after_auroc=None, temperature=1.0, kappa=(), correct=()):
    arch, regime = name.split("/")
    before = {"auroc": auroc, "accuracy": accuracy, "aurc": aurc, "ece": 0.1}
    after = dict(before, auroc=auroc if after_auroc is None else after_auroc, ece=0.01)
    return paper.MemberResult(
        name=name, architecture=arch, regime=regime, temperature=temperature, before=before,
        after=after, coverage=[1.0], risk=[1 - accuracy], risk_ts=[1 - accuracy],
        n_test=len(kappa) or 100, seconds=0.0, kappa=list(kappa), correct=list(correct),
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
    teacher = _member("t/teacher", 0.96, 0.97, 0.005)  # on the test set: not the premise
    train = {"accuracy": 0.95, "auroc": teacher_auroc}  # out-of-fold, on the training images
    return paper.Result(config={}, members=members, teacher=teacher, teacher_train=train)


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
    memorised = _result(0.95)  # a teacher that makes no error on the training images
    memorised.teacher_train["accuracy"] = 1.0
    assert not paper.check_claims(memorised).rows[0].holds
    no_oof = _result(0.95)  # a test-set AUROC alone is not the premise
    no_oof.teacher_train = None
    assert not paper.check_claims(no_oof).rows[0].holds


def test_teacher_folds_partition_the_training_samples():
    from companion.papers.selective_prediction.experiment import teacher_folds

    fold = teacher_folds(103, 4, seed=3)
    assert torch.equal(fold, teacher_folds(103, 4, seed=3))
    assert sorted(torch.bincount(fold).tolist()) == [25, 26, 26, 26]
    with pytest.raises(CompanionError, match="teacher_folds"):
        paper.PRESETS["smoke"].replace(teacher_folds=1)


def _shared_test_zoo(aurocs, accuracies, n=2000, seed=0):
    """Models measured on one shared test set of ``n`` samples: each model's correctness is
    Bernoulli(accuracy) per sample (binomial test-set noise), and its κ is Gaussian with the
    correct samples shifted so that its population AUROC is ``aurocs[k]`` (Φ(d/√2) = AUROC)."""
    from scipy.stats import norm

    rng = np.random.default_rng(seed)
    members = {}
    for k, (u, a) in enumerate(zip(aurocs, accuracies)):
        correct = rng.random(n) < a
        kappa = rng.normal(size=n) + correct * np.sqrt(2) * norm.ppf(u)
        from companion.core import metrics

        name = f"{k}/vanilla"
        members[name] = _member(
            name, metrics.auroc(kappa, correct), float(correct.mean()), 0.01,
            kappa=kappa.tolist(), correct=correct.tolist(),
        )  # fmt: skip
    return paper.Result(config={}, members=members, teacher=None)


def _near_row(result):
    return [x for x in paper.check_claims(result).rows if "nearly equal" in x.claim][0]


def test_near_accuracy_bootstrap_is_paired_by_a_loop():
    from companion.core import metrics
    from companion.papers.selective_prediction import claims

    r = _shared_test_zoo([0.8, 0.9], [0.9, 0.9], n=300)
    a, b = r.members["0/vanilla"], r.members["1/vanilla"]
    boots = claims.bootstrap_aurocs(r, ["0/vanilla", "1/vanilla"], boot=20, seed=5)
    idx = np.random.default_rng(5).integers(0, 300, size=(20, 300))  # one index set for both
    for m, got in ((a, boots["0/vanilla"]), (b, boots["1/vanilla"])):
        k, c = np.array(m.kappa), np.array(m.correct)
        np.testing.assert_allclose(got, [metrics.auroc(k[i], c[i]) for i in idx], atol=1e-12)


def test_near_accuracy_row_fails_under_the_null_and_holds_when_decoupled():
    """The realistic null: AUROC a function of accuracy (here: the same for accuracies within
    NEAR_ACC) plus binomial test-set noise; the row must fail. With AUROC decoupled from
    accuracy at equal accuracy (0.75 to 0.95), it must hold."""
    from companion.papers.selective_prediction import claims

    accuracies = [0.9] * 8
    for seed in range(3):
        null = _shared_test_zoo([0.85] * 8, accuracies, seed=seed)
        tests = claims.near_accuracy_tests(null)
        assert len(tests) >= 3
        row = _near_row(null)
        assert not row.holds, row.measured
    decoupled = _shared_test_zoo(np.linspace(0.75, 0.95, 8), accuracies, seed=0)
    assert _near_row(decoupled).holds, _near_row(decoupled).measured


def test_ts_rows_split_by_confidence_and_need_more_than_noise():
    members = {}
    for k in range(4):  # under-confident, each gains 0.01
        members[f"u{k}/vanilla"] = _member(f"u{k}/vanilla", 0.8, 0.9, 0.02, 0.81, temperature=0.5)
    for k in range(4):  # over-confident, each gains 5e-4: below the noise floor
        members[f"o{k}/vanilla"] = _member(f"o{k}/vanilla", 0.8, 0.9, 0.02, 0.8005, 1.5)
    rows = paper.check_claims(paper.Result(config={}, members=members, teacher=None)).rows
    over = [r for r in rows if "over-confident" in r.claim][0]
    under = [r for r in rows if "under-confident" in r.claim][0]
    assert under.holds and not over.holds
    only_under = {n: m for n, m in members.items() if n.startswith("u")}
    rows = paper.check_claims(paper.Result(config={}, members=only_under, teacher=None)).rows
    assert not [r for r in rows if "over-confident" in r.claim][0].holds  # no such models


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


def test_shuffle_within_class_keeps_labels_and_drops_the_pairing():
    labels = torch.arange(60) % 3
    logits = torch.randn(60, 3)
    out = paper.shuffle_within_class(logits, labels, seed=1)
    assert torch.equal(out, paper.shuffle_within_class(logits, labels, seed=1))
    for c in range(3):  # each class gets a permutation of its own rows
        rows = sorted(map(tuple, out[labels == c].tolist()))
        assert rows == sorted(map(tuple, logits[labels == c].tolist()))
    assert not torch.equal(out, logits)


def _notebook_cell(marker):
    import json
    from pathlib import Path

    nb = json.loads(Path("notebooks/selective_prediction.ipynb").read_text())
    sources = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    (source,) = [s for s in sources if marker in s]
    return source


def test_exercise_checks_fail_on_trivial_answers():
    from companion.core.exercises import ExerciseError

    FAILS = (ExerciseError, RuntimeError, TypeError)  # a wrong value; None where a number goes
    from companion.core import metrics

    correct = np.array([1, 1, 1, 1, 1, 1, 0, 0, 0, 0], dtype=bool)
    good_kappa = np.linspace(1.0, 0.5, 10)
    by_hand = np.mean([0] * 6 + [1 / 7, 2 / 8, 3 / 9, 4 / 10])
    aurc_check = _notebook_cell('report_ok("AURC")')

    def run_aurc(answer):
        env = dict(np=np, metrics=metrics, good_kappa=good_kappa, correct=correct, by_hand=by_hand)
        exec(aurc_check, env | {"my_aurc": answer})

    run_aurc(official_aurc)  # the official loop passes
    for planted in (metrics.aurc, lambda k, c: 0.0, lambda k, c: None):  # a copy, a constant, None
        with pytest.raises(FAILS):
            run_aurc(planted)

    class Member:
        before = {"aurc": 0.02}

    n, acc = 2000, 0.91
    r = 1 - acc
    oracle_check = _notebook_cell('report_ok("the oracle")')

    def run_oracle(answer):
        from companion.core import check, check_close, report_ok

        env = dict(math=math, n=n, acc=acc, r=r, member=Member(), check=check)
        exec(
            oracle_check,
            env | dict(check_close=check_close, report_ok=report_ok, oracle_aurc=answer),
        )

    ok = np.arange(n) < round(acc * n)
    run_oracle(metrics.aurc(ok.astype(float), ok))  # the oracle passes
    for planted in (r + (1 - r) * math.log(1 - r), 0.0, None, Member.before["aurc"]):
        with pytest.raises(FAILS):
            run_oracle(planted)
