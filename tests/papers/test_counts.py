"""counts against independent computations (loops, closed forms, brute force) and the claims on
small fake results."""

import math

import pytest
import torch

from companion.errors import CompanionError
from companion.papers import counts as paper


def _loop_simulation(sim, noise, dose=None):
    """The simulator's equations, one patient and one step at a time in plain Python."""
    n, t_len = noise["xi"].shape
    xs, ys = [], []
    for i in range(n):
        c = noise["c"][i].item()
        if dose is None:
            eta = [sim.dose_noise * noise["xi"][i, 0].item() / math.sqrt(1 - sim.dose_ar**2)]
            for t in range(1, t_len):
                eta.append(sim.dose_ar * eta[-1] + sim.dose_noise * noise["xi"][i, t].item())
            a = [sim.dose_base + sim.confounding * c + e for e in eta]
        else:
            a = dose[i].tolist()
        b = [
            (sim.dose_effect * sim.dose_base - sim.vital_confounding * c) / (1 - sim.vital_ar)
            + sim.vital_noise * noise["nu"][i, 0].item()
        ]
        for t in range(1, t_len):
            b.append(
                sim.vital_ar * b[-1]
                + sim.dose_effect * a[t - 1]
                - sim.vital_confounding * c
                + sim.vital_noise * noise["nu"][i, t].item()
            )
        score = (
            sum(b[-sim.window :]) / sim.window
            - sim.outcome_confounding * c
            + sim.outcome_noise * noise["eps"][i].item()
            - sim.threshold
        )
        xs.append([a, b])
        ys.append(float(score > 0))
    return torch.tensor(xs), torch.tensor(ys)


def test_simulator_matches_a_loop_over_its_equations():
    sim = paper.Simulator(length=10)
    x, y, noise = sim.sample(6, torch.Generator().manual_seed(0))
    x_loop, y_loop = _loop_simulation(sim, noise)
    torch.testing.assert_close(x, x_loop, atol=1e-5, rtol=1e-5)
    assert torch.equal(y, y_loop)
    dose = x[:, 0] + torch.linspace(-1, 1, 10)
    x_cf, y_cf = sim.counterfactual(dose, noise)
    x_loop, y_loop = _loop_simulation(sim, noise, dose)
    torch.testing.assert_close(x_cf, x_loop, atol=1e-5, rtol=1e-5)
    assert torch.equal(y_cf, y_loop)


def test_simulator_counterfactual_of_the_observed_dose_is_the_fact():
    sim = paper.Simulator()
    x, y, noise = sim.sample(50, torch.Generator().manual_seed(1))
    x_cf, y_cf = sim.counterfactual(x[:, 0], noise)
    torch.testing.assert_close(x_cf, x)
    assert torch.equal(y_cf, y)
    assert 0.35 < y.mean().item() < 0.65  # θ keeps the classes about balanced


def test_response_matrix_is_the_causal_toeplitz_matrix():
    model = paper.CounTS(length=7, latent=2, hidden=8, lags=3)
    with torch.no_grad():
        model.dose_response.copy_(torch.tensor([9.0, 1.0, 2.0, 3.0]))  # w_0 is never used
    W = model.response_matrix().detach()
    for t in range(7):
        for s in range(7):
            want = [0.0, 1.0, 2.0, 3.0][t - s] if 1 <= t - s <= 3 else 0.0
            assert W[t, s].item() == want
    dose, u = torch.randn(4, 7), torch.randn(4, 2)
    loop = torch.stack(
        [
            torch.tensor([sum(W[t, s] * dose[i, s] for s in range(t)) for t in range(7)])
            for i in range(4)
        ]
    )
    torch.testing.assert_close(model.vital_mean(dose, u) - model.vital_base(u), loop)


def test_negative_elbo_against_its_closed_form():
    torch.manual_seed(2)
    model = paper.CounTS(length=6, latent=2, hidden=8, sigma=0.7)
    x, y = torch.randn(5, 2, 6), torch.tensor([0.0, 1.0, 1.0, 0.0, 1.0])
    loss, _ = paper.negative_elbo(model, x, y, sample=False)
    total = 0.0
    for i in range(5):
        mu, logvar = model.posterior(x[i : i + 1])
        a, b = x[i, 0], x[i, 1]
        rec_a = ((a - model.dose_decoder(mu)[0]) ** 2).sum() / (2 * 0.49)
        rec_b = ((b - model.vital_mean(a[None], mu)[0]) ** 2).sum() / (2 * 0.49)
        p = torch.sigmoid(model.outcome_logit(b[None], mu))[0]
        nll = -(y[i] * torch.log(p) + (1 - y[i]) * torch.log(1 - p))
        var = logvar.exp()
        kl = 0.5 * (mu**2 + var - 1 - torch.log(var)).sum()
        total += rec_a + rec_b + nll + kl
    assert loss.item() == pytest.approx(total.item() / 5 / 6, rel=1e-5)


