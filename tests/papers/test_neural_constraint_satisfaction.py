"""neural_constraint_satisfaction against independent computations (hand-placed blocks,
brute-force assignments, scikit-learn's k-means, grid distances) and the claims on fake
results."""

import dataclasses
import itertools
import json

import numpy as np
import pytest
import torch

from companion.errors import CompanionError
from companion.papers import neural_constraint_satisfaction as paper
from companion.papers.neural_constraint_satisfaction import claims as C
from companion.papers.neural_constraint_satisfaction.env import DIRECTIONS, PALETTE


@pytest.fixture(scope="module")
def world():
    return paper.BlockWorld(grid=5, cell_px=4, block=3, noise=0.05, colours=6)


# --- the world ----------------------------------------------------------------------------------


def test_step_rules(world):
    pos = np.array([[0, 0], [0, 1]])
    # move block 0 right onto block 1: occupied target, nothing happens
    new, moved = world.step(pos, world.action((0, 0), 3))
    assert moved is None and np.array_equal(new, pos)
    # off the board
    new, moved = world.step(pos, world.action((0, 0), 0))
    assert moved is None
    # picking an empty cell
    new, moved = world.step(pos, world.action((4, 4), 0))
    assert moved is None
    # a legal move
    new, moved = world.step(pos, world.action((0, 1), 1))
    assert moved == 1 and new[1].tolist() == [1, 1] and new[0].tolist() == [0, 0]


def test_expert_solves_random_tasks(world):
    rng = np.random.default_rng(0)
    for k in (1, 3, 5):
        colours, pos, goal = world.random_task(k, rng)
        n = world.expert_length(pos, goal, colours)
        manhattan = int(np.abs(pos - goal).sum())
        assert manhattan <= n < 200


def test_collect_moves_one_block_per_step(world):
    data = paper.collect(world, 6, (2, 3), 0.2, np.random.default_rng(1))
    assert data.observations.shape[1:] == (6, world.size, world.size)
    assert ((data.rewards > 0) == data.terminals).all()
    # the goal channels stay fixed within an episode
    for a, b in data.episode_bounds():
        assert np.array_equal(data.observations[a, 3:], data.observations[b - 1, 3:])


# --- level one ----------------------------------------------------------------------------------


def test_entities_are_the_blocks_placed_by_hand(world):
    quiet = paper.BlockWorld(grid=5, cell_px=4, block=3, noise=0.0)
    pos = np.array([[0, 0], [2, 3], [4, 1]])
    offsets = np.array([[0, 1], [1, 0], [1, 1]])
    colours = np.array([0, 3, 5])
    img = quiet.render(pos, colours, offsets, np.random.default_rng(0))
    ent = paper.infer_entities(img)
    assert len(ent.types) == 3
    expected = pos * 4 + offsets + (3 - 1) / 2  # centre of a 3×3 square
    for t, s in zip(ent.types, ent.states):
        i = int(np.argmin(np.linalg.norm(PALETTE[colours] - t, axis=1)))
        np.testing.assert_allclose(s, expected[i])
    # with pixel noise the same entities are found
    noisy = world.render(pos, colours, offsets, np.random.default_rng(0))
    assert len(paper.infer_entities(noisy).types) == 3


def test_match_entities_is_the_brute_force_assignment():
    rng = np.random.default_rng(2)
    for n in (2, 3, 4, 5):
        a, b = rng.random((n, 3)), rng.random((n, 3))
        pairs = paper.match_entities(a, b)
        cost = sum(np.linalg.norm(a[i] - b[j]) for i, j in pairs)
        brute = min(
            sum(np.linalg.norm(a[i] - b[p[i]]) for i in range(n))
            for p in itertools.permutations(range(n))
        )
        assert cost == pytest.approx(brute)


def test_entity_transition_finds_the_one_moved_entity(world):
    quiet = paper.BlockWorld(grid=5, cell_px=4, block=3, noise=0.0)
    rng = np.random.default_rng(0)
    colours, offsets = np.array([1, 2]), np.array([[0, 0], [1, 1]])
    a = quiet.render(np.array([[0, 0], [3, 3]]), colours, offsets, rng)
    b = quiet.render(np.array([[1, 0], [3, 3]]), colours, offsets, rng)
    c = quiet.render(np.array([[1, 0], [3, 4]]), colours, offsets, rng)
    t = paper.entity_transition(a, b, 7)
    assert t.status == "moved" and t.action == 7
    np.testing.assert_allclose(t.after - t.before, [4.0, 0.0])
    assert paper.entity_transition(a, a, 0).status == "no-op"
    assert paper.entity_transition(a, c, 0).status == "dropped"


