"""iac against independent computations (loops, brute-force sampling, finite differences)."""

import dataclasses

import numpy as np
import pytest

from companion.errors import CompanionError
from companion.papers import iac as paper


def _toy(seed=0, S=5, A=3):
    rng = np.random.default_rng(seed)
    n = 400
    states = rng.integers(S, size=n)
    actions = rng.integers(A - 1, size=n)  # action A-1 never taken
    return rng, states, actions


def test_empirical_behaviour_counts_like_a_loop():
    _, s, a = _toy()
    mu_hat = paper.empirical_behaviour(s, a, 5, 3)
    for state in range(5):
        rows = a[s == state]
        for action in range(3):
            assert mu_hat[state, action] == pytest.approx(np.mean(rows == action))
    assert (mu_hat[:, 2] == 0).all()


def test_sir_weights_and_in_support_by_hand():
    rng, s, a = _toy(1)
    mu_hat = paper.empirical_behaviour(s, a, 5, 3)
    pi = paper.softmax(rng.normal(size=(5, 3)))
    w = paper.sir_weights(pi, mu_hat, s, a)
    for i in range(20):
        restricted = pi[s[i], :2] / pi[s[i], :2].sum()
        assert w[i] == pytest.approx(restricted[a[i]] / mu_hat[s[i], a[i]])
    # the resampled next action at a state follows π restricted to the data's actions
    idx = paper.sir_sample(w, 200_000, np.random.default_rng(0))
    at0 = idx[s[idx] == 0]
    freq = np.bincount(a[at0], minlength=3) / len(at0)
    np.testing.assert_allclose(freq[:2], pi[0, :2] / pi[0, :2].sum(), atol=0.01)
    assert freq[2] == 0


def test_sir_sample_draws_proportionally_to_weights():
    w = np.array([1.0, 3.0, 0.0, 6.0])
    idx = paper.sir_sample(w, 100_000, np.random.default_rng(2))
    np.testing.assert_allclose(np.bincount(idx, minlength=4) / 1e5, w / w.sum(), atol=0.01)


def test_naive_target_draws_next_actions_from_pi_and_others_use_the_data():
    pi = np.array([[0.2, 0.5, 0.3]])
    q_bar = np.array([[1.0, 2.0, 3.0]])
    n = 100_000
    zeros = np.zeros(n, dtype=int)
    y = paper.td_targets(
        "naive", q_bar, pi, np.zeros(n), zeros, zeros, 1.0, np.random.default_rng(0)
    )
    assert y.mean() == pytest.approx(pi[0] @ q_bar[0], abs=0.02)
    y = paper.td_targets("iac", q_bar, pi, np.ones(3), np.zeros(3, int), np.arange(3), 0.5, None)
    np.testing.assert_allclose(y, 1 + 0.5 * q_bar[0])
    with pytest.raises(CompanionError, match="critic"):
        paper.td_targets("dqn", q_bar, pi, np.ones(3), zeros[:3], zeros[:3], 0.5, None)


def test_critic_step_is_a_per_pair_mean_td_step():
    rng = np.random.default_rng(3)
    q = rng.normal(size=(3, 2))
    s, a = rng.integers(3, size=30), rng.integers(2, size=30)
    y, c = rng.normal(size=30), rng.random(30)
    new = paper.critic_step(q, s, a, y, c, 0.4)
    expect = q.copy()
    for state in range(3):
        for action in range(2):
            m = (s == state) & (a == action)
            if m.any():
                expect[state, action] += 0.4 * np.mean(c[m] * (y[m] - q[state, action]))
    np.testing.assert_allclose(new, expect)


def test_actor_step_follows_the_gradient_of_the_awr_loss():
    rng = np.random.default_rng(4)
    S, A = 3, 4
    logits, q = rng.normal(size=(S, A)), rng.normal(size=(S, A))
    mu_hat = paper.softmax(rng.normal(size=(S, A)))
    s, a = rng.integers(S, size=16), rng.integers(A, size=16)
    beta, umax = 0.5, 20.0

    def loss(th):
        pi = paper.softmax(th)
        adv = q[s, a] - (mu_hat * q).sum(1)[s]
        u = np.minimum(np.exp(adv / beta), umax)
        return -np.mean(u * np.log(pi[s, a]))

    grad = np.zeros_like(logits)
    eps = 1e-6
    for i in range(S):
        for j in range(A):
            d = np.zeros_like(logits)
            d[i, j] = eps
            grad[i, j] = (loss(logits + d) - loss(logits - d)) / (2 * eps)
    lr = 0.1
    new = paper.actor_step(logits, q, mu_hat, s, a, beta, umax, lr)
    np.testing.assert_allclose(new, logits - lr * S * grad, atol=1e-7)


