"""fullbatch_gd_generalization: the method against independent computations, the presets, the
claims on a small run."""

import numpy as np
import pytest

from companion.errors import CompanionError
from companion.papers import fullbatch_gd_generalization as paper
from companion.papers.fullbatch_gd_generalization.method import TANH_CURVATURE, Problem


def test_tanh_curvature_is_the_sup_of_tanh_second_derivative():
    u = np.linspace(-5, 5, 200001)
    t = np.tanh(u)
    assert np.max(np.abs(-2 * t * (1 - t * t))) == pytest.approx(TANH_CURVATURE, rel=1e-8)


@pytest.mark.parametrize("kind", ["linear", "tanh"])
def test_gradient_matches_finite_differences(kind):
    rng = np.random.default_rng(0)
    problem = Problem(kind, 5, 0.5)
    x, y = problem.sample(rng, (7,), rng.standard_normal(5))
    w = rng.standard_normal(5)
    g = problem.grad(x, y, w)
    h = 1e-6
    fd = [
        (problem.losses(x, y, w + h * e).mean() - problem.losses(x, y, w - h * e).mean()) / (2 * h)
        for e in np.eye(5)
    ]
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-8)
    # per-point gradient norms against a loop
    for i in range(7):
        gi = problem.grad(x[i : i + 1], y[i : i + 1], w)
        assert problem.grad_norm(x, y, w)[i] == pytest.approx(np.linalg.norm(gi))


@pytest.mark.parametrize("kind", ["linear", "tanh"])
def test_smoothness_constant_bounds_the_hessian(kind):
    """β bounds ‖∇²f(w, z)‖ at random w and z (second differences along random directions)."""
    rng = np.random.default_rng(1)
    problem = Problem(kind, 4, 0.5)
    x, y = problem.sample(rng, (200,), 2 * rng.standard_normal(4))
    worst = 0.0
    for _ in range(200):
        w, v = 3 * rng.standard_normal(4), rng.standard_normal(4)
        v /= np.linalg.norm(v)
        h = 1e-3

        def f(a, w=w, v=v):
            return problem.losses(x, y, w + a * v)

        worst = max(worst, np.max(np.abs(f(h) - 2 * f(0) + f(-h)) / h**2))
    assert worst <= problem.beta + 1e-4


def test_linear_population_risk_matches_monte_carlo():
    rng = np.random.default_rng(2)
    problem = Problem("linear", 6, 0.7)
    w_star, w = rng.standard_normal(6), rng.standard_normal(6)
    x, y = problem.sample(rng, (400_000,), w_star)
    mc = problem.losses(x, y, w).mean()
    assert problem.population_risk(w, w_star) == pytest.approx(mc, rel=5e-3)


def test_tanh_population_risk_integrates_the_noise():
    rng = np.random.default_rng(3)
    problem = Problem("tanh", 4, 0.6)
    w_star, w = rng.standard_normal(4), rng.standard_normal(4)
    pool = problem.sample_x(rng, (50,))
    # brute force: each pool point with many noise draws
    xi = rng.uniform(-1, 1, (50, 20_000)) * 0.6
    y = np.tanh(pool @ w_star)[:, None] + xi
    brute = 0.5 * np.mean((np.tanh(pool @ w)[:, None] - y) ** 2)
    assert problem.population_risk(w, w_star, pool) == pytest.approx(brute, rel=3e-3)


def test_stability_weights_against_a_loop():
    etas = np.array([0.5, 0.3, 0.2, 0.1])
    n, gamma = 10, 2.0
    c = paper.stability_weights(etas, n, gamma, 4)
    for t in range(4):
        prod = 1.0
        for s in range(t + 1, 4):
            prod *= 1 + etas[s] * gamma
        assert c[t] == pytest.approx(etas[t] / n * prod)
    # decreasing steps η_t = 1/(β(t+1)) with γ = β: the closed form (T+1)/(nβ(t+1)(t+2))
    beta, T = 3.0, 6
    e = paper.step_sizes(0.0, T, True, beta)
    c = paper.stability_weights(e, n, beta, T)
    t = np.arange(T)
    np.testing.assert_allclose(c, (T + 1) / (n * beta * (t + 1) * (t + 2)))


def test_stability_bound_dominates_the_measured_distance_per_run():
    """Bound 2 per training set (with that set's own f(w_t, z_1), f(w_t, z'_1)) holds in exact
    arithmetic: check the recursion on tiny GD runs, convex and nonconvex."""
    rng = np.random.default_rng(4)
    for kind, decreasing in (("linear", False), ("tanh", True)):
        problem = Problem(kind, 3, 0.5)
        n, T = 6, 12
        w_star = rng.standard_normal(3)
        x, y = problem.sample(rng, (n,), w_star)
        x1, y1 = problem.sample(rng, (1,), w_star)
        xp, yp = x.copy(), y.copy()
        xp[:1], yp[:1] = x1, y1
        beta = problem.beta
        etas = paper.step_sizes(1.0 / beta, T, decreasing, beta)
        gamma = 0.0 if problem.convex else beta
        w, wp, gs = np.zeros(3), np.zeros(3), []
        for eta in etas:
            gs.append(
                np.sqrt(2 * beta)
                * (
                    np.sqrt(problem.losses(x[:1], y[:1], w)[0])
                    + np.sqrt(problem.losses(x1, y1, w)[0])
                )
            )
            w = paper.gd_step(problem, x, y, w, eta)
            wp = paper.gd_step(problem, xp, yp, wp, eta)
        c = paper.stability_weights(etas, n, gamma, T)
        assert np.linalg.norm(w - wp) <= np.sum(c * np.array(gs)) + 1e-12