# --- level two ----------------------------------------------------------------------------------


def test_kmeans_matches_scikit_learn():
    from sklearn.cluster import KMeans

    rng = np.random.default_rng(3)
    centres = np.stack(np.meshgrid(np.arange(5) * 4.0, np.arange(5) * 4.0), -1).reshape(-1, 2)
    x = centres[rng.integers(25, size=2000)] + rng.integers(0, 2, size=(2000, 2))
    ours = paper.kmeans(x, 25, np.random.default_rng(0))
    sse = ((x - ours[paper.assign(x, ours)]) ** 2).sum()
    ref = KMeans(25, n_init=3, random_state=0).fit(x)
    assert sse <= ref.inertia_ * 1.001
    assert len(np.unique(paper.assign(x, ours))) == 25


def test_graph_counts_and_majority_action():
    centroids = np.array([[0.0, 0.0], [0.0, 4.0], [4.0, 0.0]])
    T = paper.method.EntityTransition
    moves = [
        T("moved", np.array([0.1, 0.0]), np.array([0.0, 3.9]), 5),
        T("moved", np.array([0.0, 0.2]), np.array([0.1, 4.0]), 5),
        T("moved", np.array([0.0, 0.0]), np.array([0.0, 4.0]), 9),
        T("moved", np.array([4.0, 0.0]), np.array([0.0, 0.0]), 2),
        T("moved", np.array([4.0, 0.0]), np.array([4.1, 0.0]), 1),  # within a cluster
        T("no-op"),
    ]
    g = paper.build_transition_graph(moves, centroids, 12)
    assert g.counts.tolist() == [[0, 3, 0], [0, 0, 0], [1, 0, 0]]
    assert g.action[0, 1] == 5 and g.action[2, 0] == 2 and g.action[1, 0] == -1
    assert g.n_edges == 2


def _grid_graph(grid=5, cell=4):
    centroids = np.array([[r * cell, c * cell] for r in range(grid) for c in range(grid)], float)
    w = paper.BlockWorld(grid=grid)
    counts = np.zeros((grid * grid, grid * grid), int)
    action = -np.ones_like(counts)
    for r, c in itertools.product(range(grid), range(grid)):
        for d, (dr, dc) in enumerate(DIRECTIONS):
            if 0 <= r + dr < grid and 0 <= c + dc < grid:
                counts[r * grid + c, (r + dr) * grid + c + dc] = 1
                action[r * grid + c, (r + dr) * grid + c + dc] = w.action((r, c), d)
    return paper.TransitionGraph(centroids, counts, action), w


