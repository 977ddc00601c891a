"""DOGE: the method against independent computations, presets, config errors, claims."""

import dataclasses

import numpy as np
import pytest
import torch

from companion.errors import CompanionError
from companion.papers import doge
from companion.papers.doge import claims as doge_claims
from companion.papers.doge.experiment import ArmResult


def test_distance_loss_matches_a_loop():
    torch.manual_seed(0)
    g = doge.DistanceNetwork(1, 2, 8, 2)
    s, a = torch.randn(3, 1), torch.rand(3, 2) * 2 - 1
    loss = doge.distance_loss(g, s, a, 4, generator=torch.Generator().manual_seed(1))
    a_hat = -1.5 + 3.0 * torch.rand(3, 4, 2, generator=torch.Generator().manual_seed(1))
    total = 0.0
    for i in range(3):
        for j in range(4):
            target = torch.sqrt(((a_hat[i, j] - a[i]) ** 2).sum())
            total += (g(s[i : i + 1], a_hat[i, j][None]).item() - target.item()) ** 2
    assert loss.item() == pytest.approx(total / 12, rel=1e-5)


def test_distance_regression_minimiser_is_the_expected_distance():
    """Eq. 5's minimiser over a free table g(â) is the mean distance to the data (brute force:
    least squares over many â for a fixed â gives the mean of the labels)."""
    rng = np.random.default_rng(0)
    data = rng.uniform(-1, 1, (50, 2))
    query = np.array([[0.2, -0.1]])
    labels = np.linalg.norm(query - data, axis=-1)
    grid = np.linspace(0, 2, 2001)
    best = grid[np.argmin([((c - labels) ** 2).mean() for c in grid])]
    assert doge.expected_distance(data, query)[0] == pytest.approx(best, abs=1e-3)


def test_dual_update_matches_the_official_formula():
    lam = 5.0
    for diff in (0.3, -0.2, 10.0, -10.0):
        official = float(np.clip(lam + 3e-4 * lam * (diff - 0.0), 1.0, 100.0))
        assert doge.dual_update(lam, diff, 3e-4, 0.0, 1.0, 100.0) == pytest.approx(official)
    assert doge.dual_update(5.0, 1e6, 1.0, 0.0, 1.0, 100.0) == 100.0
    assert doge.dual_update(5.0, -1e6, 1.0, 0.0, 1.0, 100.0) == 1.0


def test_actor_losses_by_hand():
    q = torch.tensor([[1.0], [-3.0]])
    pi, a = torch.tensor([[0.0, 1.0], [1.0, 1.0]]), torch.tensor([[0.0, 0.0], [1.0, 0.0]])
    g_pi, g_a = torch.tensor([[0.5], [0.7]]), torch.tensor([[0.2], [0.4]])
    w = 2.5 / 2.0  # α / mean|Q|
    assert doge.td3_bc_actor_loss(q, pi, a, 2.5).item() == pytest.approx(-w * -1.0 + 0.5)
    loss, diff = doge.doge_actor_loss(q, g_pi, g_a, 2.5, 3.0)
    assert diff.item() == pytest.approx(0.3)
    assert loss.item() == pytest.approx(-w * -1.0 + 3.0 * 0.3)
    assert doge.unconstrained_actor_loss(q, 2.5).item() == pytest.approx(w)


def test_critic_target_is_the_reward_at_terminals():
    torch.manual_seed(0)
    c, a = doge.DoubleCritic(1, 2, 8, 1), doge.Actor(1, 2, 8, 1)
    batch = {
        "s": torch.zeros(4, 1),
        "a": torch.zeros(4, 2),
        "r": torch.arange(4.0)[:, None],
        "s2": torch.zeros(4, 1),
        "done": torch.ones(4, 1),
    }
    q1, q2 = c(batch["s"], batch["a"])
    want = ((q1 - batch["r"]) ** 2).mean() + ((q2 - batch["r"]) ** 2).mean()
    assert doge.critic_loss(c, c, a, batch, 0.99).item() == pytest.approx(want.item(), rel=1e-6)


