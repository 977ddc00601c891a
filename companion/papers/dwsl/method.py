"""DWSL (Hejna, Gao, Sadigh, ICML 2023): distances from the distribution of time-steps between
states, and a policy that imitates the actions that reduce them. GCBC is the same actor without
the weights.

The three phases of the paper's Fig. 1, with the formulas of the official code
(``research/algs/dwsl.py``, ``research/datasets/replay_buffer.py``): an offline episode
(s_0, a_0, s_1, …, s_T); a *hindsight-relabelled* sample takes a transition (s_t, a_t, s_{t+1})
and a goal g = s_j, a state visited later in the same episode (t < j ≤ T), with horizon
h = j − t ≥ 1 time-steps between s_t and g.

1. **The distribution of time-steps.** A classifier p_θ(k | s, g) over B bins is trained by
   maximum likelihood on the observed horizons (cross-entropy):

       L_d(θ) = −E[ log p_θ(k = min(h − 1, B − 1) | s_t, g) ]

   Bin k means "g was reached k + 1 steps later"; it stands for the distance k/B (the code's
   normalization, so distances lie in [0, 1)).

2. **The distance** is the LogSumExp soft minimum of that distribution:

       d(s, g) = −α log Σ_k p_θ(k | s, g) exp(−(k/B) / α)

   α → 0 gives the smallest distance the distribution supports (the shortest path seen in the
   data); α → ∞ gives the mean Σ_k p_k k/B (``alpha=None`` in the code). α is in units of the
   normalized distance: α = 1 is a temperature of B steps.

3. **The policy** imitates each action in proportion to how much it reduces the distance
   with cost c = 1/B per step and γ = 1 (γ = 0 when s_{t+1} is the goal: this companion's
   choice, see ``dwsl_actor_loss``),

       A(s_t, a_t, g) = d(s_t, g) − c − γ d(s_{t+1}, g)
       L_π(φ) = E[ min(exp(A / β), w_max) · (−log π_φ(a_t | s_t, g)) ]

   computed without gradient through A. β = 0.05 and w_max = 10 in the official configs.
   GCBC (goal-conditioned behaviour cloning, GCSL without re-collection) is the same objective
   with every weight equal to 1.

The distance and policy losses are summed and stepped together every batch, as in the code.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from companion.nn import MLP

# --- data: hindsight relabelling -----------------------------------------------------------------


def hindsight_relabel(
    states: np.ndarray, actions: np.ndarray, batch_size: int, rng: np.random.Generator
) -> tuple[np.ndarray, ...]:
    """Sample ``batch_size`` relabelled transitions with the "future" strategy (fraction 1.0).

    ``states`` [E, T+1] and ``actions`` [E, T] hold whole episodes. As in the official
    ``HindsightReplayBuffer.sample``: an episode uniformly, a step t uniformly in [0, T−1], a goal
    index j uniformly in [t+1, T]. Returns ``(s_t, a_t, s_{t+1}, g = s_j, h = j − t)``.
    """
    n_episodes, length = actions.shape
    e = rng.integers(n_episodes, size=batch_size)
    t = rng.integers(length, size=batch_size)
    j = rng.integers(t + 1, length + 1)  # inclusive of the episode's last state
    return states[e, t], actions[e, t], states[e, t + 1], states[e, j], j - t


class HindsightBatches:
    """Relabelled batches as a pure function of the step index (deterministic and resumable,
    like ``companion.core.StepBatches``): step ``i`` draws from a generator seeded by
    ``(seed, i)``; rank ``r`` of ``w`` keeps every ``w``-th row."""

    def __init__(
        self,
        states: np.ndarray,
        actions: np.ndarray,
        batch_size: int,
        seed: int,
        rank: int = 0,
        world_size: int = 1,
    ):
        if batch_size % world_size:
            raise ValueError(f"batch_size {batch_size} is not divisible by world size {world_size}")
        self.states, self.actions = states, actions
        self.batch_size, self.seed = batch_size, seed
        self.rank, self.world_size = rank, world_size

    def __call__(self, step: int) -> tuple[torch.Tensor, ...]:
        rng = np.random.default_rng((self.seed, step))
        batch = hindsight_relabel(self.states, self.actions, self.batch_size, rng)
        return tuple(torch.as_tensor(x[self.rank :: self.world_size]) for x in batch)


# --- the distance: a classifier over time-steps and its soft minimum -----------------------------


def distance_targets(horizon: torch.Tensor, bins: int) -> torch.Tensor:
    """The class of each horizon h ≥ 1: bin h − 1, the last bin for h > B (phase 1's target)."""
    return (horizon - 1).clamp(min=0, max=bins - 1)


def bin_distances(bins: int, device=None, dtype=torch.float32) -> torch.Tensor:
    """The distance each bin stands for: k / B for k = 0..B−1."""
    return torch.arange(bins, device=device, dtype=dtype) / bins


def soft_min_distance(logits: torch.Tensor, alpha: float | None) -> torch.Tensor:
    """d(s, g) = −α log Σ_k p_k exp(−(k/B)/α) with p = softmax(logits) (phase 2); the mean
    Σ_k p_k k/B when ``alpha`` is None. Computed as a log-sum-exp for numerical safety."""
    bins = logits.shape[-1]
    values = bin_distances(bins, logits.device, logits.dtype)
    log_p = F.log_softmax(logits, dim=-1)
    if alpha is None:
        return (log_p.exp() * values).sum(-1)
    return -alpha * torch.logsumexp(log_p - values / alpha, dim=-1)


def advantage(
    distance: torch.Tensor,
    next_distance: torch.Tensor,
    bins: int,
    gamma: float | torch.Tensor = 1.0,
) -> torch.Tensor:
    """A(s, a, g) = d(s, g) − c − γ d(s', g) with the one-step cost c = 1/B (phase 3)."""
    return distance - 1.0 / bins - gamma * next_distance


def action_weights(adv: torch.Tensor, beta: float, clip: float | None) -> torch.Tensor:
    """min(exp(A / β), w_max): the weight of each action's imitation loss (phase 3)."""
    weights = torch.exp(adv / beta)
    return weights if clip is None else weights.clamp(max=clip)


# --- networks ------------------------------------------------------------------------------------


class GoalConditionedMLP(nn.Module):
    """(s, g) → outputs for cells given as indices: an MLP on one-hot(s) ⊕ one-hot(g), with ReLUs
    and orthogonal initialization (the official ``ortho_init``).

    The first layer on a concatenation of one-hots is a sum of two embedding rows, so it is
    computed that way (the same function, without multiplying zeros).
    """

    def __init__(self, n_cells: int, hidden: Sequence[int], out_features: int):
        super().__init__()
        if not hidden:
            raise ValueError("hidden needs at least one layer")
        self.state_embedding = nn.Embedding(n_cells, hidden[0])
        self.goal_embedding = nn.Embedding(n_cells, hidden[0])
        self.bias = nn.Parameter(torch.zeros(hidden[0]))
        self.head = MLP(hidden[0], hidden[1:], out_features)[1:]  # no Flatten
        first = torch.empty(hidden[0], 2 * n_cells)
        nn.init.orthogonal_(first)  # as one Linear(2N, hidden[0]) would be initialized
        with torch.no_grad():
            self.state_embedding.weight.copy_(first[:, :n_cells].T)
            self.goal_embedding.weight.copy_(first[:, n_cells:].T)
        for layer in self.head:
            if isinstance(layer, nn.Linear):
                nn.init.orthogonal_(layer.weight)
                nn.init.zeros_(layer.bias)

    def forward(self, state: torch.Tensor, goal: torch.Tensor) -> torch.Tensor:
        first = self.state_embedding(state) + self.goal_embedding(goal) + self.bias
        return self.head(torch.relu(first))


class GoalReachingAgent(nn.Module):
    """Actors (logits of π(a | s, g) over the discrete actions), one per arm, and the
    ``distance`` network (logits of p(k | s, g) over ``bins`` time-step bins) that DWSL uses.

    ``arms`` maps an arm's name to its α: ``None`` marks GCBC (no weights). Each actor starts
    from the same weights, so the arms differ only in their losses.
    """

    def __init__(
        self,
        n_cells: int,
        n_actions: int,
        hidden: Sequence[int],
        bins: int,
        arms: dict[str, float | None],
        seed: int = 0,
    ):
        super().__init__()
        self.bins, self.arms = bins, dict(arms)
        actors = []
        for _ in arms:
            torch.manual_seed(seed)
            actors.append(GoalConditionedMLP(n_cells, hidden, n_actions))
        self.actors = nn.ModuleList(actors)  # in the order of ``arms`` (names may hold dots)
        torch.manual_seed(seed + 1)
        self.distance = GoalConditionedMLP(n_cells, hidden, bins)

    def actor(self, name: str) -> GoalConditionedMLP:
        """The actor of arm ``name``."""
        return self.actors[list(self.arms).index(name)]

    def forward(
        self, state: torch.Tensor, next_state: torch.Tensor, goal: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
        """Distance logits at (s, g); at (s', g) without gradient (they only set the actors'
        weights); the action logits of every arm at (s, g). One call, so that training goes
        through Fabric's wrapper (precision, DDP)."""
        logits = self.distance(state, goal)
        with torch.no_grad():
            next_logits = self.distance(next_state, goal)
        return logits, next_logits, [actor(state, goal) for actor in self.actors]


# --- the losses (step functions for companion.core.fit) ------------------------------------------


def dwsl_actor_loss(
    action_logits: torch.Tensor,
    batch: Sequence[torch.Tensor],
    distance: torch.Tensor,
    next_distance: torch.Tensor,
    bins: int,
    beta: float,
    clip: float | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """L_π (phase 3): the imitation loss −log π(a | s, g) weighted by min(exp(A/β), w_max).

    ``action_logits`` are the actor's outputs at (s_t, g); ``distance`` and ``next_distance``
    are d(s_t, g) and d(s_{t+1}, g) without gradient. When s_{t+1} is the goal itself the
    episode is over: γ = 0 there. That is this companion's choice, not the official code's (its
    DWSL configs keep γ = 1 everywhere): d(g, g) is never a training target (horizons are ≥ 1),
    so with one-hot cells it would be whatever the network extrapolates. Returns (loss,
    advantages).
    """
    _, a, s_next, g, _ = batch
    gamma = (s_next != g).float()
    adv = advantage(distance, next_distance, bins, gamma)
    weights = action_weights(adv, beta, clip)
    nll = F.cross_entropy(action_logits, a, reduction="none")  # −log π(a | s, g)
    return (weights * nll).mean(), adv


def gcbc_loss(action_logits: torch.Tensor, batch: Sequence[torch.Tensor]) -> torch.Tensor:
    """Goal-conditioned behaviour cloning: −log π(a_t | s_t, g) on the same relabelled data."""
    return F.cross_entropy(action_logits, batch[1])


def training_loss(
    model: nn.Module,
    batch: Sequence[torch.Tensor],
    arms: dict[str, float | None],
    bins: int,
    beta: float,
    clip: float | None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """L_d + Σ_arms L_π on one relabelled batch (the step function given to ``fit``).

    ``model`` is a :class:`GoalReachingAgent` (possibly wrapped by Fabric) built with ``arms``.
    As in the official ``train_step``, the distance loss and the actor losses are summed and
    stepped together. The arms' parameters are disjoint and Adam updates each parameter from its
    own gradient, so training them side by side is the same as training each alone on the same
    batches (and GCBC ignores the distance network).
    """
    s, _, s_next, g, h = batch
    logits, next_logits, action_logits = model(s, s_next, g)
    distance_loss = F.cross_entropy(logits, distance_targets(h, bins))  # L_d (phase 1)
    total, metrics = distance_loss, {"distance_loss": distance_loss.item()}
    for (name, alpha), out in zip(arms.items(), action_logits):
        if alpha is None:
            loss = gcbc_loss(out, batch)
        else:
            with torch.no_grad():  # actor targets, not trained through
                d = soft_min_distance(logits, alpha)
                d_next = soft_min_distance(next_logits, alpha)
            loss, adv = dwsl_actor_loss(out, batch, d, d_next, bins, beta, clip)
            metrics[f"advantage/{name}"] = adv.mean().item()
        metrics[f"actor_loss/{name}"] = loss.item()
        total = total + loss
    return total, metrics


# --- using a trained agent: tables over all (state, goal) pairs ----------------------------------


def all_pairs(n_cells: int, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Every (state, goal) pair as two index vectors, state-major: pair i·N + j is (i, j)."""
    idx = torch.arange(n_cells, device=device)
    return idx.repeat_interleave(n_cells), idx.repeat(n_cells)


@torch.no_grad()
def greedy_actions(actor: nn.Module, n_cells: int) -> np.ndarray:
    """[N, N] the actor's most likely action at state i for goal j (the deterministic policy
    the official code evaluates: the mode, not a sample)."""
    s, g = all_pairs(n_cells, next(actor.parameters()).device)
    return actor(s, g).argmax(-1).view(n_cells, n_cells).cpu().numpy()


@torch.no_grad()
def time_step_distribution(distance: nn.Module, n_cells: int) -> torch.Tensor:
    """[N, N, B] the learned p(k | s = i, g = j) of a ``distance`` network."""
    s, g = all_pairs(n_cells, next(distance.parameters()).device)
    return distance(s, g).softmax(-1).view(n_cells, n_cells, -1).cpu()


def distance_from_distribution(probs: torch.Tensor, alpha: float | None) -> torch.Tensor:
    """The distance of phase 2 from probabilities instead of logits (log p is a valid logit
    vector)."""
    return soft_min_distance(probs.clamp_min(1e-30).log(), alpha)


def distance_in_steps(distance: torch.Tensor | np.ndarray, bins: int):
    """A normalized distance d as time-steps: bin k is k + 1 steps, so steps = 1 + B·d."""
    return 1 + bins * distance


def rollout_table(
    actions: np.ndarray, transitions: np.ndarray, start: int, goal: int, horizon: int
) -> list[int]:
    """The cells visited by the greedy policy ``actions`` [N, N] from ``start`` towards ``goal``
    for at most ``horizon`` steps (stops at the goal)."""
    path = [start]
    for _ in range(horizon):
        if path[-1] == goal:
            break
        path.append(int(transitions[path[-1], actions[path[-1], goal]]))
    return path


def steps_to_goal(actions: np.ndarray, transitions: np.ndarray, horizon: int) -> np.ndarray:
    """[N, N] steps the greedy policy needs from state i to goal j, −1 if not within
    ``horizon`` steps; every start–goal pair rolled out at once (0 on the diagonal)."""
    n = len(actions)
    goal = np.tile(np.arange(n), n)
    cell = np.repeat(np.arange(n), n)
    steps = np.where(cell == goal, 0, -1)
    for t in range(1, horizon + 1):
        cell = transitions[cell, actions[cell, goal]]
        steps = np.where((steps < 0) & (cell == goal), t, steps)
    return steps.reshape(n, n)
