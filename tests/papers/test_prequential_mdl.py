"""prequential_mdl against independent computations (hand-computed bits, brute force, loops)."""

import copy
import json
import math

import numpy as np
import pytest
import torch

from companion.errors import CompanionError
from companion.papers import prequential_mdl as paper


def tiny_data(n=40, d=5, classes=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    y = torch.randint(0, classes, (n,), generator=g)
    return x, y


# --- Eq. 1: code lengths in bits, by hand ------------------------------------------------------


def test_code_length_bits_by_hand():
    # logits (0, ln 3): p = (1/4, 3/4); label 1 costs -log2(3/4) = 0.415 bits, label 0 costs 2 bits
    z = torch.tensor([[0.0, math.log(3.0)], [0.0, math.log(3.0)]], dtype=torch.float64)
    bits = paper.code_length_bits(z, torch.tensor([1, 0]))
    assert bits.tolist() == pytest.approx([math.log2(4 / 3), 2.0], rel=1e-12)
    # β = 2 squares the odds: p = (1/10, 9/10)
    bits = paper.code_length_bits(z, torch.tensor([1, 0]), beta=2.0)
    assert bits.tolist() == pytest.approx([math.log2(10 / 9), math.log2(10)], rel=1e-12)
    # equal logits are the uniform code
    flat = paper.code_length_bits(torch.zeros(3, 10), torch.tensor([0, 4, 9]))
    assert flat.tolist() == pytest.approx([math.log2(10)] * 3)
    assert paper.uniform_code_bits(3, 10) == pytest.approx(flat.sum().item())


def test_fit_inverse_temperature_matches_brute_force():
    g = torch.Generator().manual_seed(1)
    z = 3 * torch.randn(50, 4, generator=g, dtype=torch.float64)
    y = torch.randint(0, 4, (50,), generator=g)
    grid = np.linspace(0.05, 5.0, 4001)
    nll = [paper.code_length_bits(z, y, b).sum().item() for b in grid]
    beta = paper.fit_inverse_temperature(z, y)
    assert beta == pytest.approx(grid[int(np.argmin(nll))], abs=2e-3)
    assert paper.fit_inverse_temperature(z[:0], y[:0]) == 1.0


def test_block_boundaries_and_budget():
    assert paper.block_boundaries(100, 10) == [10, 20, 40, 80, 100]
    assert paper.block_boundaries(1797, 16) == [16, 32, 64, 128, 256, 512, 1024, 1797]
    steps = paper.split_budget(101, [10, 20, 40, 80])
    assert sum(steps) == 101
    assert steps == sorted(steps)  # more steps on longer prefixes
    assert [round(101 * s / 150) for s in (10, 20, 40, 80)] == pytest.approx(steps, abs=1)


# --- the online estimator: a loop written out, and no leakage ----------------------------------


def test_online_code_length_matches_a_written_out_loop():
    x, y = tiny_data()
    model = paper.MLP(5, (7,), 3, seed=0, dtype=torch.float64)
    reference = copy.deepcopy(model)
    bits, _, steps = paper.online_code_length(
        model, torch.optim.SGD(model.parameters(), lr=0.1), x, y, 3, 8, steps_on_new=2
    )
    opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    expected = [8 * math.log2(3)]
    for b in range(5):  # 5 minibatches of 8
        xb, yb = x[8 * b : 8 * b + 8], y[8 * b : 8 * b + 8]
        if b > 0:
            with torch.no_grad():
                p = torch.softmax(reference(xb), -1)
            expected.append(sum(-math.log2(p[i, yb[i]].item()) for i in range(8)))
        if b < 4:
            for _ in range(2):
                opt.zero_grad()
                torch.nn.functional.cross_entropy(reference(xb), yb).backward()
                opt.step()
    got = [bits[8 * b : 8 * b + 8].sum().item() for b in range(5)]
    assert got == pytest.approx(expected, rel=1e-9)
    assert steps == 4 * 2


@pytest.mark.parametrize("replay", [0, 3])
def test_online_bits_of_a_minibatch_do_not_depend_on_its_own_or_later_labels(replay):
    x, y = tiny_data()

    def bits_of(labels):
        model = paper.MLP(5, (7,), 3, seed=0, dtype=torch.float64)
        return paper.online_code_length(
            model,
            torch.optim.Adam(model.parameters(), lr=0.05),
            x,
            labels,
            3,
            8,
            replay_steps=replay,
            rng=np.random.default_rng(0),
        )[1]

    changed = y.clone()
    changed[16:] = (changed[16:] + 1) % 3  # labels of minibatches 2, 3, 4 changed
    a, b = bits_of(y), bits_of(changed)
    assert torch.equal(a[:24], b[:24])  # logits of minibatches 0-2 were made before their labels
    assert not torch.equal(a[24:], b[24:])  # ... and later ones do learn from the change


def test_blockwise_is_causal_and_counts_its_steps():
    x, y = tiny_data()
    bounds = paper.block_boundaries(40, 8)

    def run(labels):
        return paper.blockwise_code_length(
            lambda: paper.MLP(5, (7,), 3, seed=0, dtype=torch.float64),
            lambda m: torch.optim.Adam(m.parameters(), lr=0.05),
            x,
            labels,
            3,
            8,
            bounds,
            [3, 4, 5],
            np.random.default_rng(0),
        )

    bits, logits, steps = run(y)
    assert steps == 12 and bounds == [8, 16, 32, 40]
    assert bits[:8].tolist() == pytest.approx([math.log2(3)] * 8)
    changed = y.clone()
    changed[16:] = (changed[16:] + 1) % 3
    assert torch.equal(run(changed)[1][:32], logits[:32])  # block [16, 32) fitted on [0, 16)


def test_forward_calibration_fits_only_the_past():
    g = torch.Generator().manual_seed(2)
    z = 4 * torch.randn(40, 3, generator=g, dtype=torch.float64)
    y = torch.randint(0, 3, (40,), generator=g)
    bits, betas = paper.forward_calibrated_bits(z, y, batch_size=8, window=16, first=8)
    assert betas[:2] == [1.0, paper.fit_inverse_temperature(z[0:0], y[0:0])]
    for b in range(2, 5):  # β_b from the at most 16 examples before minibatch b, after the first 8
        lo = max(8, 8 * b - 16)
        assert betas[b] == pytest.approx(
            paper.fit_inverse_temperature(z[lo : 8 * b], y[lo : 8 * b])
        )
        expected = paper.code_length_bits(z[8 * b : 8 * b + 8], y[8 * b : 8 * b + 8], betas[b])
        assert torch.allclose(bits[8 * b : 8 * b + 8], expected)
    changed = y.clone()
    changed[24:] = (changed[24:] + 1) % 3
    assert paper.forward_calibrated_bits(z, changed, 8, 16, 8)[1][:4] == betas[:4]
    # the hindsight fit is a lower bound for any single temperature, β = 1 included
    hindsight = paper.method.hindsight_calibrated_bits(z, y, 8)
    uncal = paper.code_length_bits(z[8:], y[8:]).sum().item() + 8 * math.log2(3)
    assert hindsight <= uncal + 1e-9


def test_mlp_initialisation_is_numpy_and_logistic_regression_has_one_layer():
    a = paper.MLP(6, (4,), 3, seed=5, dtype=torch.float64)
    b = paper.MLP(6, (4,), 3, seed=5, dtype=torch.float64)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert len(paper.MLP(6, (), 3, seed=0, dtype=torch.float32).layers) == 1


# --- presets, runs, claims ---------------------------------------------------------------------


def test_presets_and_validation():
    assert set(paper.PRESETS) >= {"smoke", "notebook", "full"}
    for cfg in paper.PRESETS.values():
        cfg.validate()
    with pytest.raises(CompanionError):
        paper.PRESETS["smoke"].replace(dataset="imagenet")
    with pytest.raises(CompanionError):
        paper.PRESETS["smoke"].replace(lrs=())
    assert paper.PRESETS["full"].precision == "32-true"


def test_smoke_run_equal_steps_save_resume_and_claims(tmp_path):
    cfg = paper.PRESETS["smoke"]
    result = paper.run(cfg, out_dir=tmp_path)
    assert len(result.orders) == len(cfg.lrs) * cfg.num_orders
    for order in result.orders:
        assert len(set(order.steps.values())) == 1
        for arm in paper.ARMS:
            assert order.total_bits(arm) < 2 * result.uniform_bits
    # the chosen rate's code pays log2 K bits for naming the rate
    seed = result.seeds[0]
    best = min(o.total_bits("blockwise") for o in result.orders)
    assert result.description_length("blockwise", seed) == pytest.approx(
        best + math.log2(len(cfg.lrs))
    )
    loaded = paper.Result.load(tmp_path / "result.json")
    plain = json.loads(json.dumps(result.to_dict()))
    assert loaded.to_dict() == plain
    again = paper.run(cfg, out_dir=tmp_path, resume=True)
    assert json.loads(json.dumps(again.to_dict())) == plain
    report = paper.check_claims(result)
    assert str(report).splitlines()[-1].startswith("claims hold: ")


def test_run_is_deterministic():
    cfg = paper.PRESETS["smoke"].replace(lrs=(1e-2,), max_examples=96)
    a, b = paper.run(cfg), paper.run(cfg)
    strip = lambda r: [{k: v for k, v in o.items() if k != "seconds"} for o in r["orders"]]  # noqa: E731
    assert strip(a.to_dict()) == strip(b.to_dict())


def test_claims_fail_when_the_effect_is_absent():
    cfg = paper.PRESETS["smoke"].replace(max_examples=96)
    result = paper.run(cfg)
    for order in result.orders:  # replay no better than either baseline, calibration useless
        order.batch_bits["online_replay"] = list(order.batch_bits["blockwise"])
        order.batch_bits["online"] = list(order.batch_bits["blockwise"])
        order.batch_bits["replay_calibrated"] = list(order.batch_bits["blockwise"])
        order.hindsight_bits = order.total_bits("blockwise")
    rows = paper.check_claims(result).rows
    assert [r.holds for r in rows[1:]] == [False] * 5
    assert rows[4].verdict == "not tested: premise failed"