def test_graph_path_lengths_are_grid_distances():
    g, w = _grid_graph()
    for a, b in [(0, 24), (3, 17), (12, 12)]:
        path = paper.graph_path(g, a, b, set())
        assert len(path) - 1 == abs(a // 5 - b // 5) + abs(a % 5 - b % 5)
    # a wall of blocked states forces a detour, as the simulator's BFS finds
    blocked = {1, 6, 11, 16}
    path = paper.graph_path(g, 0, 2, blocked)
    ref = w.shortest_path((0, 0), (0, 2), {(0, 1), (1, 1), (2, 1), (3, 1)})
    assert len(path) == len(ref)


def test_ncs_controller_solves_tasks_on_the_true_graph():
    g, w = _grid_graph()
    world = paper.BlockWorld(grid=5, cell_px=4, block=3, noise=0.05)
    g = dataclasses.replace(g, centroids=g.centroids + 1.5)  # block centres in their cells
    rng = np.random.default_rng(4)
    for k in (1, 3, 5):
        colours, pos, goal = world.random_task(k, rng)
        task = dict(
            k=k,
            colours=colours,
            start=pos,
            goal=goal,
            seed=k,
            budget=world.expert_length(pos, goal, colours) + k + 2,
        )
        ok, _ = paper.rollout(world, lambda i, gi, r: paper.ncs_action(g, i, gi, r), task)
        assert ok


# --- presets, config and the run ----------------------------------------------------------------


def test_presets_and_validation():
    assert set(paper.PRESETS) == {"smoke", "notebook", "full"}
    for bad, text in (
        ({"n_clusterz": 3}, "n_clusterz"),
        ({"arms": ("ncs", "magic")}, "magic"),
        ({"device": "tpu"}, "tpu"),
        ({"block": 9}, "block"),
        ({"test_counts": (9,)}, "counts"),
        ({"n_clusters": 1}, "n_clusters"),
        ({"epsilon": 1.5}, "epsilon"),
    ):
        with pytest.raises(CompanionError, match=text):
            paper.PRESETS["smoke"].replace(**bad)


def test_smoke_run_resume_and_claims(tmp_path):
    cfg = paper.PRESETS["smoke"].replace(device="cpu")
    result = paper.run(cfg, out_dir=tmp_path)
    assert set(result.arms) == set(paper.ARMS)
    for arm in result.arms.values():
        assert set(arm.success) == {str(k) for k in cfg.train_counts + cfg.test_counts}
        assert all(0.0 <= v <= 1.0 for v in arm.success.values())
    stored = json.loads((tmp_path / "result.json").read_text())
    assert paper.Result.from_dict(stored).to_dict() == stored
    assert stored == json.loads(json.dumps(result.to_dict()))
    resumed = paper.run(cfg, out_dir=tmp_path, resume=True)
    assert resumed.arms["ncs"].success == result.arms["ncs"].success
    report = paper.check_claims(result)
    assert len(report.rows) == 7


# --- claims on fake results -----------------------------------------------------------------------


def _fake(
    ncs=(1.0, 1.0, 1.0, 1.0),
    bc=(1.0, 0.8, 0.1, 0.0),
    ent=(1.0, 0.8, 0.1, 0.0),
    counts_acc=1.0,
    purity=1.0,
    dropped=0,
):
    keys = ("1", "2", "3", "4")

    def arm(name, values, **kw):
        return paper.ArmResult(arm=name, success=dict(zip(keys, values)), seconds=0.0, **kw)

    return paper.Result(
        config={"train_counts": [1, 2], "test_counts": [3, 4]},
        arms={
            "ncs": arm(
                "ncs",
                ncs,
                edge_counts=[[0, 1], [1, 0]],
                transitions={"moved": 10, "no-op": 0, "dropped": dropped},
            ),
            "bc_pixels": arm("bc_pixels", bc),
            "bc_entities": arm("bc_entities", ent),
        },
        n_transitions=10,
        entity_count_accuracy=dict.fromkeys(keys, counts_acc),
        cluster_purity=purity,
        example={},
    )


def test_claims_hold_on_a_clear_effect():
    report = paper.check_claims(_fake())
    assert report.all_hold and all(i.holds for i in report.invariants)


@pytest.mark.parametrize(
    "kwargs, failing",
    [
        ({"counts_acc": 0.5}, 0),
        ({"purity": 0.8}, 0),
        ({"bc": (0.3, 0.2, 0.0, 0.0)}, 1),
        ({"ent": (0.3, 0.2, 0.0, 0.0)}, 2),
        ({"ncs": (0.8, 0.7, 0.7, 0.7)}, 3),
        ({"ncs": (1.0, 1.0, 0.5, 0.5)}, 4),
        ({"bc": (1.0, 0.8, 0.7, 0.6)}, 5),
        ({"bc": (1.0, 0.6, 0.4, 0.4)}, 5),  # falls from the mean over K=1,2, not from K=2
        ({"ent": (1.0, 1.0, 0.8, 0.8)}, 6),
    ],
)
def test_every_claim_row_can_fail(kwargs, failing):
    report = paper.check_claims(_fake(**kwargs))
    assert not report.rows[failing].holds
    # rows that depend on a failed premise are not counted as holding
    if failing in (0, 1, 2):
        assert any(not r.premise_ok for r in report.rows[3:])
    if failing == 2:
        assert not report.rows[6].premise_ok


def test_invariant_flags_dropped_transitions():
    report = paper.check_claims(_fake(dropped=3))
    assert not report.invariants[0].holds


def test_margins_are_the_documented_constants():
    assert C.GAP == 0.5 and 0 < C.BC_SOLVES <= 1 and 0 < C.BC_DROP < 1


def test_bc_policies_have_the_action_space():
    cfg = paper.PRESETS["smoke"]
    n_actions = cfg.grid * cfg.grid * 4
    pix = paper.PixelPolicy(cfg.grid, cfg.cell_px, 8, 16, n_actions)
    side = cfg.grid * cfg.cell_px
    assert pix(torch.zeros(2, 6, side, side)).shape == (2, n_actions)
    ent = paper.EntityPolicy(10, 16, n_actions)
    assert ent(torch.zeros(3, 10)).shape == (3, n_actions)
