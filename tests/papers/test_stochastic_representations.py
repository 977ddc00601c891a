import math

import numpy as np
import pytest
import torch
from torch import nn

from companion.core.metrics import ece as reference_ece
from companion.errors import CompanionError
from companion.nn import portable_init
from companion.papers import stochastic_representations as paper
from companion.papers.stochastic_representations.experiment import (
    ArmResult,
    SeedResult,
    StochasticResult,
)

# ---- SWAG against the official code's formulas (wjmaddox/swa_gaussian, swag/posteriors/swag.py)


def _official_collect(state, theta, max_num_models):
    """``SWAG.collect_model`` transcribed on one flat parameter: running moments, then the
    deviation from the *updated* mean, keeping the last ``max_num_models`` rows."""
    n = state["n"]
    mean = state["mean"] * n / (n + 1.0) + theta / (n + 1.0)
    sq_mean = state["sq_mean"] * n / (n + 1.0) + theta**2 / (n + 1.0)
    cov = np.vstack([state["cov"], (theta - mean)[None]])
    if n + 1 > max_num_models:
        cov = cov[1:]
    return {"n": n + 1, "mean": mean, "sq_mean": sq_mean, "cov": cov}


def test_swag_moments_match_the_official_collect_model():
    rng = np.random.default_rng(0)
    snapshots = rng.normal(size=(7, 5))
    ours = paper.SWAGMoments.empty(5, rank=3)
    ref = {"n": 0, "mean": np.zeros(5), "sq_mean": np.zeros(5), "cov": np.zeros((0, 5))}
    for theta in snapshots:
        ours.collect(torch.from_numpy(theta))
        ref = _official_collect(ref, theta, 3)
    np.testing.assert_allclose(ours.mean.numpy(), snapshots.mean(0), rtol=1e-12)
    np.testing.assert_allclose(ours.mean.numpy(), ref["mean"], rtol=1e-12)
    np.testing.assert_allclose(ours.sq_mean.numpy(), (snapshots**2).mean(0), rtol=1e-12)
    np.testing.assert_allclose(ours.deviations.numpy(), ref["cov"], rtol=1e-12)
    np.testing.assert_allclose(ours.variance.numpy(), snapshots.var(0), rtol=1e-10)


def test_swag_sample_is_the_official_sample_fullrank_on_the_same_noise():
    rng = np.random.default_rng(1)
    moments = paper.SWAGMoments.empty(4, rank=3)
    for theta in rng.normal(size=(6, 4)):
        moments.collect(torch.from_numpy(theta))
    draw = moments.sample(np.random.default_rng(7), scale=0.5)
    # the official sample_fullrank(scale, cov=True) with the same z1, z2
    noise = np.random.default_rng(7)
    z1, z2 = noise.standard_normal(4), noise.standard_normal(3)
    var = np.clip(moments.sq_mean.numpy() - moments.mean.numpy() ** 2, 1e-30, None)
    cov_sample = moments.deviations.numpy().T @ z2 / (3 - 1) ** 0.5
    expected = moments.mean.numpy() + 0.5**0.5 * (np.sqrt(var) * z1 + cov_sample)
    np.testing.assert_allclose(draw.numpy(), expected, rtol=1e-12)


def test_swag_draws_have_the_swag_covariance():
    """Over many draws the sample covariance approaches ½ Σ_diag + D Dᵀ / (2(K−1))."""
    rng = np.random.default_rng(2)
    moments = paper.SWAGMoments.empty(3, rank=4)
    for theta in rng.normal(size=(8, 3)) * [1.0, 2.0, 0.5]:
        moments.collect(torch.from_numpy(theta))
    draws = torch.stack([moments.sample(rng) for _ in range(40_000)]).numpy()
    d = moments.deviations.numpy()
    cov = 0.5 * np.diag(moments.variance.numpy()) + d.T @ d / (2 * (len(d) - 1))
    np.testing.assert_allclose(draws.mean(0), moments.mean.numpy(), atol=0.03)
    np.testing.assert_allclose(np.cov(draws.T), cov, atol=0.05)