def test_update_variances_match_a_loop_per_pair():
    rng = np.random.default_rng(5)
    pair = rng.integers(4, size=200)
    delta, w = rng.normal(size=200), rng.random(200) * 3
    var_is, var_sir = paper.update_variances(delta, w, pair, 4)
    vis, vsir, freq = [], [], []
    for p in range(4):
        m = pair == p
        vis.append(np.var(w[m] * delta[m]))
        pw = w[m] / w[m].sum()
        mean = pw @ delta[m]
        vsir.append(pw @ (delta[m] - mean) ** 2)
        freq.append(m.mean())
    assert var_is == pytest.approx(np.dot(freq, vis))
    assert var_sir == pytest.approx(np.dot(freq, vsir))


def test_iac_with_a_fixed_policy_reaches_the_resampled_fixed_point():
    """Policy evaluation only (actor frozen): the SIR critic reaches the fixed point of the
    resampled Bellman operator, Q(s,a) = Σ_i w_i (r_i + γ Q(s'_i, a'_i)) / Σ_i w_i over the
    dataset's rows at (s, a), found here by value iteration over the rows; the naive critic
    sits above it (it bootstraps from Q̄ = 0 at actions the data never took)."""
    cfg = paper.PRESETS["smoke"].replace(
        n_episodes=300, steps=3000, actor_lr=0.0, critic_lr=0.1, tau=0.2
    )
    prob = paper.make_problem(cfg)
    d = prob.data
    S, A = cfg.n_states, cfg.n_actions
    v = prob.valid
    s, a, r = d.observations[v], d.actions[v], d.rewards[v]
    s2, a2 = d.next_observations[v], prob.next_actions[v]
    pi = paper.softmax(np.zeros((S, A)))
    w = paper.sir_weights(pi, prob.mu_hat, s2, a2)
    q = np.zeros((S, A))
    den = np.zeros((S, A))
    np.add.at(den, (s, a), w)
    for _ in range(300):  # a contraction with modulus γ: 300 sweeps are exact to 1e-13
        num = np.zeros((S, A))
        np.add.at(num, (s, a), w * (r + cfg.gamma * q[s2, a2]))
        q = np.divide(num, den, out=np.zeros_like(q), where=den > 0)
    seen = np.argwhere(np.bincount(s * A + a, minlength=S * A).reshape(S, A) > 0)
    est = np.array(paper.train_arm(cfg, "iac", prob).pairs)[:, 1]
    err = est - q[seen[:, 0], seen[:, 1]]  # the critic's last table: SGD noise of lr 0.1 remains
    assert np.abs(err).mean() < 0.06 and np.abs(err).max() < 0.2
    naive = np.array(paper.train_arm(cfg, "naive", prob).pairs)[:, 1]
    assert np.mean(naive - est) > 0.3


def test_presets_and_config_errors():
    assert set(paper.PRESETS) >= {"smoke", "notebook", "full"}
    for cfg in paper.PRESETS.values():
        cfg.validate()
    with pytest.raises(CompanionError, match="dqn"):
        paper.IACConfig(critics=("naive", "iac", "dqn"))
    with pytest.raises(CompanionError, match="naive"):
        paper.IACConfig(critics=("iac", "sarsa"))
    with pytest.raises(CompanionError, match="n_unseen"):
        paper.IACConfig(n_unseen=4)
    with pytest.raises(CompanionError, match="gamma"):
        paper.IACConfig(gamma=1.0)
    with pytest.raises(CompanionError, match="td3"):
        paper.IACConfig(pend_critics=("naive", "iac", "td3"))
    with pytest.raises(CompanionError, match="pend_pi_std"):
        paper.IACConfig(pend_pi_std=0.0)


def test_smoke_run_round_trips_and_data_has_provenance():
    cfg = paper.PRESETS["smoke"]
    result = paper.run(cfg)
    again = paper.IACResult.from_dict(result.to_dict())
    assert again.to_dict() == result.to_dict()
    assert set(result.arms) == set(paper.CRITICS)
    prob = paper.make_problem(cfg)
    assert prob.data.provenance["seed"] == cfg.seed
    assert len(prob.data.episode_bounds()) == cfg.n_episodes
    assert (prob.mu_hat == 0).sum() >= cfg.n_states * cfg.n_unseen
    report = paper.check_claims(result)
    assert len(report.rows) == 11
    assert result.continuous.dataset_size == cfg.pend_episodes * cfg.pend_horizon