def test_abduction_then_prediction_without_action_gives_back_the_series():
    torch.manual_seed(3)
    model = paper.CounTS(length=8, latent=2, hidden=8)
    x = torch.randn(4, 2, 8)
    u, e_b = paper.abduction(model, x)
    vital, _ = paper.prediction(model, x[:, 0], u, e_b)
    torch.testing.assert_close(vital, x[:, 1])
    u0, e0 = paper.abduction(model, x, use_posterior=False)
    assert torch.all(u0 == 0) and torch.all(e0 == 0)


def test_search_action_follows_a_linear_predictor_and_respects_the_mask():
    # logit = w · a: with λ = 0 the BCE gradient on a is −(1 − p) w for target 1, so every
    # unmasked step moves along +w; masked steps never move
    w = torch.tensor([1.0, -2.0, 0.5, 3.0])
    x = torch.zeros(2, 2, 4)
    mask = torch.tensor([1.0, 1.0, 0.0, 1.0])
    dose = paper.search_action(lambda a: a @ w, x, torch.ones(2), mask, 0.0, 5, 0.1)
    assert torch.all(dose[:, 2] == 0)
    assert torch.all(torch.sign(dose[:, [0, 1, 3]]) == torch.sign(w[[0, 1, 3]]))
    # a huge λ keeps the dose where it is (the L1 term dominates a bounded BCE gradient)
    still = paper.search_action(lambda a: a @ w, x, torch.ones(2), mask, 1e4, 20, 0.01)
    assert still.abs().max().item() < 0.05


def test_wachter_keeps_the_vital_sign_and_counts_changes_it():
    torch.manual_seed(4)
    cfg = paper.PRESETS["smoke"].replace(length=8, lags=3)
    x = torch.randn(3, 2, 8)
    box = paper.build_model(cfg, "blackbox")
    cf = paper.wachter_counterfactual(box, x, torch.ones(3), torch.ones(8), 0.1, 5, 0.1)
    assert torch.equal(cf.vital, x[:, 1])
    assert all(p.requires_grad for p in box.parameters())  # weights given back trainable
    model = paper.build_model(cfg, "counts")
    with torch.no_grad():
        model.dose_response.fill_(0.5)
    cf = paper.counts_counterfactual(model, x, torch.ones(3), torch.ones(8), 0.1, 5, 0.1)
    u, e_b = paper.abduction(model, x)
    torch.testing.assert_close(cf.vital, model.vital_mean(cf.dose, u).detach() + e_b.detach())
    assert not torch.allclose(cf.vital, x[:, 1])


def test_evaluate_counterfactual_by_brute_force():
    sim = paper.Simulator(length=12)
    x, y, noise = sim.sample(30, torch.Generator().manual_seed(5))
    target = 1 - y
    dose = x[:, 0] + 3.0 * (2 * target[:, None] - 1)  # a large push toward the target
    cf = paper.Counterfactual(dose, x[:, 1], torch.zeros(30))
    scores = paper.evaluate_counterfactual(sim, x, cf, target, noise)
    valid = [
        sim.counterfactual(dose[i : i + 1], {k: v[i : i + 1] for k, v in noise.items()})
        for i in range(30)
    ]
    want = sum(float(v[1].item() == target[i].item()) for i, v in enumerate(valid)) / 30
    assert scores["validity"] == pytest.approx(want)
    assert scores["action_l1"] == pytest.approx(3.0, rel=1e-5)
    assert scores["model_validity"] == pytest.approx((target == 0).float().mean().item())
    true_b = sim.counterfactual(dose, noise)[0][:, 1]
    assert scores["cf_error"] == pytest.approx((x[:, 1] - true_b).abs().mean().item(), rel=1e-5)


