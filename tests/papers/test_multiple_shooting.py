"""multiple_shooting against independent computations (a hand-written rk4 loop, torch's
distributions, single shooting itself) and its claims on small fake results."""

import dataclasses
import math

import pytest
import torch
from torch import nn

from companion.errors import CompanionError
from companion.papers import multiple_shooting as paper


class Linear(nn.Module):
    """dx/dt = A x, with an evaluation counter like SecondOrderDynamics."""

    def __init__(self, A):
        super().__init__()
        self.A, self.nfe = A, 0

    def forward(self, t, x):
        self.nfe += 1
        return x @ self.A.T


def rk4_loop(f, x, t):
    """Classical rk4, one step per grid interval, written out."""
    out = [x]
    for i in range(len(t) - 1):
        h = float(t[i + 1] - t[i])
        k1 = f(t[i], x)
        k2 = f(t[i], x + h / 2 * k1)
        k3 = f(t[i], x + h / 2 * k2)
        k4 = f(t[i], x + h * k3)
        x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        out.append(x)
    return torch.stack(out, dim=1)


def test_single_block_is_an_rk4_loop_and_close_to_the_exact_flow():
    torch.manual_seed(0)
    A = torch.tensor([[0.0, 1.0], [-4.0, -0.1]])
    F = Linear(A)
    t = torch.linspace(0, 3, 31)
    s = torch.randn(5, 1, 2)
    x = paper.solve_blocks(F, s, t, len(t) - 1, "rk4", float(t[1] - t[0]))
    torch.testing.assert_close(x, rk4_loop(F, s[:, 0], t), atol=1e-5, rtol=1e-5)
    exact = torch.stack([s[:, 0] @ torch.linalg.matrix_exp(A * ti).T for ti in t], 1)
    torch.testing.assert_close(x, exact, atol=1e-3, rtol=1e-3)


def test_blocks_started_on_the_trajectory_reproduce_single_shooting():
    """With s_b = the single-shooting state at each block start (zero continuity gap), multiple
    shooting gives the same x_1..M, and its x_end(b−1) are exactly those s_b."""
    torch.manual_seed(1)
    F = Linear(torch.tensor([[0.0, 1.0], [-1.0, 0.0]]))
    t = torch.linspace(0, 4, 25)
    h = float(t[1] - t[0])
    s1 = torch.randn(3, 1, 2)
    single = paper.solve_blocks(F, s1, t, 24, "rk4", h)
    starts = paper.block_starts(25, 6)
    assert starts == [0, 6, 12, 18]
    multi = paper.solve_blocks(F, single[:, starts], t, 6, "rk4", h)
    torch.testing.assert_close(multi, single, atol=1e-5, rtol=1e-5)


