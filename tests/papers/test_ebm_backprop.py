"""ebm_backprop: the energy, inference and the three updates against independent computations
(a hand-written backward pass, the free equilibrium, power laws), and the claims on fixtures."""

import math

import numpy as np
import pytest
import torch

from companion.errors import CompanionError
from companion.papers import ebm_backprop as paper
from companion.papers.ebm_backprop.claims import check_claims
from companion.papers.ebm_backprop.experiment import EBMResult, Point

SIZES = (6, 5, 4, 3)


def _data(seed=0, n=7, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, SIZES[0], generator=g, dtype=dtype)
    y = torch.nn.functional.one_hot(torch.randint(0, SIZES[-1], (n,), generator=g), SIZES[-1])
    return x, y.to(dtype)


def _manual_backprop(net, x, y):
    """The backward pass written out with tanh' = 1 − tanh², no autograd."""
    acts = [x]
    for w, b in net.params[:-1]:
        acts.append(torch.tanh(acts[-1] @ w.T + b))
    w_out, b_out = net.params[-1]
    delta = acts[-1] @ w_out.T + b_out - y  # ∂L/∂ŷ for L = ½‖ŷ − y‖²
    grads = []
    for i in reversed(range(len(net.params))):
        w, _ = net.params[i]
        grads = [delta.T @ acts[i], delta.sum(0), *grads]
        if i > 0:
            delta = (delta @ w) * (1 - acts[i] ** 2)
    return grads


def test_bp_gradient_matches_a_hand_written_backward_pass():
    net = paper.init_mlp(SIZES, seed=3)
    x, y = _data()
    for a, b in zip(paper.bp_gradient(net, x, y), _manual_backprop(net, x, y)):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_init_is_numpy_drawn_and_within_the_default_bounds():
    net = paper.init_mlp(SIZES, seed=1)
    again = paper.init_mlp(SIZES, seed=1)
    for (w, b), (w2, b2), fan_in in zip(net.params, again.params, SIZES[:-1]):
        assert torch.equal(w, w2) and torch.equal(b, b2)
        assert w.abs().max() <= 1 / math.sqrt(fan_in) and w.dtype == torch.float64
    assert not torch.equal(net.params[0][0], paper.init_mlp(SIZES, seed=2).params[0][0])


def test_the_feed_forward_pass_is_the_free_equilibrium():
    net = paper.init_mlp(SIZES, seed=0)
    x, y = _data()
    hidden = [h.clone().requires_grad_(True) for h in paper.forward(net, x)[:-1]]
    e = paper.energy(net, hidden, x, y, 0.0)
    assert float(e.detach()) == 0.0
    grads = torch.autograd.grad(e, hidden)
    assert all(float(g.abs().max()) == 0.0 for g in grads)
    for g in paper.energy_param_grad(net, [h.detach() for h in hidden], x, y, 0.0):
        assert float(g.abs().max()) == 0.0
    # with β > 0 the energy there is β times the loss
    e_beta = paper.energy(net, [h.detach() for h in hidden], x, y, 0.3)
    assert float(e_beta) == pytest.approx(0.3 * float(paper.loss(paper.forward(net, x)[-1], y)))


def test_relax_lowers_the_energy_to_a_stationary_point():
    net = paper.init_mlp(SIZES, seed=0)
    x, y = _data()
    start = [h.detach() for h in paper.forward(net, x)[:-1]]
    hidden, residual = paper.relax(net, x, y, 0.5, mu=0.5, steps=200)
    assert float(paper.energy(net, hidden, x, y, 0.5)) < float(paper.energy(net, start, x, y, 0.5))
    assert residual < 1e-8
    _, few = paper.relax(net, x, y, 0.5, mu=0.5, steps=2)
    assert few > residual  # the residual measures how far inference got


