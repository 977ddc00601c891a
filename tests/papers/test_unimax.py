"""unimax against independent computations (bisection, brute force, closed forms)."""

import itertools
import json
import math

import numpy as np
import pytest
import torch

from companion.errors import CompanionError
from companion.papers import unimax as paper


def water_filling(counts, budget, max_epochs, iters=200):
    """Independent UniMax: U_l = min(N·c_l, λ), with λ found by bisection so that Σ U = C."""
    caps = max_epochs * np.asarray(counts, dtype=float)
    lo, hi = 0.0, caps.max()
    for _ in range(iters):
        mid = (lo + hi) / 2
        if np.minimum(caps, mid).sum() < budget:
            lo = mid
        else:
            hi = mid
    return np.minimum(caps, (lo + hi) / 2)


def max_min_fair_brute_force(counts, budget, max_epochs):
    """Among all integer allocations 0 <= U_l <= N·c_l with Σ U = C, the one whose sorted
    vector is lexicographically largest (max-min fairness), by enumeration."""
    caps = [int(max_epochs * c) for c in counts]
    best = None
    for alloc in itertools.product(*(range(cap + 1) for cap in caps)):
        if sum(alloc) == budget and (best is None or sorted(alloc) > sorted(best)):
            best = alloc
    return np.array(best, dtype=float)


@pytest.mark.parametrize("seed", range(20))
def test_unimax_sums_to_budget_respects_caps_and_matches_water_filling(seed):
    rng = np.random.default_rng(seed)
    counts = rng.lognormal(10, 3, size=rng.integers(2, 30))
    N = float(rng.choice([0.5, 1, 2, 4, 10]))
    budget = rng.uniform(0.01, 1.0) * N * counts.sum()
    U = paper.unimax_budgets(counts, budget, N)
    assert U.sum() == pytest.approx(budget, rel=1e-9)
    assert np.all(U <= N * counts * (1 + 1e-12))
    np.testing.assert_allclose(U, water_filling(counts, budget, N), rtol=1e-9)
    p = paper.unimax(counts, budget, N)
    assert p.sum() == pytest.approx(1.0)
    assert paper.epochs_per_language(p, counts, budget).max() <= N * (1 + 1e-9)


def test_unimax_equals_max_min_fair_integer_brute_force():
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(400):
        counts = rng.integers(1, 6, size=rng.integers(2, 5))
        N = int(rng.integers(1, 3))
        budget = int(rng.integers(1, N * counts.sum() + 1))
        U = paper.unimax_budgets(counts, budget, N)
        if not np.allclose(U, np.round(U), atol=1e-9):
            continue  # the enumeration only covers integer allocations
        np.testing.assert_allclose(U, max_min_fair_brute_force(counts, budget, N), atol=1e-9)
        checked += 1
    assert checked >= 50


def test_unimax_by_hand():
    # c = (10, 1, 2), C = 9, N = 2: smallest first; share 3 > 2·1 → 2; share 3.5 ≤ 4 → 3.5; 3.5
    U = paper.unimax_budgets([10, 1, 2], 9, 2)
    np.testing.assert_allclose(U, [3.5, 2.0, 3.5])


def test_unimax_is_uniform_when_no_language_is_capped_and_order_free():
    counts = np.array([50.0, 10.0, 30.0, 20.0])
    np.testing.assert_allclose(paper.unimax(counts, 8.0, 1.0), np.full(4, 0.25))
    perm = np.array([2, 0, 3, 1])
    U = paper.unimax_budgets(counts, 90.0, 1.5)
    np.testing.assert_allclose(paper.unimax_budgets(counts[perm], 90.0, 1.5), U[perm])


def test_unimax_at_the_largest_budget_gives_every_language_N_epochs():
    counts = np.array([7.0, 3.0, 100.0])
    C = paper.max_budget(counts, 3.0)
    assert C == 330.0
    p = paper.unimax(counts, C, 3.0)
    np.testing.assert_allclose(paper.epochs_per_language(p, counts, C), 3.0)


def test_budget_above_N_times_the_data_is_refused_naming_the_values():
    with pytest.raises(CompanionError, match="C=331 exceeds N·Σc = 2 × 110 = 220"):
        paper.unimax_budgets([100, 10], 331, 2)
    with pytest.raises(CompanionError, match="exceeds N·Σc = 2 × 110 = 220"):
        paper.unimax([100, 10], 221, 2)


