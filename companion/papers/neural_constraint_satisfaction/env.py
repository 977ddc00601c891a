"""A 2-D block-rearrangement world rendered to small images (the laptop stand-in for the paper's
simulated rearrangement tasks; the paper's environments were not available, so every detail
here is an assumption of this companion).

* ``K`` blocks of distinct colours sit on a ``grid × grid`` board, at most one per cell.
* An action is a *pick-and-move primitive* that moves one object per step, as in the paper:
  ``a = cell · 4 + d`` picks the block in ``cell`` and moves it one cell in direction ``d``
  (up, down, left, right). Picking an empty cell, leaving the board or moving onto an occupied
  cell is a no-op (the explicit rule for occupied targets).
* The agent sees only RGB images (``render``): each block is a ``block × block`` square drawn
  at a random offset inside its ``cell_px × cell_px`` cell (redrawn when it moves), on a black
  background, with Gaussian pixel noise. A goal is given as an image of the goal arrangement.
* Success is judged by the simulator: every block in its goal cell.

The offline data (``collect``) are episodes of a noisy oracle planner (``expert_action``, which
reads the simulator's state; it makes the demonstrations, no learner uses its internals).
"""

from __future__ import annotations

from collections import deque

import numpy as np

from companion.data.offline_rl import Transitions

# up, down, left, right as (d_row, d_col)
DIRECTIONS = np.array([[-1, 0], [1, 0], [0, -1], [0, 1]])
# well-separated block colours (RGB in [0, 1]); a scene uses K distinct ones
PALETTE = np.array(
    [
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, 0.0, 1.0],
        [1.0, 1.0, 0.0],
        [1.0, 0.0, 1.0],
        [0.0, 1.0, 1.0],
        [1.0, 0.5, 0.0],
        [1.0, 1.0, 1.0],
    ]
)


