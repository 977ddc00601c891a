"""Neural Constraint Satisfaction (NCS): a two-level abstraction of pixel transitions into a
factorized transition graph, and control by matching entity states to the goal's.

Chang, Dayan, Meier, Griffiths, Levine, Zhang. ICLR 2023. https://arxiv.org/abs/2303.11373

What is verified from the paper (abstract, introduction, Fig. 1 caption, project site):
level one infers a *set of entities* from pixel transitions with pick-and-move actions, one
entity moving per transition, an entity's type z unchanged from t to t+1 and only its state s
changing; level two *clusters* entity representations and groups entities that share a state
transition into a *factorized, entity-agnostic transition graph*; control uses the learned
correspondence between intervening on an entity's state and acting on an object.

**Reconstructed (the method section was not found; no official code exists):** every concrete
choice below. Level one is an algorithmic stand-in for the paper's learned entity encoder
(slot-based in spirit): pixels are grouped by quantized colour (:func:`infer_entities`), an
entity's type z is its mean colour and its state s its centroid. Level two is k-means on entity
states (:func:`kmeans`). The graph's edges carry the action most often seen with each cluster
transition (:func:`build_transition_graph`). The controller matches current to goal entities by
type with the Hungarian algorithm (:func:`match_entities`) and moves, one entity at a time, the
entity with the shortest free path in the graph (:func:`ncs_action`).

The baselines are flat goal-conditioned behaviour cloning on the image pair
(:class:`PixelPolicy`) and on the same inferred entities laid out in a fixed vector
(:class:`EntityPolicy`: the control that removes only the factorization).
"""

from __future__ import annotations

import dataclasses
from collections import deque

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment
from torch import nn

FOREGROUND = 0.5  # a pixel belongs to an object when its brightest channel exceeds this
QUANT = 2  # colours are quantized to multiples of 1/QUANT before grouping
MIN_PIXELS = 2  # smaller groups are noise, not entities
MOVED = 0.5  # pixels: an entity moved when its centroid shifted by more than this


@dataclasses.dataclass
class Entities:
    """Level one's output for one image: types z [n, 3] (mean colour) and states s [n, 2]
    (centroid row, column in pixels), sorted by type code."""

    types: np.ndarray
    states: np.ndarray
    codes: np.ndarray  # [n]: the quantized colour code of each entity (its type's name)


def infer_entities(image: np.ndarray) -> Entities:
    """Level one (reconstructed stand-in for slot inference): the foreground pixels of an RGB
    image ``[3, H, W]`` grouped by quantized colour; each group is one entity with type
    z = its mean colour and state s = its centroid. Groups under ``MIN_PIXELS`` are dropped."""
    img = np.asarray(image, dtype=np.float64)
    fg = img.max(0) > FOREGROUND
    rows, cols = np.nonzero(fg)
    q = np.rint(img[:, rows, cols] * QUANT).astype(np.int64)  # [3, n_pixels]
    code = (q[0] * (QUANT + 1) + q[1]) * (QUANT + 1) + q[2]
    codes, inverse, counts = np.unique(code, return_inverse=True, return_counts=True)
    keep = counts >= MIN_PIXELS
    types, states = [], []
    for g in np.flatnonzero(keep):
        members = inverse == g
        types.append(img[:, rows[members], cols[members]].mean(1))
        states.append([rows[members].mean(), cols[members].mean()])
    return Entities(
        types=np.array(types).reshape(-1, 3),
        states=np.array(states, dtype=np.float64).reshape(-1, 2),
        codes=codes[keep],
    )


def match_entities(types_a: np.ndarray, types_b: np.ndarray) -> list[tuple[int, int]]:
    """Correspondence by type: the assignment (Hungarian algorithm) minimising the summed
    distance between the types z of set a and set b. Enforces that an entity keeps its type
    from t to t+1 and pairs each entity with its goal entity."""
    if not len(types_a) or not len(types_b):
        return []
    cost = np.linalg.norm(types_a[:, None, :] - types_b[None, :, :], axis=-1)
    ia, ib = linear_sum_assignment(cost)
    return list(zip(ia.tolist(), ib.tolist()))


