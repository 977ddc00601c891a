"""The experiment: one-step navigation with a gap in the data (a 2-D continuous bandit).

A state s ∈ [−1, 1] places the goal at a*(s) = (goal_x, goal_slope·s); the action a ∈ [−1, 1]² is
the agent's displacement and the reward is r(s, a) = reward_offset − ‖a − a*(s)‖ (arrive, minus
the miss distance). The behaviour policy never aims at the goal: with probability
``cluster_share`` it moves to a cluster left of the goal, otherwise to an arc on the goal's right.
So the goal lies in the convex hull of the data's actions, but off the data (a gap of radius
``gap`` around it), and the data's mean action is far from it.

Three arms share the data, the critic's batches and the networks' sizes: DOGE (distance
constraint with the dual λ), TD3+BC (the same actor-critic with the constraint replaced by
behaviour cloning — the control that removes only DOGE's mechanism) and the unconstrained TD3
actor. Returns are measured by the simulator (:class:`GapBandit`, through
``companion.data.offline_rl.evaluation_returns``).
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import numpy as np
import torch

from companion.core import Config, Result, seed_everything
from companion.data import offline_rl
from companion.errors import CompanionError, unknown
from companion.papers.doge.method import (
    Actor,
    DistanceNetwork,
    DoubleCritic,
    critic_loss,
    distance_loss,
    doge_actor_loss,
    dual_update,
    soft_update,
    target_of,
    td3_bc_actor_loss,
    unconstrained_actor_loss,
)

ARMS = ("doge", "td3_bc", "unconstrained")
OFFICIAL_STEPS = 1_000_000  # train_distance_mujoco.py
OFFICIAL_DUAL_STEP = 3e-4  # doge.py: dual_step_size


@dataclasses.dataclass(frozen=True)
class DOGEConfig(Config):
    """What to train and how. Sizes and steps change between presets; the algorithm never does."""

    data_path: str = ""  # a D4RL-style .npz of the task; "" = generate it
    transitions: int = 2000
    cluster_share: float = 0.6  # behaviour: share of the left cluster
    cluster_offset: float = 0.55  # left cluster centre: a* − (offset, 0)
    cluster_std: float = 0.08
    gap: float = 0.3  # arc radius range [gap, gap + arc_width] right of the goal
    arc_width: float = 0.15
    goal_x: float = 0.3
    goal_slope: float = 0.4
    reward_offset: float = 10.0  # arrival reward: Q values are large against action gaps
    arms: tuple[str, ...] = ARMS
    hidden: int = 64
    layers: int = 3
    steps: int = 3000
    batch_size: int = 128
    lr: float = 1e-3  # actor, critic; official 3e-4 at 10^6 steps (critic 1e-3 on AntMaze)
    lr_distance: float = 1e-3  # official MuJoCo value
    distance_samples: int = 20  # N random actions per pair
    distance_fraction: float = 0.1  # g trains for this share of the steps (official 1e5 / 1e6)
    gamma: float = 0.99
    tau: float = 0.005
    policy_noise: float = 0.2
    noise_clip: float = 0.5
    policy_freq: int = 2
    alpha_doge: float = 7.5  # official MuJoCo default
    alpha_td3_bc: float = 2.5  # TD3+BC's official default
    lambda_init: float = 5.0
    lambda_min: float = 1.0
    lambda_max: float = 100.0
    lambda_threshold: float = 0.0
    dual_step: float = 0.0  # 0 = official 3e-4 scaled by 10^6 / steps (same total λ drift)
    eval_episodes: int = 200
    grid: int = 41  # action grid per side for the Q-error and distance maps
    probe_states: int = 5

    def validate(self) -> None:
        for arm in self.arms:
            if arm not in ARMS:
                raise unknown("arm", arm, ARMS)
        if "doge" not in self.arms:
            raise CompanionError(f"arms must include 'doge', got {self.arms}")
        if self.steps < 1 or self.batch_size < 1 or self.transitions < 2:
            raise CompanionError(
                f"steps, batch_size and transitions must be positive, got steps={self.steps}, "
                f"batch_size={self.batch_size}, transitions={self.transitions}"
            )
        if not 0.0 < self.cluster_share < 1.0:
            raise CompanionError(f"cluster_share must lie in (0, 1), got {self.cluster_share}")
        if self.lr <= 0 or self.lr_distance <= 0 or self.hidden < 1 or self.layers < 1:
            raise CompanionError(
                f"lr, lr_distance, hidden and layers must be positive, got lr={self.lr}, "
                f"lr_distance={self.lr_distance}, hidden={self.hidden}, layers={self.layers}"
            )
        if not 0.0 < self.distance_fraction <= 1.0:
            raise CompanionError(
                f"distance_fraction must lie in (0, 1], got {self.distance_fraction}"
            )
        if self.lambda_min > self.lambda_max:
            raise CompanionError(
                f"lambda_min {self.lambda_min} exceeds lambda_max {self.lambda_max}"
            )

    @property
    def eta(self) -> float:
        """The dual step η: official 3e-4 over 10^6 steps, scaled to keep η·steps."""
        return self.dual_step or OFFICIAL_DUAL_STEP * OFFICIAL_STEPS / self.steps

    @property
    def distance_steps(self) -> int:
        return max(1, round(self.distance_fraction * self.steps))


PRESETS: dict[str, DOGEConfig] = {
    "smoke": DOGEConfig(transitions=500, steps=60, hidden=32, eval_episodes=20, grid=11),
    "notebook": DOGEConfig(),
    # The official network sizes, batch and step budget's first part on the same task.
    "full": DOGEConfig(
        transitions=100_000,
        hidden=256,
        batch_size=256,
        steps=100_000,
        lr=3e-4,
        eval_episodes=1000,
        grid=81,
        probe_states=9,
    ),
}


# ---------------------------------------------------------------- the task and its data
def goal(cfg: DOGEConfig, s: np.ndarray) -> np.ndarray:
    """a*(s) = (goal_x, goal_slope·s): the best action, by construction of the reward."""
    s = np.asarray(s, dtype=float).reshape(-1)
    return np.stack([np.full_like(s, cfg.goal_x), cfg.goal_slope * s], -1)


def reward(cfg: DOGEConfig, s: np.ndarray, a: np.ndarray) -> np.ndarray:
    """r(s, a) = reward_offset − ‖a − a*(s)‖₂ (the simulator)."""
    return cfg.reward_offset - np.linalg.norm(np.asarray(a) - goal(cfg, s), axis=-1)


def behaviour_actions(cfg: DOGEConfig, s: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The behaviour policy: the left cluster (share ``cluster_share``) or the right arc."""
    s = np.asarray(s, dtype=float).reshape(-1)
    n = len(s)
    centre = goal(cfg, s)
    left = rng.random(n) < cfg.cluster_share
    cluster = centre + [-cfg.cluster_offset, 0.0] + cfg.cluster_std * rng.standard_normal((n, 2))
    radius = cfg.gap + cfg.arc_width * rng.random(n)
    angle = rng.uniform(-math.pi / 2, math.pi / 2, n)
    arc = centre + radius[:, None] * np.stack([np.cos(angle), np.sin(angle)], -1)
    return np.clip(np.where(left[:, None], cluster, arc), -1.0, 1.0)