class BlockWorld:
    """The board's geometry and dynamics; a *state* is an int array ``[K, 2]`` of (row, col)."""

    def __init__(
        self, grid: int = 5, cell_px: int = 4, block: int = 3, noise: float = 0.05, colours: int = 8
    ):
        self.grid, self.cell_px, self.block, self.noise = grid, cell_px, block, noise
        self.n_colours = colours
        self.size = grid * cell_px
        self.n_actions = grid * grid * 4

    # -- dynamics ---------------------------------------------------------------------------
    def step(self, pos: np.ndarray, action: int) -> tuple[np.ndarray, int | None]:
        """Apply a pick-and-move action: (new positions, index of the moved block or None)."""
        cell, d = divmod(int(action), 4)
        src = np.array(divmod(cell, self.grid))
        dst = src + DIRECTIONS[d]
        hit = np.flatnonzero((pos == src).all(1))
        if not len(hit) or (dst < 0).any() or (dst >= self.grid).any():
            return pos, None
        if (pos == dst).all(1).any():
            return pos, None  # the target cell is occupied: nothing happens
        new = pos.copy()
        new[hit[0]] = dst
        return new, int(hit[0])

    def action(self, cell_rc, d: int) -> int:
        return (int(cell_rc[0]) * self.grid + int(cell_rc[1])) * 4 + int(d)

    def valid_actions(self, pos: np.ndarray) -> list[int]:
        occupied = {tuple(p) for p in pos}
        out = []
        for p in pos:
            for d, delta in enumerate(DIRECTIONS):
                q = p + delta
                if (q >= 0).all() and (q < self.grid).all() and tuple(q) not in occupied:
                    out.append(self.action(p, d))
        return out

    # -- rendering --------------------------------------------------------------------------
    def render(self, pos, colours, offsets, rng: np.random.Generator) -> np.ndarray:
        """RGB image ``[3, size, size]`` (float32): blocks at their cells and offsets, plus
        N(0, noise²) pixel noise."""
        img = np.zeros((3, self.size, self.size))
        for (r, c), k, (dr, dc) in zip(pos, colours, offsets):
            y, x = r * self.cell_px + dr, c * self.cell_px + dc
            img[:, y : y + self.block, x : x + self.block] = PALETTE[k][:, None, None]
        img += self.noise * rng.standard_normal(img.shape)
        return np.clip(img, 0.0, 1.0).astype(np.float32)

    def random_offsets(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return rng.integers(0, self.cell_px - self.block + 1, size=(n, 2))

    # -- tasks ------------------------------------------------------------------------------
    def random_task(self, k: int, rng: np.random.Generator):
        """(colours [K], start positions [K, 2], goal positions [K, 2]), start ≠ goal."""
        colours = rng.choice(self.n_colours, size=k, replace=False)
        while True:
            cells = rng.choice(self.grid * self.grid, size=k, replace=False)
            goal_cells = rng.choice(self.grid * self.grid, size=k, replace=False)
            if not np.array_equal(cells, goal_cells):
                break
        to_rc = np.stack(np.divmod(cells, self.grid), 1)
        goal_rc = np.stack(np.divmod(goal_cells, self.grid), 1)
        return colours, to_rc, goal_rc

    # -- the oracle planner that makes the demonstrations -----------------------------------
    def shortest_path(self, start, goal, blocked: set) -> list[tuple[int, int]] | None:
        """Cells from ``start`` to ``goal`` (both included) avoiding ``blocked``; BFS with a
        fixed neighbour order, so the path is deterministic."""
        start, goal = tuple(int(v) for v in start), tuple(int(v) for v in goal)
        prev = {start: None}
        queue = deque([start])
        while queue:
            u = queue.popleft()
            if u == goal:
                path = [u]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return path[::-1]
            for delta in DIRECTIONS:
                v = (u[0] + int(delta[0]), u[1] + int(delta[1]))
                if 0 <= v[0] < self.grid and 0 <= v[1] < self.grid:
                    if v not in prev and v not in blocked:
                        prev[v] = u
                        queue.append(v)
        return None

    def expert_action(
        self, pos: np.ndarray, goal: np.ndarray, order, rng: np.random.Generator
    ) -> int:
        """The oracle: blocks not at their goal are taken in a fixed priority (``order``: block
        indices, by colour); the first with a free shortest path moves one step along it. When
        every path is blocked, a random valid move."""
        occupied = {tuple(int(v) for v in p) for p in pos}
        for i in order:
            if (pos[i] == goal[i]).all():
                continue
            path = self.shortest_path(pos[i], goal[i], occupied - {tuple(pos[i])})
            if path is not None:
                delta = np.array(path[1]) - pos[i]
                d = int(np.flatnonzero((DIRECTIONS == delta).all(1))[0])
                return self.action(pos[i], d)
        return int(rng.choice(self.valid_actions(pos)))

    def expert_length(self, pos, goal, colours, cap: int = 200) -> int:
        """Steps the noiseless oracle needs (``cap`` if it does not finish)."""
        rng = np.random.default_rng(0)
        order = np.argsort(colours)
        for t in range(cap):
            if (pos == goal).all():
                return t
            pos, _ = self.step(pos, self.expert_action(pos, goal, order, rng))
        return cap


def solved(pos: np.ndarray, goal: np.ndarray) -> bool:
    """Success as the simulator judges it: every block in its goal cell."""
    return bool((pos == goal).all())


def collect(
    world: BlockWorld,
    n_episodes: int,
    counts: tuple[int, ...],
    epsilon: float,
    rng: np.random.Generator,
    max_steps: int = 40,
) -> Transitions:
    """Offline goal-conditioned data: episodes of the oracle with probability ``epsilon`` of a
    random valid move instead, K drawn from ``counts``. Observations are the current image and
    the goal image stacked on channels ([6, size, size]); rewards are 1 on the step that
    solves the task (the episode then ends: ``terminals``)."""
    obs, acts, rews, nxt, terms, touts = [], [], [], [], [], []
    for _ in range(n_episodes):
        k = int(rng.choice(counts))
        colours, pos, goal = world.random_task(k, rng)
        offsets = world.random_offsets(k, rng)
        goal_img = world.render(goal, colours, world.random_offsets(k, rng), rng)
        img = world.render(pos, colours, offsets, rng)
        for t in range(max_steps):
            if rng.random() < epsilon:
                a = int(rng.choice(world.valid_actions(pos)))
            else:
                a = world.expert_action(pos, goal, np.argsort(colours), rng)
            pos, moved = world.step(pos, a)
            if moved is not None:
                offsets = offsets.copy()
                offsets[moved] = world.random_offsets(1, rng)[0]
            nimg = world.render(pos, colours, offsets, rng)
            done = solved(pos, goal)
            obs.append(np.concatenate([img, goal_img]))
            nxt.append(np.concatenate([nimg, goal_img]))
            acts.append(a)
            rews.append(float(done))
            terms.append(done)
            touts.append(not done and t == max_steps - 1)
            img = nimg
            if done:
                break
    return Transitions(
        observations=np.stack(obs),
        actions=np.array(acts, dtype=np.int64),
        rewards=np.array(rews, dtype=np.float32),
        next_observations=np.stack(nxt),
        terminals=np.array(terms),
        timeouts=np.array(touts),
        provenance={
            "environment": f"BlockWorld(grid={world.grid}, cell_px={world.cell_px})",
            "behaviour": f"oracle planner, epsilon={epsilon} random valid moves",
            "object_counts": list(counts),
        },
    )
