"""multivariate_diffusion against independent computations (closed forms, RK4, brute force)."""

import math

import pytest
import torch

from companion.errors import CompanionError
from companion.papers import multivariate_diffusion as paper
from companion.papers.multivariate_diffusion.claims import check_claims


def test_vpsde_kernel_equals_the_analytic_vp_kernel():
    dif = paper.make_diffusion("vpsde")
    s = torch.tensor([1e-3, 0.1, 0.5, 1.0], dtype=torch.float64)
    M, Sigma = dif.transition(s)
    B = paper.int_beta_fn(s, 0.1, 10.0)
    torch.testing.assert_close(M[:, 0, 0], torch.exp(-0.5 * B), atol=1e-10, rtol=0)
    torch.testing.assert_close(Sigma[:, 0, 0], 1 - torch.exp(-B), atol=1e-10, rtol=0)


@pytest.mark.parametrize("spec", ["vpsde", "cld", "learned"])
def test_kernel_matches_rk4_on_the_moment_odes(spec):
    torch.manual_seed(0)
    dif = paper.make_diffusion(spec)
    for s_end in (0.05, 0.7):
        M, Sigma = dif.transition(torch.tensor([s_end], dtype=torch.float64))
        M2, S2 = paper.moments_by_ode(dif, s_end, steps=400)
        torch.testing.assert_close(M[0], M2, atol=1e-8, rtol=0)
        torch.testing.assert_close(Sigma[0], S2, atol=1e-8, rtol=0)


def test_kernel_matches_a_brute_force_simulation_of_the_sde():
    """Euler–Maruyama paths of the CLD SDE from y₀ = (1, v₀), v₀ ~ N(0, init_aux_var)."""
    torch.manual_seed(1)
    dif = paper.make_diffusion("cld")
    n, steps, s_end = 200_000, 400, 0.6
    A, D = dif.A(), dif.D()
    y = torch.zeros(n, 2, dtype=torch.float64)
    y[:, 0] = 1.0
    y[:, 1] = math.sqrt(dif.init_aux_var) * torch.randn(n, dtype=torch.float64)
    h = s_end / steps
    sqrt2D = torch.sqrt(2 * D)
    for i in range(steps):
        b = float(paper.beta_fn(torch.tensor((i + 0.5) * h), 0.1, 10.0))
        y = (
            y
            + h * b * y @ A.T
            + math.sqrt(h * b) * torch.randn(n, 2, dtype=torch.float64) @ sqrt2D.T
        )
    M, Sigma = dif.transition(torch.tensor([s_end], dtype=torch.float64))
    torch.testing.assert_close(y.mean(0), M[0, :, 0], atol=0.01, rtol=0)
    torch.testing.assert_close(torch.cov(y.T), Sigma[0], atol=0.01, rtol=0)


def test_stationary_distribution_is_standard_normal_for_random_q_d():
    torch.manual_seed(2)
    for K in (2, 3):
        dif = paper.make_diffusion("learned", K=K, beta0=5.0, beta1=20.0)
        M, Sigma = dif.transition(torch.tensor([1.0], dtype=torch.float64))
        assert M.abs().max() < 1e-2
        torch.testing.assert_close(Sigma[0], torch.eye(K, dtype=torch.float64), atol=1e-2, rtol=0)


def test_learned_q_is_skew_and_d_is_positive():
    torch.manual_seed(3)
    dif = paper.make_diffusion("learned", K=3)
    Q, D = dif.Q(), dif.D()
    torch.testing.assert_close(Q, -Q.T)
    assert (torch.linalg.eigvalsh(D) > 0).all()


def test_vp_importance_sampling_inverts_the_official_cumulative_weight():
    """The closed-form inverse against ``VPImpSamp.likelihood_importance_cum_weight`` of the
    official mdm/utils/importance_sampling.py (its bisection target), and 1/r as weights."""
    b0, b1, t_min, T = 0.1, 10.0, 1e-3, 1.0

    def cum_weight(t, eps):  # the official formula, transcribed
        t, eps = torch.as_tensor(t, dtype=torch.float64), torch.as_tensor(eps, dtype=torch.float64)
        e1 = 0.5 * eps * (eps - 2) * b0 - 0.5 * eps**2 * b1
        e2 = 0.5 * t * (t - 2) * b0 - 0.5 * t**2 * b1
        t1 = torch.where(e1.abs() <= 1e-3, -e1, 1.0 - torch.exp(e1))
        t2 = torch.where(e2.abs() <= 1e-3, -e2, 1.0 - torch.exp(e2))
        return 0.5 * (
            -2 * torch.log(t1)
            + 2 * torch.log(t2)
            + b0 * (-2 * eps + eps**2 - (t - 2) * t)
            + b1 * (-(eps**2) + t**2)
        )

    torch.manual_seed(0)
    s, w = paper.sample_time(50_000, t_min, T, "vp", b0, b1)
    torch.manual_seed(0)
    u = torch.rand(50_000, dtype=torch.float64)
    # the official Taylor branch (|B| ≤ 1e-3 near t_min) differs from the exact formula by ~1e-4
    torch.testing.assert_close(cum_weight(s, t_min) / cum_weight(T, t_min), u, atol=1e-4, rtol=0)
    assert s.min() >= t_min and s.max() <= T
    # importance weights: E[w f(s)] = ∫ f over [t_min, T]
    assert abs(w.mean().item() - (T - t_min)) < 0.02
    assert abs((w * s).mean().item() - (T**2 - t_min**2) / 2) < 0.02