def test_updates_approach_the_gradient_at_first_and_second_order():
    net = paper.init_mlp(SIZES, seed=4)
    x, y = _data(1)
    grad = _manual_backprop(net, x, y)
    gaps = {}
    for method, update in paper.UPDATES.items():
        gaps[method] = [
            paper.relative_error(update(net, x, y, beta, 0.5, 300)[0], grad)
            for beta in (1e-2, 1e-3)
        ]
    assert gaps["pc"][1] < 2e-3 and gaps["pc"][0] / gaps["pc"][1] == pytest.approx(10, rel=0.1)
    assert gaps["ep"][0] / gaps["ep"][1] == pytest.approx(100, rel=0.1)  # second order
    assert gaps["chl"] == pytest.approx(gaps["pc"], rel=1e-9)  # the free phase adds zero
    assert paper.relative_error(paper.pc_update(net, x, y, 1.0, 0.5, 300)[0], grad) > 0.05


def test_cosine_relative_error_and_slope_on_known_values():
    a = [torch.tensor([1.0, 0.0]), torch.tensor([0.0])]
    b = [torch.tensor([1.0, 1.0]), torch.tensor([0.0])]
    assert paper.cosine(a, b) == pytest.approx(1 / math.sqrt(2))
    assert paper.relative_error(a, b) == pytest.approx(1 / math.sqrt(2))
    betas = np.array([1e-4, 1e-3, 1e-2])
    assert paper.loglog_slope(betas, 3 * betas**2) == pytest.approx(2.0)


def test_config_errors_name_the_bad_value():
    cfg = paper.PRESETS["smoke"]
    with pytest.raises(CompanionError, match="'sigmoid'"):
        cfg.replace(activation="sigmoid").validate()
    with pytest.raises(CompanionError, match="'bp'"):
        cfg.replace(methods=("pc", "bp")).validate()
    with pytest.raises(CompanionError, match="betas"):
        cfg.replace(betas=(1.0, 0.0)).validate()
    with pytest.raises(CompanionError, match="exceeds"):
        paper.load_batches(cfg.replace(batch_size=1000, num_batches=5))
    with pytest.raises(ValueError, match="'gelu'"):
        paper.init_mlp(SIZES, 0, activation="gelu")


def test_smoke_run_measures_every_method_and_nudge():
    cfg = paper.PRESETS["smoke"]
    result = paper.run(cfg)
    assert len(result.points) == (len(cfg.methods) + 1) * len(cfg.betas) * cfg.num_batches
    assert {p.dtype for p in result.points} == {"float64", "float32"}
    assert result.layer_sizes == [64, *cfg.hidden, 10]


def _fixture(gap_of, residual=1e-12, methods=("pc", "ep", "chl")):
    betas = (1.0, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5)
    points = []
    for method in methods:
        for beta in betas:
            gap = gap_of(method, beta)
            points.append(Point(method, beta, "float64", 0, gap, 1 - gap**2 / 2, residual))
    for beta in betas:  # float32 PC with a floor
        points.append(Point("pc", beta, "float32", 0, max(beta, 1e-3 / beta), 0.9, 1e-3))
    config = dict(methods=list(methods), betas=list(betas))
    return EBMResult(config=config, points=points, layer_sizes=[64, 32, 10], seconds=0.0)


def _limit(method, beta):
    return 0.5 * (beta**2 if method == "ep" else beta) if beta < 1 else 0.5


def test_claims_hold_on_a_fixture_that_follows_the_theory():
    report = check_claims(_fixture(_limit))
    assert all(r.holds for r in report.rows), report
    assert all(i.holds for i in report.invariants)


def test_claims_fail_without_the_limit_or_the_equilibrium():
    flat = check_claims(_fixture(lambda m, b: 0.3))  # every update off by 30 %: no limit
    assert [r.holds for r in flat.rows] == [True, False, False, True]  # premise, PC, EP, control
    backprop = check_claims(_fixture(lambda m, b: _limit(m, b) if b < 1 else 0.01))
    assert not backprop.rows[-1].holds  # the control fails when β = 1 is backprop too
    unconverged = check_claims(_fixture(_limit, residual=1e-3))
    assert not unconverged.rows[0].holds
    assert all(r.verdict.startswith("not tested") for r in unconverged.rows[1:])
