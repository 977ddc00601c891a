"""Figures: plots take a result (and a seed index) and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.dwsl.env import GridMaze, OfflineData
from companion.papers.dwsl.experiment import GCBC, DWSLResult, arm_name
from companion.papers.dwsl.method import rollout_table, steps_to_goal


def geometry(maze: DWSLResult | GridMaze) -> tuple[np.ndarray, np.ndarray]:
    """(walls [H, W] bool, cells [N, 2]) of a result or an environment."""
    if isinstance(maze, GridMaze):
        return maze.walls, maze.cells
    return np.array([[c == "#" for c in row] for row in maze.layout]), np.array(maze.cells)


def cell_grid(maze, values, fill=np.nan) -> np.ndarray:
    """Values per free cell laid out on the maze (walls get ``fill``)."""
    walls, cells = geometry(maze)
    grid = np.full(walls.shape, fill, dtype=float)
    grid[cells[:, 0], cells[:, 1]] = values
    return grid


def draw_maze(ax, maze, values=None, cmap="viridis", vmax=None, label=""):
    """The maze (walls dark grey), optionally coloured by one value per free cell."""
    walls, _ = geometry(maze)
    ax.imshow(np.where(walls, 1.0, np.nan), cmap="Greys", vmin=0, vmax=1.3)
    image = None
    if values is not None:
        image = ax.imshow(cell_grid(maze, values), cmap=cmap, vmin=0, vmax=vmax)
        if label:
            ax.figure.colorbar(image, ax=ax, shrink=0.8, label=label)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
    return image


def draw_path(ax, maze, path, color, label=None, offset=0.0):
    """A sequence of cell indices as a line (slightly offset so that two paths stay visible)."""
    cells = geometry(maze)[1][path]
    ax.plot(cells[:, 1] + offset, cells[:, 0] + offset, "-", color=color, lw=2, label=label)
    ax.plot(cells[0, 1] + offset, cells[0, 0] + offset, "o", color=color, ms=6)


def arm_label(arm: str) -> str:
    return "GCBC" if arm == GCBC else arm.replace("dwsl", "DWSL")


def plot_offline_data(maze, visits, episodes, expert):
    """The offline data: visits per cell, and a few episodes (cell-index sequences) drawn as
    paths, labelled noisy expert or random by ``expert``."""
    fig, axes = subplots(1, 2, width=4.2, height=3.8)
    draw_maze(axes[0, 0], maze, np.asarray(visits), cmap="magma", label="visits")
    axes[0, 0].set_title("visits per cell in the offline data")
    ax = axes[0, 1]
    draw_maze(ax, maze)
    colors = ["#0173b2", "#56b4e9", "#de8f05", "#ece133"]
    for i, (episode, is_expert) in enumerate(zip(episodes, expert)):
        name = "noisy expert" if is_expert else "random"
        offset = 0.12 * (i - (len(episodes) - 1) / 2)
        draw_path(ax, maze, episode, colors[i % 4], f"{name} episode", offset)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=2)
    ax.set_title(f"{len(episodes)} episodes of {len(episodes[0]) - 1} steps (● start)")
    return fig


def plot_data(maze: DWSLResult | GridMaze, data: OfflineData | None = None, seed_index: int = 0):
    """:func:`plot_offline_data` for a dataset (with its environment) or a result's seed."""
    if data is not None:
        show = np.r_[np.flatnonzero(data.expert)[:2], np.flatnonzero(~data.expert)[:2]]
        visits = np.bincount(data.states.ravel(), minlength=maze.n_cells)
        return plot_offline_data(maze, visits, data.states[show], data.expert[show])
    s = maze.seeds[seed_index]
    return plot_offline_data(maze, s.visits, s.episodes, s.episode_expert)