def test_generalization_bound_formula_and_lipschitz_bound():
    assert paper.generalization_bound(2.0, 0.5, 0.04) == pytest.approx(np.sqrt(0.08) + 0.04)
    # the control: ε_stab ≤ (2L Σ c_t)² with c_t = η/n (convex), fed to the same Bound 1
    etas, train = np.full(5, 0.5), np.linspace(0.5, 0.1, 6)
    lb = paper.lipschitz_bound(etas, 10, 2.0, 0.0, 3.0, train)
    eps = (2 * 3.0 * 0.5 * np.arange(1, 6) / 10) ** 2
    np.testing.assert_allclose(lb, np.sqrt(2 * 2.0 * train[1:] * eps) + eps)


def test_control_differs_only_in_the_path_gradients():
    """With L equal to the gradient bound the path gives (√(2β) times the largest √f), the
    control equals the path-dependent bound: only the path's losses are replaced."""
    etas, n, beta = np.full(6, 0.7), 20, 1.0
    risk = np.full(6, 0.3)
    sb = paper.stability_bound(etas, n, beta, 0.0, risk, risk)
    # g_t ≤ √(2β)(√f_i + √f'_i); with every f = 0.3 the weighted Cauchy–Schwarz is tight,
    # and 2L = 2√(2β·0.3) gives the same ε_stab
    L = np.sqrt(2 * beta * 0.3)
    train = np.append(0.3, risk)
    np.testing.assert_allclose(
        paper.lipschitz_bound(etas, n, beta, 0.0, L, train),
        paper.generalization_bound(beta, train[1:], sb),
    )


def test_generalization_bound_holds_on_an_exact_expectation():
    """Bound 1 against the exact generalization error of a tiny symmetric algorithm: GD on a
    distribution with four points, every training set of n = 2 enumerated (brute force)."""
    problem = Problem("linear", 2, 0.0)
    pts = np.array([[1, 0], [0, 1], [0.6, 0.8], [-0.8, 0.6]], float)
    ys = np.array([1.0, -0.5, 0.3, 2.0])

    def algo(idx):
        w = np.zeros(2)
        for _ in range(5):
            w = paper.gd_step(problem, pts[list(idx)], ys[list(idx)], w, 1.0)
        return w

    sets = [(a, b) for a in range(4) for b in range(4)]
    loss = lambda w, i: 0.5 * (pts[i] @ w - ys[i]) ** 2  # noqa: E731
    gen = np.mean(
        [
            np.mean([loss(algo(s), i) for i in range(4)]) - np.mean([loss(algo(s), i) for i in s])
            for s in sets
        ]
    )
    train = np.mean([np.mean([loss(algo(s), i) for i in s]) for s in sets])
    stab = np.mean([np.sum((algo(s) - algo((k,) + s[1:])) ** 2) for s in sets for k in range(4)])
    assert abs(gen) <= paper.generalization_bound(1.0, train, stab) + 1e-12
    assert gen > 0


def test_loglog_slope():
    n = np.array([10, 20, 40, 80])
    assert paper.loglog_slope(n, 3.0 / n) == pytest.approx(-1.0)


def test_presets_and_validation():
    assert set(paper.PRESETS) >= {"smoke", "notebook", "full"}
    cfg = paper.PRESETS["notebook"]
    assert cfg.eta <= 1.0 and cfg.precision == "32-true"
    with pytest.raises(CompanionError):
        cfg.replace(eta=1.5)
    with pytest.raises(CompanionError):
        cfg.replace(arms=("sgd_linear",))
    with pytest.raises(CompanionError):
        cfg.replace(t_fit=(1, 1000))


def test_run_is_reproducible_and_claims_hold_on_smoke(tmp_path):
    cfg = paper.PRESETS["smoke"]
    a = paper.run(cfg, out_dir=tmp_path)
    b = paper.run(cfg)
    assert a.curves["gd_linear/50"].gap == b.curves["gd_linear/50"].gap
    loaded = paper.FullBatchResult.load(tmp_path / "result.json")
    assert loaded.curve("gd_tanh", 100).bound == a.curve("gd_tanh", 100).bound
    report = paper.check_claims(a)
    assert len(report.rows) == 7 and all(inv.holds for inv in report.invariants)
    assert report.rows[0].holds  # the premise: gaps are measurable
    figs = paper.figures(a)
    assert set(figs) == {"bounds", "scaling", "gd_vs_sgd"}


def test_claims_can_fail():
    """A result whose gaps are inflated above its bounds fails the bound rows."""
    r = paper.run(paper.PRESETS["smoke"].replace(arms=("gd_linear",)))
    for c in r.curves.values():
        c.gap = [10 * b for b in c.bound]
        c.gap_se = [0.0] * len(c.gap)
    rows = {row.claim: row.holds for row in paper.check_claims(r).rows}
    assert not rows["the gap stays under the path-dependent bound where non-vacuous (convex)"]


def test_vacuous_points_are_not_counted():
    """Bounds above E R everywhere leave nothing to test: the bound rows are 'not tested'."""
    r = paper.run(paper.PRESETS["smoke"].replace(arms=("gd_linear",)))
    for c in r.curves.values():
        c.bound = [2 * p + 1.0 for p in c.population]
    row = next(x for x in paper.check_claims(r).rows if "non-vacuous (convex)" in x.claim)
    assert not row.premise_ok and not row.holds
