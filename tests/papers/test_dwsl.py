"""dwsl against independent computations (scipy's shortest paths, brute-force counts, closed
forms) and the gymnasium API of its environment."""

import math

import numpy as np
import pytest
import torch
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from companion.core import ExerciseError, check_close
from companion.errors import CompanionError
from companion.papers import dwsl as paper
from companion.papers.dwsl.claims import SUCCESS_MARGIN
from companion.papers.dwsl.env import MOVES


@pytest.fixture(scope="module")
def maze():
    return paper.GridMaze("small_rooms", max_episode_steps=30)


# --- the environment -----------------------------------------------------------------------------


def test_env_follows_the_gymnasium_api(maze):
    from gymnasium.utils.env_checker import check_env

    check_env(maze, skip_render_check=True)


def test_moves_and_walls_by_hand():
    env = paper.GridMaze("tiny")
    # tiny: free cells are the 4 × 4 block without the inner wall at (2, 2) and (2, 3)
    assert env.n_cells == 14
    obs, info = env.reset(options={"start": (1, 1), "goal": (1, 3)})
    assert obs["observation"].tolist() == [1, 1] and not info["is_success"]
    obs, reward, terminated, truncated, _ = env.step(0)  # up: the border wall, no move
    assert obs["observation"].tolist() == [1, 1] and reward == -1.0 and not terminated
    obs, *_ = env.step(1)  # down to (2, 1)
    assert obs["observation"].tolist() == [2, 1]
    obs, *_ = env.step(3)  # right into the inner wall at (2, 2): no move
    assert obs["observation"].tolist() == [2, 1]
    env.step(0)
    env.step(3)
    obs, reward, terminated, truncated, info = env.step(3)  # (1, 3): the goal
    assert terminated and reward == 0.0 and info["is_success"] and not truncated


def test_episodes_are_truncated_at_the_time_limit():
    env = paper.GridMaze("tiny", max_episode_steps=3)
    env.reset(options={"start": (1, 1), "goal": (4, 4)})
    flags = [env.step(0)[3] for _ in range(3)]
    assert flags == [False, False, True]


def test_transition_table_matches_step(maze):
    table = maze.transition_table()
    for i, cell in enumerate(maze.cells):
        for a in range(len(MOVES)):
            maze.reset(options={"start": tuple(cell), "goal": tuple(maze.cells[(i + 1) % 40])})
            obs, *_ = maze.step(a)
            assert maze.index[tuple(obs["observation"].tolist())] == table[i, a]


def test_bfs_matches_scipy_shortest_paths(maze):
    table = maze.transition_table()
    n = len(table)
    rows = np.repeat(np.arange(n), table.shape[1])
    graph = csr_matrix((np.ones(rows.size), (rows, table.ravel())), shape=(n, n))
    reference = shortest_path(graph, unweighted=True, directed=True)
    np.testing.assert_array_equal(paper.shortest_path_lengths(table), reference.astype(int))
    assert paper.shortest_path_lengths(table).max() == 12


def test_bad_input_raises():
    with pytest.raises(CompanionError, match="maze_of_doom"):
        paper.GridMaze("maze_of_doom")
    with pytest.raises(CompanionError, match="surrounded"):
        paper.GridMaze(("...", "#.#", "###"))
    env = paper.GridMaze("tiny")
    with pytest.raises(CompanionError, match="not a free cell"):
        env.reset(options={"start": (2, 2)})
    env.reset(seed=0)
    with pytest.raises(CompanionError, match="action"):
        env.step(7)


# --- the offline data ----------------------------------------------------------------------------


def test_collected_episodes_follow_the_dynamics(maze):
    data = paper.collect_dataset(maze, 50, 30, expert_fraction=0.5, epsilon=0.3, seed=0)
    table = maze.transition_table()
    assert data.states.shape == (50, 31) and data.actions.shape == (50, 30)
    np.testing.assert_array_equal(table[data.states[:, :-1], data.actions], data.states[:, 1:])