def _fake(**changes):
    def arm(name, bias, rmse, ret, ratio=2.0, unseen=0.01):
        return paper.ArmResult(
            critic=name,
            steps=[0],
            bias=[bias],
            rmse=[rmse],
            ret=[ret],
            unseen_mass=[unseen],
            ess=[0.5],
            var_is=[ratio],
            var_sir=[1.0],
            final_bias=bias,
            final_rmse=rmse,
            final_return=ret,
            final_var_ratio=ratio,
            pairs=[[0.0, 0.0]],
            seconds=0.0,
        )

    arms = {
        "naive": arm("naive", 0.5, 0.5, -3.2),
        "iac": arm("iac", 0.02, 0.05, -3.0),
        "sarsa": arm("sarsa", -1.5, 1.5, -3.0),
        "is_sarsa": arm("is_sarsa", 0.02, 0.06, -3.0),
    }
    for key, value in changes.items():
        if key.startswith("pend__"):
            continue
        name, field = key.split("__")
        arms[name] = dataclasses.replace(arms[name], **{field: value})
    cont = paper.ContinuousResult(
        source="{}",
        dataset_size=100,
        mu_std_hat=1.0,
        ess=0.2,
        max_weight_share=0.01,
        mc_q=[-50.0],
        mc_se=0.1,
        behaviour_q=[-48.0],
        steps=[0],
        bias={"naive": [5.0], "iac": [0.5], "sarsa": [2.0]},
        final_q={"naive": [-45.0], "iac": [-49.5], "sarsa": [-48.0]},
        final_bias={"naive": 5.0, "iac": 0.5, "sarsa": 2.0},
        final_rmse={"naive": 6.0, "iac": 1.0, "sarsa": 3.0},
        seconds={"naive": 0.0, "iac": 0.0, "sarsa": 0.0},
    )
    for key, value in changes.items():
        if key.startswith("pend__"):
            field, critic = key.split("__")[1:]
            getattr(cont, field)[critic] = value
    return paper.IACResult(
        config={},
        behaviour_return=-5.0,
        optimal_return=-2.0,
        unseen_pairs=12,
        dataset_size=100,
        arms=arms,
        continuous=cont,
        value_gap=1.5,
    )


def test_claims_on_fake_results_every_row_can_fail():
    assert paper.check_claims(_fake()).all_hold
    rows = paper.check_claims(_fake(naive__final_bias=0.05)).rows
    assert not rows[0].holds and rows[1].verdict.startswith("not tested") and not rows[5].holds
    assert not paper.check_claims(_fake(iac__final_rmse=0.3)).rows[1].holds
    assert not paper.check_claims(_fake(sarsa__final_rmse=0.08)).rows[3].holds
    assert not paper.check_claims(_fake(iac__final_var_ratio=1.1)).rows[4].holds
    assert not paper.check_claims(_fake(iac__final_return=-3.19)).rows[5].holds
    rows = paper.check_claims(_fake(pend__final_bias__naive=1.0)).rows
    assert not rows[6].holds and rows[8].verdict.startswith("not tested")
    assert not paper.check_claims(_fake(pend__final_bias__iac=3.0)).rows[8].holds
    assert not paper.check_claims(_fake(pend__final_rmse__sarsa=0.9)).rows[10].holds
    # too little overlap: the premise fails and both Pendulum IAC rows are not tested
    low = _fake()
    low.continuous.ess = 0.01
    rows = paper.check_claims(low).rows
    assert not rows[7].holds
    assert rows[8].verdict.startswith("not tested") and rows[10].verdict.startswith("not tested")
    # Q^π ≈ Q^μ (|difference| 1 < 2): SARSA is right by accident, the control is not tested
    close = _fake()
    close.continuous.behaviour_q = [-49.0]
    rows = paper.check_claims(close).rows
    assert not rows[9].holds and rows[10].verdict.startswith("not tested") and rows[8].holds
    # finite MDP: Q^π ≈ Q^μ, the SARSA control is not tested
    flat = _fake()
    flat.value_gap = 0.05
    rows = paper.check_claims(flat).rows
    assert not rows[2].holds and rows[3].verdict.startswith("not tested") and rows[1].holds
    # the note reports the critics' errors at SIR-weighted pairs beside the uniform ones
    weighted = _fake()
    weighted.continuous.sir_rmse = {"naive": 7.0, "iac": 2.0}
    assert "SIR-weighted pairs 2.000" in paper.check_claims(weighted).note


def test_gaussian_log_density_matches_scipy():
    from scipy.stats import norm

    rng = np.random.default_rng(0)
    a, m, sd = rng.normal(size=50), rng.normal(size=50), 0.3 + rng.random(50)
    np.testing.assert_allclose(
        paper.gaussian_log_density(a, m, sd), norm.logpdf(a, m, sd), rtol=1e-12
    )