def plot_distance(result: DWSLResult, seed_index: int = 0, keys=("mean", "α=1", "α=0.1")):
    """Learned distance (in steps, 1 + B·d) against the true shortest path, for the mean of
    the learned distribution and for LogSumExp soft minima at two temperatures α."""
    s = result.seeds[seed_index]
    true = np.array(result.true_steps, dtype=float)
    off = ~np.eye(len(true), dtype=bool)
    keys = [k for k in keys if k in s.learned_steps]
    fig, axes = subplots(1, len(keys), width=3.2, height=3.0, sharey=True)
    rng = np.random.default_rng(0)
    top = true.max() + 1
    for ax, key in zip(axes[0], keys):
        learned = np.array(s.learned_steps[key])[off]
        jitter = rng.uniform(-0.25, 0.25, learned.shape)
        ax.scatter(true[off] + jitter, learned, s=3, alpha=0.25)
        ax.plot([0, top], [0, top], "k--", lw=1, label="learned = true")
        ax.set_xlabel("true shortest path (steps)")
        ax.xaxis.get_major_locator().set_params(integer=True)
        name = "expectation (α → ∞)" if key == "mean" else f"soft minimum, {key}"
        ax.set_title(name)
    axes[0, 0].set_ylabel("learned distance (steps)")
    axes[0, 0].legend(loc="upper left", fontsize=8)
    return fig


def plot_pmf(result: DWSLResult, seed_index: int = 0, alpha_key: str = "α=0.1"):
    """p(k | s, g) for three start–goal pairs: what the classifier learned, the horizons seen
    in the data, the true shortest path and the two distance read-outs."""
    s = result.seeds[seed_index]
    bins = len(s.example_pmf[0])
    fig, axes = subplots(1, len(s.example_pairs), width=3.3, height=2.8, sharey=True)
    for ax, pmf, (state, goal), seen in zip(
        axes[0], s.example_pmf, s.example_pairs, s.example_horizons
    ):
        steps = np.arange(1, bins + 1)  # bin k ↔ k + 1 steps
        ax.bar(steps, pmf, width=0.9, alpha=0.7, label="learned p(k | s, g)")
        if seen:
            counts = np.bincount(np.minimum(seen, bins), minlength=bins + 1)[1:]
            ax.step(steps, counts / counts.sum(), where="mid", color="k", lw=1, label="in the data")
        true = result.true_steps[state][goal]
        ax.axvline(true, color="#029e73", lw=2, label="shortest path (BFS)")
        ax.axvline(
            s.learned_steps["mean"][state][goal], color="#d55e00", ls=":", lw=2, label="mean"
        )
        ax.axvline(
            s.learned_steps[alpha_key][state][goal],
            color="#cc78bc",
            ls="--",
            lw=2,
            label=f"soft min ({alpha_key})",
        )
        ax.set_xlabel("steps to reach the goal")
        ax.set_title(f"cell {state} → cell {goal}")
    axes[0, 0].set_ylabel("probability")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=5, fontsize=8)
    return fig


def plot_success(result: DWSLResult):
    """Success rate of every arm: per seed, by true distance, and over training."""
    arms = result.arms
    fig, axes = subplots(1, 3, width=3.6, height=3.0)
    ax = axes[0, 0]
    width = 0.8 / len(arms)
    for i, arm in enumerate(arms):
        values = [s.success[arm] for s in result.seeds]
        x = np.arange(len(values)) + (i - (len(arms) - 1) / 2) * width
        ax.bar(x, values, width, label=arm_label(arm))
    ax.set_xticks(range(len(result.seeds)), [f"seed {s.seed}" for s in result.seeds])
    ax.set_ylim(0, 1)
    ax.set_ylabel("success rate (all start–goal pairs)")
    ax.legend(fontsize=8, loc="lower right")
    ax = axes[0, 1]
    for arm in arms:
        curves = np.array([s.success_by_distance[arm] for s in result.seeds])
        ax.plot(np.arange(1, curves.shape[1] + 1), curves.mean(0), "o-", ms=3, label=arm_label(arm))
    ax.set_xlabel("true shortest path from start to goal (steps)")
    ax.set_ylabel("success rate")
    ax.set_ylim(0, 1.02)
    ax = axes[0, 2]
    for arm in arms:
        curves = np.array([s.success_curve[arm] for s in result.seeds])
        ax.plot(result.seeds[0].measure_steps, curves.mean(0), label=arm_label(arm))
    ax.set_xlabel("training step")
    ax.set_ylabel("success rate")
    ax.set_ylim(0, 1)
    return fig