def test_noise_free_expert_walks_shortest_paths(maze):
    """With epsilon = 0 every expert step reduces the distance to its current goal by one, so
    each expert step is on some shortest path: the distance to the episode's next-visited
    targets drops by one per step; here checked through the inverse: no wall bumps, no
    revisits between two consecutive goals is too strong, so we check no-op steps vanish."""
    data = paper.collect_dataset(maze, 30, 30, expert_fraction=1.0, epsilon=0.0, seed=1)
    assert (data.states[:, 1:] != data.states[:, :-1]).all()  # never bumps into a wall


def test_random_policy_is_uniform(maze):
    data = paper.collect_dataset(maze, 400, 30, expert_fraction=0.0, epsilon=0.5, seed=2)
    counts = np.bincount(data.actions.ravel(), minlength=4) / data.actions.size
    np.testing.assert_allclose(counts, 0.25, atol=0.01)
    assert not data.expert.any()


def test_d4rl_file_round_trip(tmp_path, maze):
    data = paper.collect_dataset(maze, 7, 30, 0.5, 0.5, seed=3)
    path = paper.save_d4rl(tmp_path / "fixture.npz", maze, data)
    with np.load(path) as f:
        assert f["observations"].shape == (7 * 30, 2) and f["timeouts"].sum() == 7
    loaded = paper.load_d4rl(path, maze)
    np.testing.assert_array_equal(loaded.states, data.states)
    np.testing.assert_array_equal(loaded.actions, data.actions)


def test_d4rl_loader_rejects_bad_files(tmp_path, maze):
    with pytest.raises(CompanionError, match="no dataset"):
        paper.load_d4rl(tmp_path / "missing.npz", maze)
    np.savez(tmp_path / "bad.npz", observations=np.zeros((3, 2)))
    with pytest.raises(CompanionError, match="lacks D4RL keys"):
        paper.load_d4rl(tmp_path / "bad.npz", maze)
    outside = dict(
        observations=np.array([[0, 0]]),
        actions=np.array([0]),
        next_observations=np.array([[1, 1]]),
        timeouts=np.array([True]),
    )
    np.savez(tmp_path / "outside.npz", **outside)
    with pytest.raises(CompanionError, match="outside this maze"):
        paper.load_d4rl(tmp_path / "outside.npz", maze)


def test_pair_counts_match_observed_horizons(maze):
    from companion.papers.dwsl.experiment import observed_horizons, pair_counts

    data = paper.collect_dataset(maze, 20, 30, 0.5, 0.5, seed=4)
    counts = pair_counts(data, maze.n_cells)
    rng = np.random.default_rng(0)
    for s, g in rng.integers(0, maze.n_cells, size=(25, 2)):
        horizons = observed_horizons(data, s, g)
        assert counts[s, g] == len(horizons) and all(h >= 1 for h in horizons)
    assert counts.sum() == 20 * 31 * 30 // 2


def test_shortest_observed_is_the_fewest_steps_the_data_took(maze):
    data = paper.collect_dataset(maze, 20, 30, 0.5, 0.5, seed=4)
    shortest = paper.shortest_observed(data, maze.n_cells)
    true = paper.shortest_path_lengths(maze.transition_table())
    from companion.papers.dwsl.experiment import observed_horizons

    for s in range(maze.n_cells):
        for g in range(maze.n_cells):
            horizons = observed_horizons(data, s, g)
            assert shortest[s, g] == (min(horizons) if horizons else -1)
    seen = shortest > 0
    assert seen.any() and (shortest[seen] >= true[seen]).all()  # no walk beats BFS


# --- hindsight relabelling -----------------------------------------------------------------------


def test_relabelled_samples_are_consistent():
    rng = np.random.default_rng(0)
    states = rng.integers(0, 1000, size=(20, 11))  # distinct-ish labels to locate positions
    states = np.arange(20 * 11).reshape(20, 11)  # every entry unique: positions are recoverable
    actions = np.arange(20 * 10).reshape(20, 10)
    s, a, s2, g, h = paper.hindsight_relabel(states, actions, 5000, rng)
    e, t = np.divmod(s, 11)
    ge, j = np.divmod(g, 11)
    assert (ge == e).all() and (t < 10).all()  # goal from the same episode
    assert (j > t).all() and (h == j - t).all() and (h >= 1).all()  # a future state
    np.testing.assert_array_equal(s2, s + 1)  # the next state
    np.testing.assert_array_equal(a, e * 10 + t)  # the action taken at s_t


