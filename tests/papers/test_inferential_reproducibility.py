"""inferential_reproducibility against independent computations: statsmodels' direct fits,
closed-form likelihoods, ANOVA estimators of variance components, scipy's χ² distribution."""

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from companion.errors import CompanionError
from companion.papers import inferential_reproducibility as paper


def simulate(items=40, seeds=3, lrs=(0.1, 0.01), systems=("A", "B"), sd=None, gap=0.3, rng=0):
    """Balanced scores: item, lr-within-system and seed-within-system intercepts, noise."""
    sd = sd or {"item": 1.0, "lr": 0.5, "seed": 0.3, "residual": 0.5}
    rng = np.random.default_rng(rng)
    b_item = rng.normal(0, sd["item"], items)
    rows = []
    for system in systems:
        b_lr = {lr: rng.normal(0, sd["lr"]) for lr in lrs}
        b_seed = {s: rng.normal(0, sd["seed"]) for s in range(seeds)}
        for lr in lrs:
            for s in range(seeds):
                y = (system == "A") * gap + b_item + b_lr[lr] + b_seed[s]
                y = y + rng.normal(0, sd["residual"], items)
                rows.append(
                    pd.DataFrame(
                        {"system": system, "lr": lr, "seed": s, "item": range(items), "score": y}
                    )
                )
    df = pd.concat(rows, ignore_index=True)
    df["noisy"] = (df.item % 2).astype(int)
    df["lr_in_system"] = df.system + ":" + df.lr.astype(str)
    df["seed_in_system"] = df.system + ":" + df.seed.astype(str)
    return df


def direct(df, formula, vc, reml):
    """statsmodels' own crossed fit: one group, a variance component per factor (slow)."""
    import statsmodels.formula.api as smf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return smf.mixedlm(
            formula, df.assign(one=1), groups="one", re_formula="0", vc_formula=vc
        ).fit(reml=reml)


@pytest.mark.parametrize("reml", [False, True])
def test_fit_matches_statsmodels_direct_crossed_fit(reml):
    df = simulate(items=12, seeds=3)
    fit = paper.fit_lmem(df, "score ~ system", ("lr_in_system", "seed_in_system"), reml=reml)
    ref = direct(
        df,
        "score ~ system",
        {
            "item": "0 + C(item)",
            "lr_in_system": "0 + C(lr_in_system)",
            "seed_in_system": "0 + C(seed_in_system)",
        },
        reml,
    )
    assert fit.llf == pytest.approx(ref.llf, abs=1e-5)
    np.testing.assert_allclose(fit.params, ref.fe_params, atol=1e-5)
    np.testing.assert_allclose(fit.bse, ref.bse_fe, rtol=1e-3)
    np.testing.assert_allclose(
        [fit.variances[k] for k in ("item", "lr_in_system", "seed_in_system")],
        ref.vcomp,
        rtol=1e-3,
        atol=1e-6,
    )
    assert fit.variances["residual"] == pytest.approx(ref.scale, rel=1e-4)


def test_items_only_fit_matches_statsmodels_grouped_fit():
    import statsmodels.formula.api as smf

    df = simulate(items=150, seeds=4)
    fit = paper.fit_lmem(df, "score ~ system * noisy", reml=False)
    ref = smf.mixedlm("score ~ system * noisy", df, groups="item").fit(reml=False)
    # statsmodels' default tolerance stops a little earlier than ours: never at a higher optimum
    assert fit.llf == pytest.approx(ref.llf, abs=1e-6) and fit.llf >= ref.llf - 1e-9
    np.testing.assert_allclose(fit.params, ref.fe_params, atol=1e-6)
    np.testing.assert_allclose(fit.bse, ref.bse_fe, rtol=1e-3)
    assert fit.variances["item"] == pytest.approx(ref.cov_re.iloc[0, 0], rel=1e-3)
    assert fit.names == list(ref.fe_params.index)


def test_ml_loglikelihood_matches_closed_form_gaussian():
    df = simulate(items=6, seeds=2, lrs=(0.1,))
    fit = paper.fit_lmem(df, "score ~ system", ("seed_in_system",), reml=False)
    # the marginal model written out: V = σ²_item Z_i Z_iᵀ + σ²_seed Z_s Z_sᵀ + σ² I
    z_item = pd.get_dummies(df.item).to_numpy(float)
    z_seed = pd.get_dummies(df.seed_in_system).to_numpy(float)
    v = (
        fit.variances["item"] * z_item @ z_item.T
        + fit.variances["seed_in_system"] * z_seed @ z_seed.T
        + fit.variances["residual"] * np.eye(len(df))
    )
    mean = fit.params[0] + fit.params[1] * (df.system == "B").to_numpy()
    expected = stats.multivariate_normal(mean, v).logpdf(df.score.to_numpy())
    assert fit.llf == pytest.approx(expected, abs=1e-6)


