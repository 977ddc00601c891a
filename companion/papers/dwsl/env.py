"""A small goal-conditioned gridworld with the gymnasium API, its exact shortest paths, and the
offline data a sub-optimal behaviour policy leaves behind.

``GridMaze`` is a maze of free cells (``.``) and walls (``#``). The agent stands on a cell and
moves up, down, left or right; a move into a wall leaves it where it is. Observations follow the
goal-conditioned convention of gymnasium-robotics (``observation``, ``achieved_goal``,
``desired_goal``, each a (row, col) cell), the reward is sparse (0 at the goal, −1 elsewhere, as
``negative_fetch_sparse`` in jhejna/dwsl) and an episode terminates at the goal and is truncated
after ``max_episode_steps``. Dynamics are deterministic, so breadth-first search gives the true
shortest-path distance between any two cells: the yardstick for DWSL's learned distance.

The offline data is a set of fixed-length episodes without any goal labels: a mixture of a noisy
expert (heading for goals of its own, taking a random action with probability ``epsilon``) and a
uniformly random policy. Goals are attached later by hindsight relabelling (``method``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import gymnasium as gym
import numpy as np

from companion.data import offline_rl
from companion.errors import CompanionError, unknown

# (row, col) change of each action: up, down, left, right
MOVES = np.array([[-1, 0], [1, 0], [0, -1], [0, 1]])
ACTION_NAMES = ("up", "down", "left", "right")

LAYOUTS: dict[str, tuple[str, ...]] = {
    # 4 × 4 free cells and one inner wall: small enough to check by hand (tests, smoke)
    "tiny": (
        "######",
        "#....#",
        "#.##.#",
        "#....#",
        "#....#",
        "######",
    ),
    # four 3 × 3 rooms joined by four doorways (40 free cells, longest shortest path 12 steps)
    "small_rooms": (
        "#########",
        "#...#...#",
        "#.......#",
        "#...#...#",
        "##.###.##",
        "#...#...#",
        "#.......#",
        "#...#...#",
        "#########",
    ),
    # four rooms joined by four doorways (68 free cells, longest shortest path 16 steps)
    "four_rooms": (
        "###########",
        "#....#....#",
        "#....#....#",
        "#.........#",
        "#....#....#",
        "##.####.###",
        "#....#....#",
        "#....#....#",
        "#.........#",
        "#....#....#",
        "###########",
    ),
}


def parse_layout(layout: str | tuple[str, ...]) -> np.ndarray:
    """A boolean wall grid from a layout name or a tuple of equal-length strings of ``#``/``.``."""
    rows = LAYOUTS[layout] if isinstance(layout, str) and layout in LAYOUTS else layout
    if isinstance(rows, str):
        raise unknown("layout", layout, LAYOUTS)
    if len({len(r) for r in rows}) != 1 or any(set(r) - {"#", "."} for r in rows):
        raise CompanionError("a layout is rows of equal length made of '#' (wall) and '.' (free)")
    walls = np.array([[c == "#" for c in r] for r in rows])
    if walls.all():
        raise CompanionError("a layout needs at least one free cell")
    # moves never leave the grid: the border must be wall
    if not (walls[0].all() and walls[-1].all() and walls[:, 0].all() and walls[:, -1].all()):
        raise CompanionError("a layout must be surrounded by walls ('#' on its border)")
    return walls