def test_relabelling_distribution_matches_brute_force():
    """Goal index uniform over t+1..T: P(h | t) = 1/(T − t) for h = 1..T−t."""
    T, n = 6, 200_000
    states = np.tile(np.arange(T + 1), (1, 1))
    actions = np.zeros((1, T), dtype=int)
    s, _, _, _, h = paper.hindsight_relabel(states, actions, n, np.random.default_rng(1))
    for t in range(T):
        sel = h[s == t]
        expected = np.bincount(np.arange(1, T - t + 1), minlength=T + 1) / (T - t)
        observed = np.bincount(sel, minlength=T + 1) / len(sel)
        np.testing.assert_allclose(observed, expected, atol=0.01)
    np.testing.assert_allclose(np.bincount(s, minlength=T) / n, 1 / T, atol=0.01)


def test_batches_are_a_function_of_the_step():
    states, actions = np.arange(44).reshape(4, 11), np.zeros((4, 10), dtype=int)
    b = paper.HindsightBatches(states, actions, 8, seed=3)
    first = b(5)
    assert all(torch.equal(x, y) for x, y in zip(first, b(5)))
    assert not torch.equal(first[3], b(6)[3])
    halves = [
        paper.HindsightBatches(states, actions, 8, 3, rank=r, world_size=2)(5) for r in (0, 1)
    ]
    assert torch.equal(
        torch.sort(torch.cat([halves[0][0], halves[1][0]])).values, torch.sort(first[0]).values
    )


# --- the distance --------------------------------------------------------------------------------


def test_targets_are_horizon_minus_one_clipped():
    h = torch.tensor([1, 2, 5, 30, 31, 100])
    assert paper.distance_targets(h, 30).tolist() == [0, 1, 4, 29, 29, 29]


def soft_min_reference(alpha: float) -> float:
    """The two-point distribution's soft minimum in closed form (float64, no torch)."""
    return -alpha * math.log(0.25 * math.exp(-0.2 / alpha) + 0.75 * math.exp(-0.8 / alpha))


def test_soft_min_on_a_known_distribution():
    """Two-point distribution: p(k=2) = 0.25, p(k=8) = 0.75 over B = 10 bins, in float64
    against the closed form (well conditioned there even at α = 1e4)."""
    probs = torch.zeros(10, dtype=torch.float64)
    probs[2], probs[8] = 0.25, 0.75
    logits = probs.clamp_min(1e-300).log()
    for alpha in (1e-2, 0.05, 0.3, 1.0, 5.0, 1e4):
        got = paper.soft_min_distance(logits, alpha).item()
        assert got == pytest.approx(soft_min_reference(alpha), rel=1e-9)
    assert paper.soft_min_distance(logits, None).item() == pytest.approx(0.25 * 0.2 + 0.75 * 0.8)
    # α → 0: the smallest supported bin, −α log 0.25 above it; α → ∞: the mean minus
    # Var/(2α) (second-order expansion; Var = 0.0675)
    assert paper.soft_min_distance(logits, 1e-2).item() == pytest.approx(
        0.2 + 0.01 * math.log(4), abs=1e-12
    )
    assert paper.soft_min_distance(logits, 1e4).item() == pytest.approx(
        0.65 - 0.0675 / 2e4, abs=1e-9
    )
    # in between it is monotone in α
    values = [paper.soft_min_distance(logits, a).item() for a in (0.01, 0.1, 0.5, 2.0, 10.0)]
    assert values == sorted(values)


