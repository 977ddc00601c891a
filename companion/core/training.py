"""The training loop every paper shares, on Lightning Fabric.

Fabric handles devices, precision, DDP (also on CPU with gloo), multi-node launchers (torchrun,
SLURM) and checkpoint I/O; this module adds what the papers need on top of it:

* :class:`StepBatches`: batches as a pure function of the step index (epoch ``e`` uses a
  permutation seeded by ``(seed, e)``; rank ``r`` of ``w`` takes every ``w``-th sample), so a
  resumed run sees exactly the batches the uninterrupted run would have seen;
* :func:`fit`: forward/backward/clip/step with per-step measurement callbacks (e.g. attention
  entropy), a :class:`History` of metrics, a ``metrics.jsonl`` written as it goes, tqdm progress,
  and checkpoints that ``--resume`` continues from to the same result.

Checkpoints hold tensors and plain data only (``torch.load(path, weights_only=True)`` works) and
are written atomically (temp file, then rename).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from companion.core.presets import Config
from companion.core.results import Result
from companion.core.runtime import progress, progress_enabled, resolve_device

if TYPE_CHECKING:  # importing Fabric costs seconds (it loads torch._dynamo): only make_fabric does
    from lightning_fabric import Fabric

StepFn = Callable[[torch.nn.Module, Any], tuple[torch.Tensor, dict[str, float]]]


def make_fabric(cfg: Config) -> Fabric:
    """A Fabric for the config's device, devices, nodes, strategy and precision (lightning_fabric
    is imported here, so a notebook that never trains through Fabric never pays its import)."""
    from lightning_fabric import Fabric

    return Fabric(
        accelerator=resolve_device(cfg.device),
        devices=cfg.devices,
        num_nodes=cfg.num_nodes,
        strategy=cfg.strategy,
        precision=cfg.precision,
    )


@dataclasses.dataclass
class _WithArgs:
    """``fn(fabric, *args)`` as a picklable one-argument callable for ``Fabric.launch``."""

    fn: Callable[..., Any]
    args: tuple

    def __call__(self, fabric: Fabric) -> Any:
        return self.fn(fabric, *self.args)


def launch(cfg: Config, fn: Callable[..., Any], *args: Any) -> Any:
    """Run ``fn(fabric, *args)`` under the config's strategy and return rank 0's return value.

    Return plain data (lists, numbers, a Result): tensors do not outlive spawned workers.

    Single-process runs call ``fn`` directly; ``ddp_spawn`` starts worker processes; ``ddp``
    re-executes the command line (Fabric's launcher) and also works under torchrun and SLURM.
    """
    fabric = make_fabric(cfg)
    if fabric.world_size == 1 and cfg.strategy in ("auto", "single_device"):
        return fn(fabric, *args)
    # wrapped: Fabric's spawn launcher would otherwise walk (and refuse) dataclass arguments
    return fabric.launch(_WithArgs(fn, args))


def launch_or_resume(
    cfg: Config,
    folder: Path | None,
    resume: bool,
    result_type: type[Result],
    fn: Callable[..., Any],
    *args: Any,
    filename: str = "arm.json",
) -> Any:
    """One finished part of a long run (an arm, a seed) is never trained twice.

    With ``resume`` and ``<folder>/<filename>`` on disk, that part finished earlier: load it as
    ``result_type``. Otherwise ``launch(cfg, fn, *args)`` (``fn`` checkpoints into ``folder``
    and continues from there when resumed) and save what it returns as ``<folder>/<filename>``.
    ``folder=None``: launch only, nothing is written.
    """
    finished = folder / filename if folder is not None else None
    if resume and finished is not None and finished.exists():
        return result_type.load(finished)
    result = launch(cfg, fn, *args)
    if finished is not None:
        result.save(finished)
    return result


def train_arms(
    cfg: Config,
    arms: Sequence[str],
    out_dir: str | Path | None,
    resume: bool,
    result_type: type[Result],
    train_arm: Callable[..., Any],
    folder_of: Callable[[str], str] = str,
) -> dict[str, Any]:
    """Each arm of a comparison, trained once: ``{arm: train_arm(cfg, arm, folder, resume)}``.

    The loop most packages' ``run`` starts with. Arm ``a`` checkpoints into
    ``<out_dir>/<folder_of(a)>/`` and, through :func:`launch_or_resume`, a finished arm is loaded
    instead of trained again when ``resume`` is set. ``out_dir=None``: nothing is written.
    """
    results = {}
    for arm in arms:
        folder = Path(out_dir) / folder_of(arm) if out_dir is not None else None
        results[arm] = launch_or_resume(
            cfg, folder, resume, result_type, train_arm, cfg, arm, folder, resume
        )
    return results


class StepBatches:
    """Mini-batches of in-memory tensors, chosen by step index (deterministic and resumable)."""

    def __init__(
        self,
        tensors: Sequence[torch.Tensor],
        batch_size: int,
        seed: int,
        rank: int = 0,
        world_size: int = 1,
    ):
        n = len(tensors[0])
        if any(len(t) != n for t in tensors):
            raise ValueError("all tensors need the same first dimension")
        if batch_size % world_size:
            raise ValueError(f"batch_size {batch_size} is not divisible by world size {world_size}")
        self.tensors = tuple(tensors)
        self.batch_size = min(batch_size, n - n % world_size)
        self.seed, self.rank, self.world_size = seed, rank, world_size
        self.steps_per_epoch = max(1, n // self.batch_size)
        self._epoch, self._order = -1, None

    def __call__(self, step: int) -> tuple[torch.Tensor, ...]:
        epoch, index = divmod(step, self.steps_per_epoch)
        if epoch != self._epoch:
            g = torch.Generator().manual_seed(self.seed * 100_003 + epoch)
            self._order = torch.randperm(len(self.tensors[0]), generator=g)
            self._epoch = epoch
        rows = self._order[index * self.batch_size : (index + 1) * self.batch_size]
        rows = rows[self.rank :: self.world_size]
        return tuple(t[rows] for t in self.tensors)


class LoaderBatches:
    """Like :class:`StepBatches`, for datasets read from disk (image folders) with workers.

    Epoch ``e`` visits a permutation seeded by ``(seed, e)``; rank ``r`` of ``w`` takes every
    ``w``-th index. Steps are expected in order; a jump (a resumed run) restarts the loader at
    that step's position, so resuming sees the same batches as an uninterrupted run.
    """

    def __init__(
        self,
        dataset,
        batch_size: int,
        seed: int,
        rank: int = 0,
        world_size: int = 1,
        num_workers: int = 4,
    ):
        if batch_size % world_size:
            raise ValueError(f"batch_size {batch_size} is not divisible by world size {world_size}")
        self.dataset, self.batch_size, self.seed = dataset, batch_size, seed
        self.rank, self.world_size, self.num_workers = rank, world_size, num_workers
        self.steps_per_epoch = max(1, len(dataset) // batch_size)
        self._next_step, self._iter = None, None

    def _start(self, step: int) -> None:
        epoch, index = divmod(step, self.steps_per_epoch)
        g = torch.Generator().manual_seed(self.seed * 100_003 + epoch)
        order = torch.randperm(len(self.dataset), generator=g)
        order = order[index * self.batch_size : self.steps_per_epoch * self.batch_size]
        subset = torch.utils.data.Subset(self.dataset, order[self.rank :: self.world_size].tolist())
        loader = torch.utils.data.DataLoader(
            subset,
            batch_size=self.batch_size // self.world_size,
            num_workers=self.num_workers,
            drop_last=True,
        )
        self._iter = iter(loader)

    def __call__(self, step: int):
        epoch_start = step % self.steps_per_epoch == 0
        if step != self._next_step or epoch_start:
            self._start(step)
        self._next_step = step + 1
        return tuple(next(self._iter))


class History:
    """Metrics over steps: ``{name: [[step, value], ...]}``, JSON-friendly."""

    def __init__(self, data: dict[str, list[list[float]]] | None = None):
        self.data = {k: [list(p) for p in v] for k, v in (data or {}).items()}

    def log(self, step: int, **metrics: float) -> None:
        for name, value in metrics.items():
            self.data.setdefault(name, []).append([step, float(value)])

    def steps(self, name: str) -> list[int]:
        return [int(s) for s, _ in self.data.get(name, [])]

    def values(self, name: str) -> list[float]:
        return [v for _, v in self.data.get(name, [])]

    def last(self, name: str) -> float:
        return self.data[name][-1][1]

    def to_dict(self) -> dict[str, list[list[float]]]:
        return self.data


@dataclasses.dataclass
class Every:
    """Call ``fn(step, model) -> {name: value}`` every ``n`` steps (and at the last step)."""

    n: int
    fn: Callable[[int, torch.nn.Module], dict[str, float]]


def _atomic_save(fabric: Fabric, path: Path, state: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fabric.save(tmp, state)
    if fabric.is_global_zero:
        os.replace(tmp, path)
    fabric.barrier()


def start_metrics_log(path: Path, key: str, start: int) -> None:
    """Prepare ``metrics.jsonl`` for a run that starts at step (or round) ``start``: empty for a
    fresh run; on a resume, keep only the lines of steps before ``start``. The lines written
    after the last checkpoint and before an interruption are repeated by the resumed run, so
    keeping them would log those steps twice."""
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = []
    if start > 0 and path.exists():
        for line in path.read_text().splitlines():
            if line.strip() and json.loads(line)[key] < start:
                kept.append(line + "\n")
    path.write_text("".join(kept))


def fit(
    fabric: Fabric,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    batches: Callable[[int], Any],
    step_fn: StepFn,
    *,
    steps: int,
    grad_clip: float | None = None,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    callbacks: Sequence[Every] = (),
    log_every: int = 1,
    checkpoint: Path | None = None,
    checkpoint_every: int = 0,
    resume: bool = False,
    stop_on_nonfinite: bool = True,
    desc: str = "train",
) -> History:
    """Train ``model`` (already ``fabric.setup``) for ``steps`` optimizer steps.

    ``step_fn(model, batch)`` returns the loss to minimize and a dict of scalar metrics.
    ``callbacks`` measure the model (e.g. attention entropy) every ``n`` steps, in eval mode
    and without gradients. With ``checkpoint`` set, the state is saved every
    ``checkpoint_every`` steps and at the end; ``resume=True`` continues from it. A metrics line
    per logged step is appended to ``<checkpoint folder>/metrics.jsonl``. A non-finite loss
    stops the run (``history`` records ``diverged`` at that step) unless
    ``stop_on_nonfinite=False``.
    """
    history, start = History(), 0
    if checkpoint is not None and resume and Path(checkpoint).exists():
        state = {"model": model, "optimizer": optimizer}
        rest = fabric.load(checkpoint, state, weights_only=True)
        start, history = int(rest["step"]), History(rest["history"])
        torch.set_rng_state(rest["rng"])
        if scheduler is not None:
            scheduler.load_state_dict(rest["scheduler"])
    metrics_file = Path(checkpoint).with_name("metrics.jsonl") if checkpoint else None
    if metrics_file is not None and fabric.is_global_zero:
        start_metrics_log(metrics_file, "step", start)

    def save(step_done: int) -> None:
        if checkpoint is None:
            return
        state = {
            "model": model,
            "optimizer": optimizer,
            "step": step_done,
            "history": history.to_dict(),
            "rng": torch.get_rng_state(),
        }
        if scheduler is not None:
            state["scheduler"] = scheduler.state_dict()
        _atomic_save(fabric, Path(checkpoint), state)

    bar = progress(
        range(start, steps),
        desc=desc,
        initial=start,
        total=steps,
        disable=not (fabric.is_global_zero and progress_enabled()),
    )
    for step in bar:
        model.train()
        batch = fabric.to_device(batches(step))
        loss, metrics = step_fn(model, batch)
        optimizer.zero_grad(set_to_none=True)
        fabric.backward(loss)
        if grad_clip is not None:
            fabric.clip_gradients(model, optimizer, max_norm=grad_clip)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        loss_value = fabric.all_reduce(loss.detach(), reduce_op="mean").item()
        logged = {}
        if step % log_every == 0 or step == steps - 1:
            logged = {"loss": loss_value, **metrics}
        for cb in callbacks:
            if step % cb.n == 0 or step == steps - 1:
                model.eval()
                with torch.no_grad():
                    logged.update(cb.fn(step, model))
        if logged:
            history.log(step, **logged)
            if metrics_file is not None and fabric.is_global_zero:
                with metrics_file.open("a") as f:
                    f.write(json.dumps({"step": step, **logged}) + "\n")
            bar.set_postfix(loss=f"{loss_value:.3f}", refresh=False)
        if not math.isfinite(loss_value) and stop_on_nonfinite:
            history.log(step, diverged=1.0)
            break
        if checkpoint_every and (step + 1) % checkpoint_every == 0:
            save(step + 1)
    else:
        save(steps)
    bar.close()
    return history
