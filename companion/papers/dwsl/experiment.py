"""The experiment: offline data from a sub-optimal behaviour policy in a gridworld, relabelled
with hindsight goals; DWSL and goal-conditioned behaviour cloning (GCBC) trained on the same
batches; success rates over every start–goal pair, and the learned distance against the true
shortest-path distance.

Every arm (GCBC, and DWSL at each α in ``alphas``) has its own actor, all starting from the same
weights; DWSL's distance classifier is shared. Each seed draws its own dataset and initial
weights; ``n_seeds`` seeds run one after another.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import torch

from companion.core import (
    Config,
    Every,
    Result,
    fit,
    launch_or_resume,
    seed_everything,
    torch_threads,
)
from companion.errors import CompanionError
from companion.papers.dwsl.env import (
    LAYOUTS,
    GridMaze,
    OfflineData,
    collect_dataset,
    load_d4rl,
    shortest_path_lengths,
)
from companion.papers.dwsl.method import (
    GoalReachingAgent,
    HindsightBatches,
    distance_from_distribution,
    distance_in_steps,
    greedy_actions,
    steps_to_goal,
    time_step_distribution,
    training_loss,
)

GCBC = "gcbc"
# α values whose learned distance maps are stored (None: the expectation, α → ∞)
ALPHA_GRID: tuple[float | None, ...] = (0.03, 0.1, 0.3, 1.0, None)


def arm_name(alpha: float) -> str:
    """The name of the DWSL arm with soft-min temperature ``alpha``."""
    return f"dwsl α={alpha:g}"


@dataclasses.dataclass(frozen=True)
class DWSLConfig(Config):
    """What to train and how. Sizes change between presets; the algorithm never does."""

    layout: str = "small_rooms"
    episode_length: int = 30  # T: steps per offline episode, also the evaluation time limit
    n_episodes: int = 200
    # the rest of the episodes are uniformly random. Half noisy expert, half random: with a fifth
    # expert episodes the classifier's distance ranked far pairs poorly at this many steps (the
    # success comparison held, the distance claim did not)
    expert_fraction: float = 0.5
    epsilon: float = 0.5  # the noisy expert's chance of a random action
    data_path: str = ""  # a D4RL-style .npz (see env.save_d4rl) instead of generated data
    bins: int = 30  # B: classes of the time-step distribution (the paper: ≈ the horizon)
    alphas: tuple[float, ...] = (0.1,)  # DWSL arms; the first is "DWSL" in the claims
    beta: float = 0.05
    clip_score: float = 10.0  # w_max
    hidden: tuple[int, ...] = (128, 128)
    lr: float = 2e-3
    batch_size: int = 256
    steps: int = 5000
    measure_every: int = 250  # success rate of every arm during training
    n_seeds: int = 1  # seeds seed, seed+1, ...: each with its own data and initial weights
    checkpoint_every: int = 0

    def validate(self) -> None:
        if self.layout not in LAYOUTS:
            from companion.errors import unknown

            raise unknown("layout", self.layout, LAYOUTS)
        positive = {
            "episode_length": self.episode_length,
            "n_episodes": self.n_episodes,
            "bins": self.bins,
            "batch_size": self.batch_size,
            "steps": self.steps,
            "measure_every": self.measure_every,
            "n_seeds": self.n_seeds,
        }
        for key, value in positive.items():
            if value < 1:
                raise CompanionError(f"{key} must be >= 1, got {value}")
        for key in ("expert_fraction", "epsilon"):
            if not 0.0 <= getattr(self, key) <= 1.0:
                raise CompanionError(f"{key} must be in [0, 1], got {getattr(self, key)}")
        if not self.alphas or any(a <= 0 for a in self.alphas):
            raise CompanionError(f"alphas must be one or more positive numbers, got {self.alphas}")
        if self.beta <= 0 or self.lr <= 0 or self.clip_score <= 0:
            raise CompanionError(
                f"beta, lr and clip_score must be positive, got {self.beta}, {self.lr}, "
                f"{self.clip_score}"
            )
        if not self.hidden or any(h < 1 for h in self.hidden):
            raise CompanionError(f"hidden must list positive layer widths, got {self.hidden}")

    @property
    def arms(self) -> dict[str, float | None]:
        return {GCBC: None} | {arm_name(a): a for a in self.alphas}


PRESETS: dict[str, DWSLConfig] = {
    "smoke": DWSLConfig(
        layout="tiny",
        episode_length=12,
        n_episodes=60,
        bins=12,
        hidden=(32,),
        steps=60,
        measure_every=30,
    ),
    "notebook": DWSLConfig(),
    # The official training recipe (fetch_state/dwsl.yaml: 3 × 256 MLP, Adam 5e-4, batch 512,
    # 200k steps, B = the episode length) on the larger maze with more data and five seeds.
    "full": DWSLConfig(
        layout="four_rooms",
        episode_length=50,
        n_episodes=2000,
        bins=50,
        alphas=(0.1, 0.03, 0.3, 1.0),
        hidden=(256, 256, 256),
        lr=5e-4,
        batch_size=512,
        steps=200_000,
        measure_every=5000,
        n_seeds=5,
        checkpoint_every=10_000,
    ),
}


@dataclasses.dataclass
class SeedResult(Result):
    """One seed: the data it drew, each arm's success, and the learned distances."""

    seed: int
    success: dict[str, float]  # arm -> share of start–goal pairs reached within T steps
    success_by_distance: dict[str, list[float]]  # arm -> [true distance 1..max] success share
    success_curve: dict[str, list[float]]  # arm -> success at each measure step
    measure_steps: list[int]
    loss_steps: list[int]
    distance_loss: list[float]
    greedy_actions: dict[str, list[list[int]]]  # arm -> [state][goal] action
    learned_steps: dict[str, list[list[float]]]  # "α=…"/"mean" -> [state][goal] 1 + B·d
    example_pmf: list[list[float]]  # learned p(k | s, g) for ``example_pairs``
    example_pairs: list[list[int]]  # [[state, goal], ...]
    example_horizons: list[list[int]]  # observed horizons h in the data for those pairs
    visits: list[int]  # how often the data visits each cell
    episodes: list[list[int]]  # a few episodes of the data (cell indices), for pictures
    episode_expert: list[bool]
    seconds: float