def test_small_cholesky_equals_the_library():
    torch.manual_seed(4)
    X = torch.randn(10, 3, 3, dtype=torch.float64)
    S = X @ X.transpose(1, 2) + 0.1 * torch.eye(3, dtype=torch.float64)
    from companion.papers.multivariate_diffusion.method import small_cholesky

    torch.testing.assert_close(small_cholesky(S), torch.linalg.cholesky(S))


@pytest.mark.parametrize("spec", ["vpsde", "learned"])
def test_elbo_estimator_matches_the_gaussian_closed_form(spec):
    """Exact score, Gaussian data: the DSM estimate is unbiased for
    −H(q_tmin) − KL(q_T‖π) + H(v₀)."""
    torch.manual_seed(5)
    var = torch.tensor([0.5, 2.0])
    dif = paper.make_diffusion(spec)
    x = torch.randn(40_000, 2) * var.sqrt()
    e = paper.elbo(dif, paper.exact_gaussian_eps_model(dif, var), x)
    se = e.std().item() / math.sqrt(len(e))
    closed = paper.gaussian_elbo_closed_form(dif, var)
    assert abs(e.mean().item() - closed) < 4 * se


def test_closed_form_of_vp_at_tiny_time_is_the_data_log_likelihood():
    """Independent check of the closed form: for the VPSDE, −H(q_tmin) → the data's Gaussian
    log-likelihood and KL(q_T‖π) is the KL of N(0, e^{−B}σ² + 1 − e^{−B}) to N(0, 1)."""
    var = torch.tensor([0.5, 2.0], dtype=torch.float64)
    dif = paper.make_diffusion("vpsde")
    B0 = paper.int_beta_fn(torch.tensor(1e-3, dtype=torch.float64), 0.1, 10.0)
    BT = paper.int_beta_fn(torch.tensor(1.0, dtype=torch.float64), 0.1, 10.0)
    expected = 0.0
    for v in var:
        p0 = torch.exp(-B0) * v + 1 - torch.exp(-B0)
        pT = torch.exp(-BT) * v + 1 - torch.exp(-BT)
        expected += -0.5 * math.log(2 * math.pi * math.e * p0) - 0.5 * (pT - 1 - torch.log(pT))
    assert paper.gaussian_elbo_closed_form(dif, var.float()) == pytest.approx(
        float(expected), abs=1e-9
    )


def test_bits_per_dim():
    assert paper.bits_per_dim(torch.tensor([-2 * math.log(2)]), 2) == pytest.approx(1.0)


def test_presets_and_validation():
    assert set(paper.PRESETS) == {"smoke", "notebook", "medium", "full"}
    for bad, text in (
        ({"stepz": 1}, "stepz"),
        ({"dataset": "mnist"}, "mnist"),
        ({"arms": ("vpsde", "malda")}, "malda"),
        ({"importance": "cosine"}, "cosine"),
        ({"n_vars": 1}, "n_vars"),
        ({"t_min": 0.0}, "t_min"),
        ({"lr": -1.0}, "lr"),
    ):
        with pytest.raises(CompanionError, match=text):
            paper.PRESETS["smoke"].replace(**bad)


@pytest.fixture(scope="module")
def smoke_result(tmp_path_factory):
    out = tmp_path_factory.mktemp("mdm")
    return paper.run(paper.PRESETS["smoke"].replace(device="cpu"), out_dir=out), out


def test_smoke_run_round_trip_and_claims(smoke_result):
    result, out = smoke_result
    assert set(result.arms) == set(paper.PRESETS["smoke"].arms)
    loaded = paper.Result.load(out / "result.json")
    assert loaded.arms["learned"].point_bpd == result.arms["learned"].point_bpd
    assert loaded.premise == result.premise and loaded.config["steps"] == result.config["steps"]
    # the frozen control keeps its initial (Q, D); the learned arm moves from the same start
    frozen, learned = result.arms["learned_frozen"], result.arms["learned"]
    assert frozen.Q == frozen.Q_init and frozen.D == frozen.D_init
    assert learned.Q_init == frozen.Q_init and learned.Q != learned.Q_init
    report = check_claims(result)
    assert len(report.rows) == 4 and report.rows[0].claim.startswith("premise:")
    assert report.invariants[0].holds


def _with(result, **bpd):
    import copy

    r = copy.deepcopy(result)
    g = torch.Generator().manual_seed(0)
    noise = (0.1 * torch.randn(len(r.arms["vpsde"].point_bpd), generator=g)).tolist()
    for k, v in bpd.items():
        r.arms[k].point_bpd = [v + e for e in noise]  # paired: the same point-to-point spread
        r.arms[k].test_bpd, r.arms[k].test_bpd_se = v, 0.01
    return r


def test_every_row_can_fail(smoke_result):
    result, _ = smoke_result
    good = _with(result, vpsde=2.0, cld=2.0, learned=1.5, learned_frozen=2.0)
    good.premise = {k: [-3.0, 0.1, -3.0] for k in good.premise}
    assert [r.holds for r in check_claims(good).rows] == [True] * 4
    bad = _with(good, learned=2.5)
    assert [r.holds for r in check_claims(bad).rows] == [True, False, False, False]
    tie = _with(good, learned=2.0)  # a tie matches the fixed arms but does not beat the control
    assert [r.holds for r in check_claims(tie).rows] == [True, True, True, False]
    broken = _with(good)
    broken.premise["cld"] = [-3.0, 0.1, -2.0]  # estimator 10 SE off its closed form
    rows = check_claims(broken).rows
    assert not rows[0].holds and all(r.verdict == "not tested: premise failed" for r in rows[1:])
