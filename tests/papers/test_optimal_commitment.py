"""optimal_commitment against independent computations (closed forms, scalar loops that
transcribe the official code's semantics, brute force)."""

import math
from statistics import NormalDist

import numpy as np
import pytest

from companion.errors import CompanionError
from companion.papers import optimal_commitment as paper
from companion.papers.optimal_commitment import claims as claims_mod

TRIAL = paper.Trial()
PHI = NormalDist().cdf


def test_trial_constants_match_the_official_code():
    assert TRIAL.z_alpha == pytest.approx(1.6448536, abs=1e-6)
    assert TRIAL.reward(3) == pytest.approx(1000.0)
    assert TRIAL.reward(1) == pytest.approx(1000 * 0.5**0.1, rel=1e-6)
    assert TRIAL.cost(3) == pytest.approx(1.0)
    assert TRIAL.cost(2) == pytest.approx(0.5**-0.1, rel=1e-6)
    assert TRIAL.cost(0) == 0.0 and TRIAL.reward(0) == 0.0


def test_test_update_matches_a_running_mean_and_the_z_test():
    rng = np.random.default_rng(0)
    for shift in (0.0, 0.2):
        ys = rng.standard_normal(TRIAL.test_horizon) + shift
        n, mean, stat = np.array(0), np.array(0.0), np.array(-1, dtype=np.int8)
        for k, y in enumerate(ys):
            n, mean, stat = paper.test_update(TRIAL, n, mean, stat, np.array(y))
            if k < len(ys) - 1:
                assert stat == -1
        assert n == len(ys) and mean == pytest.approx(ys.mean())
        assert stat == int(ys.mean() * math.sqrt(len(ys)) > TRIAL.z_alpha)


def test_success_probability_closed_form_and_brute_force():
    T = TRIAL.test_horizon
    for n, ybar, mu in ((0, 0.0, 0.1), (200, 0.05, 0.0), (599, 0.2, -0.3), (300, -0.1, 0.25)):
        c = (TRIAL.z_alpha * math.sqrt(T) - ybar * n) / (T - n)
        expected = 1 - PHI((c - mu) * math.sqrt(T - n))
        got = paper.success_probability(TRIAL, n, ybar, -1, np.float32(mu))
        assert float(got) == pytest.approx(expected, abs=1e-5)
    # brute force: simulate the rest of a test many times
    rng = np.random.default_rng(1)
    n, ybar, mu = 300, 0.06, 0.08
    rest = rng.normal(mu, 1.0, size=(20000, T - n)).mean(1)
    final = (n * ybar + (T - n) * rest) / T
    mc = (final * math.sqrt(T) > TRIAL.z_alpha).mean()
    assert float(paper.success_probability(TRIAL, n, ybar, -1, np.float32(mu))) == pytest.approx(
        mc, abs=0.01
    )
    assert paper.success_probability(TRIAL, T, 0.3, 1, np.float32(-1.0)) == 1
    assert paper.success_probability(TRIAL, T, 0.0, 0, np.float32(1.0)) == 0


def test_posterior_update_is_the_conjugate_gaussian_posterior():
    rng = np.random.default_rng(2)
    count, mean = np.full((1, 2), 10.0), np.full((1, 2), 0.1)
    xs, ys = rng.integers(0, 2, 50), rng.standard_normal(50)
    for x, y in zip(xs, ys):
        count, mean = paper.posterior_update(count, mean, np.array([x]), np.array([y]))
    for i in (0, 1):
        k = (xs == i).sum()
        assert count[0, i] == 10 + k
        assert mean[0, i] == pytest.approx((10 * 0.1 + ys[xs == i].sum()) / (10 + k))


def _utility_loop(code, n, ybar, stat, m):
    """U(S) = R(S)·P − C(S)·(T − n) for one posterior sample m, written out."""
    T = TRIAL.test_horizon
    members = [i for i in (0, 1) if code >> i & 1]
    p = [TRIAL.prevalence[i] for i in members]
    mu_bar = sum(pi * m[i] for pi, i in zip(p, members)) / sum(p)
    if stat >= 0:
        prob = stat
    else:
        c = (TRIAL.z_alpha * math.sqrt(T) - ybar * n) / (T - n)
        prob = 1 - PHI((c - mu_bar) * math.sqrt(T - n))
    return 1000 * sum(p) ** 0.1 * prob - sum(p) ** -0.1 * (T - n)


