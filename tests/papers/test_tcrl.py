"""tcrl against independent computations: gymnasium's own Pendulum, loops, closed forms."""

import dataclasses

import gymnasium as gym
import numpy as np
import pytest
import torch

from companion.data import offline_rl
from companion.errors import CompanionError
from companion.papers import tcrl as paper
from companion.papers.tcrl import claims as C
from companion.papers.tcrl import experiment as E


def test_batched_pendulum_matches_gymnasium():
    env = gym.make("Pendulum-v1")
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(0)
    th, thdot = paper.method.observation_to_state(obs.astype(np.float64))
    for _ in range(50):
        u = rng.uniform(-2.5, 2.5)
        obs, reward, *_ = env.step(np.array([u], dtype=np.float32))
        th, thdot, r = paper.pendulum_step(th, thdot, np.float32(u))
        assert r == pytest.approx(reward, rel=1e-4, abs=1e-4)
        assert np.cos(th) == pytest.approx(obs[0], abs=1e-4)
        assert np.sin(th) == pytest.approx(obs[1], abs=1e-4)
        assert thdot == pytest.approx(obs[2], abs=1e-4)


def test_action_repeat_sums_two_steps():
    a, b = E.make_env(2), gym.make("Pendulum-v1")
    a.reset(seed=1)
    b.reset(seed=1)
    _, r, *_ = a.step(np.array([1.0], dtype=np.float32))
    r1 = b.step(np.array([1.0], dtype=np.float32))[1]
    r2 = b.step(np.array([1.0], dtype=np.float32))[1]
    assert r == pytest.approx(r1 + r2)


def test_consistency_loss_against_a_loop():
    torch.manual_seed(0)
    model = paper.LatentModel(3, 1, 4, (8,))
    target = paper.TargetEncoder(model.encoder)
    with torch.no_grad():  # a target different from the online encoder
        for p in target.parameters():
            p.add_(0.1 * torch.randn_like(p))
    B, H, rho = 5, 3, 0.9
    obs0, acts = torch.randn(B, 3), torch.randn(H, B, 1)
    rews, nxt = torch.randn(H, B), torch.randn(H, B, 3)
    loss, _ = paper.consistency_loss(model, target, obs0, acts, rews, nxt, rho)
    total = 0.0
    for i in range(B):
        z = model.encoder(obs0[i])
        for t in range(H):
            za = torch.cat([z, acts[t, i]])
            z, r = model.dynamics(za), model.reward(za)[0]
            zt = target(nxt[t, i])
            cos = torch.dot(z, zt) / (z.norm() * zt.norm())
            total = total + rho**t * ((2 - 2 * cos) + (r - rews[t, i]) ** 2)
    assert loss.item() == pytest.approx(total.item() / B / H, rel=1e-5)


def test_the_target_gets_no_gradient_and_follows_the_ema_closed_form():
    torch.manual_seed(1)
    model = paper.LatentModel(3, 1, 4, (8,))
    target = paper.TargetEncoder(model.encoder)
    assert not any(p.requires_grad for p in target.parameters())
    start = [p.clone() for p in target.parameters()]
    with torch.no_grad():
        for p in model.encoder.parameters():
            p.add_(1.0)
    tau, n = 0.1, 7
    for _ in range(n):
        paper.ema_update(model.encoder, target, tau)
    for p0, p, q in zip(start, model.encoder.parameters(), target.parameters()):
        expected = p + (1 - tau) ** n * (p0 - p)
        torch.testing.assert_close(q, expected, rtol=1e-5, atol=1e-6)


def test_sequences_never_cross_episode_ends():
    ends = np.zeros(30, dtype=bool)
    ends[[9, 19, 29]] = True
    data = offline_rl.Transitions(
        np.zeros((30, 3)), np.zeros((30, 1)), np.zeros(30), np.zeros((30, 3)), ends, ends
    )
    starts = E.sequence_starts(data, 4)
    brute = [t for t in range(30) if not ends[t : t + 3].any() and t + 4 <= 30]
    assert starts.tolist() == brute


def test_mppi_finds_the_best_action_sequence():
    target = torch.tensor([0.3, -0.5, 0.8])

    def value(a):
        return -((a[..., 0] - target) ** 2).sum(-1)

    g = torch.Generator().manual_seed(0)
    action, mean = paper.mppi(value, 3, 1, g, samples=256, elites=32, iterations=8)
    assert action.item() == pytest.approx(0.3, abs=0.1)
    torch.testing.assert_close(mean[:, 0], target, atol=0.1, rtol=0)


def test_random_data_and_reward_scale():
    data = paper.collect_random(2, 2, seed=0)
    assert [b - a for a, b in data.episode_bounds()] == [100, 100]
    assert data.provenance["env"] == "Pendulum-v1"
    assert np.abs(data.actions).max() <= 1
    scaled = data.rewards / paper.reward_scale(2)
    assert scaled.min() >= -1 and scaled.max() <= 0


