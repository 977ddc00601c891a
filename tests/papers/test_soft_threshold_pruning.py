"""soft_threshold_pruning against independent computations (loops, closed forms, the official
formulas on tiny inputs)."""

import math

import pytest
import torch

from companion.errors import CompanionError
from companion.papers.soft_threshold_pruning import method as m


def _logistic_problem(seed=0, n=40, d=6):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    y = (torch.rand(n, generator=g, dtype=torch.float64) < 0.5).double()

    def grad(w):  # gradient of the mean logistic loss, written out by hand
        p = torch.sigmoid(x @ w)
        return x.T @ (p - y) / n

    return grad, d


def test_soft_threshold_matches_elementwise_loop_and_has_identity_gradient():
    theta = torch.tensor([-1.5, -0.2, 0.0, 0.3, 0.7, 2.0], requires_grad=True)
    d = 0.4
    w = m.soft_threshold(theta, d)
    expected = []
    for t in theta.tolist():
        expected.append(0.0 if abs(t) <= d else (t - d if t > 0 else t + d))
    assert w.tolist() == pytest.approx(expected)
    w.sum().backward()
    # pseudo-ReLU: dw/dθ = sign(θ)·1·sign(θ) = 1 wherever θ ≠ 0, pruned entries included
    assert theta.grad.tolist() == [1.0, 1.0, 0.0, 1.0, 1.0, 1.0]


def test_inverse_then_threshold_is_identity():
    w = torch.tensor([-0.7, 0.0, 0.25, 1.1])
    torch.testing.assert_close(m.soft_threshold(m.soft_threshold_inverse(w, 0.3), 0.3), w)


def test_prox_l1_is_the_argmin_by_brute_force():
    v, t = 0.37, 0.2
    grid = torch.linspace(-1, 1, 200_001, dtype=torch.float64)
    objective = 0.5 * (grid - v) ** 2 + t * grid.abs()
    best = grid[objective.argmin()].item()
    prox = m.prox_l1(torch.tensor(v, dtype=torch.float64), t).item()
    assert prox == pytest.approx(best, abs=2e-5)


def test_reparam_sgd_equals_ista_while_signs_are_stable():
    # least squares whose solution is far from zero: no weight reaches the dead zone
    g = torch.Generator().manual_seed(0)
    a = torch.randn(30, 6, generator=g, dtype=torch.float64) / 30**0.5
    w_true = torch.tensor([2.0, -1.5, 1.0, -2.5, 1.2, 3.0], dtype=torch.float64)
    b = a @ w_true

    def grad(w):
        return a.T @ (a @ w - b)

    lrs = [0.5 * (1 + math.cos(math.pi * s / 60)) * 0.5 for s in range(60)]
    lam = 0.05
    w0 = torch.tensor([1.0, -1.2, 0.9, -0.8, 1.1, 1.3], dtype=torch.float64)
    thresholds = m.lats_thresholds(lrs, lam)
    ws_ista = m.ista(grad, w0, lrs, lam)
    ws_rep, thetas = m.reparam_sgd(grad, w0, lrs, thresholds)  # D_0 = 0: θ_0 = w_0
    # the regime of the equivalence: every weight active, no sign change
    for th, dt in zip(thetas, thresholds):
        assert bool((th.abs() > dt).all()) and bool((th.sign() == w0.sign()).all())
    for a, b in zip(ws_ista, ws_rep):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=0)


def test_reparam_differs_from_ista_only_through_dead_zone_memory():
    grad, d = _logistic_problem(seed=1)
    lrs = [0.5] * 80
    lam = 0.05  # large enough to prune some weights
    w0 = torch.randn(d, generator=torch.Generator().manual_seed(3), dtype=torch.float64) * 0.3
    thresholds = m.lats_thresholds(lrs, lam)
    ws_rep, thetas = m.reparam_sgd(grad, w0, lrs, thresholds)
    # one ISTA step from each reparam iterate reproduces the next iterate on every coordinate
    # that is nonzero and whose gradient step does not cross zero
    for t, lr in enumerate(lrs):
        step = m.prox_l1(ws_rep[t] - lr * grad(ws_rep[t]), lr * lam)
        v = ws_rep[t] - lr * grad(ws_rep[t])
        active = (ws_rep[t] != 0) & (v.sign() == ws_rep[t].sign())
        torch.testing.assert_close(step[active], ws_rep[t + 1][active], atol=1e-12, rtol=0)
    assert any(bool((w == 0).any()) for w in ws_rep)  # the test visited the dead zone
    # ... where θ's memory makes the whole trajectories differ from ISTA's
    ws_ista = m.ista(grad, w0, lrs, lam)
    assert max(float((a - b).abs().max()) for a, b in zip(ws_ista, ws_rep)) > 1e-3


