"""Unit tests for the grouped diagonal network: against autograd + the official per-group loop."""

import numpy as np
import pytest
import torch

from companion.errors import CompanionError
from companion.papers.group_sparsity import method as M


def _problem(m=12, L=5, s=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(m, L * s, generator=g, dtype=torch.float64)
    y = torch.randn(m, generator=g, dtype=torch.float64)
    u = 0.3 + torch.rand(L, generator=g, dtype=torch.float64)
    V = M.normalize_rows(torch.randn(L, s, generator=g, dtype=torch.float64))
    return X, y, u, V


def _official_one_epoch(X, y, u0, V0, lr, depth):
    """The official groupTrainer._one_epoch, written as its per-group loop with SGD optimizers."""
    u = torch.nn.Parameter(u0.clone())
    vs = [torch.nn.Parameter(V0[i].clone()) for i in range(len(u0))]
    w = torch.cat([u[i] ** depth * vs[i] for i in range(len(vs))])
    loss = torch.nn.MSELoss()(X @ w, y)
    loss.backward()
    for i, v in enumerate(vs):
        opt = torch.optim.SGD([v], lr=1.0 / u.data[i].item() ** (depth * 2))
        opt.step()
        v.data = v.data / (v.data**2).sum().sqrt()
    torch.optim.SGD([u], lr=lr).step()
    return u.data, torch.stack([v.data for v in vs])


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_alg1_step_matches_official_loop(depth):
    X, y, u, V = _problem()
    u_ref, V_ref = _official_one_epoch(X, y, u, V, 0.05, depth)
    u_new, V_new = M.alg1_step(X, y, u, V, 0.05, depth)
    torch.testing.assert_close(u_new, u_ref, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(V_new, V_ref, rtol=1e-10, atol=1e-12)


def test_alg1_step_is_finite_at_tiny_init_in_float32():
    X, y, _, _ = _problem()
    u, V = M.init_grouped(5, 3, 1e-6)
    u2, V2 = M.alg1_step(X.float(), y.float(), u, V, 0.01)
    assert torch.isfinite(u2).all() and torch.isfinite(V2).all()
    # at tiny u the v step is v <- normalise(-grad_w L) per group
    g = M.risk_gradient(X.float(), y.float(), M.group_weights(u, V)).reshape(5, 3)
    torch.testing.assert_close(V2, M.normalize_rows(-g), rtol=1e-5, atol=1e-6)


def test_alg2_step_matches_autograd_sgd():
    X, y, u0, V0 = _problem(seed=1)
    u = torch.nn.Parameter(u0.clone())
    V = torch.nn.Parameter(V0.clone())
    torch.nn.MSELoss()(X @ M.group_weights(u, V), y).backward()
    torch.optim.SGD([u, V], lr=0.03).step()
    V_ref = V.data / V.data.norm(dim=1, keepdim=True)
    u_new, V_new = M.alg2_step(X, y, u0, V0, 0.03)
    torch.testing.assert_close(u_new, u.data, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(V_new, V_ref, rtol=1e-10, atol=1e-12)


def test_group_weights_layout():
    u = torch.tensor([2.0, 3.0])
    V = torch.tensor([[1.0, -1.0], [0.5, 2.0]])
    assert M.group_weights(u, V).tolist() == [4.0, -4.0, 4.5, 18.0]


def test_diagonal_step_matches_autograd():
    X, y, _, _ = _problem(seed=2)
    a0 = torch.rand(15, dtype=torch.float64)
    b0 = torch.rand(15, dtype=torch.float64)
    a = torch.nn.Parameter(a0.clone())
    b = torch.nn.Parameter(b0.clone())
    torch.nn.MSELoss()(X @ (a**2 - b**2), y).backward()
    a2, b2 = M.diagonal_step(X, y, a0, b0, 0.1)
    torch.testing.assert_close(a2, a0 - 0.1 * a.grad)
    torch.testing.assert_close(b2, b0 - 0.1 * b.grad)


def test_linear_gd_reaches_minimum_norm_solution():
    X, y, _, _ = _problem(m=6, L=4, s=3, seed=3)
    lr = 0.5 / (2 * torch.linalg.matrix_norm(X, 2) ** 2 / X.shape[0]).item()
    w, _ = M.train_linear(X, y, 4000, lr=lr)
    torch.testing.assert_close(w, torch.linalg.pinv(X) @ y, rtol=1e-6, atol=1e-8)


def test_relative_change_and_margin():
    assert M.relative_change(torch.tensor([1.1, 2.0]), torch.tensor([1.0, 2.0])) == pytest.approx(
        0.1, rel=1e-5
    )
    w = torch.tensor([3.0, 4.0, 0.0, 1.0, 0.0, 0.5])
    assert M.support_margin(w, torch.tensor([0]), 2) == pytest.approx(5.0)
    assert M.estimation_error(w, torch.zeros(6)) == pytest.approx(26.25)


def test_grouped_gd_recovers_group_support_noise_free():
    rng = np.random.default_rng(0)
    m, L, s = 40, 20, 4
    X = torch.tensor(rng.choice([-1.0, 1.0], size=(m, L * s)))
    w_star = torch.zeros(L * s, dtype=torch.float64)
    w_star[:8] = 1.0
    w, switch, ws = M.train_grouped(X, X @ w_star, s, 400, lr=0.01, tol=3e-2, record_every=100)
    assert switch > 0 and ws.shape == (4, L * s)
    assert M.support_margin(w, torch.tensor([0, 1]), s) > 5.0


def test_bad_algorithm_and_group_size():
    X, y, _, _ = _problem()
    with pytest.raises(CompanionError, match="alg3"):
        M.train_grouped(X, y, 3, 1, algorithm="alg3")
    with pytest.raises(CompanionError, match="divisible"):
        M.train_grouped(X, y, 4, 1)


def test_batched_grouped_gd_matches_functional_algorithm_per_data_set():
    rng = np.random.default_rng(1)
    sizes, L, s = (30, 18), 10, 3
    Xs = [
        torch.tensor(rng.choice([-1.0, 1.0], size=(m, L * s)), dtype=torch.float32) for m in sizes
    ]
    ys = [
        X[:, :6].sum(1) + 0.1 * torch.tensor(rng.standard_normal(len(X)), dtype=torch.float32)
        for X in Xs
    ]
    Xb = torch.zeros(2, max(sizes), L * s)
    yb = torch.zeros(2, max(sizes))
    for b, (X, y) in enumerate(zip(Xs, ys)):
        Xb[b, : len(X)], yb[b, : len(y)] = X, y
    net = M.GroupedLinear(2, L * s, s)
    opt = M.GroupedGD([net.u, net.V], lr=0.01, tol=3e-2)
    for _ in range(300):
        opt.zero_grad()
        M.batched_risk(Xb, yb, net.weights(), torch.tensor(sizes, dtype=torch.float32)).backward()
        opt.step()
    for b, (X, y) in enumerate(zip(Xs, ys)):
        w_ref, switch_ref, _ = M.train_grouped(X, y, s, 300, lr=0.01, tol=3e-2)
        assert opt.switch_steps()[b] == switch_ref > 0
        torch.testing.assert_close(net.weights()[b].detach(), w_ref, rtol=1e-4, atol=1e-5)


def test_batched_baselines_match_functional_steps():
    X, y, _, _ = _problem(seed=4)
    X, y = X.float(), y.float()
    for net, ref in (
        (M.DiagonalLinear(1, 15, init=0.1), M.train_diagonal(X, y, 50, 0.05, 0.1)[0]),
        (M.PlainLinear(1, 15), M.train_linear(X, y, 50, 0.05)[0]),
    ):
        opt = torch.optim.SGD(net.parameters(), lr=0.05)
        for _ in range(50):
            opt.zero_grad()
            M.batched_risk(X[None], y[None], net.weights(), torch.tensor([12.0])).backward()
            opt.step()
        torch.testing.assert_close(net.weights()[0].detach(), ref, rtol=1e-4, atol=1e-6)


def test_alg1_keeps_v_of_a_group_whose_u_underflowed():
    X, y, u, V = _problem()
    u = u.float()
    u[2] = 0.0
    u2, V2 = M.alg1_step(X.float(), y.float(), u, V.float(), 0.01)
    assert torch.isfinite(V2).all()
    torch.testing.assert_close(V2[2], V.float()[2])
    assert u2[2] == 0.0


def test_cross_validated_group_lasso_selects_the_true_groups():
    from companion.papers.group_sparsity import experiment as E

    cfg = E.PRESETS["notebook"].replace(
        p=80, noise=0.1, sample_sizes=(60,), trace_m=60, compare_m=60
    )
    X, y, w_star = E.make_data(cfg, 60, 0)
    w = E.fit_group_lasso(cfg, X, y)
    norms = w.reshape(-1, cfg.group_size).norm(dim=1)
    k = cfg.active_groups
    assert float(norms[k:].max()) < 0.2 * float(norms[:k].min())  # group support found
    assert M.estimation_error(w, w_star) < 0.1 * float(w_star.pow(2).sum())


def test_group_lasso_row_can_fail():
    from companion.papers.group_sparsity import check_claims
    from companion.papers.group_sparsity.experiment import (
        PRESETS,
        ArmResult,
        GroupSparsityResult,
        data_sets,
    )

    cfg = PRESETS["notebook"].replace(sample_sizes=(40, 80), trace_m=80, compare_m=80, draws=1)
    sets = data_sets(cfg)
    records = [10, 20]
    k = cfg.active_groups * cfg.group_size

    def arm(name, error):
        entries = [[0.0, 1.0]] * k
        return ArmResult(
            name,
            [error] * len(sets),
            [1.0] * len(sets),
            [-1] * len(sets),
            records,
            [],
            {"support_entries": entries},
            0.0,
        )

    import dataclasses

    arms = {
        "grouped": arm("grouped", 0.3),
        "diagonal": arm("diagonal", 5.0),
        "linear": arm("linear", 9.0),
        "group_lasso": arm("group_lasso", 0.2),
    }
    result = GroupSparsityResult(dataclasses.asdict(cfg), sets, arms)
    row = [r for r in check_claims(result).rows if "group lasso" in r.claim][0]
    assert not row.holds  # grouped worse than the group lasso
    arms["group_lasso"] = arm("group_lasso", 0.6)
    row = [r for r in check_claims(result).rows if "group lasso" in r.claim][0]
    assert row.holds


def _result_with(arms_spec, cfg_overrides=None):
    """A hand-made result: ``{name: (error, first-switch-on record per support entry)}``."""
    import dataclasses

    from companion.papers.group_sparsity.experiment import (
        PRESETS,
        ArmResult,
        GroupSparsityResult,
        data_sets,
    )

    cfg = PRESETS["notebook"].replace(
        sample_sizes=(40, 80), trace_m=80, compare_m=80, draws=1, **(cfg_overrides or {})
    )
    sets = data_sets(cfg)
    records = list(range(10, 110, 10))

    def arm(name, error, on):
        entries = [[0.0] * i + [1.0] * (len(records) - i) for i in on]
        return ArmResult(
            name,
            error,
            [1.0] * len(sets),
            [-1] * len(sets),
            records,
            [],
            {"support_entries": entries},
            0.0,
            unit_norm_gap=0.0,
        )

    arms = {k: arm(k, *v) for k, v in arms_spec.items()}
    return GroupSparsityResult(dataclasses.asdict(cfg), sets, arms)


def test_size_one_groups_control_is_counted_and_the_block_row_can_fail():
    from companion.papers.group_sparsity import check_claims

    blocks = [4 + g for g in range(4) for _ in range(4)]  # each group's entries on together
    one_by_one = [i % 10 for i in range(16)]
    spec = {
        "grouped": ([5.0, 0.1], blocks),
        "grouped1": ([5.0, 5.0], one_by_one),
        "diagonal": ([5.0, 5.0], one_by_one),
        "linear": ([9.0, 9.0], one_by_one),
    }
    rows = check_claims(_result_with(spec)).rows
    assert [r.holds for r in rows] == [True, True, True]
    # the size-1 control recovers as early and as well as the grouped network: rows 1-2 fail
    spec["grouped1"] = ([5.0, 0.1], one_by_one)
    rows = check_claims(_result_with(spec)).rows
    assert [r.holds for r in rows] == [False, False, True]
    # ungrouped entries that also switch on together: the block row fails
    spec["grouped1"] = ([5.0, 5.0], blocks)
    rows = check_claims(_result_with(spec)).rows
    assert rows[2].claim.startswith("groups switch on as blocks") and not rows[2].holds


def test_size_one_control_is_algorithm_two_with_groups_of_one():
    from companion.papers.group_sparsity.experiment import PRESETS, build

    cfg = PRESETS["smoke"]
    net, opt = build(cfg, "grouped1", 2)
    assert tuple(net.V.shape) == (2, cfg.p, 1) and isinstance(opt, M.GroupedGD)
    g = torch.Generator().manual_seed(3)
    X = (torch.randint(0, 2, (40, 30), generator=g) * 2 - 1).float()
    w_star = torch.zeros(30)
    w_star[:3] = torch.tensor([1.0, -1.0, 1.0])
    y = X @ w_star + 0.1 * torch.randn(40, generator=g)
    w, switch, _ = M.train_grouped(X, y, 1, 400, lr=0.01, tol=3e-2)
    w_diag, _ = M.train_diagonal(X, y, 400, lr=0.01)
    # groups of size 1: w_i = u_i² v_i with v_i = ±1, a signed diagonal network (signs too)
    assert switch > 0 and (w - w_diag).norm() < 0.05 * w_diag.norm()
    assert w[1] < 0 and (w[:3].sign() == w_star[:3].sign()).all()


def test_block_spread_leaves_out_entries_that_never_switch_on():
    from companion.papers.group_sparsity import check_claims
    from companion.papers.group_sparsity.claims import activation_spread, switched_on

    never = 10  # the trace's length: the entry never reaches half of its value
    blocks = [4 + g for g in range(4) for _ in range(4)]
    one_by_one = [i % 10 for i in range(16)]
    # two entries of each group switch on together, the other two never: no spread among the
    # switched-on ones (the old measure counted the never-on entries as a spread to the end)
    half_on = [1 + g if j < 2 else never for g in range(4) for j in range(4)]
    spec = {
        "grouped": ([5.0, 0.1], blocks),
        "grouped1": ([5.0, 5.0], one_by_one),
        "diagonal": ([5.0, 5.0], half_on),
        "linear": ([9.0, 9.0], one_by_one),
    }
    result = _result_with(spec)
    assert switched_on(result, "diagonal") == 8 and activation_spread(result, "diagonal") == 0.0
    row = check_claims(result).rows[2]
    assert not row.holds and "diagonal 8/16" in row.measured
    # one switched-on entry per group: no spread can be measured, the row cannot hold
    spec["diagonal"] = (
        [5.0, 5.0],
        [1 + g if j == 0 else never for g in range(4) for j in range(4)],
    )
    result = _result_with(spec)
    assert np.isnan(activation_spread(result, "diagonal"))
    assert not check_claims(result).rows[2].holds
    spec["diagonal"] = ([5.0, 5.0], one_by_one)
    assert check_claims(_result_with(spec)).rows[2].holds


def test_switch_on_summary_reads_the_switch_m_trace():
    from companion.papers.group_sparsity import switch_on_summary
    from companion.papers.group_sparsity.claims import activation_epochs

    never = 10
    blocks = [4 + g for g in range(4) for _ in range(4)]
    one_by_one = [i % 10 for i in range(16)]
    spec = {
        "grouped": ([5.0, 0.1], one_by_one),  # at trace_m: one by one (not what is read here)
        "grouped1": ([5.0, 5.0], one_by_one),
        "diagonal": ([5.0, 5.0], one_by_one),
    }
    result = _result_with(spec)
    records = result.arms["grouped"].record_epochs

    def entries(on):
        return [[0.0] * i + [1.0] * (len(records) - i) for i in on]

    result.arms["grouped"].trace["support_entries_switch_m"] = entries(blocks)
    result.arms["grouped1"].trace["support_entries_switch_m"] = entries(one_by_one)
    result.arms["diagonal"].trace["support_entries_switch_m"] = entries([never] + one_by_one[1:])
    first = activation_epochs(result, "grouped", "support_entries_switch_m")
    assert first.tolist() == [[records[4 + g]] * 4 for g in range(4)]
    text = switch_on_summary(result)
    assert "at m=80" in text  # switch_m = 0: the grid's largest size
    assert "grouped        16/16 on; g1 50–50, g2 60–60" in text and "spread 0.000" in text
    assert "diagonal       15/16 on; g1 20–40 (3/4 on)" in text
    assert "size-1 groups  16/16 on; g1 10–40" in text


def test_switch_m_trace_records_the_switch_m_data_set():
    from companion.papers.group_sparsity import PRESETS, run

    cfg = PRESETS["smoke"].replace(device="cpu", epochs=20, methods=("grouped", "linear"))
    result = run(cfg)  # smoke: switch_m == trace_m, so the two traces are the same data set
    for arm in result.arms.values():
        assert arm.trace["support_entries_switch_m"] == arm.trace["support_entries"]
    other = run(cfg.replace(switch_m=40))
    arm = other.arms["linear"]  # from zero, it moves within 20 epochs
    assert arm.trace["support_entries_switch_m"] != arm.trace["support_entries"]
    assert len(arm.trace["support_entries_switch_m"]) == cfg.active_groups * cfg.group_size