def test_glrt_matches_direct_fits_and_scipy_chi2():
    import statsmodels.formula.api as smf

    df = simulate(items=80, seeds=3, gap=0.05)
    comparison = paper.compare(df, "score ~ 1", "score ~ system", term="system[T.B]")
    m0 = smf.mixedlm("score ~ 1", df, groups="item").fit(reml=False)
    m1 = smf.mixedlm("score ~ system", df, groups="item").fit(reml=False)
    chi2 = 2 * (m1.llf - m0.llf)
    assert comparison.test.chi2 == pytest.approx(chi2, rel=1e-6)
    assert comparison.test.df == 1
    assert comparison.test.p == pytest.approx(stats.chi2.sf(chi2, 1), rel=1e-5)
    assert comparison.estimate == pytest.approx(m1.fe_params["system[T.B]"], abs=1e-8)
    # ML fits only: REML criteria of different fixed effects are not comparable
    assert not comparison.h0.reml and not comparison.h1.reml
    size = comparison.estimate / math.sqrt(comparison.h1.variances["residual"])
    assert comparison.effect_size == pytest.approx(size)
    assert comparison.effect_size == pytest.approx(
        comparison.estimate / math.sqrt(m1.scale), rel=1e-4
    )


def test_glrt_df_counts_extra_fixed_effects():
    df = simulate(items=30, seeds=2, lrs=(0.1, 0.03, 0.01, 0.003), systems=("A",))
    c = paper.compare(df, "score ~ 1", "score ~ C(lr)")
    assert c.test.df == 3
    assert c.test.p == pytest.approx(stats.chi2.sf(c.test.chi2, 3))
    with pytest.raises(CompanionError, match="df"):
        paper.glrt(1.0, 2.0, 0)


def anova_components(df):
    """Method-of-moments (expected mean squares) estimates for item × seed × lr, one per cell."""
    n_i, n_s, n_l = df.item.nunique(), df.seed.nunique(), df.lr.nunique()
    y, grand = df.score, df.score.mean()
    ss = {
        "item": n_s * n_l * ((df.groupby("item").score.mean() - grand) ** 2).sum(),
        "seed": n_i * n_l * ((df.groupby("seed").score.mean() - grand) ** 2).sum(),
        "lr": n_i * n_s * ((df.groupby("lr").score.mean() - grand) ** 2).sum(),
    }
    dfs = {"item": n_i - 1, "seed": n_s - 1, "lr": n_l - 1}
    ss_res = ((y - grand) ** 2).sum() - sum(ss.values())
    ms_res = ss_res / (len(df) - 1 - sum(dfs.values()))
    per_level = {"item": n_s * n_l, "seed": n_i * n_l, "lr": n_i * n_s}
    out = {k: (ss[k] / dfs[k] - ms_res) / per_level[k] for k in ss}
    return out | {"residual": ms_res}


def test_vca_recovers_known_variances_and_equals_anova():
    truth = {"item": 1.0, "lr": 0.6, "seed": 0.3, "residual": 0.4}
    df = simulate(
        items=60,
        seeds=25,
        lrs=tuple(10.0**-k for k in range(20)),
        systems=("A",),
        sd={k: math.sqrt(v) for k, v in truth.items()},
        rng=3,
    )
    reml = paper.variance_components(df, ("lr", "seed"))
    anova = anova_components(df)
    for k in truth:  # balanced data: REML = ANOVA when the estimates are positive
        assert reml[k] == pytest.approx(anova[k], rel=1e-4), k
    assert reml["item"] == pytest.approx(truth["item"], rel=0.3)
    assert reml["residual"] == pytest.approx(truth["residual"], rel=0.05)
    assert reml["lr"] == pytest.approx(truth["lr"], rel=0.6)
    assert reml["seed"] == pytest.approx(truth["seed"], rel=0.6)


def test_reliability_on_a_known_case():
    components = {"item": 3.0, "lr": 1.0, "seed": 0.0, "residual": 1.0}
    assert paper.reliability(components) == pytest.approx(0.6)
    shares = paper.shares(components)
    assert sum(shares.values()) == pytest.approx(1.0)
    assert shares["lr"] == pytest.approx(0.2)
    with pytest.raises(CompanionError, match="sentence"):
        paper.reliability(components, substantial="sentence")
    # one-way case: the reliability is the intra-class correlation σ²_item / (σ²_item + σ²)
    df = simulate(
        items=400,
        seeds=6,
        lrs=(0.1,),
        systems=("A",),
        sd={"item": 1.0, "lr": 0.0, "seed": 1e-9, "residual": 1.0},
        rng=5,
    )
    icc = paper.reliability(paper.variance_components(df, ()))
    assert icc == pytest.approx(0.5, abs=0.08)


