"""The experiment: offline Pendulum-v1 data from a random policy; latent models trained on the
same batches for the same steps; their open-loop predictions on held-out episodes; and (when
``plan_episodes`` > 0) MPPI planning with each model, scored in the real environment.

Arms (each a model and the same planner):

* ``tcrl``: temporal consistency with the EMA target encoder (τ from the config);
* ``online_target``: the same model and loss with the online encoder as target (τ = 1): the
  control that removes only the slow target;
* ``reward_only``: the same model trained on the reward term alone (c_s = 0): the control that
  removes only the consistency term;
* ``reconstruction``: the same latent model trained by decoding observations (no target);
* ``ensemble``: K one-step observation-space models (PETS-style);
* ``untrained``: the TCRL model at initialisation (premise: planning needs a trained model);
* ``simulator``: MPPI with Pendulum's true equations (the yardstick);
* ``random``: uniformly random actions (premise: the task is not solved by chance).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from companion.core import Config, Result, torch_threads, train_arms
from companion.data import offline_rl
from companion.errors import CompanionError, unknown
from companion.papers.tcrl.method import (
    MAX_TORQUE,
    EnsembleModel,
    LatentModel,
    ReconstructionModel,
    TargetEncoder,
    consistency_loss,
    cosine_consistency,
    discounted_sum,
    ema_update,
    ensemble_loss,
    ensemble_rollout_rewards,
    latent_rollout_rewards,
    mppi,
    portable_orthogonal_init,
    reconstruction_loss,
    reward_scale,
    simulator_rollout_rewards,
)

ARMS = (
    "simulator",
    "random",
    "untrained",
    "tcrl",
    "online_target",
    "reconstruction",
    "ensemble",
    "reward_only",
)
LEARNED = ("untrained", "tcrl", "online_target", "reconstruction", "ensemble", "reward_only")
LATENT = ("untrained", "tcrl", "online_target", "reward_only")  # LatentModel + target encoder
# arms planned with MPPI at the notebook size: the yardsticks and TCRL (comparisons between the
# learned models use the reward error, since all of them plan to the simulator's return)
PLANNED = ("simulator", "random", "untrained", "tcrl")
ENV_ID = "Pendulum-v1"
OBS_DIM, ACTION_DIM = 3, 1


@dataclasses.dataclass(frozen=True)
class TCRLConfig(Config):
    """What to train and how. Sizes change between presets; the algorithm never does."""

    arms: tuple[str, ...] = ARMS
    plan_arms: tuple[str, ...] = PLANNED  # arms that plan plan_episodes episodes each
    threads: int = 1  # torch CPU threads (1 is fastest for these tiny MLPs on a shared CPU)
    # data: a random policy in Pendulum-v1 (or a D4RL-style .npz at data_path)
    n_episodes: int = 40  # training episodes (200 env steps = 100 agent steps each)
    test_episodes: int = 10  # held-out episodes for the prediction errors
    action_repeat: int = 2  # cfgs/: every action held for 2 env steps, rewards summed
    data_path: str = ""
    # model (cfgs/: latent 50, MLP 512-512; smaller here)
    latent_dim: int = 32
    hidden: tuple[int, ...] = (64, 64)
    members: int = 5  # ensemble arm: K members
    # training (cfgs/: H = 5, ρ = 0.9, τ = 0.005, Adam 3e-4, wd 1e-6, clip 10, batch 512)
    horizon: int = 5
    rho: float = 0.9
    # EMA rate. The official 0.005 (a time constant 1/τ of 200 updates) is a third of this
    # 600-update run, and the lagging target doubled the 10-step reward error at seeds 0-1; 0.05
    # keeps 1/τ at a few percent of the run, as 200 updates are of the paper's ≥ 125k
    tau: float = 0.05
    lr: float = 1e-3
    weight_decay: float = 1e-6
    grad_clip: float = 10.0
    batch_size: int = 128
    steps: int = 600
    log_every: int = 50
    # evaluation
    eval_horizon: int = 10  # open-loop prediction steps measured on held-out episodes
    plan_episodes: int = 2  # MPPI episodes per arm in the real environment (0: none)
    plan_horizon: int = 15
    plan_samples: int = 256
    plan_elites: int = 32
    plan_iterations: int = 4
    temperature: float = 0.5
    momentum: float = 0.1
    gamma: float = 0.99

    def validate(self) -> None:
        for arm in (*self.arms, *self.plan_arms):
            if arm not in ARMS:
                raise unknown("arm", arm, ARMS)
        positive = {
            "n_episodes": self.n_episodes,
            "test_episodes": self.test_episodes,
            "action_repeat": self.action_repeat,
            "latent_dim": self.latent_dim,
            "members": self.members,
            "horizon": self.horizon,
            "batch_size": self.batch_size,
            "steps": self.steps,
            "log_every": self.log_every,
            "eval_horizon": self.eval_horizon,
            "plan_horizon": self.plan_horizon,
            "plan_samples": self.plan_samples,
            "plan_elites": self.plan_elites,
            "plan_iterations": self.plan_iterations,
            "threads": self.threads,
        }
        for key, value in positive.items():
            if value < 1:
                raise CompanionError(f"{key} must be >= 1, got {value}")
        if self.plan_episodes < 0:
            raise CompanionError(f"plan_episodes must be >= 0, got {self.plan_episodes}")
        if self.plan_elites > self.plan_samples:
            raise CompanionError(
                f"plan_elites ({self.plan_elites}) cannot exceed plan_samples ({self.plan_samples})"
            )
        if not 0 < self.tau <= 1:
            raise CompanionError(f"tau must be in (0, 1], got {self.tau}")
        if not 0 < self.rho <= 1 or not 0 < self.gamma <= 1:
            raise CompanionError(f"rho and gamma must be in (0, 1], got {self.rho}, {self.gamma}")
        if self.lr <= 0:
            raise CompanionError(f"lr must be positive, got {self.lr}")
        if not self.hidden or any(h < 1 for h in self.hidden):
            raise CompanionError(f"hidden must list positive layer widths, got {self.hidden}")
        if 100 // self.action_repeat <= max(self.horizon, self.eval_horizon):
            raise CompanionError(
                f"episodes of {200 // self.action_repeat} agent steps are too short for "
                f"horizon {self.horizon} / eval_horizon {self.eval_horizon}"
            )


PRESETS: dict[str, TCRLConfig] = {
    # plan_horizon sets the cost of planning and of counting its FLOPs (one op per step)
    "smoke": TCRLConfig(
        n_episodes=4,
        test_episodes=2,
        latent_dim=8,
        hidden=(32,),
        members=2,
        batch_size=32,
        steps=20,
        log_every=10,
        eval_horizon=6,
        plan_episodes=1,
        plan_horizon=5,
        plan_samples=64,
        plan_elites=8,
        plan_iterations=2,
    ),
    "notebook": TCRLConfig(),
    # The official sizes (cfgs/: latent 50, MLP 512-512, batch 512, Adam 3e-4) and MPPI's
    # (512 samples, 64 elites, 6 iterations), more data and steps, ten planned episodes.
    "full": TCRLConfig(
        n_episodes=500,
        test_episodes=50,
        latent_dim=50,
        hidden=(512, 512),
        tau=0.005,
        lr=3e-4,
        batch_size=512,
        steps=30_000,
        log_every=500,
        plan_episodes=10,
        plan_arms=ARMS,
        plan_samples=512,
        plan_elites=64,
        plan_iterations=6,
    ),
}


@dataclasses.dataclass
class ArmResult(Result):
    """One arm: its training curve, open-loop prediction errors and (optionally) returns."""

    arm: str
    loss_steps: list[int]
    loss: list[float]
    reward_error: list[float]  # [k-1]: MSE of the k-step reward prediction / Var(reward)
    latent_error: list[float]  # [k-1]: 2 − 2cos(ẑ_k, target(o_k)) (latent models only)
    latent_spread: float | None  # mean per-dim std of unit-normalised latents (None: no latent)
    returns: list[float]  # undiscounted episode returns of MPPI with this model
    train_flops: float  # FLOPs of one update (forward + backward), counted
    plan_flops: float  # FLOPs of scoring one batch of plan_samples sequences, counted
    update_seconds: float
    decision_seconds: float
    seconds: float


@dataclasses.dataclass
class TCRLResult(Result):
    config: dict
    provenance: dict
    behaviour_return: float  # mean return of the data's episodes (per 200 env steps)
    arms: dict[str, ArmResult]

    def mean_return(self, arm: str) -> float:
        return float(np.mean(self.arms[arm].returns)) if self.arms[arm].returns else float("nan")

    def normalized_return(self, arm: str) -> float:
        """(R_arm − R_random) / (R_simulator − R_random): 0 = random actions, 1 = MPPI with the
        true equations."""
        lo, hi = self.mean_return("random"), self.mean_return("simulator")
        return (self.mean_return(arm) - lo) / (hi - lo)


# --- data ----------------------------------------------------------------------------------------


class ActionRepeat(gym.Wrapper):
    """Hold each action ``repeat`` env steps and sum the rewards (the DMC wrapper of the code);
    calls ``on_reset`` hooks so a planner can forget its warm start between episodes."""

    def __init__(self, env, repeat: int):
        super().__init__(env)
        self.repeat = repeat
        self.on_reset: list = []

    def reset(self, **kwargs):
        for hook in self.on_reset:
            hook()
        return self.env.reset(**kwargs)

    def step(self, action):
        total = 0.0
        for _ in range(self.repeat):
            obs, reward, terminated, truncated, info = self.env.step(action)
            total += float(reward)
            if terminated or truncated:
                break
        return obs, total, terminated, truncated, info


def make_env(repeat: int) -> ActionRepeat:
    return ActionRepeat(gym.make(ENV_ID), repeat)


def collect_random(n_episodes: int, repeat: int, seed: int) -> offline_rl.Transitions:
    """Episodes of a uniformly random policy (an action in [−2, 2] N·m drawn every agent step,
    held ``repeat`` env steps), as D4RL-style transitions; actions stored in [−1, 1]."""
    env = make_env(repeat)
    rng = np.random.default_rng(seed)
    rows = {k: [] for k in offline_rl.D4RL_KEYS}
    for i in range(n_episodes):
        obs, _ = env.reset(seed=seed * 100_000 + i)
        while True:
            a = rng.uniform(-1, 1, size=ACTION_DIM)
            nxt, r, terminated, truncated, _ = env.step((MAX_TORQUE * a).astype(np.float32))
            for key, value in zip(
                offline_rl.D4RL_KEYS, (obs, a, r, nxt, terminated, truncated and not terminated)
            ):
                rows[key].append(value)
            obs = nxt
            if terminated or truncated:
                break
    env.close()
    return offline_rl.Transitions(
        **{
            k: np.asarray(v, dtype=np.float32 if k != "rewards" else np.float64)
            for k, v in rows.items()
        },
        provenance={
            "env": ENV_ID,
            "gymnasium": gym.__version__,
            "behaviour": "uniform random actions in [-2, 2], one per agent step",
            "action_repeat": repeat,
            "episodes": n_episodes,
            "seed": seed,
            "actions": "stored divided by 2 (in [-1, 1])",
        },
    )


@functools.lru_cache(maxsize=4)
def load_data(cfg: TCRLConfig) -> tuple[offline_rl.Transitions, offline_rl.Transitions]:
    """(train, test) transitions: generated for ``cfg.seed``, or train read from ``data_path``.
    The test episodes always come from other start states (seed + 1,000)."""
    if cfg.data_path:
        train = offline_rl.load_d4rl(cfg.data_path)
    else:
        train = collect_random(cfg.n_episodes, cfg.action_repeat, cfg.seed)
    test = collect_random(cfg.test_episodes, cfg.action_repeat, cfg.seed + 1000)
    return train, test


def sequence_starts(data: offline_rl.Transitions, horizon: int) -> np.ndarray:
    """Every index t whose t … t+H−1 lie in one episode: sequences never cross episode ends."""
    starts = [np.arange(a, b - horizon + 1) for a, b in data.episode_bounds() if b - a >= horizon]
    if not starts:
        raise CompanionError(f"no episode of the data has {horizon} steps")
    return np.concatenate(starts)


def as_tensors(data: offline_rl.Transitions, scale: float) -> dict[str, torch.Tensor]:
    """The arrays a sequence is cut from, as float32 tensors (rewards divided by ``scale``)."""
    return {
        "observations": torch.as_tensor(data.observations, dtype=torch.float32),
        "actions": torch.as_tensor(data.actions, dtype=torch.float32).reshape(len(data), -1),
        "rewards": torch.as_tensor(data.rewards / scale, dtype=torch.float32),
        "next_observations": torch.as_tensor(data.next_observations, dtype=torch.float32),
    }


def sequences(tensors: dict[str, torch.Tensor], starts, horizon: int):
    """(o_0 [B, O], a [H, B, A], r [H, B], o_1..o_H [H, B, O]) of the sequences at ``starts``."""
    starts = torch.as_tensor(starts)
    idx = starts[None, :] + torch.arange(horizon)[:, None]  # [H, B]
    return (
        tensors["observations"][starts],
        tensors["actions"][idx],
        tensors["rewards"][idx],
        tensors["next_observations"][idx],
    )


# --- models --------------------------------------------------------------------------------------


def build_model(cfg: TCRLConfig, arm: str, seed: int):
    """The arm's model, initialised from NumPy (same weights on every CPU)."""
    rng = np.random.default_rng(seed)
    if arm == "ensemble":
        model = EnsembleModel(OBS_DIM, ACTION_DIM, cfg.hidden, cfg.members)
    elif arm == "reconstruction":
        model = ReconstructionModel(OBS_DIM, ACTION_DIM, cfg.latent_dim, cfg.hidden)
    else:
        model = LatentModel(OBS_DIM, ACTION_DIM, cfg.latent_dim, cfg.hidden)
    portable_orthogonal_init(model, rng)
    return model