def make_dataset(cfg: DOGEConfig, seed: int) -> offline_rl.Transitions:
    """``transitions`` one-step episodes of the behaviour policy, in the D4RL layout."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(-1, 1, cfg.transitions)
    a = behaviour_actions(cfg, s, rng)
    n = cfg.transitions
    task = {k: getattr(cfg, k) for k in TASK_KEYS}
    return offline_rl.Transitions(
        observations=s[:, None].astype(np.float32),
        actions=a.astype(np.float32),
        rewards=reward(cfg, s, a).astype(np.float32),
        next_observations=s[:, None].astype(np.float32),
        terminals=np.ones(n, dtype=bool),
        timeouts=np.zeros(n, dtype=bool),
        provenance={
            "environment": "companion.papers.doge GapBandit (one-step navigation with a gap)",
            "behaviour": "left cluster (share cluster_share) or right arc around the goal",
            "seed": seed,
            "task": task,
        },
    )


TASK_KEYS = (
    "cluster_share",
    "cluster_offset",
    "cluster_std",
    "gap",
    "arc_width",
    "goal_x",
    "goal_slope",
    "reward_offset",
)


def load_data(cfg: DOGEConfig) -> offline_rl.Transitions:
    """The generated dataset (seed ``cfg.seed``) or the D4RL-style file ``data_path``."""
    if not cfg.data_path:
        return make_dataset(cfg, cfg.seed)
    data = offline_rl.load_d4rl(cfg.data_path)
    if data.actions.ndim != 2 or data.actions.shape[1] != 2:
        raise CompanionError(f"{cfg.data_path}: actions must have shape [M, 2]")
    return data


class GapBandit:
    """The simulator as a gymnasium-style environment: one step per episode."""

    def __init__(self, cfg: DOGEConfig):
        self.cfg = cfg
        self.s = np.zeros(1, dtype=np.float32)

    def reset(self, seed: int | None = None):
        self.s = np.random.default_rng(seed).uniform(-1, 1, 1).astype(np.float32)
        return self.s, {}

    def step(self, action):
        a = np.clip(np.asarray(action, dtype=float), -1.0, 1.0)
        r = float(reward(self.cfg, self.s, a[None])[0])
        return self.s, r, True, False, {}


# ---------------------------------------------------------------- training
@dataclasses.dataclass
class ArmResult(Result):
    """One arm: the training curves, the policy's actions on probe states, returns."""

    arm: str
    curve_steps: list[int]
    lam: list[float]  # DOGE's dual variable (empty for the other arms)
    distance_diff: list[float]  # mean g(s, π) − mean g(s, a) (DOGE)
    miss: list[float]  # mean ‖π(s) − a*(s)‖ on the probe states during training
    mean_return: float  # simulator, eval_episodes one-step episodes
    miss_distance: float  # reward_offset − mean_return
    q_at_policy: float  # mean Q₁(s, π(s)) on the evaluation states
    r_at_policy: float  # mean true r(s, π(s)) there
    policy_actions: list[list[float]]  # [probe state] -> π(s)
    q_error_inside: float  # mean |Q₁ − r| on the action grid, inside the data's hull
    q_error_outside: float
    q_map: list[list[float]]  # [probe][grid²] Q₁ − r on the grid (first arm only)
    g_map: list[list[float]]  # [probe][grid²] g(s, ·) (DOGE only)
    g_corr: float  # correlation of g with the exact expected distance on the grid (DOGE; else 0)
    seconds: float