def test_commitment_utility_and_best_alternative_against_loops():
    rng = np.random.default_rng(3)
    K, M = 6, 7
    z = rng.standard_normal((K, M, 2)).astype(np.float32)
    count = rng.integers(10, 300, (K, 2)).astype(float)
    pmean = rng.normal(0.1, 0.2, (K, 2))
    code = np.array([3, 3, 1, 2, 3, 3], dtype=np.int8)
    n = np.array([0, 100, 250, 599, 300, 600])
    ybar = np.array([0.0, 0.1, -0.05, 0.2, 0.02, 0.01])
    stat = np.array([-1, -1, -1, -1, -1, 0], dtype=np.int8)
    mu = paper.sample_means(count, pmean, z)
    u = paper.commitment_utility(TRIAL, code, n, ybar, stat, mu)
    alt, u_alt = paper.best_alternative(TRIAL, code, mu)
    for k in range(K):
        samples = [pmean[k] + z[k, m] / np.sqrt(count[k]) for m in range(M)]
        want = [_utility_loop(code[k], n[k], ybar[k], stat[k], s) for s in samples]
        np.testing.assert_allclose(u[k], want, rtol=1e-4, atol=1e-2)
        # brute force over the strict subsets, stopping (utility 0) first
        best, best_mean, best_u = 0, 0.0, [0.0] * M
        for a in (1, 2):
            if (code[k] & a) == a and code[k] != a:
                ua = [_utility_loop(a, 0, 0.0, -1, s) for s in samples]
                if np.mean(ua) > best_mean:
                    best, best_mean, best_u = a, np.mean(ua), ua
        assert alt[k] == best
        np.testing.assert_allclose(u_alt[k], best_u, rtol=1e-4, atol=1e-2)


def _reference_trial(policy, tau, mu, M, rng):
    """One trial, one policy, transcribing official ``_simulate`` and ``algs.py`` step by step
    with Python floats (the same random draws as ``simulate`` with one environment and arm)."""
    T, H = TRIAL.test_horizon, TRIAL.horizon
    code, n, ybar, stat = 3, 0, 0.0, -1
    cnt, pm = [10.0, 10.0], [0.1, 0.1]
    spent, steps, won, visited, concluded = 0.0, 0, 0, {3}, False
    for _ in range(H):
        u, eps = rng.random(1)[0], rng.standard_normal(1)[0]
        if code == 0:
            break
        z = rng.standard_normal((1, M, 2), dtype=np.float32)[0].astype(float)
        x = (0 if u < 0.5 else 1) if code == 3 else (0 if code == 1 else 1)
        y = mu[x] + eps
        cnt[x] += 1
        pm[x] += (y - pm[x]) / cnt[x]
        if stat < 0:
            n += 1
            ybar += (y - ybar) / n
        stat = int(ybar * math.sqrt(n) > TRIAL.z_alpha) if n == T else -1
        spent += float(TRIAL.cost(code))
        steps += 1
        concluded |= stat >= 0
        samples = [[pm[i] + z[m][i] / math.sqrt(cnt[i]) for i in (0, 1)] for m in range(M)]
        now = [_utility_loop(code, n, ybar, stat, s) for s in samples]
        best, best_u = 0, [0.0] * M
        for a in (1, 2):
            if (code & a) == a and code != a:
                ua = [_utility_loop(a, 0, 0.0, -1, s) for s in samples]
                if np.mean(ua) > np.mean(best_u):
                    best, best_u = a, ua
        if policy == "rct":
            nxt = code
        elif policy == "bayes_ocp":
            better = np.mean([a > b for a, b in zip(best_u, now)])
            nxt = best if better >= tau else code
        elif policy == "adaptive_enrichment":  # greedy, only at the interim look
            nxt = best if n == T // 2 and np.mean(best_u) > np.mean(now) else code
        elif policy == "futility_stopping":
            nxt = 0 if np.mean([0 > b for b in now]) >= tau else code
        else:  # greedy
            nxt = best if np.mean(best_u) > np.mean(now) else code
        if stat == 1:
            won, nxt = code, 0
        elif stat == 0 and nxt == code:
            nxt = 0
        if nxt != code:
            n, ybar, stat = 0, 0.0, -1
        visited.add(nxt)
        code = nxt
    reward = float(TRIAL.reward(won)) if won else 0.0
    return reward - spent, steps, len(visited) - 1 - concluded


@pytest.mark.parametrize(
    "policy", ["rct", "adaptive_enrichment", "bayes_ocp", "futility_stopping", "greedy_bayes_ocp"]
)
def test_simulate_matches_a_scalar_transcription_of_the_official_loop(policy):
    M = 12
    for env, mu in enumerate(([0.25, -0.2], [0.02, 0.05], [-0.3, 0.3])):
        mu = np.array(mu)
        ref = _reference_trial(policy, 0.8, mu, M, np.random.default_rng([7, env]))
        out = paper.simulate(TRIAL, [(policy, 0.8)], mu[None], M, np.random.default_rng([7, env]))
        assert out["utility"][0, 0] == pytest.approx(ref[0], abs=1e-6)
        assert out["time"][0, 0] == ref[1] and out["switches"][0, 0] == ref[2]