def test_s_lats_is_the_normalised_cumulative_cosine_learning_rate():
    steps = 4000
    lrs = [0.5 * (1 + math.cos(math.pi * (s + 0.5) / steps)) for s in range(steps)]
    d = m.lats_thresholds(lrs, 1.0)
    for t in (0, 500, 2000, 3100, 4000):
        assert d[t] / d[-1] == pytest.approx(m.s_lats(t / steps), abs=1e-6)
    # the official sinpInc
    n, big_n = 37, 120
    official = math.sin(math.pi * n / big_n) / math.pi + n / big_n
    assert m.s_lats(n / big_n) == pytest.approx(official)


def test_implied_l1_is_constant_for_lats_and_not_for_a_linear_ramp():
    lrs = [0.5 * (1 + math.cos(math.pi * s / 50)) + 1e-3 for s in range(50)]
    lam = m.implied_l1(m.lats_thresholds(lrs, 0.02), lrs)
    assert max(lam) == pytest.approx(0.02) and min(lam) == pytest.approx(0.02)
    ramp = [0.1 * t / 50 for t in range(51)]
    lam_ramp = m.implied_l1(ramp, lrs)
    assert max(lam_ramp) / min(lam_ramp) > 10  # λ explodes as the learning rate decays


def test_gmp_cubic_schedule_and_magnitude_mask():
    assert m.gmp_sparsity(0.0, 0.9) == 0.0
    assert m.gmp_sparsity(1.0, 0.9) == pytest.approx(0.9)
    assert m.gmp_sparsity(0.5, 0.8) == pytest.approx(0.8 * (1 - 0.125))
    w = torch.tensor([[0.3, -0.1, 0.05], [-2.0, 0.2, 0.0]])
    mask = m.magnitude_mask(w, 0.5)  # 3 smallest |w|: 0.0, 0.05, -0.1
    assert mask.tolist() == [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]]


def test_layers_and_sparsity_measured_on_w():
    torch.manual_seed(0)
    layer = m.SoftThresholdLinear(10, 8)
    m.set_threshold(layer, 0.1)
    w = layer.weight.detach()
    expected = float((w.abs() <= 0.1).float().mean())
    assert m.sparsity(layer) == pytest.approx(expected)
    x = torch.randn(3, 10)
    torch.testing.assert_close(layer(x), x @ m.prox_l1(w, 0.1).T + layer.bias)
    gmp = m.MagnitudeLinear(10, 8)
    m.set_prune_rate(gmp, 0.75)
    assert m.sparsity(gmp) == pytest.approx(60 / 80)


def test_unknown_schedule_names_the_choices():
    with pytest.raises(CompanionError, match="unknown threshold schedule 'cubic'.*s_lats"):
        m.threshold_fraction("cubic", 0.5)


def test_experiment_schedules_follow_the_learning_rate():
    from companion.papers.soft_threshold_pruning import experiment as e

    cfg = e.PRESETS["notebook"].replace(steps=200)
    lats = [e.schedule_value(cfg, "lats", 1.0, t) for t in range(cfg.steps + 1)]
    lrs = [e.lr_at(cfg, t) for t in range(cfg.steps)]
    lam = m.implied_l1(lats, lrs)
    assert max(lam) == pytest.approx(min(lam), rel=1e-9)  # LATS: λ constant
    assert lats[-1] == pytest.approx(1.0) and lats[0] == 0.0
    # the discrete sum is close to the closed form S-LATS
    for t in (50, 100, 150):
        assert lats[t] == pytest.approx(m.s_lats(t / cfg.steps), abs=0.01)
    assert e.schedule_value(cfg, "gmp", 0.9, cfg.steps) == pytest.approx(0.9)
    assert e.schedule_value(cfg, "fixed", 0.3, 0) == 0.3