@dataclasses.dataclass
class DOGEResult(Result):
    config: dict
    probe_states: list[float]
    grid: list[float]
    inside: list[list[bool]]  # [probe][grid²]: action inside the data's convex hull at s
    exact_distance: list[list[float]]  # [probe][grid²]: E_{a~D(·|s)} ‖â − a‖
    data_actions: list[list[list[float]]]  # [probe] -> behaviour actions near s (for plots)
    goal_inside: float  # share of evaluation states whose a*(s) lies in the hull
    goal_gap: float  # mean distance from a*(s) to the nearest behaviour action
    best_data_miss: float  # mean miss of the best behaviour action at s (support oracle)
    g_threshold: float  # mean exact g over the data: DOGE's feasible level
    goal_g: float  # mean exact g at a*(s)
    arms: dict[str, ArmResult]


def behaviour_sample(cfg: DOGEConfig, s: float, n: int, seed: int) -> np.ndarray:
    """n behaviour actions at state s (the conditional data distribution D(·|s))."""
    return behaviour_actions(cfg, np.full(n, s), np.random.default_rng(seed))


def hull_mask(points: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """True where a query lies in the convex hull of ``points`` (Delaunay simplices)."""
    from scipy.spatial import Delaunay

    return Delaunay(points).find_simplex(queries) >= 0


def expected_distance(points: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """g*(s, â) = mean_i ‖â − a_i‖: the minimiser of the distance regression (Eq. 5)."""
    return np.linalg.norm(queries[:, None, :] - points[None], axis=-1).mean(1)


def action_grid(n: int) -> np.ndarray:
    ticks = np.linspace(-1, 1, n)
    xx, yy = np.meshgrid(ticks, ticks)
    return np.stack([xx.ravel(), yy.ravel()], -1)


def _batch(t: dict[str, torch.Tensor], idx: torch.Tensor) -> dict[str, torch.Tensor]:
    return {k: v[idx] for k, v in t.items()}


def train_arm(cfg: DOGEConfig, arm: str, data: offline_rl.Transitions, probes: np.ndarray):
    """Train one arm; every arm sees the same initial critic, batches and critic noise."""
    seed_everything(cfg.seed)
    torch.manual_seed(cfg.seed)
    t = {
        "s": torch.as_tensor(data.observations, dtype=torch.float32).reshape(len(data), -1),
        "a": torch.as_tensor(data.actions, dtype=torch.float32),
        "r": torch.as_tensor(data.rewards, dtype=torch.float32)[:, None],
        "s2": torch.as_tensor(data.next_observations, dtype=torch.float32).reshape(len(data), -1),
        "done": torch.as_tensor(data.terminals, dtype=torch.float32)[:, None],
    }
    sd, ad = t["s"].shape[1], t["a"].shape[1]
    critic = DoubleCritic(sd, ad, cfg.hidden, cfg.layers)
    actor = Actor(sd, ad, cfg.hidden, cfg.layers)
    g = DistanceNetwork(sd, ad, cfg.hidden, cfg.layers)
    critic_t, actor_t = target_of(critic), target_of(actor)
    opt_c = torch.optim.Adam(critic.parameters(), lr=cfg.lr)
    opt_a = torch.optim.Adam(actor.parameters(), lr=cfg.lr)
    opt_g = torch.optim.Adam(g.parameters(), lr=cfg.lr_distance)
    # separate streams: batches and critic noise are identical across arms
    batches = torch.Generator().manual_seed(cfg.seed)
    g_noise = torch.Generator().manual_seed(cfg.seed + 1)
    lam, steps, lams, diffs, miss = cfg.lambda_init, [], [], [], []
    probe_s = torch.as_tensor(probes, dtype=torch.float32)[:, None]
    probe_goal = goal(cfg, probes)
    every = max(1, cfg.steps // 50)
    start = time.perf_counter()
    for step in range(1, cfg.steps + 1):
        b = _batch(t, torch.randint(len(data), (cfg.batch_size,), generator=batches))
        loss_c = critic_loss(
            critic, critic_t, actor_t, b, cfg.gamma, cfg.policy_noise, cfg.noise_clip
        )
        opt_c.zero_grad()
        loss_c.backward()
        opt_c.step()
        if arm == "doge" and step <= cfg.distance_steps:
            loss_g = distance_loss(g, b["s"], b["a"], cfg.distance_samples, generator=g_noise)
            opt_g.zero_grad()
            loss_g.backward()
            opt_g.step()
        if step % cfg.policy_freq == 0:
            pi = actor(b["s"])
            q_pi = critic.Q1(b["s"], pi)
            if arm == "doge":
                loss_a, diff = doge_actor_loss(
                    q_pi, g(b["s"], pi), g(b["s"], b["a"]), cfg.alpha_doge, lam
                )
                lam = dual_update(
                    lam, diff.item(), cfg.eta, cfg.lambda_threshold, cfg.lambda_min, cfg.lambda_max
                )
            elif arm == "td3_bc":
                loss_a = td3_bc_actor_loss(q_pi, pi, b["a"], cfg.alpha_td3_bc)
            else:
                loss_a = unconstrained_actor_loss(q_pi, cfg.alpha_doge)
            opt_a.zero_grad()
            loss_a.backward()
            opt_a.step()
            for p in critic.parameters():  # the actor step must not touch the critic's grads
                p.grad = None
            soft_update(critic, critic_t, cfg.tau)
            soft_update(actor, actor_t, cfg.tau)
        if step % every == 0 or step == cfg.steps:
            steps.append(step)
            with torch.no_grad():
                act = actor(probe_s).numpy()
            miss.append(float(np.linalg.norm(act - probe_goal, axis=-1).mean()))
            if arm == "doge":
                lams.append(lam)
                diffs.append(float(diff.item()) if step >= cfg.policy_freq else 0.0)
    seconds = time.perf_counter() - start
    return critic, actor, g, steps, lams, diffs, miss, seconds


def _policy(actor: Actor):
    def act(obs):
        with torch.no_grad():
            return actor(torch.as_tensor(obs, dtype=torch.float32)[None])[0].numpy()

    return act


def measure_arm(cfg, arm, trained, probes, grid, inside, exact, first: bool) -> ArmResult:
    critic, actor, g, steps, lams, diffs, miss, seconds = trained
    returns = offline_rl.evaluation_returns(
        lambda: GapBandit(cfg), _policy(actor), cfg.eval_episodes, seed=10_000 + cfg.seed
    )
    eval_s = np.array(
        [
            np.random.default_rng(10_000 + cfg.seed + i).uniform(-1, 1, 1)[0]
            for i in range(cfg.eval_episodes)
        ],
        dtype=np.float32,
    )
    with torch.no_grad():
        st = torch.as_tensor(eval_s)[:, None]
        pi = actor(st)
        q_pi = critic.Q1(st, pi).squeeze(-1).numpy()
        probe_act = actor(torch.as_tensor(probes, dtype=torch.float32)[:, None]).numpy()
    r_pi = reward(cfg, eval_s, pi.numpy())
    errs_in, errs_out, q_map, g_map, corr = [], [], [], [], []
    ga = torch.as_tensor(grid, dtype=torch.float32)
    for k, s in enumerate(probes):
        ss = torch.full((len(grid), 1), float(s))
        with torch.no_grad():
            q = critic.Q1(ss, ga).squeeze(-1).numpy()
            gv = g(ss, ga).squeeze(-1).numpy()
        err = q - reward(cfg, np.full(len(grid), s), grid)
        mask = np.asarray(inside[k])
        errs_in.append(np.abs(err[mask]))
        errs_out.append(np.abs(err[~mask]))
        if first:
            q_map.append([round(float(v), 4) for v in err])
        if arm == "doge":
            g_map.append([round(float(v), 4) for v in gv])
            corr.append(float(np.corrcoef(gv, exact[k])[0, 1]))
    mean_return = float(returns.mean())
    return ArmResult(
        arm=arm,
        curve_steps=steps,
        lam=lams,
        distance_diff=diffs,
        miss=miss,
        mean_return=mean_return,
        miss_distance=float(cfg.reward_offset - mean_return),
        q_at_policy=float(q_pi.mean()),
        r_at_policy=float(r_pi.mean()),
        policy_actions=[[float(x) for x in row] for row in probe_act],
        q_error_inside=float(np.concatenate(errs_in).mean()),
        q_error_outside=float(np.concatenate(errs_out).mean()),
        q_map=q_map,
        g_map=g_map,
        g_corr=float(np.mean(corr)) if corr else 0.0,  # no g in the other arms
        seconds=seconds,
    )


def geometry(cfg: DOGEConfig, probes: np.ndarray, grid: np.ndarray, n: int = 2000):
    """The data's geometry per probe state, from the behaviour policy (the simulator side)."""
    inside, exact, shown = [], [], []
    for k, s in enumerate(probes):
        pts = behaviour_sample(cfg, float(s), n, seed=50_000 + k)
        inside.append(hull_mask(pts, grid).tolist())
        exact.append(expected_distance(pts[:500], grid).tolist())
        shown.append([[round(float(x), 3) for x in p] for p in pts[:150]])
    return inside, exact, shown


def premise_numbers(cfg: DOGEConfig, states: int = 50, n: int = 1000) -> dict[str, float]:
    """Checked by the simulator at ``states`` evaluation states: is a*(s) in the hull, how far is
    it from the nearest behaviour action, how good is the best behaviour action, and where does
    a*(s) sit against DOGE's feasible level mean g(s, a_data)."""
    rng = np.random.default_rng(123)
    ins, gaps, thr, at_goal = [], [], [], []
    for i, s in enumerate(rng.uniform(-1, 1, states)):
        pts = behaviour_sample(cfg, float(s), n, seed=90_000 + i)
        a_star = goal(cfg, [s])
        ins.append(bool(hull_mask(pts, a_star)[0]))
        d = np.linalg.norm(pts - a_star, axis=-1)
        gaps.append(d.min())
        thr.append(expected_distance(pts, pts[:300]).mean())
        at_goal.append(expected_distance(pts, a_star)[0])
    # The support oracle's bar is measured on the arms' own evaluation states (the same seeds as
    # ``measure_arm``), so it moves with the seed exactly as the arms' returns do.
    best = []
    for i in range(cfg.eval_episodes):
        s = np.random.default_rng(10_000 + cfg.seed + i).uniform(-1, 1, 1)[0]
        pts = behaviour_sample(cfg, float(s), n, seed=90_000 + cfg.seed + i)
        best.append(np.linalg.norm(pts - goal(cfg, [s]), axis=-1).min())
    return {
        "goal_inside": float(np.mean(ins)),
        "goal_gap": float(np.mean(gaps)),
        "best_data_miss": float(np.mean(best)),
        "g_threshold": float(np.mean(thr)),
        "goal_g": float(np.mean(at_goal)),
    }


def run(cfg: DOGEConfig, out_dir: str | Path | None = None, resume: bool = False) -> DOGEResult:
    """Train every arm of ``cfg.arms`` on one dataset; with ``out_dir``, each finished arm is
    written to ``<out_dir>/<arm>/arm.json`` and ``resume=True`` loads it instead of training."""
    data = load_data(cfg)
    probes = np.linspace(-0.8, 0.8, cfg.probe_states)
    grid = action_grid(cfg.grid)
    inside, exact, shown = geometry(cfg, probes, grid)
    arms = {}
    for i, arm in enumerate(cfg.arms):
        path = Path(out_dir) / arm / "arm.json" if out_dir is not None else None
        if resume and path is not None and path.exists():
            arms[arm] = ArmResult.load(path)
            continue
        trained = train_arm(cfg, arm, data, probes)
        arms[arm] = measure_arm(cfg, arm, trained, probes, grid, inside, exact, first=i == 0)
        if path is not None:
            arms[arm].save(path)
    result = DOGEResult(
        config=cfg.to_dict(),
        probe_states=[float(x) for x in probes],
        grid=[float(x) for x in np.linspace(-1, 1, cfg.grid)],
        inside=inside,
        exact_distance=[[round(float(v), 4) for v in row] for row in exact],
        data_actions=shown,
        **premise_numbers(cfg),
        arms=arms,
    )
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