def test_arms_in_lockstep_equal_arms_run_alone():
    mu = np.array([[0.2, -0.25], [0.05, 0.1], [-0.2, -0.1]])
    arms = [("bayes_ocp", 0.8), ("greedy_bayes_ocp", 0.8), ("adaptive_enrichment", 0.8)]
    together = paper.simulate(TRIAL, arms, mu, 16, np.random.default_rng(5))
    for i, arm in enumerate(arms):
        alone = paper.simulate(TRIAL, [arm], mu, 16, np.random.default_rng(5))
        for m in alone:
            np.testing.assert_array_equal(together[m][i], alone[m][0])


def test_oracle_rct_types():
    mu = np.array([[0.3, 0.3], [0.4, -0.4], [-0.5, -0.5]])
    o = paper.oracle_rct(TRIAL, mu)
    assert o["type"].tolist() == [0, 1, 2]
    T = TRIAL.test_horizon
    green = 1000 * (1 - PHI(TRIAL.z_alpha - 0.3 * math.sqrt(T))) - T
    assert o["utility"][0] == pytest.approx(green, rel=1e-5)
    assert o["utility"][2] == 0.0 and o["success"][2] == 0.0


def test_presets_and_validation():
    assert set(paper.PRESETS) == {"smoke", "notebook", "full"}
    full = paper.PRESETS["full"]
    assert (full.n_envs, full.chunk_envs, full.n_samples) == (5000, 1000, 1000)
    for p in paper.PRESETS.values():  # the trial and the policies never change with the scale
        assert (p.horizon, p.test_horizon, p.threshold, p.policies) == (
            1200,
            600,
            0.8,
            paper.POLICIES,
        )
    cfg = paper.PRESETS["smoke"]
    with pytest.raises(CompanionError, match="unknown policy 'thompson'; valid: rct"):
        cfg.replace(policies=("thompson",))
    with pytest.raises(CompanionError, match="multiple of chunk_envs"):
        cfg.replace(n_envs=30, chunk_envs=20)
    with pytest.raises(CompanionError, match=r"thresholds must lie in \(0, 1\]"):
        cfg.replace(threshold=1.5)
    with pytest.raises(CompanionError, match="test_horizon must be even"):
        cfg.replace(test_horizon=601)
    with pytest.raises(CompanionError, match="prevalence must sum to 1"):
        cfg.replace(prevalence=(0.5, 0.6))


def test_smoke_run_round_trip_and_resume(tmp_path):
    cfg = paper.PRESETS["smoke"].replace(n_envs=8, chunk_envs=4, n_samples=8)
    res = paper.run(cfg, out_dir=tmp_path)
    assert (tmp_path / "folds" / "fold-1.json").exists() and (tmp_path / "result.json").exists()
    again = paper.Result.from_dict(res.to_dict())
    assert again.to_dict() == res.to_dict()
    resumed = paper.run(cfg, out_dir=tmp_path, resume=True)
    assert resumed.arms == res.arms
    report = paper.check_claims(res)
    assert len(report.rows) == 8
    assert sorted(res.arms) == sorted(["bayes_ocp@0.5", "bayes_ocp@0.95", *paper.POLICIES])


def _fake(**over):
    """A result of 20 environments (10 green, 6 amber, 4 red) where every claim holds; keyword
    arguments replace one arm's metric (arm__metric=list)."""
    E = 20
    types = [0] * 10 + [1] * 6 + [2] * 4
    base = {"fwer": [0.0] * E, "switches": [0.0] * E, "success": [0.5] * E, "time": [600.0] * E}
    ten = [1.0] * 10 + [0.0] * 10  # 10 false successes: the FWER premise holds
    arms = {
        "rct": base | {"utility": [0.0] * E, "fwer": ten},
        "adaptive_enrichment": base | {"utility": [50.0] * E},
        "futility_stopping": base | {"utility": [80.0] * E},
        "greedy_bayes_ocp": base | {"utility": [30.0] * E, "switches": [1.0] * E},
        "bayes_ocp": base | {"utility": [120.0] * E, "switches": [0.5] * E, "fwer": ten},
        "bayes_ocp@0.5": base
        | {"utility": [60.0] * E, "switches": [0.9] * E, "success": [0.2] * E},
        "bayes_ocp@0.95": base
        | {"utility": [130.0] * E, "switches": [0.4] * E, "success": [0.6] * E},
    }
    for key, value in over.items():
        arm, metric = key.split("__")
        arms[arm][metric] = value
    cfg = paper.PRESETS["smoke"].to_dict() | {"threshold": 0.8}
    return paper.Result(
        config=cfg,
        mu=[[0.1, 0.1]] * E,
        env_type=types,
        oracle_utility=[300.0] * E,
        oracle_success=[0.8] * E,
        fold=[0] * E,
        arms=arms,
        seconds=0.0,
    )


