"""The experiment: offline data from a noisy oracle at the *training* object counts, then NCS and
two flat behaviour-cloning policies evaluated on rearrangement goals at the training counts and
at larger, unseen counts. Success is judged by the simulator.

Every arm learns from the same buffer (images, actions; goals are the episodes' goal images)
and is evaluated on the same tasks (same start and goal images): the only differences are the
model and the controller.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from companion.core import Config, Result, train_arms
from companion.errors import CompanionError, unknown
from companion.nn import portable_init
from companion.papers.neural_constraint_satisfaction.env import BlockWorld, collect, solved
from companion.papers.neural_constraint_satisfaction.method import (
    EntityPolicy,
    PixelPolicy,
    TransitionGraph,
    assign,
    build_transition_graph,
    entity_features,
    entity_transition,
    infer_entities,
    kmeans,
    ncs_action,
)

ARMS = ("ncs", "bc_pixels", "bc_entities")
LABELS = {
    "ncs": "NCS (factorized graph)",
    "bc_pixels": "flat BC on pixels",
    "bc_entities": "flat BC on entities (control)",
}


@dataclasses.dataclass(frozen=True)
class NCSConfig(Config):
    """What to generate, learn and evaluate. Sizes change between presets; the algorithm never
    does."""

    grid: int = 5  # board of grid × grid cells
    cell_px: int = 4  # pixels per cell (image side = grid · cell_px)
    block: int = 3  # block side in pixels, drawn at a random offset inside its cell
    noise: float = 0.05  # pixel noise (std)
    colours: int = 4  # block colours in use (a scene has K distinct ones)
    train_counts: tuple[int, ...] = (1, 2)  # object counts in the offline data
    test_counts: tuple[int, ...] = (3, 4)  # unseen, larger object counts
    n_episodes: int = 2500  # offline episodes (noisy oracle)
    epsilon: float = 0.1  # probability of a random valid move in the data
    episode_steps: int = 30  # cap on a data episode
    n_clusters: int = 25  # level-two abstract states (assumed: k-means with k = cells)
    arms: tuple[str, ...] = ARMS
    # behaviour cloning, fixed before any test result: Adam, best step on a validation split
    hidden: int = 256
    channels: int = 32
    steps: int = 2500
    batch_size: int = 128
    lr: float = 1e-3
    val_fraction: float = 0.15  # share of episodes held out to choose BC's step
    eval_every: int = 250  # BC validation accuracy every n steps (keeps the best)
    n_eval: int = 30  # evaluation tasks per object count
    slack: int = 2  # step budget of a task: the oracle's length + K + slack

    def validate(self) -> None:
        for a in self.arms:
            if a not in ARMS:
                raise unknown("arm", a, ARMS)
        if self.block > self.cell_px or self.block < 1:
            raise CompanionError(
                f"block must be between 1 and cell_px={self.cell_px}, got {self.block}"
            )
        counts = tuple(self.train_counts) + tuple(self.test_counts)
        if not counts or min(counts) < 1 or max(counts) > min(self.colours, self.grid * self.grid):
            raise CompanionError(
                f"object counts must be between 1 and min(colours, grid²), got {counts}"
            )
        if not self.train_counts or not self.test_counts:
            raise CompanionError("train_counts and test_counts must both be non-empty")
        if not 1 <= self.colours <= 8:
            raise CompanionError(f"colours must be between 1 and 8, got {self.colours}")
        if not 2 <= self.n_clusters:
            raise CompanionError(f"n_clusters must be >= 2, got {self.n_clusters}")
        if min(self.n_episodes, self.steps, self.batch_size, self.n_eval, self.eval_every) < 1:
            raise CompanionError(
                "n_episodes, steps, batch_size, n_eval and eval_every must be positive"
            )
        if not 0.0 <= self.epsilon < 1.0 or not 0.0 < self.val_fraction < 1.0:
            raise CompanionError(
                f"epsilon must be in [0, 1) and val_fraction in (0, 1), got "
                f"epsilon={self.epsilon}, val_fraction={self.val_fraction}"
            )


PRESETS: dict[str, NCSConfig] = {
    "smoke": NCSConfig(n_episodes=60, steps=120, eval_every=40, n_eval=4, hidden=64),
    "notebook": NCSConfig(),
    # the paper's setting is not specified (method section not found): a larger board, more
    # objects, ten times the data and training, 200 tasks per count
    "full": NCSConfig(
        grid=6,
        colours=8,
        train_counts=(2, 3, 4),
        test_counts=(5, 6, 7, 8),
        n_episodes=5000,
        episode_steps=60,
        n_clusters=36,
        hidden=512,
        channels=64,
        steps=20_000,
        batch_size=256,
        eval_every=1000,
        n_eval=200,
    ),
}


@dataclasses.dataclass
class ArmResult(Result):
    """One arm: success rate per object count ("2": 0.9, ...), and what it learned."""

    arm: str
    success: dict[str, float]
    seconds: float
    val_steps: list[int] = dataclasses.field(default_factory=list)  # BC only
    val_accuracy: list[float] = dataclasses.field(default_factory=list)  # BC only
    train_accuracy: float = 0.0  # BC: action accuracy on the training split at the kept step
    centroids: list = dataclasses.field(default_factory=list)  # NCS: [k][2] (pixels)
    edge_counts: list = dataclasses.field(default_factory=list)  # NCS: [k][k]
    transitions: dict = dataclasses.field(default_factory=dict)  # NCS: level-one statuses


@dataclasses.dataclass
class NCSResult(Result):
    config: dict
    arms: dict[str, ArmResult]
    n_transitions: int  # rows of the offline buffer
    entity_count_accuracy: dict[str, float]  # level one: share of images with K entities
    cluster_purity: float  # level two: share of entity states whose cluster's majority cell
    # is their own cell (measured against the simulator; diagnostics only)
    example: dict  # one test task: start and goal images, and each arm's final image

    @property
    def train_counts(self) -> list[int]:
        return list(self.config["train_counts"])

    @property
    def test_counts(self) -> list[int]:
        return list(self.config["test_counts"])

    def mean_success(self, arm: str, counts) -> float:
        return float(np.mean([self.arms[arm].success[str(k)] for k in counts]))


def make_world(cfg: NCSConfig) -> BlockWorld:
    return BlockWorld(cfg.grid, cfg.cell_px, cfg.block, cfg.noise, cfg.colours)


def make_data(cfg: NCSConfig):
    """The offline buffer of one seed (same for every arm)."""
    rng = np.random.default_rng([cfg.seed, 0])
    return collect(
        make_world(cfg),
        cfg.n_episodes,
        tuple(cfg.train_counts),
        cfg.epsilon,
        rng,
        cfg.episode_steps,
    )


def make_tasks(cfg: NCSConfig) -> list[dict]:
    """Evaluation tasks: ``n_eval`` per object count, train and test counts, with a step budget
    of the noiseless oracle's length + K + ``slack``; each task carries the seed of its images."""
    world = make_world(cfg)
    rng = np.random.default_rng([cfg.seed, 1])
    tasks = []
    for k in tuple(cfg.train_counts) + tuple(cfg.test_counts):
        for _ in range(cfg.n_eval):
            colours, pos, goal = world.random_task(k, rng)
            budget = world.expert_length(pos, goal, colours) + k + cfg.slack
            tasks.append(
                dict(
                    k=k,
                    colours=colours,
                    start=pos,
                    goal=goal,
                    budget=budget,
                    seed=int(rng.integers(2**31)),
                )
            )
    return tasks