def kmeans(
    x: np.ndarray, k: int, rng: np.random.Generator, n_init: int = 3, iters: int = 50
) -> np.ndarray:
    """Level two (clustering assumed to be k-means): centroids [k, d] of ``x`` [n, d], the best
    of ``n_init`` greedy k-means++ starts (as scikit-learn's) by within-cluster sum of
    squares."""
    best, best_sse = None, np.inf
    if len(x) > 4000:  # k-means on a random subset of states (speed); all are assigned later
        x = x[rng.choice(len(x), 4000, replace=False)]
    for _ in range(n_init):
        centres = [x[rng.integers(len(x))]]
        d2 = ((x - centres[0]) ** 2).sum(-1)
        for _ in range(1, k):  # greedy k-means++: the best of a few D²-sampled candidates
            p = d2 / d2.sum() if d2.sum() > 0 else np.full(len(x), 1 / len(x))
            cand = x[rng.choice(len(x), size=2 + int(np.log(k)), p=p)]
            pot = np.minimum(d2[None], ((x[None] - cand[:, None]) ** 2).sum(-1))
            best_c = int(pot.sum(1).argmin())
            centres.append(cand[best_c])
            d2 = pot[best_c]
        c = np.array(centres, dtype=np.float64)
        for _ in range(iters):
            label = assign(x, c)
            new = np.array(
                [x[label == j].mean(0) if (label == j).any() else c[j] for j in range(k)]
            )
            if np.allclose(new, c):
                break
            c = new
        sse = ((x - c[assign(x, c)]) ** 2).sum()
        if sse < best_sse:
            best, best_sse = c, sse
    return best