def test_task_geometry_and_simulator():
    cfg = doge.PRESETS["smoke"]
    s = np.array([0.5])
    assert doge.reward(cfg, s, doge.goal(cfg, s))[0] == pytest.approx(cfg.reward_offset)
    env = doge.GapBandit(cfg)
    obs, _ = env.reset(seed=3)
    _, r, term, trunc, _ = env.step(doge.goal(cfg, obs)[0])
    assert term and not trunc and r == pytest.approx(cfg.reward_offset, abs=1e-5)
    square = np.array([[0, 0], [1, 0], [0, 1], [1, 1.0]])
    assert doge.hull_mask(square, np.array([[0.5, 0.5], [1.5, 0.5]])).tolist() == [True, False]
    data = doge.make_dataset(cfg, 0)
    assert data.provenance["task"]["cluster_share"] == cfg.cluster_share
    assert data.terminals.all() and data.actions.shape == (cfg.transitions, 2)


def test_presets_and_scaling():
    assert set(doge.PRESETS) >= {"smoke", "notebook", "full"}
    nb = doge.PRESETS["notebook"]
    assert nb.eta == pytest.approx(3e-4 * 1e6 / nb.steps)
    assert nb.alpha_doge == 7.5 and nb.alpha_td3_bc == 2.5 and nb.lambda_init == 5.0


@pytest.mark.parametrize(
    "bad",
    [
        dict(arms=("doge", "cql")),
        dict(arms=("td3_bc",)),
        dict(steps=0),
        dict(cluster_share=1.5),
        dict(lambda_min=200.0),
    ],
)
def test_config_errors(bad):
    with pytest.raises(CompanionError):
        doge.PRESETS["smoke"].replace(**bad)


def test_smoke_run_round_trips(tmp_path):
    cfg = doge.PRESETS["smoke"].replace(steps=20, transitions=100, eval_episodes=5, grid=9)
    result = doge.run(cfg, out_dir=tmp_path)
    again = doge.Result.from_dict(result.to_dict())
    assert again.to_dict() == result.to_dict()
    assert set(result.arms) == set(cfg.arms)
    assert (tmp_path / "doge" / "arm.json").exists()


def _fake(**over):
    base = dict(
        arm="doge",
        curve_steps=[1],
        lam=[1.0],
        distance_diff=[0.0],
        miss=[0.1],
        mean_return=9.9,
        miss_distance=0.1,
        q_at_policy=9.9,
        r_at_policy=9.9,
        policy_actions=[[0.0, 0.0]],
        q_error_inside=0.05,
        q_error_outside=0.5,
        q_map=[[0.0]],
        g_map=[[0.0]],
        g_corr=0.99,
        seconds=1.0,
    )
    base.update(over)
    return ArmResult(**base)


def _result(doge_arm=None, bc=None, un=None, **over):
    fields = dict(
        config=doge.PRESETS["smoke"].to_dict(),
        probe_states=[0.0],
        grid=[0.0],
        inside=[[True]],
        exact_distance=[[0.0]],
        data_actions=[[[0.0, 0.0]]],
        goal_inside=1.0,
        goal_gap=0.3,
        best_data_miss=0.3,
        g_threshold=0.5,
        goal_g=0.45,
        arms={
            "doge": doge_arm or _fake(),
            "td3_bc": bc or _fake(arm="td3_bc", miss_distance=0.2, mean_return=9.8),
            "unconstrained": un
            or _fake(arm="unconstrained", miss_distance=1.5, q_at_policy=10.0, r_at_policy=8.5),
        },
    )
    fields.update(over)
    return doge.DOGEResult(**fields)


def _holds(report):
    return [r.holds for r in report.rows]


def test_claims_hold_on_a_good_fake():
    assert all(_holds(doge.check_claims(_result())))


def test_every_claim_row_can_fail():
    bad = {
        0: _result(doge_arm=_fake(q_error_inside=0.5)),
        1: _result(doge_arm=_fake(g_corr=0.5)),
        2: _result(best_data_miss=0.1 + doge_claims.BEST_MARGIN / 2),
        3: _result(bc=_fake(arm="td3_bc", miss_distance=0.1 + doge_claims.MARGIN / 2)),
        4: _result(
            un=_fake(arm="unconstrained", miss_distance=1.5, q_at_policy=8.6, r_at_policy=8.5)
        ),
    }
    for row, result in bad.items():
        assert not _holds(doge.check_claims(result))[row], row


def test_failed_premise_marks_dependent_rows():
    report = doge.check_claims(_result(goal_inside=0.5))
    assert not report.invariants[0].holds
    assert not report.rows[2].premise_ok and not report.rows[3].premise_ok
    report = doge.check_claims(_result(doge_arm=_fake(q_error_inside=0.5)))
    assert not report.rows[2].premise_ok and not report.rows[4].premise_ok


def test_dataclass_fields_are_plain():
    assert all(f.name != "" for f in dataclasses.fields(doge.DOGEResult))