def draw_goal(fig, result: DWSLResult, goal: int, seed_index: int = 0, alpha_key: str = "α=0.1"):
    """For one goal cell: the true distance map, DWSL's learned distance map, and the greedy
    rollouts of GCBC and DWSL from the four cells farthest from the goal."""
    s = result.seeds[seed_index]
    true = np.array(result.true_steps)
    transitions = np.array(result.transitions)
    horizon = result.config["episode_length"]
    dwsl = arm_name(result.config["alphas"][0])
    axes = fig.subplots(1, 3)
    vmax = max(true[:, goal].max(), 1) * 2
    draw_maze(axes[0], result, true[:, goal], vmax=vmax)
    axes[0].set_title("true distance to the goal")
    learned = np.array(s.learned_steps[alpha_key])[:, goal]
    image = draw_maze(axes[1], result, learned, vmax=vmax)
    axes[1].set_title(f"learned distance ({alpha_key})")
    fig.colorbar(image, ax=axes[:2], shrink=0.8, label="steps")
    draw_maze(axes[2], result)
    starts = np.argsort(-true[:, goal], kind="stable")[:4]
    for arm, color, offset in ((GCBC, "#0173b2", -0.12), (dwsl, "#de8f05", 0.12)):
        table = np.array(s.greedy_actions[arm])
        reached = 0
        for i, start in enumerate(starts):
            path = rollout_table(table, transitions, int(start), goal, horizon)
            reached += path[-1] == goal
            draw_path(axes[2], result, path, color, arm_label(arm) if i == 0 else None, offset)
        axes[2].plot([], [], " ", label=f"  {reached}/4 reached")
    cell = result.cells[goal]
    for ax in axes:
        ax.plot(cell[1], cell[0], "*", color="red", ms=14, mec="white")
    axes[2].legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=2)
    axes[2].set_title("greedy rollouts (★ goal)")
    return fig


def plot_goal(result: DWSLResult, goal: int = 0, seed_index: int = 0, alpha_key: str = "α=0.1"):
    """:func:`draw_goal` in a new figure."""
    fig, _ = subplots(1, 1, width=11, height=3.6)
    fig.clear()
    return draw_goal(fig, result, goal, seed_index, alpha_key)


def hardest_goal(result: DWSLResult, arm: str = GCBC, seed_index: int = 0) -> int:
    """The goal cell that ``arm`` reaches from the fewest start cells (ties: the first)."""
    transitions = np.array(result.transitions)
    table = np.array(result.seeds[seed_index].greedy_actions[arm])
    reached = steps_to_goal(table, transitions, result.config["episode_length"]) >= 0
    return int(np.argmin(reached.sum(0)))


def figures(result: DWSLResult) -> dict:
    """Every figure of the notebook, for ``companion run``."""
    key = f"α={result.config['alphas'][0]:g}"
    return {
        "data": plot_data(result),
        "distance": plot_distance(result, keys=("mean", "α=1", key)),
        "pmf": plot_pmf(result, alpha_key=key),
        "success": plot_success(result),
        "rollouts": plot_goal(result, hardest_goal(result), alpha_key=key),
    }


__all__ = [
    "draw_goal",
    "draw_maze",
    "figures",
    "hardest_goal",
    "plot_data",
    "plot_distance",
    "plot_goal",
    "plot_offline_data",
    "plot_pmf",
    "plot_success",
]
