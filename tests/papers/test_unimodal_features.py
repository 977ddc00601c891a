"""unimodal_features: the method against independent computations, the presets, the claims."""

import math

import numpy as np
import pytest
import torch

from companion.papers import unimodal_features as paper
from companion.papers.unimodal_features import claims as claims_mod
from companion.papers.unimodal_features.experiment import Part, UniModalResult
from companion.papers.unimodal_features.method import class_bits, input_dims


def test_paired_code_is_an_xor_of_the_two_modalities():
    """With a huge amplitude the noise is negligible: the signs of the paired parts of the two
    modalities XOR to the label's bits, and either alone is independent of the label."""
    world = paper.draw_world(0, classes=4, paired=1e6, strength_a=0.0, strength_b=0.0)
    xa, xb, y = paper.sample(world, 4000, np.random.default_rng(1))
    bits = class_bits(4)
    pa = xa[:, world.means_a.shape[1] : world.means_a.shape[1] + bits] > 0
    start_b = 2 * bits * world.copies_b
    pb = xb[:, start_b : start_b + bits] > 0
    for i in range(len(y)):  # a loop, bit by bit
        for j in range(bits):
            assert (pa[i, j] ^ pb[i, j]) == bool((y[i] >> j) & 1)
    # modality a's key alone: every class about equally often for each code
    for j in range(bits):
        share = np.mean(y[pa[:, j]] == 0)
        assert abs(share - 0.25) < 0.04


def test_modality_b_bits_are_xor_pairs():
    world = paper.draw_world(3, classes=4, strength_b=1e6, copies_b=3)
    xb = paper.sample(world, 500, np.random.default_rng(2))[1]
    _, _, y = paper.sample(world, 500, np.random.default_rng(2))
    pairs = xb[:, : 2 * 2 * 3].reshape(500, 2, 3, 2)
    for i in range(500):
        for bit in range(2):
            for c in range(3):
                u, us = pairs[i, bit, c]
                assert (u * us > 0) == bool((y[i] >> bit) & 1)
    assert input_dims(world) == (world.means_a.shape[1] + 2 + 22, 12 + 2 + 22)


def test_umt_loss_matches_a_hand_computation():
    torch.manual_seed(0)
    logits, y = torch.randn(5, 3, dtype=torch.float64), torch.tensor([0, 2, 1, 1, 0])
    s = {m: torch.randn(5, 4, dtype=torch.float64) for m in "ab"}
    t = {m: torch.randn(5, 4, dtype=torch.float64) for m in "ab"}
    ce = 0.0
    for i in range(5):
        row = logits[i].tolist()
        ce += -(row[y[i]] - math.log(sum(math.exp(v) for v in row)))
    ce /= 5
    mse = sum(
        sum((s[m][i, k] - t[m][i, k]).item() ** 2 for i in range(5) for k in range(4)) / 20
        for m in "ab"
    )
    got = paper.umt_loss(logits, y, s, t, alpha=0.7).item()
    assert got == pytest.approx(ce + 0.7 * mse, rel=1e-12)
    assert paper.umt_loss(logits, y, s, t, 0.0).item() == pytest.approx(ce, rel=1e-12)


def test_ume_is_the_mean_of_probabilities_and_the_rule():
    la, lb = torch.tensor([[0.0, math.log(3.0)]]), torch.tensor([[math.log(4.0), 0.0]])
    p = paper.ume_probabilities(la, lb)
    assert torch.allclose(p, torch.tensor([[0.5 * (0.25 + 0.8), 0.5 * (0.75 + 0.2)]]))
    assert paper.guiding_rule(0.8, 0.7) == "UME"
    assert paper.guiding_rule(0.7, 0.7) == "UME"
    assert paper.guiding_rule(0.6, 0.7) == "UMT"


def test_probe_matches_numpy_ridge():
    rng = np.random.default_rng(0)
    tr, te = rng.standard_normal((80, 6)), rng.standard_normal((40, 6))
    ytr, yte = rng.integers(0, 3, 80), rng.integers(0, 3, 40)
    tr[:, 0] += 2 * ytr
    te[:, 0] += 2 * yte
    mean, std = tr.mean(0), tr.std(0, ddof=1) + 1e-8
    a = np.hstack([(tr - mean) / std, np.ones((80, 1))])
    b = np.hstack([(te - mean) / std, np.ones((40, 1))])
    w = np.linalg.solve(a.T @ a + np.eye(7), a.T @ np.eye(3)[ytr])
    expected = np.mean((b @ w).argmax(1) == yte)
    got = paper.probe_accuracy(tr, torch.as_tensor(ytr), te, torch.as_tensor(yte), 3)
    assert got == pytest.approx(expected)