def test_tiny_run_reaches_sparsity_and_claims_can_fail():
    from companion.papers import soft_threshold_pruning as paper

    cfg = paper.PRESETS["smoke"].replace(
        device="cpu", hidden=(16,), steps=12, search_steps=1, measure_every=6
    )
    result = paper.run(cfg)
    assert result.arms["gmp"].sparsity == pytest.approx(cfg.target_sparsity, abs=0.01)
    d = result.arms["lats"].final_threshold
    assert d == pytest.approx((cfg.d_low * cfg.d_high) ** 0.5)
    assert result.arms["gmp_global"].sparsity == pytest.approx(cfg.target_sparsity, abs=0.01)
    report = paper.check_claims(result)
    # premise + both ramps + both GMP allocations; the fixed threshold is a printed reference only
    assert len(report.rows) == 5
    assert all("fixed" not in row.claim for row in report.rows)
    for arm in result.arms.values():  # one bisection step: put every arm on the target
        arm.sparsity = cfg.target_sparsity
    # make LATS lose to the linear ramp by more than the margin: that row must then fail
    result.arms["linear"].test_accuracy = result.arms["lats"].test_accuracy + 0.1
    assert not paper.check_claims(result).rows[1].holds
    # within the non-inferiority margin it holds
    from companion.papers.soft_threshold_pruning.claims import NONINFERIORITY_MARGIN as margin

    result.arms["linear"].test_accuracy = result.arms["lats"].test_accuracy + margin / 2
    assert paper.check_claims(result).rows[1].holds
    # an arm far from the target sparsity fails the premise; comparisons are then not tested
    result.arms["gmp_global"].sparsity = 0.5
    rows = paper.check_claims(result).rows
    assert not rows[0].holds and not any(r.premise_ok for r in rows[1:])


def test_global_magnitude_pruning_ranks_all_layers_together():
    torch.manual_seed(0)
    model = torch.nn.Sequential(m.MagnitudeLinear(6, 5), m.MagnitudeLinear(5, 3))
    with torch.no_grad():
        w1 = model[1].weight
        w1.copy_(w1.sign() + w1)  # |w| ≥ 1 in the second layer, < 0.5 in the first
    n0, n1 = model[0].weight.numel(), model[1].weight.numel()
    m.set_global_prune_rate(model, (n0 + 0.5) / (n0 + n1))
    # exactly the first layer is pruned: the smallest n0 magnitudes all live there
    assert m.sparsity(model[0]) == 1.0 and m.sparsity(model[1]) == 0.0
    m.set_global_prune_rate(model, 0.4)
    mags = torch.cat([layer.weight.detach().abs().flatten() for layer in model])
    cut = mags.sort().values[int(0.4 * mags.numel()) - 1]
    kept = torch.cat([layer.sparse_weight().detach().flatten() for layer in model])
    assert int((kept == 0).sum()) == int(0.4 * mags.numel())
    assert bool((kept[mags <= cut] == 0).all())


def test_unknown_config_values_are_named():
    from companion.papers.soft_threshold_pruning import PRESETS

    with pytest.raises(CompanionError, match="unknown schedule 'cubic'"):
        PRESETS["smoke"].replace(schedules=("cubic",))


def test_lats_schedule_is_unchanged_and_constant_time_per_step():
    from companion.papers.soft_threshold_pruning import experiment as e

    cfg = e.PRESETS["notebook"].replace(steps=97, lr=0.07)

    def previous(step):  # the earlier formula: every call summed all learning rates afresh
        lrs = [e.lr_at(cfg, s) for s in range(cfg.steps)]
        return 0.3 * m.lats_thresholds(lrs, 1.0)[step] / sum(lrs)

    assert [e.schedule_value(cfg, "lats", 0.3, t) for t in range(cfg.steps + 1)] == [
        previous(t) for t in range(cfg.steps + 1)
    ]
    e._lats_sums.cache_clear()
    for t in range(cfg.steps + 1):
        e.schedule_value(cfg, "lats", 0.3, t)
    info = e._lats_sums.cache_info()
    assert info.misses == 1 and info.hits == cfg.steps  # the sums are built once per run


def test_fixed_threshold_prunes_the_target_share_of_the_initial_weights():
    from companion.papers.soft_threshold_pruning import experiment as e

    cfg = e.PRESETS["smoke"].replace(target_sparsity=0.9)
    d = e.fixed_threshold(cfg)
    _, _, features, classes = e.load_data(cfg)
    model = e.build_model(cfg, "fixed", features, classes, d)
    mags = torch.cat([layer.weight.detach().abs().flatten() for layer in model.layers])
    assert int((mags <= d).sum()) == math.ceil(0.9 * mags.numel())  # a quantile, by counting
    assert m.sparsity(model) == pytest.approx(0.9, abs=1 / mags.numel())