@pytest.mark.parametrize(
    "counts,budget,N",
    [([1, -1], 1, 1), ([], 1, 1), ([1, np.nan], 1, 1), ([1, 2], 0, 1), ([1, 2], 1, 0)],
)
def test_bad_input_raises(counts, budget, N):
    with pytest.raises(CompanionError):
        paper.unimax_budgets(counts, budget, N)


def test_temperature_sampling_formula():
    counts = np.array([9.7e12, 5e11, 3e9, 1.05e8])
    for tau in (0.5, 1.0, 3.33, 10.0):
        w = np.array([c ** (1 / tau) for c in counts.astype(object)], dtype=float)
        np.testing.assert_allclose(paper.temperature_sampling(counts, tau), w / w.sum())
    np.testing.assert_allclose(paper.temperature_sampling(counts, 1.0), counts / counts.sum())
    np.testing.assert_allclose(paper.temperature_sampling(counts, math.inf), np.full(4, 0.25))
    # no overflow for trillions of characters at a small temperature
    assert np.isfinite(paper.temperature_sampling(counts, 0.05)).all()
    with pytest.raises(CompanionError, match="tau"):
        paper.temperature_sampling(counts, 0.0)


def test_epochs_per_language():
    np.testing.assert_allclose(paper.epochs_per_language([0.5, 0.5], [10.0, 1.0], 4.0), [0.2, 2.0])


def test_zipf_mandelbrot_fit_meets_the_papers_numbers():
    names, counts = paper.paper_fit()
    facts = {k: v for k, (v, _) in paper.PAPER_FACTS.items()}
    assert len(names) == len(counts) == facts["languages"]
    assert counts.sum() == pytest.approx(facts["total_characters"], rel=1e-9)
    assert counts[0] == pytest.approx(facts["head_characters"])
    assert counts[0] / counts[-1] == pytest.approx(facts["head_to_tail"], rel=1e-9)
    assert np.all(np.diff(counts) < 0)
    with pytest.raises(CompanionError, match="no Zipf"):
        paper.zipf_mandelbrot(10, 1e6, 9.9e5, 2.0)  # the total is unreachable


def test_load_counts_csv_and_json(tmp_path):
    csv_path = tmp_path / "counts.csv"
    csv_path.write_text("language,characters\nyo,1e8\nen,9.7e12\nde,1e12\n")
    names, counts = paper.load_counts(csv_path)
    assert names == ["en", "de", "yo"]
    np.testing.assert_allclose(counts, [9.7e12, 1e12, 1e8])
    json_path = tmp_path / "counts.json"
    json_path.write_text(json.dumps({"a": 5, "b": 50}))
    assert paper.load_counts(json_path)[0] == ["b", "a"]
    (tmp_path / "bad.csv").write_text("lang,n\nen,1\n")
    for bad in (tmp_path / "bad.csv", tmp_path / "missing.csv"):
        with pytest.raises(CompanionError):
            paper.load_counts(bad)
    cfg = paper.PRESETS["smoke"].replace(counts_path=str(csv_path), budget_chars=1e9)
    corpus = paper.analyse_corpus(cfg)
    assert corpus.names == ["en", "de", "yo"] and corpus.source == str(csv_path)


def test_allocate_rounds_to_the_total_within_caps():
    rng = np.random.default_rng(1)
    for _ in range(50):
        shares = rng.random(7)
        caps = rng.integers(10, 100, size=7)
        total = int(rng.integers(1, caps.sum()))
        U = paper.allocate(shares, total, caps)
        assert U.sum() == total and np.all(U <= caps) and np.all(U >= 0)
    U = paper.allocate(np.array([1.0, 1.0, 1.0]), 10, np.array([100, 100, 100]))
    assert sorted(U.tolist()) == [3, 3, 4]