def test_blocks_are_solved_in_parallel():
    """One batched solve: rk4 evaluates F 4 times per step of ONE block, however many blocks."""
    F = Linear(torch.eye(2))
    t = torch.linspace(0, 1, 17)
    for bs in (16, 8, 4, 1):
        F.nfe = 0
        paper.solve_blocks(F, torch.zeros(2, 16 // bs, 2), t, bs, "rk4", 1 / 16)
        assert F.nfe == 4 * bs
    with pytest.raises(ValueError, match="does not divide"):
        paper.block_starts(17, 5)


def test_kl_matches_torch_distributions():
    torch.manual_seed(2)
    mu0, mu1 = torch.randn(4, 3), torch.randn(4, 3)
    s0, s1 = torch.rand(4, 3) + 0.1, torch.rand(4, 3) + 0.1
    want = torch.distributions.kl_divergence(
        torch.distributions.Normal(mu0, s0), torch.distributions.Normal(mu1, s1)
    ).sum(-1)
    torch.testing.assert_close(paper.kl_norm_norm(mu0, mu1, s0, s1), want)


def _model(cfg=None):
    cfg = cfg or paper.PRESETS["smoke"]
    torch.manual_seed(3)
    return paper.build_model(cfg), cfg


def test_elbo_parts_against_their_definitions():
    model, cfg = _model()
    t = torch.linspace(0, cfg.duration, cfg.num_points)
    y = torch.randn(2, cfg.num_points, cfg.obs_dim)
    torch.manual_seed(4)
    out = paper.elbo(model, y, t, cfg.block_size, "rk4", float(t[1] - t[0]))
    # log-likelihood: a Normal log-density of every observed number
    want = torch.distributions.Normal(model.g(out["x"]), cfg.sigma_y).log_prob(y).sum((1, 2))
    torch.testing.assert_close(out["loglik"], want)
    # the continuity KL, block by block, against the sampled s_b and x_end(b−1)
    gamma, tau = model.rec_net(y, t)
    starts = paper.block_starts(cfg.num_points, cfg.block_size)
    torch.manual_seed(4)
    s = gamma[:, starts] + tau[:, starts] * torch.randn_like(tau[:, starts])
    sigma_xi = cfg.xi / math.sqrt(cfg.latent_dim)
    kl = 0.0
    for b in range(1, len(starts)):
        x_end = out["x"][:, starts[b]]
        kl = kl + torch.distributions.kl_divergence(
            torch.distributions.Normal(gamma[:, starts[b]], tau[:, starts[b]]),
            torch.distributions.Normal(x_end, sigma_xi),
        ).sum(-1)
        torch.testing.assert_close(out["gap"][:, b - 1], (s[:, b] - x_end).norm(dim=-1))
    torch.testing.assert_close(out["kl_continuity"], kl)
    torch.testing.assert_close(out["elbo"], out["loglik"] - out["kl_first"] - out["kl_continuity"])
    # single shooting: one block, no continuity term
    one = paper.elbo(model, y, t, cfg.num_points - 1, "rk4", float(t[1] - t[0]))
    assert one["kl_continuity"].abs().max() == 0 and one["gap"].shape[1] == 0


def test_encoder_window_and_forecast_see_only_the_first_part():
    model, cfg = _model()
    t = torch.linspace(0, cfg.duration, cfg.num_points)
    y = torch.randn(2, cfg.num_points, cfg.obs_dim)
    later = y.clone()
    cut = int((t <= cfg.observed_fraction * cfg.duration).sum())
    later[:, cut:] += 10.0  # change everything the forecast may not see
    h = float(t[1] - t[0])
    a = paper.forecast(model, y, t, cfg.observed_fraction, "rk4", h)
    b = paper.forecast(model, later, t, cfg.observed_fraction, "rk4", h)
    torch.testing.assert_close(a, b)
    # and it is ONE solve from γ_1: decode the single-shooting states
    gamma, _ = model.rec_net(y, t, t <= t[0] + cfg.observed_fraction * cfg.duration + 1e-9)
    x = rk4_loop(model.F, gamma[:, 0], t)
    torch.testing.assert_close(a, model.g(x), atol=1e-5, rtol=1e-5)
    # the hard window: point i attends to j only within δ_r of the duration
    w = model.rec_net.window(t)
    i, j = 0, int(cfg.delta_r * (cfg.num_points - 1))
    assert w[i, j] and not w[i, j + 1]


def test_second_order_dynamics_moves_position_by_velocity():
    F = paper.SecondOrderDynamics(4, 8)
    x = torch.randn(3, 4)
    torch.testing.assert_close(F(0.0, x)[:, :2], x[:, 2:])
    with pytest.raises(ValueError, match="even"):
        paper.SecondOrderDynamics(3, 8)


def test_presets_and_validation():
    assert set(paper.PRESETS) == {"smoke", "notebook", "full"}
    for cfg in paper.PRESETS.values():
        assert (cfg.num_points - 1) % cfg.block_size == 0
    nb = paper.PRESETS["notebook"]
    assert nb.blocks("single_shooting") == nb.num_points - 1
    assert nb.blocks("multiple_shooting") == nb.block_size
    for bad, text in [
        (dict(methods=("ms",)), "method"),
        (dict(solver="euler2"), "solver"),
        (dict(block_size=5), "block_size"),
        (dict(latent_dim=3), "latent_dim"),
        (dict(lr=0.0), "lr"),
        (dict(observed_fraction=1.5), "observed_fraction"),
        (dict(xi=0.0), "xi"),
        (dict(lr_single=-1.0), "lr_single"),
        (dict(loose_factor=0.0), "loose_factor"),
    ]:
        with pytest.raises(CompanionError, match=text):
            paper.PRESETS["smoke"].replace(**bad)


def test_arms_differ_only_where_stated_and_validation_leaves_train_and_test_alone():
    cfg = paper.PRESETS["notebook"].replace(lr_single=1e-2)
    assert cfg.arm_xi("loose_prior") == cfg.xi * cfg.loose_factor
    assert cfg.arm_xi("multiple_shooting") == cfg.arm_xi("single_shooting") == cfg.xi
    assert cfg.arm_lr("single_shooting") == 1e-2
    assert cfg.arm_lr("multiple_shooting") == cfg.arm_lr("loose_prior") == cfg.lr
    assert cfg.blocks("loose_prior") == cfg.blocks("multiple_shooting") == cfg.block_size
    small = paper.PRESETS["smoke"]
    plain = paper.make_pendulum(small, seed=3)
    more = paper.make_pendulum(small, seed=3, validation=True)
    for a, b in zip(plain, more[:5]):
        torch.testing.assert_close(a, b)
    y_val, clean_val = more[5:]
    assert y_val.shape == (small.n_val, small.num_points, small.obs_dim)
    assert not any(torch.equal(clean_val[:1], c[:1]) for c in (more[3], more[4]))
    # the same observation map: the clean signals span the same 2-d subspace of R^D
    basis = torch.linalg.svd(more[3].reshape(-1, small.obs_dim), full_matrices=False)[2][:2]
    flat = clean_val.reshape(-1, small.obs_dim)
    torch.testing.assert_close(flat @ basis.T @ basis, flat, atol=1e-4, rtol=1e-4)


def test_lr_single_is_the_stored_sweeps_interior_winner():
    """The notebook preset's single-shooting rate is the one the stored validation sweep chose,
    over the grid the package declares, and the winner is not at the grid's edge."""
    import json

    from companion.core.medium import RUNS_DIR

    sweep = json.loads((RUNS_DIR / "multiple_shooting" / "lr_sweep.json").read_text())
    assert tuple(sweep["lrs"]) == paper.experiment.LR_GRID
    assert [float(k) for k in sweep["val_mse"]] == list(paper.experiment.LR_GRID)
    assert paper.PRESETS["notebook"].lr_single == sweep["chosen"]
    finite = {float(k): m for k, m in sweep["mean"].items() if m is not None}
    assert sweep["chosen"] == min(finite, key=finite.get)
    assert min(sweep["lrs"]) < sweep["chosen"] < max(sweep["lrs"])


@pytest.fixture(scope="module")
def smoke_result():
    return paper.run(paper.PRESETS["smoke"].replace(device="cpu"))


def test_smoke_run_round_trip(smoke_result, tmp_path):
    cfg = paper.PRESETS["smoke"]
    r = smoke_result
    assert set(r.arms) == {"single_shooting", "multiple_shooting", "loose_prior"}
    ss, ms, loose = r.arms["single_shooting"], r.arms["multiple_shooting"], r.arms["loose_prior"]
    assert len(ss.loss) == len(ms.loss) == len(loose.loss) == cfg.steps  # equal optimiser steps
    per_step = {"rk4": 4, "midpoint": 2}[cfg.solver]  # evaluations of F per fixed step
    assert ss.nfe[0] == per_step * (cfg.num_points - 1) and ms.nfe[0] == per_step * cfg.block_size
    assert len(ms.gap) == (cfg.num_points - 1) // cfg.block_size - 1 and ss.gap == []
    assert len(loose.gap) == len(ms.gap)
    # the control starts from the same weights and batches: its first loss differs from
    # multiple shooting's only through the continuity KL's width
    assert ms.loss[0] != loose.loss[0]
    assert len(ss.grad_norm) == len(ss.measure_steps) and all(g > 0 for g in ss.grad_norm)
    assert all(math.isfinite(a.final_val_mse) for a in r.arms.values())
    # posterior widths under the continuity prior: none for single shooting, at least tau_min
    assert ss.tau_cont == 0.0 and min(ms.tau_cont, loose.tau_cont) >= cfg.tau_min
    r.save(tmp_path / "r.json")
    loaded = paper.Result.load(tmp_path / "r.json")
    assert loaded.to_dict()["arms"] == r.to_dict()["arms"]
    assert loaded.data_variance == r.data_variance and loaded.config["seed"] == r.config["seed"]
    assert paper.Result.from_dict(r.to_dict()).to_dict() == r.to_dict()
    report = paper.check_claims(r)
    assert str(report).splitlines()[-1].startswith("claims hold: ")


def _fake(
    smoke_result, ss_mse, ms_mse, gap=0.01, loose_gap=0.5, scale=1.0, loose_mse=0.5, ms_late=None
):
    arms = {}
    for name, mse, g in (
        ("single_shooting", ss_mse, gap),
        ("multiple_shooting", ms_mse, gap),
        ("loose_prior", loose_mse, loose_gap),
    ):
        arm = smoke_result.arms[name]
        # measured at steps 0..3: the second half (steps 2, 3 and the end) decides the late row
        late = 1.5 * mse if ms_late is None or name != "multiple_shooting" else ms_late
        curve = [1.0, 1.0, late, mse]
        arms[name] = dataclasses.replace(
            arm,
            final_test_mse=mse,
            test_mse=curve,
            measure_steps=list(range(len(curve))),
            gap=[g] * len(arm.gap),
            latent_scale=scale,
        )
    return dataclasses.replace(smoke_result, data_variance=1.0, arms=arms)


def _rows(result):
    return {row.claim: row for row in paper.check_claims(result).rows}


def test_claims_hold_on_a_clear_effect_and_every_row_can_fail(smoke_result):
    good = _rows(_fake(smoke_result, ss_mse=0.6, ms_mse=0.02))
    assert all(r.holds for r in good.values()), good
    names = list(good)
    assert len(names) == 5
    # single shooting fits too: the premise fails and the comparison is not tested
    fits = _rows(_fake(smoke_result, ss_mse=0.02, ms_mse=0.01))
    assert not fits[names[0]].holds and not fits[names[1]].premise_ok
    # a tie is not a hold
    tie = _rows(_fake(smoke_result, ss_mse=0.6, ms_mse=0.6))
    assert not tie[names[1]].holds
    # blocks that join no better than with the loose prior: small gaps are not enough
    same = _rows(_fake(smoke_result, ss_mse=0.6, ms_mse=0.02, gap=0.01, loose_gap=0.015))
    assert not same[names[3]].holds
    # blocks far apart while the loose control's are close
    apart = _rows(_fake(smoke_result, ss_mse=0.6, ms_mse=0.02, gap=5.0, loose_gap=0.5))
    assert not apart[names[3]].holds
    # a loose prior that forecasts nearly as well: the prior is not what makes the forecast work
    close = _rows(_fake(smoke_result, ss_mse=0.6, ms_mse=0.02, loose_mse=0.05))
    assert not close[names[4]].holds and close[names[3]].holds
    # multiple shooting ends lower but rose above single shooting's best in the second half
    spike = _rows(_fake(smoke_result, ss_mse=0.6, ms_mse=0.02, ms_late=0.7))
    assert spike[names[1]].holds and not spike[names[2]].holds
    # the late row is comparative: not tested when single shooting fitted
    assert not fits[names[2]].premise_ok