def test_soft_min_in_float32_within_its_rounding():
    """The training dtype: −α·logsumexp(…) carries an absolute rounding error of order
    ε₃₂·α·|log p| (the log-sum-exp is O(1) and is multiplied by α), so the tolerance grows
    with α."""
    probs = torch.zeros(10)
    probs[2], probs[8] = 0.25, 0.75
    logits = probs.clamp_min(1e-30).log()
    eps = torch.finfo(torch.float32).eps
    for alpha in (0.05, 0.3, 1.0, 5.0, 1e4):
        got = paper.soft_min_distance(logits, alpha).item()
        assert got == pytest.approx(soft_min_reference(alpha), abs=8 * eps * max(1.0, alpha))


def test_soft_min_matches_the_official_formula():
    """The code computes −α log Σ softmax(z) exp(−(k/B)/α) directly; ours uses logsumexp."""
    torch.manual_seed(0)
    logits = torch.randn(7, 30) * 3
    bins = torch.arange(30) / 30
    for alpha in (0.1, 1.0):
        direct = -alpha * torch.log((logits.softmax(-1) * torch.exp(-bins / alpha)).sum(-1))
        torch.testing.assert_close(paper.soft_min_distance(logits, alpha), direct)
    torch.testing.assert_close(
        paper.soft_min_distance(logits, None), (logits.softmax(-1) * bins).sum(-1)
    )


def test_distance_in_steps_of_a_one_hot_distribution():
    for k in (0, 3, 9):
        probs = torch.nn.functional.one_hot(torch.tensor(k), 10).float()
        d = paper.distance_from_distribution(probs, 0.1)
        assert paper.distance_in_steps(d, 10).item() == pytest.approx(k + 1, abs=1e-4)


def test_advantage_and_weights():
    d, d_next = torch.tensor([0.5, 0.5, 0.5]), torch.tensor([0.4, 0.5, 0.6])
    adv = paper.advantage(d, d_next, bins=10)
    torch.testing.assert_close(adv, torch.tensor([0.0, -0.1, -0.2]))
    w = paper.action_weights(torch.tensor([0.0, -0.1, 0.5]), beta=0.05, clip=10.0)
    torch.testing.assert_close(w, torch.tensor([1.0, math.exp(-2.0), 10.0]))
    assert paper.action_weights(torch.tensor([0.5]), 0.05, None).item() == pytest.approx(
        math.exp(10)
    )


def test_goal_reached_next_state_has_no_future_cost():
    """γ = 0 when s' is the goal: A = d(s, g) − 1/B whatever d(s', g) is."""
    s, a, s2, g = (
        torch.tensor([0, 0]),
        torch.tensor([1, 1]),
        torch.tensor([3, 2]),
        torch.tensor([3, 3]),
    )
    batch = (s, a, s2, g, torch.tensor([1, 4]))
    d, d_next = torch.tensor([0.2, 0.2]), torch.tensor([0.7, 0.1])
    _, adv = paper.dwsl_actor_loss(torch.zeros(2, 4), batch, d, d_next, 10, 0.05, 10.0)
    torch.testing.assert_close(adv, torch.tensor([0.2 - 0.1, 0.2 - 0.1 - 0.1]))


def test_embedding_mlp_equals_mlp_on_concatenated_one_hots():
    torch.manual_seed(1)
    net = paper.GoalConditionedMLP(6, (16, 16), 3)
    s, g = torch.tensor([0, 5, 2]), torch.tensor([1, 1, 4])
    x = torch.cat([torch.nn.functional.one_hot(s, 6), torch.nn.functional.one_hot(g, 6)], -1)
    w = torch.cat([net.state_embedding.weight.T, net.goal_embedding.weight.T], 1)
    manual = net.head(torch.relu(x.float() @ w.T + net.bias))
    torch.testing.assert_close(net(s, g), manual)


def test_gcbc_is_dwsl_with_unit_weights():
    torch.manual_seed(2)
    actor = paper.GoalConditionedMLP(5, (8,), 4)
    batch = tuple(torch.tensor(x) for x in ([0, 1, 2], [1, 2, 3], [1, 2, 3], [4, 4, 4], [3, 2, 1]))
    zero = torch.zeros(3)
    out = actor(batch[0], batch[3])
    # d = c + d' everywhere and huge β: every weight is exp(0) = 1
    loss, _ = paper.dwsl_actor_loss(out, batch, zero + 0.1, zero, 10, beta=1e9, clip=10.0)
    assert loss.item() == pytest.approx(paper.gcbc_loss(out, batch).item(), rel=1e-6)