def test_presets_and_smoke_run(tmp_path):
    assert set(paper.PRESETS) >= {"smoke", "notebook", "full"}
    cfg = paper.PRESETS["smoke"].replace(device="cpu")
    result = paper.run(cfg, out_dir=tmp_path)
    assert set(result.parts) == {"unimodal", "paired"}
    part = result.parts["unimodal"][0]
    assert set(part.test_accuracy) == {"uni_a", "uni_b", "ume", "naive", "umt", "control"}
    assert part.choice in ("UME", "UMT") and part.alpha in cfg.alphas
    again = paper.run(cfg, out_dir=tmp_path, resume=True)
    assert again.to_dict() == result.to_dict()
    loaded = UniModalResult.load(tmp_path / "result.json")
    assert str(paper.check_claims(loaded)) == str(paper.check_claims(result))
    # the fusion arms start from the same weights
    a, b = paper.experiment.new_fusion(cfg, 0), paper.experiment.new_fusion(cfg, 0)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


def _part(dataset, seed, probe_b, test, val, choice):
    probe = {arm: {"a": 0.8, "b": v} for arm, v in probe_b.items()}
    return Part(
        dataset=dataset,
        seed=seed,
        test_accuracy=test,
        val_accuracy=val,
        probe=probe,
        probe_steps=[0, 1],
        probe_curve={},
        train_loss={},
        choice=choice,
        alpha=0.3,
        alpha_val={},
        seconds=0.0,
    )


def _fixture(lazy: bool, paired_gap: float, ume_edge: float = 0.05):
    uni_probe = {"uni": 0.8, "naive": 0.7 if lazy else 0.8, "umt": 0.8, "control": 0.7}
    accs = dict(uni_a=0.7, uni_b=0.7, ume=0.9, naive=0.9 - ume_edge, umt=0.88, control=0.8)
    paired = dict(
        uni_a=0.5, uni_b=0.4, ume=0.5, naive=0.5 + paired_gap, umt=0.5 + paired_gap, control=0.6
    )
    parts = {
        "unimodal": [
            _part("unimodal", s, uni_probe, accs, {"ume": 0.9, "naive": 0.85, "umt": 0.88}, "UME")
            for s in range(3)
        ],
        "paired": [
            _part(
                "paired",
                s,
                uni_probe,
                paired,
                {"ume": 0.5, "naive": 0.5 + paired_gap, "umt": 0.9},
                "UMT" if paired_gap > 0 else "UME",
            )
            for s in range(3)
        ],
    }
    return UniModalResult(config={}, parts=parts)


def test_claims_on_fixtures():
    good = paper.check_claims(_fixture(lazy=True, paired_gap=0.4))
    assert good.all_hold and all(inv.holds for inv in good.invariants)
    no_premise = paper.check_claims(_fixture(lazy=False, paired_gap=0.4))
    assert not no_premise.rows[0].holds
    assert [r.verdict for r in no_premise.rows[1:3]] == ["not tested: premise failed"] * 2
    no_paired = paper.check_claims(_fixture(lazy=True, paired_gap=0.0))
    assert not no_paired.rows[3].holds
    verdicts = [no_paired.rows[i].verdict for i in (5, 7, 8)]
    assert verdicts == ["not tested: premise failed"] * 3
    assert no_paired.rows[6].holds  # the unimodal data's row keeps its own premise
    # naive fusion as good as UME without paired features: the rule's UME branch is not tested
    no_edge = paper.check_claims(_fixture(lazy=True, paired_gap=0.4, ume_edge=0.0))
    assert not no_edge.rows[4].holds
    verdicts = [r.verdict for r in no_edge.rows]
    assert verdicts[6] == verdicts[8] == "not tested: premise failed"
    assert no_edge.rows[5].holds and no_edge.rows[7].holds  # the paired data's rows
    # a pick that trails the other recipe fails
    worse = _fixture(lazy=True, paired_gap=0.4)
    for p in worse.parts["unimodal"]:
        p.test_accuracy["umt"] = 0.95
    assert not paper.check_claims(worse).rows[6].holds
    assert claims_mod.LAZY > 0 and claims_mod.CONTROL >= claims_mod.RECOVER