def train_loss(cfg, arm, model, target, batch):
    obs0, actions, rewards, next_obs = batch
    if arm == "ensemble":
        return ensemble_loss(model, obs0, actions[0], rewards[0], next_obs[0])
    if arm == "reconstruction":
        return reconstruction_loss(model, obs0, actions, rewards, next_obs, cfg.rho)
    if arm == "reward_only":  # the control: the consistency term removed, all else the same
        return consistency_loss(
            model, target, obs0, actions, rewards, next_obs, cfg.rho, state_coef=0.0
        )
    return consistency_loss(model, target, obs0, actions, rewards, next_obs, cfg.rho)


def train_model(cfg: TCRLConfig, arm: str, train: offline_rl.Transitions, seed: int):
    """``cfg.steps`` Adam updates on batches of H-step sequences; the batches depend only on the
    seed, so every arm sees the same ones. Returns (model, target, steps, losses, s/update)."""
    model = build_model(cfg, arm, seed)
    target = TargetEncoder(model.encoder) if arm in LATENT else None
    if arm in ("untrained",):
        return model, target, [], [], 0.0
    tau = 1.0 if arm == "online_target" else cfg.tau
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    starts = sequence_starts(train, cfg.horizon)
    rng = np.random.default_rng(seed + 7)
    tensors = as_tensors(train, reward_scale(cfg.action_repeat))
    steps, losses, clock = [], [], 0.0
    for step in range(cfg.steps):
        batch = sequences(tensors, rng.choice(starts, cfg.batch_size), cfg.horizon)
        t0 = time.perf_counter()
        loss, _ = train_loss(cfg, arm, model, target, batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
        optimizer.step()
        if target is not None:
            ema_update(model.encoder, target, tau)
        clock += time.perf_counter() - t0
        if step % cfg.log_every == 0 or step == cfg.steps - 1:
            steps.append(step)
            losses.append(float(loss.detach()))
    return model, target, steps, losses, clock / cfg.steps


# --- measurements --------------------------------------------------------------------------------


@torch.no_grad()
def prediction_errors(cfg, arm, model, target, test) -> tuple[list[float], list[float], float]:
    """Open-loop errors on held-out episodes: from every start o_t, feed the data's actions for
    k = 1 … eval_horizon steps and compare the predicted reward r̂_{t+k−1} with the real one
    (MSE / Var(r)); latent models also compare ẑ_k with the target encoder's (or, for the
    reconstruction model, the encoder's) latent of o_{t+k}. Also the latents' spread."""
    starts = sequence_starts(test, cfg.eval_horizon)
    tensors = as_tensors(test, reward_scale(cfg.action_repeat))
    obs0, actions, rewards, next_obs = sequences(tensors, starts, cfg.eval_horizon)
    var = float(rewards.var())
    reward_err, latent_err = [], []
    if arm == "ensemble":
        o = obs0.expand(len(model.members), -1, -1)
        for k in range(cfg.eval_horizon):
            o, r = model.next(o, actions[k])
            reward_err.append(float(((r.mean(0) - rewards[k]) ** 2).mean()) / var)
        return reward_err, latent_err, None
    encode_target = target if target is not None else model.encode
    z = model.encode(obs0)
    for k in range(cfg.eval_horizon):
        z, r = model.next(z, actions[k])
        reward_err.append(float(((r - rewards[k]) ** 2).mean()) / var)
        latent_err.append(float(cosine_consistency(z, encode_target(next_obs[k])).mean()))
    unit = torch.nn.functional.normalize(model.encode(obs0), dim=-1)
    return reward_err, latent_err, float(unit.std(0).mean())


class Planner:
    """MPPI as a policy ``obs -> action`` for :func:`offline_rl.evaluation_returns`."""

    def __init__(self, cfg: TCRLConfig, arm: str, model, seed: int):
        self.cfg, self.arm, self.model = cfg, arm, model
        self.generator = torch.Generator().manual_seed(seed)
        self.rng = np.random.default_rng(seed)
        self.prev_mean = None
        self.decisions, self.clock = 0, 0.0
        self.scale = reward_scale(cfg.action_repeat)

    def reset(self):
        self.prev_mean = None

    def value(self, obs: torch.Tensor):
        cfg = self.cfg
        if self.arm == "simulator":
            return lambda a: discounted_sum(
                simulator_rollout_rewards(obs, a, cfg.action_repeat, self.scale), cfg.gamma
            )
        if self.arm == "ensemble":
            return lambda a: discounted_sum(ensemble_rollout_rewards(self.model, obs, a), cfg.gamma)
        z0 = self.model.encode(obs)
        return lambda a: discounted_sum(latent_rollout_rewards(self.model, z0, a), cfg.gamma)

    @torch.no_grad()
    def __call__(self, obs: np.ndarray) -> np.ndarray:
        if self.arm == "random":
            return (MAX_TORQUE * self.rng.uniform(-1, 1, size=ACTION_DIM)).astype(np.float32)
        cfg = self.cfg
        t0 = time.perf_counter()
        action, self.prev_mean = mppi(
            self.value(torch.as_tensor(obs, dtype=torch.float32)),
            cfg.plan_horizon,
            ACTION_DIM,
            self.generator,
            samples=cfg.plan_samples,
            elites=cfg.plan_elites,
            iterations=cfg.plan_iterations,
            temperature=cfg.temperature,
            momentum=cfg.momentum,
            prev_mean=self.prev_mean,
        )
        self.clock += time.perf_counter() - t0
        self.decisions += 1
        return (MAX_TORQUE * action.numpy()).astype(np.float32)


def plan_returns(cfg: TCRLConfig, arm: str, model, episodes: int) -> tuple[list[float], float]:
    """Undiscounted returns of ``episodes`` Pendulum-v1 episodes (200 env steps) with MPPI on
    ``arm``'s model (``None`` for the simulator and random arms), from the start states of seed
    ``cfg.seed + 5000``: every arm faces the same ones. Also the seconds per decision."""
    planner = Planner(cfg, arm, model, cfg.seed + 17)

    def env_factory():
        env = make_env(cfg.action_repeat)
        env.on_reset.append(planner.reset)
        return env

    returns = offline_rl.evaluation_returns(env_factory, planner, episodes, seed=cfg.seed + 5000)
    return returns.tolist(), planner.clock / max(1, planner.decisions)


def count_costs(cfg: TCRLConfig, arm: str) -> tuple[float, float]:
    """(FLOPs of one training update, FLOPs of scoring plan_samples sequences of plan_horizon
    steps), counted on the meta device; 0 for arms without a learned model."""
    from companion.core.fullscale import count_flops

    if arm in ("simulator", "random"):
        return 0.0, 0.0
    h, b = cfg.horizon, cfg.batch_size
    with torch.device("meta"):
        model = build_model(cfg, "tcrl" if arm == "untrained" else arm, 0)
        latent = arm not in ("ensemble", "reconstruction")
        target = TargetEncoder(model.encoder) if latent else None
        batch = (
            torch.zeros(b, OBS_DIM),
            torch.zeros(h, b, ACTION_DIM),
            torch.zeros(h, b),
            torch.zeros(h, b, OBS_DIM),
        )
        actions = torch.zeros(cfg.plan_samples, cfg.plan_horizon, ACTION_DIM)
        obs = torch.zeros(OBS_DIM)

    def update():
        loss, _ = train_loss(cfg, "tcrl" if arm == "untrained" else arm, model, target, batch)
        loss.backward()

    def score():
        with torch.no_grad():
            if arm == "ensemble":
                ensemble_rollout_rewards(model, obs, actions)
            else:
                latent_rollout_rewards(model, model.encode(obs), actions)

    return count_flops(update), count_flops(score)


def train_arm(fabric, cfg: TCRLConfig, arm: str, folder: Path | None, resume: bool) -> ArmResult:
    """Train (or not) one arm's model on the seed's data, measure its predictions, plan."""
    start = time.perf_counter()
    train, test = load_data(cfg)
    model = target = None
    steps, losses, per_update = [], [], 0.0
    reward_err, latent_err, spread = [], [], None
    with torch_threads(cfg.threads):
        if arm in LEARNED:
            model, target, steps, losses, per_update = train_model(cfg, arm, train, cfg.seed)
            model.eval()
            reward_err, latent_err, spread = prediction_errors(cfg, arm, model, target, test)
        returns, per_decision = [], 0.0
        if cfg.plan_episodes > 0 and arm in cfg.plan_arms:
            returns, per_decision = plan_returns(cfg, arm, model, cfg.plan_episodes)
    train_flops, plan_flops = count_costs(cfg, arm)
    return ArmResult(
        arm=arm,
        loss_steps=steps,
        loss=losses,
        reward_error=reward_err,
        latent_error=latent_err,
        latent_spread=spread,
        returns=returns,
        train_flops=train_flops,
        plan_flops=plan_flops,
        update_seconds=per_update,
        decision_seconds=per_decision,
        seconds=time.perf_counter() - start,
    )


def run(cfg: TCRLConfig, out_dir: str | Path | None = None, resume: bool = False) -> TCRLResult:
    """Every arm in ``cfg.arms`` on the same data; with ``out_dir`` each finished arm is saved
    (``<out_dir>/<arm>/arm.json``) and ``resume=True`` keeps the finished ones."""
    train, _ = load_data(cfg)
    arms = train_arms(cfg, cfg.arms, out_dir, resume, ArmResult, train_arm)
    result = TCRLResult(
        config=cfg.to_dict(),
        provenance=dict(train.provenance),
        behaviour_return=float(train.episode_returns().mean()),
        arms=arms,
    )
    if out_dir is not None:
        result.save(Path(out_dir) / "result.json")
    return result