def rollout(world: BlockWorld, policy, task: dict, keep_frames: bool = False):
    """Run ``policy(image, goal_image, rng) -> action`` on a task; (solved, last image)."""
    rng = np.random.default_rng(task["seed"])
    k = task["k"]
    goal_img = world.render(task["goal"], task["colours"], world.random_offsets(k, rng), rng)
    offsets = world.random_offsets(k, rng)
    pos = task["start"]
    img = world.render(pos, task["colours"], offsets, rng)
    for _ in range(task["budget"]):
        if solved(pos, task["goal"]):
            break
        pos, moved = world.step(pos, policy(img, goal_img, rng))
        if moved is not None:
            offsets = offsets.copy()
            offsets[moved] = world.random_offsets(1, rng)[0]
        img = world.render(pos, task["colours"], offsets, rng)
    return solved(pos, task["goal"]), img


def success_by_count(world, policy, tasks) -> dict[str, float]:
    out: dict[str, list[bool]] = {}
    for task in tasks:
        out.setdefault(str(task["k"]), []).append(rollout(world, policy, task)[0])
    return {k: float(np.mean(v)) for k, v in out.items()}


# -- NCS -----------------------------------------------------------------------------------
def abstract_states(cfg: NCSConfig, data) -> np.ndarray:
    """Level two's clusters: k-means on the states of every entity in the buffer's images."""
    states = np.concatenate([infer_entities(o).states for o in data.observations[:, :3]])
    return kmeans(states, cfg.n_clusters, np.random.default_rng([cfg.seed, 2]))