def test_swag_refuses_too_few_snapshots():
    m = paper.SWAGMoments.empty(3, rank=2)
    m.collect(torch.ones(3, dtype=torch.float64))
    with pytest.raises(CompanionError):
        m.sample(np.random.default_rng(0))
    with pytest.raises(CompanionError):
        paper.SWAGMoments.empty(3, rank=1)


# ---- the re-training loss against a loop


def test_retraining_loss_matches_a_loop():
    torch.manual_seed(0)
    head = nn.Linear(4, 3).double()
    zs, zm = torch.randn(5, 6, 4, dtype=torch.float64), torch.randn(6, 4, dtype=torch.float64)
    y = torch.tensor([0, 1, 2, 0, 1, 2])
    lam, t = 0.7, 2.0
    loss, parts = paper.retraining_loss(head, zs, zm, y, lam, t)
    w, b = head.weight.detach().numpy(), head.bias.detach().numpy()

    def softmax(v):
        e = np.exp(v - v.max())
        return e / e.sum()

    ce, kl = 0.0, 0.0
    for i in range(6):
        for s in range(5):
            p = softmax(w @ zs[s, i].numpy() + b)
            ce -= math.log(p[y[i]]) / 30
        teacher = np.mean([softmax((w @ zs[s, i].numpy() + b) / t) for s in range(5)], axis=0)
        student = softmax((w @ zm[i].numpy() + b) / t)
        kl += np.sum(teacher * (np.log(teacher) - np.log(student))) / 6
    assert parts["ce"] == pytest.approx(ce, rel=1e-10)
    assert parts["kl"] == pytest.approx(kl, rel=1e-10)
    assert float(loss.detach()) == pytest.approx(ce + lam * t**2 * kl, rel=1e-10)
    plain, only = paper.retraining_loss(head, zm[None], zm, y, 0.0, t)
    assert set(only) == {"ce"}


def test_distillation_target_is_the_mean_softened_prediction():
    logits = torch.tensor([[[2.0, 0.0]], [[0.0, 2.0]]])
    np.testing.assert_allclose(paper.distillation_target(logits, 1.0).numpy(), [[0.5, 0.5]])
    one = paper.distillation_target(logits[:1], 4.0)
    np.testing.assert_allclose(one.numpy(), torch.softmax(logits[0] / 4, -1).numpy())


# ---- long tail, sampling and metrics


def test_long_tail_counts_and_subset():
    counts = paper.long_tail_counts(250, 50.0, 10)
    assert counts[0] == 250 and counts[-1] == 5
    assert all(a >= b for a, b in zip(counts, counts[1:]))
    labels = torch.arange(10).repeat(300)
    rows = paper.long_tail_subset(labels, counts, seed=3)
    assert torch.bincount(labels[rows], minlength=10).tolist() == counts
    assert torch.equal(rows, paper.long_tail_subset(labels, counts, seed=3))
    with pytest.raises(CompanionError):
        paper.long_tail_subset(labels, [400] * 10, seed=0)


def test_shot_groups():
    groups = paper.shot_groups([250, 162, 105, 68, 44, 28, 18, 11, 7, 5], 100, 20)
    assert groups == {"many": [0, 1, 2], "medium": [3, 4, 5], "few": [6, 7, 8, 9]}


def test_class_balanced_batches_draw_classes_uniformly():
    labels = torch.tensor([0] * 90 + [1] * 9 + [2] * 1)
    rows = np.concatenate(
        paper.class_balanced_batches(labels, 3, 64, 200, np.random.default_rng(0))
    )
    share = np.bincount(labels.numpy()[rows], minlength=3) / len(rows)
    np.testing.assert_allclose(share, [1 / 3] * 3, atol=0.02)