def test_claims_on_fake_results_every_row_can_fail():
    ok = paper.check_claims(_fake())
    assert all(r.holds for r in ok.rows) and all(i.holds for i in ok.invariants)
    E = 20
    no_amber_gain = [0.0] * 10 + [250.0] * 6 + [0.0] * 4
    cases = {
        0: {"rct__utility": no_amber_gain},  # no gain where amber
        1: {"futility_stopping__utility": [115.0] * E},  # within the margin
        2: {"greedy_bayes_ocp__utility": [120.0] * E},  # the control ties
        # overall gap 31 ≥ 10, but only 10 within amber environments
        3: {"futility_stopping__utility": [80.0] * 10 + [110.0] * 6 + [80.0] * 4},
        4: {"rct__fwer": [1.0] * 9 + [0.0] * 11},  # 9 false successes: too few
        5: {"bayes_ocp__fwer": [1.0] * 16 + [0.0] * 4},  # 1.6× the RCT's rate
        6: {"greedy_bayes_ocp__switches": [0.55] * E},
        7: {"bayes_ocp@0.95__success": [0.25] * E},
    }
    for row, over in cases.items():
        report = paper.check_claims(_fake(**over))
        assert not report.rows[row].holds, row
    # a failed premise marks its dependent rows as not tested
    report = paper.check_claims(_fake(rct__utility=no_amber_gain))
    assert [r.premise_ok for r in report.rows[:4]] == [True, False, False, False]
    report = paper.check_claims(_fake(rct__fwer=[1.0] * 9 + [0.0] * 11))
    assert [r.premise_ok for r in report.rows[4:6]] == [True, False]
    assert not report.rows[5].holds
    broken = paper.check_claims(_fake(rct__switches=[0.0] * 19 + [1.0]))
    assert not broken.invariants[0].holds


def test_tolerance_constants_are_a_priori():
    assert claims_mod.FWER_MIN_EVENTS == 10
    assert claims_mod.FWER_RATIO == 1.5


def test_exercise_2_check_fails_on_trivial_answers_and_shown_numbers():
    """Exercise 2's check (run from the notebook's source) rejects None, zeros, constants and
    every number the notebook prints before it (Table 3), and its verdict does not depend on
    the preset."""
    import re
    import types
    from pathlib import Path

    import nbformat

    from companion.core import check, report_ok

    nb = nbformat.read(Path(__file__).parents[2] / "notebooks" / "optimal_commitment.ipynb", 4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    check_src = next(c.source for c in code if "abs(predicted_patients - measured)" in c.source)
    table = next(c for c in code if "paper.summary_table(result)" in c.source)
    shown = {float(x) for o in table.outputs for x in re.findall(r"-?\d+\.?\d*", o.get("text", ""))}
    strict = {}
    for preset in ("smoke", "notebook"):
        cfg = paper.PRESETS[preset]
        strict[preset] = cfg.replace(
            n_envs=200,
            chunk_envs=200,
            n_samples=100,
            policies=("bayes_ocp",),
            threshold=0.99,
            sweep=(0.95,),
            seed=1000 + cfg.seed,
        )
    assert strict["smoke"] == strict["notebook"]  # the verdict is the preset's
    cached = paper.run(strict["notebook"])
    fake_paper = types.SimpleNamespace(run=lambda c: cached, TYPES=paper.TYPES)
    base = {"paper": fake_paper, "cfg": paper.PRESETS["smoke"], "trial": TRIAL}
    base |= {"check": check, "report_ok": report_ok, "print": lambda *a, **k: None}
    measured = cached.mean("bayes_ocp", "time")

    def passes(value):
        try:
            exec(check_src, base | {"predicted_patients": value})
        except AssertionError:
            return False
        return True

    assert passes(measured) and passes(measured + 40)
    trivial = [None, 0, 0.0, 0.5, 1, 50, 50.0, TRIAL.test_horizon, TRIAL.test_horizon // 2]
    for value in trivial + sorted(shown):
        assert not passes(value), value