class GridMaze(gym.Env):
    """A deterministic goal-conditioned gridworld (gymnasium API).

    ``reset(options={"start": (r, c), "goal": (r, c)})`` fixes the task; missing entries are
    drawn uniformly from the free cells (the goal different from the start).
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, layout: str | tuple[str, ...] = "four_rooms", max_episode_steps: int = 50):
        self.walls = parse_layout(layout)
        self.max_episode_steps = max_episode_steps
        self.cells = np.argwhere(~self.walls)  # [N, 2] (row, col), in row-major order
        self.index = {tuple(c): i for i, c in enumerate(self.cells.tolist())}
        self.n_cells = len(self.cells)
        cell_space = gym.spaces.Box(0, max(self.walls.shape) - 1, shape=(2,), dtype=np.int64)
        self.observation_space = gym.spaces.Dict(
            {"observation": cell_space, "achieved_goal": cell_space, "desired_goal": cell_space}
        )
        self.action_space = gym.spaces.Discrete(len(MOVES))
        self._cell = self._goal = self.cells[0]
        self._t = 0

    # --- the dynamics, also as a table over cell indices -------------------------------------

    def move(self, cell, action: int) -> np.ndarray:
        """The cell reached from ``cell`` by ``action`` (a wall leaves the agent in place)."""
        target = np.asarray(cell) + MOVES[int(action)]
        return np.asarray(cell) if self.walls[tuple(target)] else target

    def transition_table(self) -> np.ndarray:
        """[N, 4]: ``table[i, a]`` is the index of the cell reached from cell ``i`` by ``a``."""
        return np.array(
            [[self.index[tuple(self.move(c, a))] for a in range(len(MOVES))] for c in self.cells]
        )

    # --- gymnasium API -------------------------------------------------------------------------

    def _obs(self) -> dict[str, np.ndarray]:
        return {
            "observation": self._cell.copy(),
            "achieved_goal": self._cell.copy(),
            "desired_goal": self._goal.copy(),
        }

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        options = options or {}
        start = options.get("start")
        goal = options.get("goal")
        if start is None:
            start = self.cells[self.np_random.integers(self.n_cells)]
        if goal is None:
            choices = [c for c in self.cells if tuple(c) != tuple(start)]
            goal = choices[self.np_random.integers(len(choices))]
        for name, cell in (("start", start), ("goal", goal)):
            if tuple(np.asarray(cell).tolist()) not in self.index:
                raise CompanionError(f"{name} {tuple(cell)} is not a free cell of the maze")
        self._cell, self._goal = np.asarray(start).copy(), np.asarray(goal).copy()
        self._t = 0
        return self._obs(), {"is_success": bool((self._cell == self._goal).all())}

    def step(self, action):
        if not self.action_space.contains(int(action)):
            raise CompanionError(f"action {action!r} is not one of 0..{len(MOVES) - 1}")
        self._cell = self.move(self._cell, action)
        self._t += 1
        success = bool((self._cell == self._goal).all())
        reward = 0.0 if success else -1.0
        truncated = self._t >= self.max_episode_steps and not success
        return self._obs(), reward, success, truncated, {"is_success": success}

    def render(self) -> str:
        """The maze as text: ``A`` agent, ``G`` goal, ``#`` wall."""
        chars = np.where(self.walls, "#", ".")
        chars[tuple(self._goal)] = "G"
        chars[tuple(self._cell)] = "A"
        return "\n".join("".join(row) for row in chars)


def shortest_path_lengths(table: np.ndarray) -> np.ndarray:
    """[N, N] number of steps of the shortest path from cell i to cell j (BFS from every cell).

    Unreachable pairs get −1. ``table`` is :meth:`GridMaze.transition_table`.
    """
    n = len(table)
    dist = np.full((n, n), -1, dtype=np.int64)
    for source in range(n):
        dist[source, source] = 0
        frontier = [source]
        while frontier:
            following = []
            for u in frontier:
                for v in table[u]:
                    if dist[source, v] < 0:
                        dist[source, v] = dist[source, u] + 1
                        following.append(v)
            frontier = following
    return dist


@dataclasses.dataclass
class OfflineData:
    """Fixed-length episodes of cell indices: ``states`` [E, T+1] (s_0..s_T), ``actions`` [E, T]
    (a_t leads from s_t to s_{t+1}) and ``expert`` [E] (which behaviour produced each episode)."""

    states: np.ndarray
    actions: np.ndarray
    expert: np.ndarray

    @property
    def episode_length(self) -> int:
        return self.actions.shape[1]

    def __len__(self) -> int:
        return len(self.actions)


