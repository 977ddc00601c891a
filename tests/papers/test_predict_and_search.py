"""Predict-and-Search against independent computations: brute-force enumeration of tiny MILPs,
loops over edges and pool members, the closed form of the primal gap, MPS round trips."""

import numpy as np
import pytest
import torch

from companion.core import ClaimReport
from companion.errors import CompanionError
from companion.papers import predict_and_search as paper
from companion.papers.predict_and_search.experiment import Arm
from companion.papers.predict_and_search.method import _minmax


def tiny(seed=0, n=10, m=3):
    return paper.make_knapsack(n, m, np.random.default_rng(seed))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_solve_matches_brute_force(seed):
    inst = tiny(seed)
    best, _ = paper.brute_force(inst)
    assert paper.solve(inst).objective == pytest.approx(best)


@pytest.mark.parametrize("delta", [0, 1, 3])
def test_trust_region_row_matches_l1_ball_by_enumeration(delta):
    inst = tiny(3)
    scores = np.random.default_rng(4).random(inst.n)
    idx, xhat = paper.partial_assignment(scores, 3, 2)
    best, _ = paper.brute_force(inst, extra_l1=(idx, xhat, delta))
    got = paper.predict_and_search(inst, scores, 3, 2, delta, node_limit=None)
    assert got.objective == pytest.approx(best)
    assert np.abs(got.x[idx] - xhat).sum() <= delta


def test_partial_assignment_by_loop():
    scores = np.array([0.9, 0.1, 0.5, 0.8, 0.2, 0.7])
    idx, xhat = paper.partial_assignment(scores, 2, 2)
    ranked = sorted(range(6), key=lambda i: scores[i])
    assert set(idx[xhat == 0]) == set(ranked[:2]) and set(idx[xhat == 1]) == set(ranked[-2:])
    with pytest.raises(ValueError):
        paper.partial_assignment(scores, 4, 3)


def test_energy_weighted_bce_by_loop():
    torch.manual_seed(0)
    logits, pool = torch.randn(5), torch.tensor([[1.0, 0, 1, 0, 1], [0, 0, 1, 1, 1]])
    objs, tau = torch.tensor([-10.0, -9.0]), 2.0
    w = np.exp([10 / tau, 9 / tau])
    w = w / w.sum()
    p = 1 / (1 + np.exp(-logits.numpy()))
    expected = 0.0
    for j in range(2):
        for i in range(5):
            x = pool[j, i].item()
            expected -= w[j] * (x * np.log(p[i]) + (1 - x) * np.log(1 - p[i]))
    got = paper.energy_weighted_bce(logits, pool, objs, tau)
    assert got.item() == pytest.approx(expected, rel=1e-5)


def test_half_convolution_matches_edge_loop():
    torch.manual_seed(0)
    conv = paper.HalfConvolution(4).double()
    left, right = torch.randn(3, 4).double(), torch.randn(2, 4).double()
    edges = torch.tensor([[0, 1, 2, 2], [0, 0, 1, 0]])
    ea = torch.ones(4, 1).double()
    agg = torch.zeros(2, 4).double()
    for s, d in edges.T.tolist():
        m = conv.left(left[s]) + conv.edge(ea[0]) + conv.right(right[d])
        agg[d] += conv.message(m)
    expected = conv.out(torch.cat([conv.norm(agg), right], -1))
    assert torch.allclose(conv(left, edges, ea, right), expected)


def test_half_convolution_follows_official_gcn():
    """``GCN.py``: the message MLP is LayerNorm → ReLU → Linear, the linear map with a bias acts
    on the receiving node (torch-geometric's ``_i``), the edge features pass a LayerNorm."""
    conv = paper.HalfConvolution(8)
    assert conv.right.bias is not None and conv.left.bias is None and conv.edge.bias is None
    kinds = [type(m) for m in conv.message]
    assert kinds == [torch.nn.LayerNorm, torch.nn.ReLU, torch.nn.Linear]
    assert isinstance(paper.BipartiteGNN(dim=8).edge_embed, torch.nn.LayerNorm)


def test_independent_set_rows_are_edges_and_solve_matches_brute_force():
    inst = paper.make_independent_set(10, 0.3, np.random.default_rng(0))
    assert np.all(inst.A.sum(1) == 2) and np.all(inst.b == 1) and np.all(inst.c == -1)
    assert len({tuple(np.flatnonzero(r)) for r in inst.A}) == len(inst.A)  # no repeated edge
    best, _ = paper.brute_force(inst)
    assert paper.solve(inst).objective == pytest.approx(best)


def test_solve_prints_nothing(capfd):
    rng = np.random.default_rng(1)
    for _ in range(3):
        paper.solve(paper.make_independent_set(40, 0.1, rng), node_limit=1)
    out, err = capfd.readouterr()
    assert out == "" and "transformNewIntegerFeasibleSolution" not in err


def test_bank_matches_config_and_rejects_another():
    insts, lab = paper.from_bank(paper.PRESETS["smoke"])
    assert insts[0].n == paper.PRESETS["notebook"].n_vars
    for x, o, inst in zip(lab.pools[0], lab.objs[0], [insts[0]] * 3):
        assert inst.feasible(np.array(x)) and inst.objective(np.array(x)) == pytest.approx(o)
    with pytest.raises(CompanionError):
        paper.from_bank(paper.PRESETS["smoke"].replace(n_vars=30))