def test_unbalanced_or_bad_designs_are_refused():
    df = simulate(items=10, seeds=2)
    with pytest.raises(CompanionError, match="balanced"):
        paper.fit_lmem(df.iloc[1:], "score ~ system")
    with pytest.raises(CompanionError, match="within a run"):
        paper.fit_lmem(df, "score ~ system", ("noisy",))
    with pytest.raises(CompanionError, match="column 'dropout'"):
        paper.fit_lmem(df, "score ~ system", ("dropout",))


def test_presets_and_validation():
    assert {"smoke", "notebook", "full", "data"} <= set(paper.PRESETS)
    cfg = paper.PRESETS["notebook"]
    assert cfg.seeds == (0, 1, 2, 3, 4) and cfg.replace(seed=1).seeds == (5, 6, 7, 8, 9)
    for bad, text in (
        ({"lrr": 1}, "lrr"),
        ({"dataset": "imagenet"}, "imagenet"),
        ({"lrs": (0.1,)}, "lrs"),
        ({"n_seeds": 1}, "n_seeds"),
        ({"noise_fraction": 1.5}, "noise_fraction"),
        ({"fresh_lrs": (0.5,)}, "fresh lr"),
        ({"alpha": 0.0}, "alpha"),
        ({"max_items": 2}, "max_items"),
        ({"devices": 2}, "devices=1"),
    ):
        with pytest.raises(CompanionError, match=text):
            cfg.replace(**bad)


def test_cached_scores_match_the_notebook_grid():
    table, provenance = paper.read_scores(paper.resolve_scores_file(paper.CACHED))
    cfg = paper.PRESETS["notebook"]
    grid = provenance["grid"]
    assert grid["lrs"] == list(cfg.lrs) and grid["n_seeds"] == cfg.n_seeds
    assert len(table) == 2 * len(cfg.lrs) * cfg.n_seeds * table.item.nunique()
    assert table.score.between(0, 1).all()
    assert set(table.columns) >= {"system", "lr", "seed", "item", "noisy", "score", "val_score"}


def test_scores_file_roundtrip_and_grid_mismatch(tmp_path):
    cfg = paper.PRESETS["data"].replace(lrs=(0.1, 0.01), n_seeds=2)
    table = simulate(items=5, seeds=2)[["system", "lr", "seed", "item", "noisy", "score"]]
    table["val_score"] = 0.5
    path = paper.write_scores(table, tmp_path / "scores.csv", cfg)
    back, provenance = paper.read_scores(path)
    pd.testing.assert_frame_equal(back, table, check_dtype=False)
    assert provenance["grid"]["lrs"] == [0.1, 0.01]
    wrong = paper.PRESETS["notebook"].replace(scores_file=str(path))
    with pytest.raises(CompanionError, match="lrs"):
        paper.run(wrong)
    with pytest.raises(CompanionError, match="not found"):
        paper.run(wrong.replace(scores_file=str(tmp_path / "missing.csv")))


def test_training_a_tiny_grid_writes_and_resumes(tmp_path):
    cfg = paper.PRESETS["data"].replace(lrs=(0.01, 0.1), n_seeds=2, steps=15, max_items=20)
    first = paper.run(cfg, out_dir=tmp_path)
    assert first.n_runs == 8 and first.n_items == 20
    saved = sorted(p.name for p in (tmp_path / "runs").glob("*.json"))
    assert len(saved) == 8 and "A_lr0.1_seed1.json" in saved
    table, provenance = paper.read_scores(tmp_path / "scores.csv")
    assert provenance["grid"]["steps"] == 15 and table.item.nunique() == 359
    # resume: runs are read back, not retrained (a changed file proves it)
    record = json.loads((tmp_path / "runs" / "A_lr0.1_seed1.json").read_text())
    record["scores"] = [0.5] * len(record["scores"])
    (tmp_path / "runs" / "A_lr0.1_seed1.json").write_text(json.dumps(record))
    again = paper.run(cfg, out_dir=tmp_path, resume=True)
    run = next(
        r for r in again.run_scores if r["system"] == "A" and r["lr"] == 0.1 and r["seed"] == 1
    )
    assert run["test_score"] == pytest.approx(0.5)
    loaded = paper.Result.load(tmp_path / "result.json")
    assert loaded.tests["all_runs"].chi2 == again.tests["all_runs"].chi2