def test_training_loss_by_hand():
    """L_d + GCBC + DWSL recomputed from the networks' outputs."""
    torch.manual_seed(3)
    arms = {"gcbc": None, "dwsl α=0.1": 0.1}
    agent = paper.GoalReachingAgent(5, 4, (8,), 6, arms, seed=0)
    with torch.no_grad():
        agent.actors[1].head[-1].bias.add_(torch.randn(4))  # make the two actors differ
    batch = tuple(torch.tensor(x) for x in ([0, 1, 2], [1, 2, 3], [1, 2, 4], [4, 4, 4], [3, 1, 9]))
    total, metrics = paper.training_loss(agent, batch, arms, 6, 0.05, 10.0)
    s, a, s2, g, h = batch
    logits = agent.distance(s, g)
    ce = torch.nn.functional.cross_entropy
    l_d = ce(logits, torch.tensor([2, 0, 5]))
    d = paper.soft_min_distance(logits, 0.1)
    d2 = paper.soft_min_distance(agent.distance(s2, g), 0.1) * torch.tensor([1.0, 1.0, 0.0])
    w = torch.exp((d - 1 / 6 - d2) / 0.05).clamp(max=10.0)
    l_gcbc = ce(agent.actors[0](s, g), a)
    l_dwsl = (w * ce(agent.actors[1](s, g), a, reduction="none")).mean()
    assert total.item() == pytest.approx((l_d + l_gcbc + l_dwsl).item(), rel=1e-5)
    assert metrics["distance_loss"] == pytest.approx(l_d.item(), rel=1e-5)


def test_arms_start_from_the_same_weights():
    agent = paper.GoalReachingAgent(5, 4, (8,), 6, {"gcbc": None, "dwsl α=0.1": 0.1}, seed=4)
    a, b = agent.actors
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert agent.actor("dwsl α=0.1") is b


# --- rollouts ------------------------------------------------------------------------------------


def test_vectorized_rollouts_match_the_environment(maze):
    rng = np.random.default_rng(5)
    actions = rng.integers(0, 4, size=(maze.n_cells, maze.n_cells))
    table = maze.transition_table()
    steps = paper.steps_to_goal(actions, table, 30)
    for start, goal in rng.integers(0, maze.n_cells, size=(40, 2)):
        if start == goal:
            assert steps[start, goal] == 0
            continue
        obs, _ = maze.reset(options={"start": maze.cells[start], "goal": maze.cells[goal]})
        result = -1
        for t in range(1, 31):
            s = maze.index[tuple(obs["observation"].tolist())]
            obs, _, terminated, truncated, _ = maze.step(actions[s, goal])
            if terminated:
                result = t
                break
            if truncated:
                break
        assert steps[start, goal] == result
        path = paper.rollout_table(actions, table, int(start), int(goal), 30)
        assert (path[-1] == goal) == (result > 0)


def test_optimal_policy_reaches_every_goal_in_shortest_time(maze):
    table = maze.transition_table()
    dist = paper.shortest_path_lengths(table)
    best = np.argmin(dist[table].transpose(0, 2, 1), axis=2)  # [s, g]: a step down the BFS
    np.testing.assert_array_equal(paper.steps_to_goal(best, table, 30), dist)


# --- presets, run, claims ------------------------------------------------------------------------


def test_presets_and_validation():
    assert set(paper.PRESETS) == {"smoke", "notebook", "full"}
    cfg = paper.PRESETS["notebook"].replace(beta=0.1)
    assert cfg.beta == 0.1 and paper.PRESETS["notebook"].beta == 0.05
    for bad, text in (
        ({"betaa": 1}, "betaa"),
        ({"beta": "hot"}, "beta"),
        ({"layout": "labyrinth"}, "labyrinth"),
        ({"alphas": (0.1, -1.0)}, "alphas"),
        ({"epsilon": 1.5}, "epsilon"),
        ({"steps": 0}, "steps"),
        ({"device": "tpu"}, "tpu"),
    ):
        with pytest.raises(CompanionError, match=text):
            paper.PRESETS["smoke"].replace(**bad)
    cfg = paper.PRESETS["notebook"].with_strings({"alphas": "0.2,1", "hidden": "64,64"})
    assert cfg.alphas == (0.2, 1.0) and cfg.hidden == (64, 64)