def test_behaviour_fit_recovers_a_known_gaussian_and_weights_match_scipy():
    from scipy.stats import norm

    rng = np.random.default_rng(1)
    th = rng.uniform(-np.pi, np.pi, 20_000)
    obs = np.column_stack([np.cos(th), np.sin(th), rng.uniform(-3, 3, len(th))])
    actions = -0.5 * obs[:, 1] - 0.2 * obs[:, 2] + 0.1 + 1.5 * rng.standard_normal(len(th))
    beta, sd = paper.fit_behaviour(obs, actions)
    np.testing.assert_allclose(beta, [0.0, -0.5, -0.2, 0.1], atol=0.04)
    assert sd == pytest.approx(1.5, rel=0.02)
    w = paper.continuous_sir_weights(obs[:5], actions[:5], (0.0, 0.6), 0.6, beta, sd)
    mean_mu = np.column_stack([obs[:5], np.ones(5)]) @ beta
    by_hand = norm.pdf(actions[:5], 0.6 * obs[:5, 2], 0.6) / norm.pdf(actions[:5], mean_mu, sd)
    np.testing.assert_allclose(w, by_hand, rtol=1e-9)


def test_sir_resampling_turns_behaviour_actions_into_target_actions():
    # a' ~ μ = N(0, 1.5²), resampled with w = π/μ, must follow π = N(0.5, 0.6²)
    rng = np.random.default_rng(3)
    a = 1.5 * rng.standard_normal(200_000)
    obs = np.column_stack([np.ones_like(a), np.zeros_like(a), np.ones_like(a)])  # θ̇ = 1
    w = paper.continuous_sir_weights(obs, a, (0.0, 0.5), 0.6, np.zeros(4), 1.5)
    drawn = a[paper.sir_sample(w, 100_000, rng)]
    assert drawn.mean() == pytest.approx(0.5, abs=0.02)
    assert drawn.std() == pytest.approx(0.6, abs=0.02)
    assert np.mean(drawn < 0.5) == pytest.approx(0.5, abs=0.01)


def test_pendulum_step_matches_gymnasium():
    import gymnasium as gym

    env = gym.make("Pendulum-v1").unwrapped
    env.reset(seed=0)
    rng = np.random.default_rng(4)
    for _ in range(50):
        th, dot, u = rng.uniform(-7, 7), rng.uniform(-8, 8), rng.uniform(-3, 3)
        env.state = np.array([th, dot])
        obs, r, *_ = env.step(np.array([u], dtype=np.float32))
        th2, dot2, r2 = paper.pendulum_step(np.array([th]), np.array([dot]), np.float32(u))
        np.testing.assert_allclose([np.cos(th2[0]), np.sin(th2[0]), dot2[0]], obs, atol=1e-5)
        assert r2[0] == pytest.approx(r, abs=1e-4)


def test_monte_carlo_q_matches_a_gymnasium_loop_for_a_deterministic_policy():
    import gymnasium as gym

    cfg = paper.PRESETS["smoke"].replace(
        pend_pi_std=1e-9, pend_eval_rollouts=1, pend_eval_horizon=30
    )
    env = gym.make("Pendulum-v1").unwrapped
    obs0, _ = env.reset(seed=5)
    a0 = np.float32(0.7)
    mc = paper.monte_carlo_q(
        cfg, obs0[None].astype(np.float32), np.array([a0]), np.random.default_rng(0)
    )
    obs, total = env.step(np.array([a0]))[:2]
    for t in range(1, 31):
        act = paper.policy_mean(obs, cfg.pend_pi_gains)
        obs, r = env.step(np.array([act], dtype=np.float32))[:2]
        total += cfg.pend_gamma**t * r
    assert mc[0] == pytest.approx(total, abs=1e-2)


def test_continuous_part_reads_a_d4rl_fixture(tmp_path):
    from companion.data.offline_rl import load_d4rl, save_d4rl

    cfg = paper.PRESETS["smoke"].replace(pend_episodes=4, pend_horizon=10)
    data = paper.collect(cfg, seed=3)
    path = save_d4rl(tmp_path / "pendulum.npz", data)
    back = load_d4rl(path)
    np.testing.assert_array_equal(back.actions, data.actions)
    assert back.provenance["seed"] == 3 and len(back.episode_bounds()) == 4
    cont = paper.run_continuous(
        cfg.replace(pend_data=str(path), pend_steps=10, pend_eval_states=8, pend_measure_every=5)
    )
    assert cont.dataset_size == 40 and '"seed": 3' in cont.source
    assert set(cont.final_q) == set(paper.CONTINUOUS_CRITICS) and len(cont.mc_q) == 8


def test_plots_draw_from_a_result():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    result = paper.run(paper.PRESETS["smoke"].replace(steps=50))
    figs = paper.figures(result)
    assert set(figs) == {"evaluation", "returns", "pendulum"}
    fig = plt.figure()
    paper.plot_critic(fig, result, "naive")
    assert len(fig.axes) == 2
    plt.close("all")