def _claims_file(accuracies, premise_fails=()):
    """A claims file made by the real check_claims on fake results: seed -> {arm: accuracy}."""
    from types import SimpleNamespace

    from companion.core.robustness import _summarize
    from companion.papers.soft_threshold_pruning.claims import check_claims

    done = {}
    for seed, accs in accuracies.items():
        arms = {
            k: SimpleNamespace(test_accuracy=a, sparsity=0.5 if seed in premise_fails else 0.9)
            if k == "gmp_global"
            else SimpleNamespace(test_accuracy=a, sparsity=0.9)
            for k, a in accs.items()
        }
        ista = {
            "thresholds": [0.0, 0.1, 0.3],
            "lrs": [1.0, 2.0],
            "stable_gap": [0.0],
            "sparse_one_step_gap": [0.0],
            "sparse_gap": [0.0],
        }
        result = SimpleNamespace(
            config={"target_sparsity": 0.9}, arms=arms, ista=ista, one_factor=None
        )
        done[seed] = check_claims(result).to_dict()
    return _summarize({}, list(accuracies), done)


def test_paired_summary_reads_the_paired_differences_back(tmp_path):
    from companion.core.results import write_json
    from companion.papers.soft_threshold_pruning.claims import paired_summary

    def accs(d_gmp, d_global):  # LATS at 0.9; the baselines set so that d = acc(LATS) − acc(arm)
        return {"lats": 0.9, "linear": 0.85, "gmp": 0.9 - d_gmp, "gmp_global": 0.9 - d_global}

    data = _claims_file({0: accs(-0.01, -0.02), 1: accs(0.0, -0.01), 2: accs(0.01, -0.03)})
    write_json(tmp_path / "soft_threshold_pruning.json", data)
    text = paired_summary(claims_dir=tmp_path)
    assert "LATS − linear      +0.050 ± 0.000 (d < 0 at 0/3)" in text
    assert "LATS − gmp         +0.000 ± 0.010 (d < 0 at 1/3)" in text
    assert "LATS − gmp_global  -0.020 ± 0.010 (d < 0 at 3/3)" in text
    # the allocation effect, gmp_global − gmp = d(gmp) − d(gmp_global): +0.01, +0.01, +0.04
    assert "gmp_global − gmp   +0.020 ± 0.017 (d < 0 at 0/3)" in text
    assert "left out" not in text


def test_paired_summary_skips_seeds_whose_premise_failed(tmp_path):
    from companion.core.results import write_json
    from companion.papers.soft_threshold_pruning.claims import paired_summary

    row = {"lats": 0.9, "linear": 0.8, "gmp": 0.9, "gmp_global": 0.9}
    bad = {"lats": 0.9, "linear": 0.5, "gmp": 0.5, "gmp_global": 0.5}  # unequal sparsity there
    data = _claims_file({0: row, 1: bad, 2: row}, premise_fails={1})
    assert data["claims"][1]["not_tested_at"] == 1  # the real rows mark seed 1 untested
    write_json(tmp_path / "soft_threshold_pruning.json", data)
    text = paired_summary(claims_dir=tmp_path)
    assert "LATS − linear      +0.100 ± 0.000 (d < 0 at 0/2)" in text
    assert "LATS − gmp         +0.000 ± 0.000 (d < 0 at 0/2)" in text
    assert "1 seed(s) left out, premise failed (seed 1)" in text


def test_paired_summary_names_the_row_and_seed_it_cannot_read(tmp_path):
    from companion.core.results import write_json
    from companion.papers.soft_threshold_pruning.claims import paired_summary

    data = _claims_file({0: {"lats": 0.9, "linear": 0.8, "gmp": 0.9, "gmp_global": 0.9}})
    data["claims"][2]["per_seed"]["0"]["measured"] = "d = 0.01"
    write_json(tmp_path / "soft_threshold_pruning.json", data)
    with pytest.raises(CompanionError, match=r"seed 0: cannot read d .*'d = 0.01'"):
        paired_summary(claims_dir=tmp_path)


def test_early_ramp_prunes_at_least_as_early_as_lats_without_a_constant_l1():
    from companion.papers.soft_threshold_pruning import experiment as e

    for i in range(101):
        x = i / 100
        assert m.threshold_fraction("linear_early", x) >= m.s_lats(x) - 1e-12
    assert m.threshold_fraction("linear_early", 0.25) == pytest.approx(0.5)
    assert m.threshold_fraction("linear_early", 0.7) == 1.0
    cfg = e.PRESETS["notebook"]
    curve = [e.schedule_value(cfg, "linear_early", 1.0, t) for t in range(cfg.steps + 1)]
    lats = [e.schedule_value(cfg, "lats", 1.0, t) for t in range(cfg.steps + 1)]
    assert all(a >= b - 1e-9 for a, b in zip(curve, lats))  # the discrete LATS too
    lam = m.implied_l1(curve, [e.lr_at(cfg, t) for t in range(cfg.steps)])
    half = cfg.steps // 2
    assert lam[half - 1] / lam[0] > 1.5 and max(lam[half + 1 :]) == 0.0  # λ not constant