def test_smoke_run_resume_and_claims(tmp_path):
    cfg = paper.PRESETS["smoke"].replace(n_seeds=2)
    result = paper.run(cfg, out_dir=tmp_path)
    assert [s.seed for s in result.seeds] == [0, 1]
    assert result.arms == ["gcbc", "dwsl α=0.1"]
    s = result.seeds[0]
    n = len(result.cells)
    assert np.array(s.greedy_actions["gcbc"]).shape == (n, n)
    assert all(0 <= v <= 1 for v in s.success.values())
    assert len(s.loss_steps) == cfg.steps
    pmf = np.array(s.example_pmf)
    np.testing.assert_allclose(pmf.sum(1), 1, atol=1e-3)
    loaded = paper.Result.load(tmp_path / "result.json")
    assert loaded.seeds[1].success == result.seeds[1].success
    again = paper.run(cfg, out_dir=tmp_path, resume=True)  # finished seeds are kept
    assert again.seeds[0].seconds == result.seeds[0].seconds
    report = paper.check_claims(result)
    assert len(report.rows) == 3
    assert str(report).endswith(f"claims hold: {report.n_hold}/3")


def test_runs_are_deterministic():
    cfg = paper.PRESETS["smoke"]
    a, b = paper.run(cfg), paper.run(cfg)
    assert a.seeds[0].success == b.seeds[0].success
    assert a.seeds[0].learned_steps == b.seeds[0].learned_steps


def test_run_reads_a_d4rl_file(tmp_path):
    cfg = paper.PRESETS["smoke"]
    env = paper.GridMaze(cfg.layout, cfg.episode_length)
    data = paper.collect_dataset(env, 30, cfg.episode_length, 0.5, 0.5, seed=9)
    path = paper.save_d4rl(tmp_path / "data.npz", env, data)
    result = paper.run(cfg.replace(data_path=str(path)))
    assert sum(result.seeds[0].visits) == data.states.size


def test_spearman_matches_scipy():
    from scipy.stats import spearmanr

    from companion.papers.dwsl.claims import spearman

    rng = np.random.default_rng(0)
    x = rng.integers(0, 6, size=300)  # many ties, like BFS distances
    y = x + rng.normal(0, 2, size=300)
    assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)


def test_claims_fail_when_the_effect_is_absent():
    """Claims are computed, not typed: swapping the arms' tables must break the first claim."""
    result = paper.run(paper.PRESETS["smoke"])
    s = result.seeds[0]
    dwsl = result.arms[1]
    s.success[dwsl], s.success["gcbc"] = 0.1, 0.9
    assert not paper.check_claims(result).rows[0].holds
    s.success[dwsl], s.success["gcbc"] = 0.9, 0.1
    assert paper.check_claims(result).rows[0].holds
    s.success[dwsl] = 0.1 + 0.5 * SUCCESS_MARGIN  # a gap inside the margin is not a win
    assert not paper.check_claims(result).rows[0].holds
    # the distance rows: the true distances pass, reversed ones fail
    true = np.array(result.true_steps, dtype=float)
    s.learned_steps["α=0.1"] = true.tolist()
    s.learned_steps["mean"] = (true + 4).tolist()
    report = paper.check_claims(result)
    assert report.rows[1].holds and report.rows[2].holds and report.invariants[0].holds
    s.learned_steps["α=0.1"] = (true.max() - true).tolist()
    report = paper.check_claims(result)
    assert not report.rows[2].holds and not report.invariants[0].holds


def test_exercise_checks_reject_wrong_answers():
    with pytest.raises(ExerciseError, match="differs"):
        check_close(torch.ones(3), torch.zeros(3), "x")