def test_ece_and_group_accuracy_against_loops():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(4), size=200)
    labels = rng.integers(0, 4, 200)
    got = paper.expected_calibration_error(torch.from_numpy(probs), torch.from_numpy(labels))
    conf, pred = probs.max(1), probs.argmax(1)
    total = 0.0
    for b in range(15):
        lo, hi = b / 15, (b + 1) / 15
        m = (conf > lo) & (conf <= hi)
        if m.any():
            total += m.mean() * abs((pred[m] == labels[m]).mean() - conf[m].mean())
    assert got == pytest.approx(total, abs=1e-12)
    assert got == pytest.approx(reference_ece(probs, labels, bins=15))
    acc = paper.group_accuracy(
        torch.from_numpy(probs), torch.from_numpy(labels), {"a": [0, 1], "b": [2, 3]}
    )
    per = [np.mean(pred[labels == c] == c) for c in range(4)]
    assert acc["all"] == pytest.approx(np.mean(per))
    assert acc["a"] == pytest.approx(np.mean(per[:2]))


def test_features_follow_the_parameter_vector():
    ext = nn.Sequential(nn.Linear(3, 2), nn.ReLU()).double()
    portable_init(ext, np.random.default_rng(0))
    theta = paper.flat_parameters(ext)
    x = torch.randn(4, 3, dtype=torch.float64)
    w, b = theta[:6].view(2, 3), theta[6:]
    torch.testing.assert_close(paper.features(ext, theta, x), torch.relu(x @ w.T + b))
    moved = paper.features(ext, theta * 2, x)
    torch.testing.assert_close(moved, torch.relu(x @ (2 * w).T + 2 * b))


def test_presets_validate():
    assert set(paper.PRESETS) >= {"smoke", "notebook", "full"}
    assert paper.PRESETS["full"].precision == "32-true"
    with pytest.raises(CompanionError):
        paper.PRESETS["smoke"].replace(arms=("nope",))
    with pytest.raises(CompanionError):
        paper.PRESETS["smoke"].replace(swa_start=0.99)
    with pytest.raises(CompanionError):
        paper.PRESETS["smoke"].replace(num_samples=9, bank_size=8)


def test_smoke_runs_resumes_and_round_trips(tmp_path):
    cfg = paper.PRESETS["smoke"]
    result = paper.run(cfg, out_dir=tmp_path)
    assert result.arm_names == list(paper.ARMS)
    seed = result.seeds[0]
    assert seed.swa_snapshots == cfg.epochs - cfg.swa_start_epoch
    assert sum(r[0] for r in seed.arms[0].reliability) == len(seed.arms[0].per_class) * 150
    again = StochasticResult.load(tmp_path / "result.json")
    assert again.seeds[0].arms[2].ece == seed.arms[2].ece
    resumed = paper.run(cfg, out_dir=tmp_path, resume=True)
    assert resumed.seeds[0].to_dict() == seed.to_dict()
    rerun = paper.run(cfg)
    assert [a.to_dict() for a in rerun.seeds[0].arms] == [a.to_dict() for a in seed.arms]
    report = paper.check_claims(result)
    assert str(report).splitlines()[-1].startswith("claims hold: ")


def _seed(seed, arms, change=0.3):
    return SeedResult(
        seed=seed,
        counts=[10, 1],
        groups={"many": [0], "medium": [], "few": [1]},
        feature_change=change,
        disagreement=0.0,
        swa_snapshots=20,
        arms=[
            ArmResult(
                arm=name,
                seed=seed,
                accuracy=acc,
                many=0.95,
                medium=float("nan"),
                few=few,
                ece=ece,
                overconfidence=0.0,
                per_class=[0.95, few],
                reliability=[],
            )
            for name, (acc, few, ece) in arms.items()
        ],
        cloud={},
        seconds=0.0,
    )


def _result(method=(0.85, 0.70, 0.04), change=0.3, joint_few=0.5):
    arms = {
        "joint": (0.75, joint_few, 0.12),
        "crt_sgd": (0.80, 0.60, 0.11),
        "crt_swa": (0.84, 0.66, 0.09),
        "stochastic": (0.84, 0.67, 0.09),
        "stochastic_sd": method,
    }
    cfg = paper.PRESETS["notebook"].to_dict()
    return StochasticResult(
        config=cfg, seeds=[_seed(s, arms, change) for s in range(3)], seconds=0.0
    )


