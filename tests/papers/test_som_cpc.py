"""SOM-CPC: each piece against an independent computation (loops, brute force, scikit-learn,
the official formulas on tiny inputs)."""

import json
import math

import numpy as np
import pytest
import torch

from companion.errors import CompanionError
from companion.papers import som_cpc as paper


def test_cpc_scores_infonce_matches_a_loop_over_rows():
    g = torch.Generator().manual_seed(0)
    pred, fut = torch.randn(8, 5, generator=g), torch.randn(8, 5, generator=g)
    neg = 3
    from companion.nn.contrastive import info_nce

    got = info_nce(paper.cpc_scores(pred, fut, neg)).item()
    losses = []
    for i in range(8):
        group = [j for j in range(8) if j // (neg + 1) == i // (neg + 1)]
        logits = torch.tensor([float(pred[i] @ fut[j]) for j in group])
        losses.append(-(logits[group.index(i)] - torch.logsumexp(logits, 0)).item())
    assert got == pytest.approx(np.mean(losses), rel=1e-5)
    assert len(group) == neg + 1  # exactly neg negatives per positive


def test_cpc_loss_averages_the_k_steps_as_the_paper_time_official_infonce():
    g = torch.Generator().manual_seed(1)
    predictors = torch.nn.ModuleList(torch.nn.Linear(4, 4, bias=False) for _ in range(3))
    c, zf = torch.randn(8, 4, generator=g), torch.randn(3, 8, 4, generator=g)
    from companion.nn.contrastive import info_nce

    each = [info_nce(paper.cpc_scores(w(c), zf[k], 3)) for k, w in enumerate(predictors)]
    # official InfoNCELoss at ICML time (commit 13782a8): each future step weighed by 1/K
    # (the 2024 code sums them, K times this value)
    assert paper.cpc_loss(predictors, c, zf, 3).item() == pytest.approx(
        sum(e.item() for e in each) / 3, rel=1e-6
    )


def test_neighbourhood_matches_brute_force_and_omits_the_centre():
    som = paper.SOM(side=4, z_dim=3)
    k = torch.tensor([0, 5, 15])
    h = som.neighbourhood(k, sigma=1.5)
    for b, kb in enumerate(k.tolist()):
        for j in range(16):
            d2 = (j // 4 - kb // 4) ** 2 + (j % 4 - kb % 4) ** 2
            want = 0.0 if j == kb else math.exp(-d2 / (2 * 1.5**2))
            assert h[b, j].item() == pytest.approx(want, abs=1e-6)
    full = som.neighbourhood(k, sigma=1.5, omit_center=False)
    assert torch.allclose(full[torch.arange(3), k], torch.ones(3))


def test_bmu_is_the_nearest_codebook_vector():
    som = paper.SOM(side=3, z_dim=4)
    z = torch.randn(10, 4)
    with torch.no_grad():
        brute = [
            min(range(9), key=lambda j: float(((zi - som.codebook[j]) ** 2).sum())) for zi in z
        ]
    assert som.bmu(z).tolist() == brute


def test_commitment_reaches_encoder_and_codebook_som_loss_only_the_codebook():
    som = paper.SOM(side=3, z_dim=4)
    z = torch.randn(6, 4, requires_grad=True)
    k = som.bmu(z)
    commit = paper.commitment_loss(z, som.codebook, k)
    want = np.mean([((som.codebook[k[i]] - z[i]) ** 2).mean().item() for i in range(6)])
    assert commit.item() == pytest.approx(want, rel=1e-5)
    commit.backward()
    assert z.grad.abs().sum() > 0 and som.codebook.grad.abs().sum() > 0
    z.grad, som.codebook.grad = None, None
    h = som.neighbourhood(k, sigma=1.0)
    loss = paper.som_loss(z, som.codebook, h)
    want = np.mean(
        [
            sum(h[i, j].item() * ((som.codebook[j] - z[i]) ** 2).mean().item() for j in range(9))
            for i in range(6)
        ]
    )
    assert loss.item() == pytest.approx(want, rel=1e-5)
    loss.backward()
    assert z.grad is None and som.codebook.grad.abs().sum() > 0  # sg(z): the map moves only


def test_sigma_schedule_is_the_official_exponential_decay():
    n, s0, s_end = 50, 5.0, 2.0  # official: sqrt(N)//2 for a 10×10 map, sigma_end 2
    decay = -n / np.log(s_end / s0)
    for e in (0, 7, 31, 49):
        assert paper.sigma_schedule(e / n, s0, s_end) == pytest.approx(
            s0 * np.exp(-e / decay), rel=1e-9
        )
    assert paper.sigma_schedule(1.0, s0, s_end) == pytest.approx(s_end)


def _nmi_loop(labels, nodes):
    """NMI from its definition, with plain loops over the pairs of values (scikit-learn's
    arithmetic normalization; scikit-learn itself costs seconds to import)."""
    n = len(labels)
    count = lambda seq: {v: list(seq).count(v) for v in set(seq)}  # noqa: E731
    entropy = lambda c: -sum(k / n * math.log(k / n) for k in c.values())  # noqa: E731
    cl, cn = count(labels), count(nodes)
    joint = count(list(zip(labels, nodes)))
    mi = sum(k / n * math.log(k * n / (cl[a] * cn[b])) for (a, b), k in joint.items())
    return mi / ((entropy(cl) + entropy(cn)) / 2)


def test_purity_nmi_against_brute_force():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, 300)
    nodes = (labels * 3 + rng.integers(0, 5, 300)) % 16
    table = paper.contingency(labels, nodes, 4, 16)
    assert table.sum() == 300
    brute = sum(max((labels[nodes == n] == r).sum() for r in range(4)) for n in set(nodes)) / 300
    assert paper.purity(table) == pytest.approx(brute)
    assert paper.nmi(table) == pytest.approx(_nmi_loop(labels.tolist(), nodes.tolist()), abs=1e-9)
    assert paper.nmi(paper.contingency(labels, np.zeros(300, int), 4, 16)) == 0.0
    perfect = paper.contingency(labels, labels + 5, 4, 16)  # one node per regime
    assert paper.nmi(perfect) == pytest.approx(1.0) and paper.purity(perfect) == 1.0


def test_smoothness_and_topographic_error_match_loops():
    bmus = np.array([[0, 1, 5, 5, 15], [3, 0, 0, 12, 13]])
    side = 4
    steps = [
        math.hypot(a // side - b // side, a % side - b % side)
        for row in bmus
        for a, b in zip(row[:-1], row[1:])
    ]
    assert paper.smoothness(bmus, side) == pytest.approx(np.mean(steps))
    rng = np.random.default_rng(1)
    dist = rng.random((20, 16))
    errs = []
    for d in dist:
        a, b = np.argsort(d)[:2]
        errs.append(abs(a // side - b // side) + abs(a % side - b % side) > 1)
    assert paper.topographic_error(dist, side) == pytest.approx(np.mean(errs))


def test_signals_switch_regime_only_at_windows_and_stay_in_band():
    freqs, band = (4.0, 9.0, 15.0), 1.0
    x, regime, freq = paper.make_regime_signals(5, 40, 32, freqs, band, 0.2, 0.1, seed=3)
    assert x.shape == (5, 40 * 32) and regime.shape == freq.shape == (5, 40)
    assert np.all(np.abs(freq - np.asarray(freqs)[regime]) <= band + 1e-5)
    assert (np.diff(regime, axis=1) != 0).any()
    x2, regime2, _ = paper.make_regime_signals(5, 40, 32, freqs, band, 0.2, 0.1, seed=3)
    assert np.array_equal(x, x2) and np.array_equal(regime, regime2)


def test_encoder_reduces_a_window_to_one_vector_and_refuses_bad_pools():
    enc = paper.ConvEncoder1D(64, (4, 8), (5, 3), (8, 8))
    assert enc(torch.randn(3, 1, 64)).shape == (3, 8)
    with pytest.raises(CompanionError, match="product of pools"):
        paper.ConvEncoder1D(64, (4, 8), (5, 3), (4, 4))


def test_config_refuses_bad_values():
    with pytest.raises(CompanionError, match="unknown method 'vae'"):
        paper.PRESETS["smoke"].replace(methods=("vae",))
    with pytest.raises(CompanionError, match="multiple of neg_samples"):
        paper.PRESETS["smoke"].replace(batch_size=30)


def test_tiny_run_gives_a_serializable_result(tmp_path):
    cfg = paper.PRESETS["smoke"].replace(steps=2, n_sequences=6, windows=10, device="cpu")
    result = paper.run(cfg, out_dir=tmp_path)
    loaded = paper.Result.load(tmp_path / "result.json")
    assert loaded.to_dict() == json.loads(json.dumps(result.to_dict()))  # tuples become lists
    for arm in result.arms.values():
        assert 0 <= arm.nmi <= 1 and 0 < arm.purity <= 1
        assert sum(map(sum, arm.node_regimes)) == 2 * 10  # two held-out sequences
    assert len(result.arms["cpc_then_som"].loss) == 4  # CPC steps, then SOM steps
    assert "claims hold" in str(paper.check_claims(result))


def test_node_labels_are_training_medians_and_fill_empty_nodes_from_neighbours():
    side = 3
    bmus = np.array([0, 0, 0, 4, 4, 8])
    values = np.array([1.0, 2.0, 9.0, 5.0, 7.0, 3.0])
    labels = paper.node_labels(bmus, values, side)
    assert labels[0] == 2.0 and labels[4] == 6.0 and labels[8] == 3.0  # medians
    assert labels[1] == 4.0  # neighbours 0 and 4 (2 is empty): median of 2 and 6
    assert labels[5] == 4.5  # neighbours 4 and 8: median of 6 and 3
    assert labels[2] == np.median(values)  # neighbours 1 and 5 are empty too
    test_bmus, truth = np.array([0, 4, 1]), np.array([2.5, 6.0, 0.0])
    want = np.mean([(2.0 - 2.5) ** 2, 0.0, (4.0 - 0.0) ** 2])
    assert paper.label_error(labels, test_bmus, truth) == pytest.approx(want)


def _arm(**kw):
    base = dict(
        method="som_cpc",
        loss_steps=[0, 1],
        loss=[1.0, 1.0],
        sigma=[3.0, 1.0],
        purity=0.9,
        nmi=0.6,
        smoothness=1.0,
        topographic_error=0.2,
        quantization=0.05,
        freq_error=2.0,
        infonce_end=1.0,
        som_share=0.05,
        node_regimes=[[1]],
        node_freq=[4.0],
        trajectory=[0],
        trajectory_regimes=[0],
        seconds=0.0,
    )
    return paper.ArmResult(**(base | kw))


def _result(ours, control, ae):
    config = paper.PRESETS["notebook"].to_dict()
    arms = {"som_cpc": ours, "cpc_then_som": control, "ae_som": ae}
    return paper.Result(config=config, side=6, regime_freqs=[4.0, 8.0], arms=arms)


def test_claims_hold_only_by_margin_and_premises_gate_them():
    control = _arm(method="cpc_then_som", loss_steps=[0, 1, 2, 3], som_share=None)
    ae = _arm(method="ae_som", infonce_end=None, som_share=None, smoothness=3.0, freq_error=9.0)
    better = _arm(topographic_error=0.1, smoothness=0.8, freq_error=1.0)
    rows = {r.claim: r for r in paper.check_claims(_result(better, control, ae)).rows}
    assert all(r.holds for r in rows.values())
    tie = _arm()  # equal to the control: a tie is not a hold
    rows = {r.claim: r for r in paper.check_claims(_result(tie, control, ae)).rows}
    assert sum("CPC, then SOM" in c and r.holds for c, r in rows.items()) == 0
    off = _arm(topographic_error=0.1, smoothness=0.8, freq_error=1.0, som_share=1e-6)
    report = paper.check_claims(_result(off, control, ae))
    gated = [r for r in report.rows if "CPC, then SOM's" in r.claim]
    assert len(gated) == 3 and all(not r.premise_ok and not r.holds for r in gated)
    unlearned = _arm(infonce_end=1.3, topographic_error=0.1, smoothness=0.8, freq_error=1.0)
    report = paper.check_claims(_result(unlearned, control, ae))
    assert report.n_hold == 1  # only the premise on the SOM terms' share


def test_validation_split_never_touches_the_held_out_sequences():
    cfg = paper.PRESETS["smoke"].replace(n_sequences=16, windows=8)
    full, val = paper.load_data(cfg), paper.load_data(cfg.replace(validation=True))
    assert len(full["test"]) == 4 and len(val["test"]) == 3 and len(val["train"]) == 9
    assert torch.equal(val["test"], full["train"][:3]) and torch.equal(
        val["train"], full["train"][3:]
    )
    assert torch.equal(val["train_freq"], full["train_freq"][3:])
    flat = full["test"].flatten(1)
    for part in (val["train"], val["test"]):
        assert not any(torch.equal(a, b) for a in part.flatten(1) for b in flat)


def test_select_beta_takes_the_lowest_validation_te_among_engaged_betas(monkeypatch):
    seen = []

    def fake_run(cfg):
        seen.append(cfg)
        te = {0.1: 0.3, 0.3: 0.2, 1.0: 0.1, 3.0: 0.05}[cfg.beta]
        share = {0.1: 0.001, 0.3: 0.02, 1.0: 0.05, 3.0: 0.002}[cfg.beta]
        arm = _arm(topographic_error=te, som_share=share)
        return paper.Result(config=cfg.to_dict(), side=6, regime_freqs=[4.0], arms={"som_cpc": arm})

    from companion.papers.som_cpc import experiment

    monkeypatch.setattr(experiment, "run", fake_run)
    cfg = paper.PRESETS["smoke"]
    chosen, runs = paper.select_beta(cfg, (0.1, 0.3, 1.0, 3.0))
    assert chosen == 1.0  # 3.0 has the lowest TE but its SOM terms stay under the share
    assert all(c.validation and c.methods == ("som_cpc",) for c in seen)
    assert set(runs) == {0.1, 0.3, 1.0, 3.0}
    monkeypatch.setattr(
        experiment,
        "run",
        lambda cfg: paper.Result(
            config={}, side=6, regime_freqs=[], arms={"som_cpc": _arm(som_share=0.0)}
        ),
    )
    assert paper.select_beta(cfg, (0.1, 0.3))[0] == 0.3  # none engaged: the largest


def test_post_hoc_som_stage_runs_the_frozen_encoder_in_train_mode():
    cfg = paper.PRESETS["smoke"].replace(n_sequences=6, windows=10, steps=2)
    model = paper.build_model(cfg)
    model.eval()
    train = paper.load_data(cfg)["train"]
    step = paper.make_step(cfg, "cpc_then_som", train)
    s, t = torch.tensor([0, 1, 2, 3]), torch.tensor([0, 1, 2, 3])
    loss, _ = step(model, (s, t, torch.full((4,), cfg.steps)))  # stage 2: SOM on frozen CPC
    assert model.encoder.training  # dropout on, as the official post-hoc SOM (model.train())
    loss.backward()
    assert all(p.grad is None for p in model.encoder.parameters())  # the encoder is frozen
    assert model.som.codebook.grad.abs().sum() > 0


def _notebook_cell(marker):
    from pathlib import Path

    nb = json.loads(Path("notebooks/som_cpc.ipynb").read_text())
    sources = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    (source,) = [s for s in sources if marker in s]
    return source


def test_exercise_checks_fail_on_trivial_answers():
    from companion.core.exercises import ExerciseError

    fails = (ExerciseError, RuntimeError, TypeError, AttributeError)
    check_cell = _notebook_cell('report_ok("SOM loss")')

    def run_som_loss(answer):
        exec(check_cell, {"paper": paper, "torch": torch, "my_som_loss": answer})

    def reference(z, codebook, h):
        return (h * (codebook[None] - z.detach()[:, None]).pow(2).mean(-1)).sum(-1).mean()

    run_som_loss(reference)
    for planted in (
        lambda z, e, h: None,
        lambda z, e, h: torch.zeros(()),
        lambda z, e, h: paper.som_loss(z, e, h),  # the package's function copied
        lambda z, e, h: (h * (e[None] - z[:, None]).pow(2).mean(-1)).sum(-1).mean(),  # no sg
        lambda z, e, h: (h * (e[None] - z.detach()[:, None]).pow(2).sum(-1)).sum(-1).mean(),
    ):
        with pytest.raises(fails):
            run_som_loss(planted)
    smoothness_cell = _notebook_cell('report_ok("random-map smoothness")')

    class _Arm:
        smoothness = 1.0

    class _Res:
        arms = {"som_cpc": _Arm()}

    from companion.core import check, check_close, report_ok

    env = {"paper": paper, "np": np, "side": 6, "result": _Res()}
    env |= {"check": check, "check_close": check_close, "report_ok": report_ok}
    exec(smoothness_cell, env | {"random_smoothness": 3.0803})
    for planted in (None, 0.0, 1.0, float(np.sqrt(2) * 6 / 3)):
        with pytest.raises(fails):
            exec(smoothness_cell, env | {"random_smoothness": planted})