def test_threshold_search_bisects_then_interpolates_in_log_log():
    from companion.papers.soft_threshold_pruning.experiment import next_threshold

    assert next_threshold(0.01, 1.0, None, None, 0.97) == pytest.approx(0.1)
    assert next_threshold(0.1, 1.0, 0.8, None, 0.97) == pytest.approx(0.1**0.5)

    def sparsity(d):  # a power law: density = 0.002 · D^-2
        return 1 - 0.002 * d**-2

    lo, hi = 0.1, 0.5
    d = next_threshold(lo, hi, sparsity(lo), sparsity(hi), 0.97)
    assert sparsity(d) == pytest.approx(0.97, abs=1e-12)  # exact on a power law
    # kept inside the bracket's middle 80 % (in log D) when the line points near an end
    d = next_threshold(0.1, 0.5, 0.9699, 0.9999, 0.97)
    assert math.log(d / 0.1) == pytest.approx(0.1 * math.log(5))


def test_premise_tolerance_is_relative_to_the_target_density():
    from types import SimpleNamespace

    from companion.papers.soft_threshold_pruning.claims import DENSITY_TOL, check_claims

    ista = {
        "thresholds": [0.0, 0.1, 0.3],
        "lrs": [1.0, 2.0],
        "stable_gap": [0.0],
        "sparse_one_step_gap": [0.0],
        "sparse_gap": [0.0],
    }

    def premise(lats_sparsity, target=0.99):
        arms = {
            "lats": SimpleNamespace(test_accuracy=0.9, sparsity=lats_sparsity),
            "gmp": SimpleNamespace(test_accuracy=0.9, sparsity=target),
            "fixed": SimpleNamespace(test_accuracy=0.1, sparsity=0.5),  # never compared
        }
        result = SimpleNamespace(
            config={"target_sparsity": target}, arms=arms, ista=ista, one_factor=None
        )
        return check_claims(result).rows[0].holds

    assert DENSITY_TOL == 0.10
    # at 99 %: density 1 %, so the arms must land within 0.1 point of sparsity
    assert premise(0.9895) and premise(0.9909)
    assert not premise(0.9885) and not premise(0.9915)  # 0.01 absolute would have passed
    assert premise(0.9725, target=0.97) and not premise(0.9735, target=0.97)


def test_one_factor_arms_are_trained_at_the_scaled_steps_and_get_their_own_rows(tmp_path):
    from companion.core.results import write_json
    from companion.core.robustness import _summarize
    from companion.papers import soft_threshold_pruning as paper

    cfg = paper.PRESETS["smoke"].replace(
        device="cpu",
        hidden=(16,),
        steps=12,
        search_steps=1,
        measure_every=6,
        schedules=("lats", "linear", "gmp", "gmp_global"),
        one_factor_steps=0.5,
    )
    result = paper.run(cfg)
    short = result.one_factor
    assert short.config["steps"] == 6 and short.one_factor is None
    assert len(short.lrs) == 6 and short.config["target_sparsity"] == cfg.target_sparsity
    assert paper.Result.from_dict(result.to_dict()) == result
    for r in (result, short):
        for arm in r.arms.values():
            arm.sparsity = cfg.target_sparsity
    short.arms["gmp"].test_accuracy = short.arms["lats"].test_accuracy + 0.1  # fails there only
    report = paper.check_claims(result)
    assert len(report.rows) == 8  # premise, linear, both GMP; twice
    assert [r.holds for r in report.rows].count(False) == 1
    failed = next(r for r in report.rows if not r.holds)
    assert failed.claim.startswith("one factor: 97% sparsity at 1/2 of the steps: ")
    assert failed.criterion == "LATS − gmp ≥ −0.01 (paired, 6 steps)"
    data = _summarize({}, [0], {0: report.to_dict()})
    write_json(tmp_path / "medium" / "soft_threshold_pruning.json", data)
    text = paper.paired_summary("medium", claims_dir=tmp_path)
    assert "LATS − gmp (6 steps)" in text and "-0.100 ± 0.000 (d < 0 at 1/1)" in text
    assert "gmp_global − gmp (6 steps)" in text