def test_claims_hold_on_a_clear_fixture_and_fail_without_the_effect():
    report = paper.check_claims(_result())
    assert report.all_hold, str(report)
    flat = paper.check_claims(_result(method=(0.84, 0.66, 0.09)))
    assert [r.holds for r in flat.rows] == [True, True, True, True, False, False, False, True]


def test_failed_premises_gate_the_claims():
    no_tail = paper.check_claims(_result(joint_few=0.9))
    assert not no_tail.rows[0].holds
    assert all(r.verdict.startswith("not tested") for r in no_tail.rows[2:7])
    no_spread = paper.check_claims(_result(change=0.01))
    assert not no_spread.rows[1].holds
    assert no_spread.rows[2].holds  # vs plain re-training: no stochasticity needed
    assert no_spread.rows[5].verdict.startswith("not tested")
    assert "swa_lr" in no_spread.note


def test_sgd_matches_torch_optim_sgd():
    torch.manual_seed(0)
    a = nn.Linear(4, 3).double()
    b = nn.Linear(4, 3).double()
    b.load_state_dict(a.state_dict())
    ours = paper.SGD(a.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    ref = torch.optim.SGD(b.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    for step in range(5):
        x = torch.randn(8, 4, dtype=torch.float64)
        for model, opt in ((a, ours), (b, ref)):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
        ours.lr = ref.param_groups[0]["lr"] = 0.1 / (step + 2)
    torch.testing.assert_close(a.weight, b.weight, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(a.bias, b.bias, rtol=1e-12, atol=1e-14)


def test_fullscale_flops_match_the_flop_counter():
    from companion.core.fullscale import count_flops
    from companion.papers.stochastic_representations import fullscale

    for cfg in (paper.PRESETS["full"], paper.PRESETS["notebook"]):
        with torch.device("meta"):
            ext = paper.build_extractor(cfg, (3, 32, 32))
            head = nn.Linear(cfg.feature_dim, 10)
            x = torch.empty(2, 3, 32, 32)
        counted = count_flops(lambda m, h, v: h(m(v)), ext, head, x) / 2
        assert fullscale.forward_flops(cfg) == pytest.approx(counted, rel=1e-9)


def test_sgd_baseline_rate_is_the_stored_validation_choice():
    """``sgd_lr`` of the notebook preset is the rate the validation sweep chose (never the test
    set), and the sweep runs and scores the validation split at smoke sizes."""
    import json

    from companion.core.medium import RUNS_DIR

    stored = json.loads((RUNS_DIR / "stochastic_representations/sgd_lr_sweep.json").read_text())
    scores = {float(k): v["accuracy"] for k, v in stored["validation"].items()}
    best = max(scores, key=scores.get)
    assert best == stored["chosen"] == paper.PRESETS["notebook"].sgd_lr
    assert min(scores) < best < max(scores), "the chosen rate must be interior to the grid"
    from companion.papers.stochastic_representations.experiment import sgd_lr_sweep

    got = sgd_lr_sweep(paper.PRESETS["smoke"], rates=(0.1,), run_seeds=[0])
    assert set(got) == {"0.1"} and 0.0 <= got["0.1"]["accuracy"] <= 1.0


def test_sgd_arm_follows_sgd_lr_and_swa_arm_does_not():
    """The SGD baseline's rate ``sgd_lr`` moves only the SGD arm: the SWA run (and so every arm
    on SWA features) is the same whatever ``sgd_lr`` is."""
    cfg = paper.PRESETS["smoke"].replace(arms=("crt_sgd", "crt_swa"))
    a, b = paper.run(cfg), paper.run(cfg.replace(sgd_lr=0.05))
    assert a.arm("crt_swa")[0].to_dict() == b.arm("crt_swa")[0].to_dict()
    assert a.arm("crt_sgd")[0].per_class != b.arm("crt_sgd")[0].per_class