def assign(x: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Abstract state of each row of ``x``: the index of its nearest centroid."""
    return np.argmin(((x[:, None, :] - centroids[None]) ** 2).sum(-1), axis=1)


@dataclasses.dataclass
class EntityTransition:
    """One pixel transition abstracted by level one: the entity that moved, its state before
    and after, and the action taken. ``status`` is "moved", "no-op" or "dropped" (not exactly
    one entity moved, or the entity sets did not match)."""

    status: str
    before: np.ndarray | None = None
    after: np.ndarray | None = None
    action: int = -1


def entity_transition(image_t, image_t1, action: int) -> EntityTransition:
    """Level one on a transition: infer both entity sets, pair them by type (z unchanged from
    t to t+1), and find the one entity whose state changed."""
    a, b = infer_entities(image_t), infer_entities(image_t1)
    if len(a.types) != len(b.types) or not len(a.types):
        return EntityTransition("dropped")
    pairs = match_entities(a.types, b.types)
    shift = np.array([np.linalg.norm(a.states[i] - b.states[j]) for i, j in pairs])
    moved = np.flatnonzero(shift > MOVED)
    if len(moved) == 0:
        return EntityTransition("no-op")
    if len(moved) > 1:
        return EntityTransition("dropped")
    i, j = pairs[moved[0]]
    return EntityTransition("moved", a.states[i], b.states[j], int(action))


@dataclasses.dataclass
class TransitionGraph:
    """The factorized transition graph over abstract entity states (clusters).

    ``centroids`` [k, 2]: the clusters of entity states; ``counts`` [k, k]: how often an
    entity moved from cluster i to cluster j in the data, whatever its type (entity-agnostic);
    ``action`` [k, k]: the correspondence from an intervention on an entity's state to an
    action in the environment, the action most often taken on that edge (-1: no edge)."""

    centroids: np.ndarray
    counts: np.ndarray
    action: np.ndarray

    @property
    def n_edges(self) -> int:
        return int((self.counts > 0).sum())


def build_transition_graph(
    transitions: list[EntityTransition], centroids: np.ndarray, n_actions: int
) -> TransitionGraph:
    """Level two: group the moved entities of every transition by the pair of clusters
    (before, after) their states fall in. Each pair with data is an edge; its action is the
    majority vote of the actions taken on it. Transitions within one cluster add no edge."""
    k = len(centroids)
    votes = np.zeros((k, k, n_actions), dtype=np.int64)
    moved = [t for t in transitions if t.status == "moved"]
    if moved:
        before = assign(np.array([t.before for t in moved]), centroids)
        after = assign(np.array([t.after for t in moved]), centroids)
        for i, j, t in zip(before, after, moved):
            if i != j:
                votes[i, j, t.action] += 1
    counts = votes.sum(-1)
    action = np.where(counts > 0, votes.argmax(-1), -1)
    return TransitionGraph(centroids=centroids, counts=counts, action=action)


def graph_path(graph: TransitionGraph, start: int, goal: int, blocked: set) -> list[int] | None:
    """Shortest path of abstract states from ``start`` to ``goal`` along the graph's edges,
    avoiding ``blocked`` states (breadth-first search; neighbours in index order)."""
    prev = {start: None}
    queue = deque([start])
    adjacency = graph.counts > 0
    while queue:
        u = queue.popleft()
        if u == goal:
            path = [u]
            while prev[path[-1]] is not None:
                path.append(prev[path[-1]])
            return path[::-1]
        for v in np.flatnonzero(adjacency[u]).tolist():
            if v not in prev and v not in blocked:
                prev[v] = u
                queue.append(v)
    return None


def ncs_action(
    graph: TransitionGraph, image: np.ndarray, goal_image: np.ndarray, rng: np.random.Generator
) -> int:
    """NCS control for one step (planner reconstructed). Infer the entities of the current and
    the goal image (level one), abstract their states to clusters (level two), pair each
    entity with its goal entity by type, and treat the goal as constraints "entity e in
    abstract state g(e)". Among unsatisfied entities, intervene on the one with the shortest
    path in the graph that avoids the states other entities occupy; its first edge's action is
    the action. If every path is blocked, move an entity out of the way (to a free state)."""
    now, goal = infer_entities(image), infer_entities(goal_image)
    if not len(now.types) or not len(goal.types):
        return int(rng.integers(graph.action.max() + 1))
    state = assign(now.states, graph.centroids)
    target = {
        i: int(assign(goal.states[j : j + 1], graph.centroids)[0])
        for i, j in match_entities(now.types, goal.types)
    }
    occupied = set(state.tolist())
    best = None
    for i, g in target.items():
        if state[i] == g:
            continue
        path = graph_path(graph, int(state[i]), g, occupied - {int(state[i])})
        if path is not None and (best is None or len(path) < len(best)):
            best = path
    if best is not None:
        return int(graph.action[best[0], best[1]])
    # every free path is blocked: move some entity to a free neighbouring abstract state
    moves = [
        (int(s), int(v))
        for s in state
        for v in np.flatnonzero(graph.counts[s] > 0)
        if int(v) not in occupied
    ]
    if not moves:
        return int(rng.integers(graph.action.max() + 1))
    s, v = moves[int(rng.integers(len(moves)))]
    return int(graph.action[s, v])


# -- flat behaviour-cloning baselines ------------------------------------------------------
class PixelPolicy(nn.Module):
    """Flat goal-conditioned BC on pixels: π(a | image, goal image). A patch encoder aligned
    with the board's cells (a strong inductive bias for the baseline), then an MLP over the
    whole scene to the pick-and-move action logits."""

    def __init__(self, grid: int, cell_px: int, channels: int, hidden: int, n_actions: int):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(6, channels, cell_px, stride=cell_px),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(channels * grid * grid, hidden),
            nn.ReLU(),
            nn.Linear(hidden, n_actions),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class EntityPolicy(nn.Module):
    """Flat goal-conditioned BC on the inferred entities (the control): the same level-one
    entities as NCS, laid out in one fixed vector (a slot per entity type), then an MLP. It
    keeps the entities and removes only the factorized graph."""

    def __init__(self, in_features: int, hidden: int, n_actions: int):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_features, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, n_actions),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def entity_features(image, goal_image, vocabulary: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """The control's input: the same two levels as NCS, laid out flat. One slot per known
    entity type (``vocabulary`` of type codes seen in the data): present, the one-hot abstract
    state (cluster) of the entity and of its goal. Entities of an unseen type are left out."""
    k = len(centroids)
    out = np.zeros((len(vocabulary), 1 + 2 * k), dtype=np.float32)
    now, goal = infer_entities(image), infer_entities(goal_image)
    if not len(now.types) or not len(goal.types):
        return out.reshape(-1)
    here, there = assign(now.states, centroids), assign(goal.states, centroids)
    goal_of = {int(c): int(g) for c, g in zip(goal.codes, there)}
    for code, s in zip(now.codes, here):
        slot = np.flatnonzero(vocabulary == code)
        if len(slot) and int(code) in goal_of:
            out[slot[0], 0] = 1.0
            out[slot[0], 1 + int(s)] = 1.0
            out[slot[0], 1 + k + goal_of[int(code)]] = 1.0
    return out.reshape(-1)