def behaviour_actions(
    cells: np.ndarray,
    targets: np.ndarray,
    expert: np.ndarray,
    epsilon: float,
    table: np.ndarray,
    dist: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """One action per episode: a shortest-path step towards ``targets`` (ties broken at random)
    for expert episodes with probability 1 − ``epsilon``, otherwise a uniformly random action."""
    n_actions = table.shape[1]
    on_path = dist[table[cells], targets[:, None]] == (dist[cells, targets] - 1)[:, None]
    best = np.argmax(on_path + rng.random(on_path.shape), axis=1)  # a random shortest step
    random = rng.integers(n_actions, size=len(cells))
    greedy = expert & (rng.random(len(cells)) >= epsilon)
    return np.where(greedy, best, random)


def collect_dataset(
    env: GridMaze,
    n_episodes: int,
    episode_length: int,
    expert_fraction: float,
    epsilon: float,
    seed: int,
) -> OfflineData:
    """Roll out the sub-optimal behaviour policy in ``env``'s dynamics, all episodes at once.

    A fraction ``expert_fraction`` of the episodes comes from a noisy expert that walks a shortest
    path to a goal of its own (a new one, uniformly drawn, whenever it gets there) but takes a
    uniformly random action with probability ``epsilon``; the rest from a uniformly random
    policy. Starts are uniform over free cells. The behaviour's goals are not stored: the data is
    unlabelled interaction. (Stepping through ``env.step`` gives the same episodes, only slower;
    the tests check that the table and the gymnasium API agree.)
    """
    rng = np.random.default_rng(seed)
    table = env.transition_table()
    dist = shortest_path_lengths(table)
    n = env.n_cells
    expert = rng.random(n_episodes) < expert_fraction
    states = np.zeros((n_episodes, episode_length + 1), dtype=np.int64)
    actions = np.zeros((n_episodes, episode_length), dtype=np.int64)
    states[:, 0] = rng.integers(n, size=n_episodes)
    targets = states[:, 0].copy()
    for t in range(episode_length):
        cells = states[:, t]
        reached = targets == cells
        # a new goal for the expert, different from where it stands
        fresh = (cells + 1 + rng.integers(n - 1, size=n_episodes)) % n
        targets = np.where(reached, fresh, targets)
        actions[:, t] = behaviour_actions(cells, targets, expert, epsilon, table, dist, rng)
        states[:, t + 1] = table[cells, actions[:, t]]
    return OfflineData(states=states, actions=actions, expert=expert)


# --- D4RL-style files ---------------------------------------------------------------------------


def save_d4rl(path, env: GridMaze, data: OfflineData) -> Path:
    """Write ``data`` as a D4RL-style ``.npz`` (:mod:`companion.data.offline_rl`): flat per-step
    ``observations`` [M, 2] (cells), ``actions`` [M], ``next_observations`` [M, 2], ``rewards``
    and ``terminals`` (zeros: the data has no task) and ``timeouts`` [M] (True at each episode's
    last step)."""
    E, T = data.actions.shape
    timeouts = np.zeros((E, T), dtype=bool)
    timeouts[:, -1] = True
    transitions = offline_rl.Transitions(
        observations=env.cells[data.states[:, :-1]].reshape(E * T, 2),
        actions=data.actions.reshape(E * T),
        rewards=np.zeros(E * T),
        next_observations=env.cells[data.states[:, 1:]].reshape(E * T, 2),
        terminals=np.zeros(E * T, dtype=bool),
        timeouts=timeouts.reshape(E * T),
        provenance={
            "env": "GridMaze",
            "episodes": E,
            "episode_length": T,
            "behaviour": "noisy expert and uniform random mixture (collect_dataset)",
        },
    )
    return offline_rl.save_d4rl(path, transitions)


def load_d4rl(path, env: GridMaze) -> OfflineData:
    """Read a D4RL-style ``.npz`` (keys as :func:`save_d4rl`) back into equal-length episodes.

    Episodes end where ``timeouts`` or ``terminals`` is set; episodes shorter than the longest
    are dropped (hindsight sampling here assumes one length). ``expert`` is unknown: all False.
    """
    data = offline_rl.load_d4rl(
        path, required=("observations", "actions", "next_observations", "timeouts")
    )

    def cell_ids(rows: np.ndarray) -> np.ndarray:
        try:
            return np.array([env.index[tuple(r)] for r in rows.astype(np.int64).tolist()])
        except KeyError as err:
            raise CompanionError(f"{path} has a cell {err.args[0]} outside this maze") from None

    s, s2 = cell_ids(data.observations), cell_ids(data.next_observations)
    episodes = data.episode_bounds()
    longest = max(b - a for a, b in episodes)
    keep = [(a, b) for a, b in episodes if b - a == longest]
    states = np.stack([np.r_[s[a:b], s2[b - 1]] for a, b in keep])
    actions = np.stack([data.actions[a:b] for a, b in keep]).astype(np.int64)
    return OfflineData(states=states, actions=actions, expert=np.zeros(len(keep), dtype=bool))