def fit_ncs(cfg: NCSConfig, data) -> tuple[TransitionGraph, dict]:
    """Levels one and two on the buffer: entity transitions, k-means on entity states, the
    factorized graph. Returns the graph and the count of each level-one status."""
    obs, nxt = data.observations[:, :3], data.next_observations[:, :3]
    moves = [entity_transition(a, b, act) for a, b, act in zip(obs, nxt, data.actions)]
    centroids = abstract_states(cfg, data)
    graph = build_transition_graph(moves, centroids, make_world(cfg).n_actions)
    status = {s: sum(m.status == s for m in moves) for s in ("moved", "no-op", "dropped")}
    return graph, status


# -- behaviour cloning ---------------------------------------------------------------------
def type_vocabulary(data) -> np.ndarray:
    """Entity type codes seen in the buffer (the control's slots)."""
    codes = set()
    for o in data.observations[:, :3]:
        codes.update(infer_entities(o).codes.tolist())
    return np.array(sorted(codes))


def episode_split(data, val_fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """Row indices of the training and validation episodes (the last ``val_fraction`` of the
    episodes are held out to choose BC's step)."""
    bounds = data.episode_bounds()
    n_val = max(1, int(round(val_fraction * len(bounds))))
    cut = bounds[len(bounds) - n_val][0]
    idx = np.arange(len(data))
    return idx[:cut], idx[cut:]


def train_bc(cfg: NCSConfig, model, inputs: torch.Tensor, actions: torch.Tensor, data, device):
    """Cross-entropy on the buffer's actions with Adam; the kept parameters are those of the
    step with the best validation action accuracy (checked every ``eval_every`` steps)."""
    train_idx, val_idx = episode_split(data, cfg.val_fraction)
    rng = np.random.default_rng([cfg.seed, 3])
    model = model.to(device)
    inputs, actions = inputs.to(device), actions.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)

    def accuracy(idx):
        with torch.no_grad():
            return float((model(inputs[idx]).argmax(-1) == actions[idx]).float().mean())

    best, best_acc, steps, accs = None, -1.0, [], []
    for step in range(1, cfg.steps + 1):
        batch = torch.from_numpy(rng.choice(train_idx, size=cfg.batch_size)).to(device)
        loss = F.cross_entropy(model(inputs[batch]), actions[batch])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % cfg.eval_every == 0 or step == cfg.steps:
            acc = accuracy(val_idx)
            steps.append(step)
            accs.append(acc)
            if acc > best_acc:
                best_acc = acc
                best = {k: v.detach().clone() for k, v in model.state_dict().items()}
    model.load_state_dict(best)
    model.eval()
    return model, steps, accs, accuracy(train_idx)


def greedy(model, features, device):
    """A BC policy for rollouts: the most likely action under ``model``."""

    def policy(image, goal_image, rng):
        with torch.no_grad():
            x = torch.from_numpy(features(image, goal_image)).to(device)[None]
            return int(model(x).argmax(-1).item())

    return policy