@dataclasses.dataclass
class DWSLResult(Result):
    config: dict
    layout: list[str]
    cells: list[list[int]]  # [N, 2] (row, col) of every free cell
    transitions: list[list[int]]  # [N, 4] next cell of each action
    true_steps: list[list[int]]  # [N, N] BFS shortest path lengths
    seeds: list[SeedResult]

    @property
    def arms(self) -> list[str]:
        return list(self.seeds[0].success)

    def mean_success(self, arm: str) -> float:
        return float(np.mean([s.success[arm] for s in self.seeds]))


def make_data(cfg: DWSLConfig, env: GridMaze, seed: int) -> OfflineData:
    """The offline dataset of one seed: generated, or read from ``cfg.data_path``."""
    if cfg.data_path:
        return load_d4rl(cfg.data_path, env)
    return collect_dataset(
        env, cfg.n_episodes, cfg.episode_length, cfg.expert_fraction, cfg.epsilon, seed
    )


def success_rate(steps: np.ndarray) -> float:
    """Share of start–goal pairs (start ≠ goal) reached within the time limit."""
    off = ~np.eye(len(steps), dtype=bool)
    return float((steps[off] >= 0).mean())


def success_by_distance(steps: np.ndarray, true_steps: np.ndarray) -> list[float]:
    """Success share per true shortest-path distance 1, 2, …, max."""
    return [
        float((steps[true_steps == d] >= 0).mean()) for d in range(1, int(true_steps.max()) + 1)
    ]


def example_pairs(true_steps: np.ndarray, rng: np.random.Generator, k: int = 3) -> np.ndarray:
    """``k`` start–goal pairs at short, middle and long true distances (for the pmf plot)."""
    top = int(true_steps.max())
    targets = np.linspace(2, max(2, top - 1), k).round().astype(int)
    pairs = []
    for d in targets:
        candidates = np.argwhere(true_steps == d)
        pairs.append(candidates[rng.integers(len(candidates))].tolist())
    return np.array(pairs)


def observed_horizons(data: OfflineData, state: int, goal: int) -> list[int]:
    """Every horizon j − t with s_t = state and s_j = goal (t < j) in the data: the empirical
    distribution that the classifier's p(k | state, goal) estimates (up to the sampling weights
    of hindsight relabelling)."""
    out = []
    for episode in data.states:
        starts = np.flatnonzero(episode[:-1] == state)
        ends = np.flatnonzero(episode == goal)
        for t in starts:
            out.extend((ends[ends > t] - t).tolist())
    return out


def pair_counts(data: OfflineData, n_cells: int) -> np.ndarray:
    """[N, N] how many (t < j) index pairs of the data have s_t = i and s_j = j: how often the
    data connects each start–goal pair (the support of hindsight relabelling)."""
    length = data.states.shape[1]
    t, j = np.triu_indices(length, 1)
    counts = np.zeros((n_cells, n_cells), dtype=np.int64)
    np.add.at(counts, (data.states[:, t].ravel(), data.states[:, j].ravel()), 1)
    return counts


def shortest_observed(data: OfflineData, n_cells: int) -> np.ndarray:
    """[N, N] the fewest steps j − t in which some episode of the data went from cell i (at t)
    to cell g (at j > t); −1 where the data never connects them. This is the shortest path
    the data supports, which DWSL's soft minimum estimates without ever computing it."""
    length = data.states.shape[1]
    t, j = np.triu_indices(length, 1)
    big = np.iinfo(np.int64).max
    out = np.full((n_cells, n_cells), big, dtype=np.int64)
    gaps = np.broadcast_to(j - t, (len(data.states), len(t))).ravel()
    np.minimum.at(out, (data.states[:, t].ravel(), data.states[:, j].ravel()), gaps)
    out[out == big] = -1
    return out