def test_presets_and_config_errors():
    assert set(paper.PRESETS) == {"smoke", "notebook", "full"}
    cfg = paper.PRESETS["notebook"]
    with pytest.raises(CompanionError, match="arm"):
        dataclasses.replace(cfg, arms=("tcrl", "dreamer"))
    with pytest.raises(CompanionError, match="plan_elites"):
        dataclasses.replace(cfg, plan_elites=500)
    with pytest.raises(CompanionError, match="tau"):
        dataclasses.replace(cfg, tau=0.0)
    with pytest.raises(CompanionError, match="steps"):
        dataclasses.replace(cfg, steps=0)
    with pytest.raises(CompanionError, match="arm"):
        dataclasses.replace(cfg, plan_arms=("dreamer",))
    with pytest.raises(CompanionError, match="threads"):
        dataclasses.replace(cfg, threads=0)
    assert cfg.threads == 1 and set(paper.PRESETS["full"].plan_arms) == set(paper.ARMS)


def test_costs_are_counted():
    cfg = paper.PRESETS["notebook"]
    t_train, t_plan = paper.count_costs(cfg, "tcrl")
    r_train, _ = paper.count_costs(cfg, "reconstruction")
    _, e_plan = paper.count_costs(cfg, "ensemble")
    assert 0 < t_train < r_train and 0 < t_plan < e_plan


def test_smoke_run_round_trips_and_claims_print():
    cfg = dataclasses.replace(paper.PRESETS["smoke"], device="cpu", plan_episodes=1)
    result = paper.run(cfg)
    assert paper.Result.from_dict(result.to_dict()) == result
    report = paper.check_claims(result)
    assert len(report.rows) == 8 and "claims hold" in str(report)
    assert not result.arms["reward_only"].returns  # planned only by the arms in plan_arms


def _fake(**changes) -> paper.Result:
    k = 10
    base = dict(
        simulator=([-200.0], [], []),
        random=([-1300.0], [], []),
        untrained=([-1200.0], [4.0] * k, [2.0] * k),
        tcrl=([-230.0], [0.1] * k, [0.01] * k),
        online_target=([-230.0], [0.2] * k, [0.01] * k),
        reconstruction=([-230.0], [0.1] * k, [0.5] * k),
        ensemble=([-230.0], [0.1] * k, []),
        reward_only=([], [0.5] * k, [1.0] * k),
    )
    base.update(changes)
    arms = {
        name: paper.ArmResult(
            arm=name,
            loss_steps=[],
            loss=[],
            reward_error=err,
            latent_error=lat,
            latent_spread=0.15,
            returns=ret,
            train_flops=2.0 if name == "reconstruction" else 1.0,
            plan_flops=3.0 if name == "ensemble" else 1.0,
            update_seconds=0.0,
            decision_seconds=0.0,
            seconds=0.0,
        )
        for name, (ret, err, lat) in base.items()
    }
    return paper.Result(config={}, provenance={}, behaviour_return=-1200.0, arms=arms)


def _verdicts(result):
    return [r.holds and r.premise_ok for r in paper.check_claims(result).rows]


def test_every_claim_row_can_fail():
    assert _verdicts(_fake()) == [True] * 8
    k = 10
    assert not _verdicts(_fake(simulator=([-1000.0], [], [])))[0]
    failed = paper.check_claims(_fake(untrained=([-300.0], [4.0] * k, [2.0] * k)))
    assert not failed.rows[1].holds and not failed.rows[3].premise_ok
    assert not _verdicts(_fake(tcrl=([-230.0], [0.5] * k, [0.01] * k)))[2]
    assert not _verdicts(_fake(tcrl=([-500.0], [0.1] * k, [0.01] * k)))[3]
    worse = _fake(tcrl=([-230.0], [0.16] * k, [0.01] * k))  # 0.06 above both, within 0.3
    assert _verdicts(worse)[2] and not _verdicts(worse)[4] and not _verdicts(worse)[5]
    assert _verdicts(_fake(tcrl=([-230.0], [0.14] * k, [0.01] * k)))[4]
    assert not _verdicts(_fake(reward_only=([], [0.11] * k, [1.0] * k)))[6]
    assert not _verdicts(_fake(online_target=([-230.0], [0.11] * k, [0.01] * k)))[7]
    assert C.GAIN == C.EMA_GAIN > 1 and 0 < C.PLANS_WELL < 1 and 0 < C.NON_INFERIOR < C.PREDICTS


def test_reward_only_control_drops_only_the_consistency_term():
    torch.manual_seed(0)
    cfg = paper.PRESETS["smoke"]
    model = E.build_model(cfg, "reward_only", 0)
    target = paper.TargetEncoder(model.encoder)
    batch = (torch.randn(4, 3), torch.randn(5, 4, 1), torch.randn(5, 4), torch.randn(5, 4, 3))
    loss, parts = E.train_loss(cfg, "reward_only", model, target, batch)
    assert loss.item() == pytest.approx(parts["reward"].item(), rel=1e-6)