def test_presets_and_config_errors():
    assert set(paper.PRESETS) >= {"smoke", "notebook", "full"}
    assert paper.PRESETS["notebook"] == paper.Config()
    with pytest.raises(CompanionError, match="mask 'middle'; valid: all, first_half"):
        paper.PRESETS["notebook"].replace(mask="middle")
    with pytest.raises(CompanionError, match="n_explain"):
        paper.PRESETS["notebook"].replace(n_explain=5000)
    with pytest.raises(CompanionError, match="lags"):
        paper.PRESETS["notebook"].replace(lags=30)
    with pytest.raises(CompanionError, match="steps must be >= 1"):
        paper.PRESETS["notebook"].replace(steps=0)
    m = paper.action_mask(paper.PRESETS["smoke"].replace(mask="first_half"))
    assert m.sum().item() == paper.PRESETS["smoke"].length // 2


def test_smoke_run_round_trips_and_reports(tmp_path):
    cfg = paper.PRESETS["smoke"].replace(device="cpu")
    result = paper.run(cfg, out_dir=tmp_path)
    again = paper.Result.from_dict(result.to_dict())
    assert again.to_dict() == result.to_dict()
    assert isinstance(again.arms["counts"].explainers["counts"], paper.ExplainerResult)
    assert (tmp_path / "result.json").exists()
    report = paper.check_claims(result)
    assert len(report.rows) == 4 and str(report).splitlines()[-1].startswith("claims hold: ")
    assert result.arms["counts"].abduction_error < 1e-4
    assert len(result.targets) == cfg.n_explain
    figs = paper.figures(result)
    assert set(figs) == {"validity", "dose_change", "patient"}
    with pytest.raises(CompanionError, match="unknown explainer"):
        result.explainer("lime")


# ---------------------------------------------------------------- claims on fake results
def _explainer(method, validity, model_validity, cf_error):
    return paper.ExplainerResult(
        method=method,
        validity=validity,
        model_validity=model_validity,
        cf_error=cf_error,
        action_l1=1.0,
        dose_change=[0.0],
        valid=[True],
        examples={"dose": [[0.0]], "vital": [[0.0]], "true_vital": [[0.0]]},
    )


def _fake(
    counts=0.8,
    wachter=0.0,
    control=0.2,
    wachter_own=1.0,
    err_counts=0.1,
    err_wachter=0.4,
    err_control=1.4,
    control_own=1.0,
    acc_counts=0.95,
    acc_box=0.93,
    abduction_error=0.0,
):
    arm_c = paper.ArmResult(
        "counts",
        [0],
        [1.0],
        acc_counts,
        {
            "counts": _explainer("counts", counts, 1.0, err_counts),
            "no_abduction": _explainer("no_abduction", control, control_own, err_control),
        },
        1.0,
        abduction_error,
    )
    arm_b = paper.ArmResult(
        "blackbox",
        [0],
        [1.0],
        acc_box,
        {"wachter": _explainer("wachter", wachter, wachter_own, err_wachter)},
        1.0,
    )
    return paper.CountsResult(
        {}, [1.0], {"dose": [[0.0]], "vital": [[0.0]]}, {"counts": arm_c, "blackbox": arm_b}
    )


def test_claims_hold_on_a_good_fake_result():
    report = paper.check_claims(_fake())
    assert report.all_hold and all(i.holds for i in report.invariants)


@pytest.mark.parametrize(
    "change, row",
    [
        (dict(wachter_own=0.5), 0),
        (dict(control_own=0.5), 0),
        (dict(err_counts=0.45), 1),
        (dict(err_control=0.3), 1),
        (dict(acc_counts=0.89), 2),
        (dict(control=0.6), 3),
    ],
)
def test_every_claim_row_can_fail(change, row):
    report = paper.check_claims(_fake(**change))
    assert not report.rows[row].holds
    assert sum(not r.holds for r in report.rows) == (2 if row == 0 else 1)


def test_failed_premise_marks_the_control_row_not_tested():
    report = paper.check_claims(_fake(wachter_own=0.5))
    assert report.rows[3].verdict == "not tested: premise failed"


def test_wachter_validity_is_printed_but_not_counted():
    report = paper.check_claims(_fake(wachter=0.6))
    assert report.all_hold and "Wachter's validity 0.60" in str(report)
    assert not any("Wachter +" in r.criterion for r in report.rows)


def test_broken_abduction_violates_the_invariant():
    report = paper.check_claims(_fake(abduction_error=0.3))
    assert not report.invariants[0].holds