def test_random_scores_put_a_feasible_set_on_top():
    """The control's ``k`` ones are a random independent set (so its trust region is never
    empty); the rest of the scores are uniform below them."""
    rng = np.random.default_rng(0)
    inst = paper.make_independent_set(40, 0.1, rng)
    for _ in range(5):
        s = paper.random_scores(inst, 8, rng)
        idx, xhat = paper.partial_assignment(s, 8, 8)
        x = np.zeros(inst.n)
        x[idx[xhat == 1]] = 1
        assert inst.feasible(x) and x.sum() == 8
        assert np.sum(s >= 2) == 8 and np.all(s[s < 2] < 1)
    again = [paper.random_scores(inst, 8, np.random.default_rng(3)) for _ in range(2)]
    assert np.array_equal(*again)


def test_bipartite_graph_features():
    inst = paper.Instance(np.array([-1.0, -2.0, 0.0]), np.array([[1.0, 0, 3], [2, 2, 0]]),
                          np.array([3.0, 2.0]))  # fmt: skip
    g = paper.bipartite_graph(inst)
    assert g["edges"].shape == (2, 4) and g["var"].shape == (3, 6) and g["cons"].shape == (2, 4)
    raw_obj = np.array([[-1.0], [-2.0], [0.0]])
    assert np.allclose(g["var"][:, 0].numpy(), _minmax(raw_obj)[:, 0])  # (c - min) / range
    assert np.allclose(g["var"][:, 0].numpy(), [0.5, 0.0, 1.0])
    assert paper.BipartiteGNN()(g).shape == (3,)


def test_primal_gap_closed_form():
    assert paper.primal_gap(-90.0, -100.0) == pytest.approx(0.1)
    assert paper.primal_gap(None, -100.0) == 1.0
    assert paper.primal_gap(0.0, 0.0) == 0.0


def test_solution_pool_distinct_and_no_better_than_optimum():
    inst = tiny(5)
    xs, objs = paper.solution_pool(inst, 3, None)
    best, _ = paper.brute_force(inst)
    assert len({tuple(x) for x in xs}) == len(xs) == 3
    assert objs[0] == pytest.approx(best) and all(o >= best - 1e-9 for o in objs)
    assert all(inst.feasible(x) for x in xs)


def test_mps_round_trip_and_g_rows(tmp_path):
    inst = tiny(6)
    back = paper.read_mps(paper.write_mps(inst, tmp_path / "a.mps"))
    assert np.allclose(back.c, inst.c) and np.allclose(back.A, inst.A)
    assert np.allclose(back.b, inst.b)
    text = "NAME g\nROWS\n N OBJ\n G R0\nCOLUMNS\n x OBJ 1\n x R0 2\n y R0 1\nRHS\n RHS R0 1\n"
    text += "BOUNDS\n BV BND x\n UP BND y 1\nENDATA\n"
    (tmp_path / "g.mps").write_text(text)
    g = paper.read_mps(tmp_path / "g.mps")
    assert np.allclose(g.A, [[-2.0, -1.0]]) and np.allclose(g.b, [-1.0])
    (tmp_path / "bad.mps").write_text(text.replace(" UP BND y 1", " UP BND y 5"))
    with pytest.raises(CompanionError):
        paper.read_mps(tmp_path / "bad.mps")


def test_presets_validate():
    assert set(paper.PRESETS) >= {"smoke", "notebook", "full"}
    with pytest.raises(CompanionError):
        paper.PRESETS["smoke"].replace(k_shares=(0.7,))
    with pytest.raises(CompanionError):
        paper.PRESETS["smoke"].replace(source="nope")


def test_smoke_runs_and_reports():
    result = paper.run(paper.PRESETS["smoke"])
    assert set(result.arms) == set(paper.ARMS)
    assert all(0 <= g <= 1 for a in result.arms.values() for g in a.gaps)
    report = paper.check_claims(result)
    assert str(report).splitlines()[-1].startswith("claims hold: ")
    again = paper.Result.from_dict(result.to_dict())
    assert again.mean_gap("search") == result.mean_gap("search")


def fake(plain, fixing, search, random, agreement=0.8):
    arms = {
        name: Arm(5, 2, [None] * len(g), list(g))
        for name, g in dict(plain=plain, fixing=fixing, search=search, random=random).items()
    }
    cfg = paper.PRESETS["smoke"].to_dict()
    return paper.Result(cfg, [0.0] * len(plain), arms, agreement, 0.5, [1.0], [[0.5]], {"5,0": 0.1})


def test_claims_hold_fail_and_premise():
    good = paper.check_claims(fake([0.1, 0.2], [0.2, 0.2], [0.0, 0.01], [0.1, 0.1]))
    assert isinstance(good, ClaimReport) and good.n_hold == len(good.rows)
    bad = paper.check_claims(fake([0.1, 0.2], [0.01, 0.01], [0.1, 0.1], [0.1, 0.1]))
    assert [r.holds for r in bad.rows[2:]] == [False, False, False]
    solved = paper.check_claims(fake([0.0, 0.0], [0.1, 0.1], [0.0, 0.0], [0.1, 0.1]))
    assert not solved.rows[0].holds and solved.rows[2].verdict.startswith("not tested")
    blind = paper.check_claims(fake([0.1, 0.2], [0.2, 0.2], [0.0, 0.01], [0.1, 0.1], 0.55))
    assert all(r.verdict.startswith("not tested") for r in blind.rows[2:])