def test_mixture_stream_has_the_allocated_examples_and_epochs():
    cfg = paper.PRESETS["smoke"]
    langs = paper.make_languages(cfg)
    for method in paper.METHODS:
        probs, alloc = paper.arm_allocation(cfg, method, langs.sizes)
        assert alloc.sum() == cfg.toy_budget
        if method == "unimax":
            assert np.all(alloc <= cfg.max_epochs * langs.sizes)
        batches = paper.MixtureBatches(langs, alloc, cfg.batch_size, cfg.seed)
        xs, ys = zip(*(batches(s) for s in range(cfg.steps)))
        x, y = torch.cat(xs), torch.cat(ys)
        assert len(x) == cfg.toy_budget
        counts = torch.bincount(x[:, 0], minlength=cfg.languages).numpy()
        np.testing.assert_array_equal(counts, alloc)
        # the pairs of the smallest language are its training pairs, each seen ⌊E⌋ or ⌈E⌉ times
        lang = cfg.languages - 1
        n = langs.sizes[lang]
        train_pairs = set(zip(langs.tokens[lang].tolist(), langs.targets[lang].tolist()))
        seen = list(zip(x[x[:, 0] == lang, 1].tolist(), y[x[:, 0] == lang].tolist()))
        assert set(seen) <= train_pairs
        assert len(seen) / n == pytest.approx(alloc[lang] / n)
    # ranks split each batch without overlap
    whole = batches(3)
    parts = [paper.MixtureBatches(langs, alloc, cfg.batch_size, cfg.seed, r, 2)(3) for r in (0, 1)]
    assert sorted(torch.cat([p[1] for p in parts]).tolist()) == sorted(whole[1].tolist())


def test_held_out_loss_of_the_true_model_is_the_entropy():
    cfg = paper.PRESETS["smoke"]
    langs = paper.make_languages(cfg)

    class Truth(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.dummy = torch.nn.Parameter(torch.zeros(1))

        def forward(self, x):
            return langs.probs[x[:, 0], x[:, 1]].log()

    out = paper.language_losses(Truth(), langs, cfg.train_eval_size)
    held = [out[f"held_out/{i}"] for i in range(cfg.languages)]
    np.testing.assert_allclose(held, langs.entropy.numpy(), rtol=1e-5)
    assert all(out[f"train/{i}"] > 0 for i in range(cfg.languages))


def test_presets_and_validation():
    assert set(paper.PRESETS) == {"smoke", "notebook", "full"}
    for preset in paper.PRESETS.values():
        assert preset.toy_budget <= preset.max_epochs * preset.toy_sizes().sum()
    with pytest.raises(CompanionError, match=r"steps × batch_size = 100000 × 128"):
        paper.PRESETS["notebook"].replace(steps=100_000)
    with pytest.raises(CompanionError, match="budget_chars C=1e\\+15 exceeds"):
        paper.PRESETS["notebook"].replace(budget_chars=1e15)
    for bad, text in (({"tau": 0.0}, "tau"), ({"taus": 1}, "taus"), ({"largest": 1}, "largest")):
        with pytest.raises(CompanionError, match=text):
            paper.PRESETS["smoke"].replace(**bad)


def test_smoke_run_resume_and_claims(tmp_path):
    cfg = paper.PRESETS["smoke"]
    result = paper.run(cfg, out_dir=tmp_path)
    assert set(result.arms) == set(paper.METHODS)
    arm = result.arms["unimax"]
    assert len(arm.held_out) == cfg.languages and len(arm.loss) == cfg.steps
    assert arm.eval_steps[-1] == cfg.steps - 1
    assert max(arm.epochs) <= cfg.max_epochs
    loaded = paper.Result.load(tmp_path / "result.json")
    assert loaded.arms["temperature"].held_out == result.arms["temperature"].held_out
    assert loaded.corpus.unimax == result.corpus.unimax
    resumed = paper.run(cfg, out_dir=tmp_path, resume=True)  # both arms finished: reloaded
    assert resumed.arms["unimax"].loss == arm.loss
    report = paper.check_claims(result)
    assert str(report).endswith(f"claims hold: {report.n_hold}/{len(report.rows)}")
    # the invariants are properties of the algorithm and hold at any scale
    assert len(report.invariants) == 2 and all(inv.holds for inv in report.invariants)
    figs = paper.figures(result)
    assert set(figs) == {"corpus", "distributions", "toy_curves", "toy_summary"}


def test_check_claims_reports_failure_when_the_arms_are_swapped():
    """Claims are computed, not typed: swapping the two toy arms must fail the toy claims."""
    result = paper.run(paper.PRESETS["smoke"].replace(steps=40))
    arms = result.arms
    swapped = paper.Result(
        config=result.config,
        corpus=result.corpus,
        sizes=result.sizes,
        entropy=result.entropy,
        budget=result.budget,
        arms={"temperature": arms["unimax"], "unimax": arms["temperature"]},
    )
    report = paper.check_claims(swapped)
    assert not report.invariants[0].holds  # the "UniMax" arm repeats a language > N times
    assert not any(row.holds for row in report.rows)  # "temperature" now repeats nothing > N