def train_arm(fabric, cfg: NCSConfig, arm: str, data, tasks) -> ArmResult:
    """Learn one arm from the buffer and evaluate it on every task."""
    start = time.perf_counter()
    world, device = make_world(cfg), fabric.device
    if arm == "ncs":
        graph, status = fit_ncs(cfg, data)

        def policy(img, goal, rng):
            return ncs_action(graph, img, goal, rng)

        success = success_by_count(world, policy, tasks)
        return ArmResult(
            arm=arm,
            success=success,
            seconds=time.perf_counter() - start,
            centroids=np.round(graph.centroids, 3).tolist(),
            edge_counts=graph.counts.tolist(),
            transitions=status,
        )
    torch.manual_seed(cfg.seed)
    actions = torch.from_numpy(data.actions)
    if arm == "bc_pixels":
        model = PixelPolicy(cfg.grid, cfg.cell_px, cfg.channels, cfg.hidden, world.n_actions)
        inputs = torch.from_numpy(np.ascontiguousarray(data.observations, dtype=np.float32))

        def features(img, goal):
            return np.concatenate([img, goal]).astype(np.float32)

    else:
        vocab = type_vocabulary(data)
        centroids = abstract_states(cfg, data)
        model = EntityPolicy(len(vocab) * (1 + 2 * len(centroids)), cfg.hidden, world.n_actions)

        def features(img, goal):
            return entity_features(img, goal, vocab, centroids)

        obs = data.observations
        inputs = torch.from_numpy(np.stack([features(o[:3], o[3:]) for o in obs]))
    portable_init(model, np.random.default_rng(cfg.seed))
    model, steps, accs, train_acc = train_bc(cfg, model, inputs, actions, data, device)
    success = success_by_count(world, greedy(model, features, device), tasks)
    return ArmResult(
        arm=arm,
        success=success,
        seconds=time.perf_counter() - start,
        val_steps=steps,
        val_accuracy=accs,
        train_accuracy=train_acc,
    )


# -- diagnostics measured against the simulator (never used by a learner) -------------------
def level_diagnostics(cfg: NCSConfig, tasks, centroids) -> tuple[dict[str, float], float]:
    """Level one: share of start images in which exactly K entities are found, per count.
    Level two: share of entities whose cluster's majority cell is their own cell."""
    world = make_world(cfg)
    hit: dict[str, list[bool]] = {}
    labels, cells = [], []
    for task in tasks:
        rng = np.random.default_rng(task["seed"])
        k = task["k"]
        world.random_offsets(k, rng)  # the goal image's offsets, as in rollout
        img = world.render(task["start"], task["colours"], world.random_offsets(k, rng), rng)
        ent = infer_entities(img)
        hit.setdefault(str(k), []).append(len(ent.types) == k)
        if len(ent.types) == k and len(centroids):
            labels.extend(assign(ent.states, centroids).tolist())
            row = np.floor(ent.states / cfg.cell_px).astype(int)
            cells.extend((row[:, 0] * cfg.grid + row[:, 1]).tolist())
    labels, cells = np.array(labels), np.array(cells)
    agree = 0
    for c in np.unique(labels):
        agree += np.bincount(cells[labels == c]).max()
    purity = agree / max(1, len(labels))
    return {k: float(np.mean(v)) for k, v in hit.items()}, float(purity)


def example_task(cfg: NCSConfig, tasks) -> dict:
    """The start and goal images of the first task at the largest test count (rounded to two
    decimals to keep the result small), for ``plots.plot_scene``."""
    world = make_world(cfg)
    task = next(t for t in tasks if t["k"] == max(cfg.test_counts))
    rng = np.random.default_rng(task["seed"])
    k = task["k"]
    goal_img = world.render(task["goal"], task["colours"], world.random_offsets(k, rng), rng)
    img = world.render(task["start"], task["colours"], world.random_offsets(k, rng), rng)
    return {
        "k": k,
        "start": np.round(img, 2).tolist(),
        "goal": np.round(goal_img, 2).tolist(),
    }


def run(
    cfg: NCSConfig, out_dir: str | Path | None = None, resume: bool = False, data=None
) -> NCSResult:
    """Generate the buffer and the tasks, learn and evaluate every arm in ``cfg.arms``; with
    ``out_dir``, each finished arm is saved (and loaded back when ``resume``). ``data``: the
    buffer if already made by ``make_data(cfg)`` (the notebook reuses it)."""
    data = make_data(cfg) if data is None else data
    tasks = make_tasks(cfg)

    def one_arm(fabric, cfg, arm, folder, resume):
        return train_arm(fabric, cfg, arm, data, tasks)

    arms = train_arms(cfg, cfg.arms, out_dir, resume, ArmResult, one_arm)
    centroids = np.array(arms["ncs"].centroids) if "ncs" in arms else np.zeros((0, 2))
    counts_acc, purity = level_diagnostics(cfg, tasks, centroids)
    result = NCSResult(
        config=cfg.to_dict(),
        arms=arms,
        n_transitions=len(data),
        entity_count_accuracy=counts_acc,
        cluster_purity=purity,
        example=example_task(cfg, tasks),
    )
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