def train_seed(fabric, cfg: DWSLConfig, seed: int, folder: Path | None, resume: bool) -> SeedResult:
    """Draw one seed's data, train every arm on the same relabelled batches, measure them."""
    start_time = time.perf_counter()
    seed_everything(seed)
    env = GridMaze(cfg.layout, cfg.episode_length)
    transitions = env.transition_table()
    true_steps = shortest_path_lengths(transitions)
    data = make_data(cfg, env, seed)
    n = env.n_cells

    model = GoalReachingAgent(n, env.action_space.n, cfg.hidden, cfg.bins, cfg.arms, seed=seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr, fused=True)
    model, optimizer = fabric.setup(model, optimizer)
    batches = HindsightBatches(
        data.states, data.actions, cfg.batch_size, seed, fabric.global_rank, fabric.world_size
    )

    def measure(step: int, m) -> dict[str, float]:
        agent = m.module if hasattr(m, "module") else m
        return {
            f"success/{name}": success_rate(
                steps_to_goal(greedy_actions(actor, n), transitions, cfg.episode_length)
            )
            for name, actor in zip(agent.arms, agent.actors)
        }

    with torch_threads(1, fabric.device):
        history = fit(
            fabric,
            model,
            optimizer,
            batches,
            lambda m, batch: training_loss(m, batch, cfg.arms, cfg.bins, cfg.beta, cfg.clip_score),
            steps=cfg.steps,
            log_every=max(1, cfg.steps // 2000),  # the full preset logs every 100 steps
            callbacks=[Every(cfg.measure_every, measure)],
            checkpoint=folder / "checkpoint.ckpt" if folder else None,
            checkpoint_every=cfg.checkpoint_every,
            resume=resume,
            desc=f"seed {seed}",
        )

    agent = model.module if hasattr(model, "module") else model
    agent.eval()
    tables = {name: greedy_actions(actor, n) for name, actor in zip(agent.arms, agent.actors)}
    reach = {name: steps_to_goal(t, transitions, cfg.episode_length) for name, t in tables.items()}
    probs = time_step_distribution(agent.distance, n)
    learned = {}
    for alpha in sorted(set(ALPHA_GRID[:-1]) | set(cfg.alphas)) + [None]:
        d = distance_from_distribution(probs, alpha)
        learned["mean" if alpha is None else f"α={alpha:g}"] = (
            distance_in_steps(d, cfg.bins).round(decimals=3).tolist()
        )
    rng = np.random.default_rng(seed)
    pairs = example_pairs(true_steps, rng)
    show = np.r_[np.flatnonzero(data.expert)[:2], np.flatnonzero(~data.expert)[:2]].astype(int)
    return SeedResult(
        seed=seed,
        success={name: success_rate(r) for name, r in reach.items()},
        success_by_distance={name: success_by_distance(r, true_steps) for name, r in reach.items()},
        success_curve={name: history.values(f"success/{name}") for name in tables},
        measure_steps=history.steps(f"success/{GCBC}"),
        loss_steps=history.steps("distance_loss"),
        distance_loss=history.values("distance_loss"),
        greedy_actions={name: t.tolist() for name, t in tables.items()},
        learned_steps=learned,
        example_pmf=probs[pairs[:, 0], pairs[:, 1]].numpy().round(5).tolist(),
        example_pairs=pairs.tolist(),
        example_horizons=[observed_horizons(data, s, g) for s, g in pairs],
        visits=np.bincount(data.states.ravel(), minlength=n).tolist(),
        episodes=data.states[show].tolist(),
        episode_expert=data.expert[show].tolist(),
        seconds=time.perf_counter() - start_time,
    )


def run(cfg: DWSLConfig, out_dir: str | Path | None = None, resume: bool = False) -> DWSLResult:
    """Train and measure every arm for seeds ``cfg.seed`` … ``cfg.seed + n_seeds − 1``.

    With ``out_dir``, each finished seed is saved as ``<out_dir>/seed<k>/seed.json`` and the
    training of an unfinished one is checkpointed; ``resume=True`` keeps finished seeds and
    continues an interrupted one from its last checkpoint.
    """
    env = GridMaze(cfg.layout, cfg.episode_length)
    transitions = env.transition_table()
    seeds = []
    for seed in range(cfg.seed, cfg.seed + cfg.n_seeds):
        folder = Path(out_dir) / f"seed{seed}" if out_dir is not None else None
        seeds.append(
            launch_or_resume(
                cfg,
                folder,
                resume,
                SeedResult,
                train_seed,
                cfg,
                seed,
                folder,
                resume,
                filename="seed.json",
            )
        )
    result = DWSLResult(
        config=cfg.to_dict(),
        layout=list(LAYOUTS[cfg.layout]),
        cells=env.cells.tolist(),
        transitions=transitions.tolist(),
        true_steps=shortest_path_lengths(transitions).tolist(),
        seeds=seeds,
    )
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