def test_smoke_run_and_claims(tmp_path):
    result = paper.run(paper.PRESETS["smoke"], out_dir=tmp_path)
    cfg = paper.PRESETS["smoke"]
    assert result.n_items == 60 and result.n_runs == 2 * len(cfg.lrs) * cfg.n_seeds
    assert result.provenance["file"] is None and (tmp_path / "scores.csv").exists()
    assert set(result.tests) == {
        "best_setting",
        "all_runs",
        "all_runs_modelled",
        "noisy_interaction",
        "lr_in_A",
    }
    assert result.tests["lr_in_A"].df == len(cfg.lrs) - 1
    # the fresh slice is retrained on this machine: it equals the table's runs exactly
    assert len(result.fresh) == 2 and all(r["max_abs_diff"] == 0 for r in result.fresh)
    for system in ("A", "B"):
        shares = result.vca[system]["shares"]
        assert sum(shares.values()) == pytest.approx(1.0)
        assert result.vca[system]["reliability"] == pytest.approx(shares["item"])
    loaded = paper.Result.load(tmp_path / "result.json")
    assert loaded.tests["best_setting"].p == result.tests["best_setting"].p
    report = paper.check_claims(result)
    assert len(report.rows) == 6 and all(inv.holds for inv in report.invariants)
    assert str(report).endswith(f"claims hold: {report.n_hold}/6")
    assert set(paper.figures(result)) == {"grid", "comparisons", "vca", "interaction", "fresh"}


def test_another_seed_trains_its_own_block():
    cfg = paper.PRESETS["smoke"].replace(seed=7, fresh_lrs=())
    result = paper.run(cfg)
    assert {r["seed"] for r in result.run_scores} == {14, 15}
    assert paper.check_claims(result).rows
    # the notebook preset reads the cache at seed 0 only; another seed trains (not run here)
    table, provenance = paper.get_scores(paper.PRESETS["notebook"])
    assert provenance["file"] == paper.CACHED and set(table.seed) == {0, 1, 2, 3, 4}


def test_training_is_reproducible_on_this_machine():
    """Two runs of the same setting on one machine (same code, seed, threads) agree exactly.

    Across machines they need not: CPU code paths and thread counts change the float sums, and
    a run at a large learning rate amplifies the difference (the notebook shows it)."""
    from companion.core import launch
    from companion.papers.inferential_reproducibility.experiment import train_runs

    cfg = paper.PRESETS["notebook"]
    runs = [("A", 0.1, 3), ("B", 0.01, 3)]
    first = launch(cfg, train_runs, cfg, runs, 60, None, False)
    second = launch(cfg, train_runs, cfg, runs, 60, None, False)
    for a, b in zip(first, second):
        assert a["scores"] == b["scores"] and a["val_score"] == b["val_score"]


def test_swap_in_replaces_exactly_the_fresh_runs():
    table = simulate(items=5, seeds=2)
    run = {"system": "A", "lr": 0.1, "seed": 1, "scores": [9.0, 8.0, 7.0, 6.0, 5.0]}
    out = paper.swap_in(table, [run])
    mine = (out.system == "A") & (out.lr == 0.1) & (out.seed == 1)
    assert out[mine].sort_values("item").score.tolist() == run["scores"]
    pd.testing.assert_frame_equal(out[~mine], table[~mine])
    with pytest.raises(CompanionError, match="scores"):
        paper.swap_in(table, [run | {"scores": [1.0]}])


def test_check_claims_fail_when_the_effect_is_absent():
    result = paper.run(paper.PRESETS["smoke"].replace(fresh_lrs=()))
    result.tests["best_setting"].estimate = -abs(result.tests["best_setting"].estimate)
    result.tests["all_runs_modelled"].se = result.tests["all_runs"].se
    report = paper.check_claims(result)
    assert not report.rows[0].holds and not report.rows[2].holds
    assert "no" in str(report)


@pytest.mark.slow
def test_cached_inference_and_fresh_runs_swapped_in():
    """The claims on the cached scores hold, and the verdicts stay the same when the runs
    retrained on this machine replace the cached ones (their scores may differ from the
    cache on another CPU; the inference must not)."""
    cfg = paper.PRESETS["notebook"]
    result = paper.run(cfg)
    report = paper.check_claims(result)
    assert report.all_hold, str(report)
    table, provenance = paper.get_scores(cfg)
    swapped = paper.summarize(cfg, paper.swap_in(table, result.fresh), provenance)
    again = paper.check_claims(swapped)
    assert [r.holds for r in again.rows] == [r.holds for r in report.rows], str(again)
