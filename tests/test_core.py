"""core: presets, runtime, training loop (checkpoint/resume, DDP), claims, results."""

import dataclasses
import json
import os

import pytest
import torch
from torch import nn

from companion.core import (
    Claim,
    ClaimReport,
    Config,
    Every,
    History,
    Result,
    StepBatches,
    fit,
    get_preset,
    launch,
    make_fabric,
    read_json,
    resolve_device,
    seed_everything,
    write_json,
)
from companion.errors import CompanionError


@dataclasses.dataclass(frozen=True)
class ToyConfig(Config):
    lr: float = 0.1
    steps: int = 12
    hidden: tuple[int, ...] = (8,)
    clip: float | None = None
    note: str = "x"
    flag: bool = False
    dropout: float = 0.2

    def validate(self):
        if self.lr <= 0:
            raise CompanionError(f"lr must be positive, got {self.lr}")


# ---------------------------------------------------------------- presets


def test_replace_validates_keys_and_types():
    cfg = ToyConfig()
    assert cfg.replace(lr=1).lr == 1  # an int is a valid float
    with pytest.raises(CompanionError, match=r"unknown ToyConfig key 'lrr'; valid: seed, "):
        cfg.replace(lrr=0.1)
    with pytest.raises(CompanionError, match=r"ToyConfig.steps must be int, got 1.5"):
        cfg.replace(steps=1.5)
    with pytest.raises(CompanionError, match="must be"):
        cfg.replace(flag="yes")
    with pytest.raises(CompanionError, match="unknown device 'tpu'; valid: auto, cpu, cuda, mps"):
        cfg.replace(device="tpu")
    with pytest.raises(CompanionError, match="lr must be positive"):
        cfg.replace(lr=-1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.lr = 3.0


def test_with_strings_parses_by_field_type():
    cfg = ToyConfig().with_strings(
        {
            "lr": "1e-3",
            "steps": "5",
            "hidden": "4,8",
            "clip": "none",
            "flag": "true",
            "note": "hello",
        }
    )
    assert (cfg.lr, cfg.steps, cfg.hidden, cfg.clip, cfg.flag, cfg.note) == (
        1e-3,
        5,
        (4, 8),
        None,
        True,
        "hello",
    )
    assert ToyConfig().with_strings({"clip": "0.5"}).clip == 0.5
    with pytest.raises(CompanionError, match="steps must be int, got 'five'"):
        ToyConfig().with_strings({"steps": "five"})
    with pytest.raises(CompanionError, match="unknown ToyConfig key 'nope'"):
        ToyConfig().with_strings({"nope": "1"})


def test_get_preset_names_valid_presets():
    presets = {"smoke": ToyConfig(), "notebook": ToyConfig()}
    with pytest.raises(CompanionError, match="unknown preset 'huge'; valid: smoke, notebook"):
        get_preset(presets, "huge")


# ---------------------------------------------------------------- runtime


def test_resolve_device():
    assert resolve_device("auto") in ("cpu", "cuda", "mps")
    assert resolve_device("cpu") == "cpu"
    with pytest.raises(CompanionError, match="unknown device 'gpu'"):
        resolve_device("gpu")


def test_torch_threads_sets_and_restores():
    from companion.core import torch_threads

    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError), torch_threads(1):  # restored after an error too
        raise RuntimeError
    assert torch.get_num_threads() == before
    with torch_threads(0), torch_threads(1, "cuda"):  # 0 and other devices: unchanged
        assert torch.get_num_threads() == before


def test_seeding_is_deterministic():
    seed_everything(7)
    a = torch.randn(5), torch.rand(1).item()
    seed_everything(7)
    b = torch.randn(5), torch.rand(1).item()
    assert torch.equal(a[0], b[0]) and a[1] == b[1]


def test_seeding_asks_for_deterministic_kernels_without_loading_inductor():
    import subprocess
    import sys

    code = (
        "import sys, torch; from companion.core.runtime import seed_everything;"
        "seed_everything(0); print(torch.are_deterministic_algorithms_enabled(),"
        " torch.is_deterministic_algorithms_warn_only_enabled(),"
        " 'torch._inductor.config' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "False"]


# ---------------------------------------------------------------- training loop


def _data(n=64):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 4, generator=g)
    return x, (x.sum(1) > 0).long()


def _step(model, batch):
    x, y = batch
    loss = nn.functional.cross_entropy(model(x), y)
    return loss, {}


class Interrupted(Exception):
    pass


def _interrupt(at):
    def callback(step, model):
        if step == at:
            raise Interrupted
        return {}

    return Every(1, callback)


def _train(fabric, cfg, checkpoint=None, resume=False, interrupt_at=None):
    seed_everything(cfg.seed)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(cfg.dropout), nn.Linear(8, 2))
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    model, opt = fabric.setup(model, opt)
    batches = StepBatches(_data(), 16, cfg.seed, fabric.global_rank, fabric.world_size)
    callbacks = [Every(4, lambda s, m: {"w_norm": m.module[0].weight.norm().item()})]
    if interrupt_at is not None:
        callbacks.append(_interrupt(interrupt_at))
    hist = fit(
        fabric,
        model,
        opt,
        batches,
        _step,
        steps=cfg.steps,
        callbacks=callbacks,
        checkpoint=checkpoint,
        checkpoint_every=3,
        resume=resume,
    )
    params = [p.detach().cpu().clone() for p in model.parameters()]
    return params, hist.to_dict()


def test_step_batches_are_a_function_of_the_step():
    x, y = _data(50)
    a, b = StepBatches((x, y), 16, seed=3), StepBatches((x, y), 16, seed=3)
    assert a.steps_per_epoch == 3
    for step in (0, 1, 2, 3, 7, 1):  # any order gives the same batch
        assert torch.equal(a(step)[0], b(step)[0])
    epoch0 = torch.cat([a(s)[1] for s in range(3)])
    assert len(epoch0) == 48
    rank0, rank1 = StepBatches((x, y), 16, 3, 0, 2)(5), StepBatches((x, y), 16, 3, 1, 2)(5)
    assert torch.equal(torch.cat([rank0[0], rank1[0]]).sort(0).values, a(5)[0].sort(0).values)


def test_fit_records_history_and_callbacks():
    cfg = ToyConfig(device="cpu")
    _, hist = _train(make_fabric(cfg), cfg)
    h = History(hist)
    assert h.steps("loss") == list(range(cfg.steps))
    assert h.steps("w_norm") == [0, 4, 8, 11]


def test_resume_equals_uninterrupted_run(tmp_path):
    cfg = ToyConfig(device="cpu")
    full, full_hist = _train(make_fabric(cfg), cfg)
    ckpt = tmp_path / "run" / "checkpoint.ckpt"
    with pytest.raises(Interrupted):  # killed during step 7
        _train(make_fabric(cfg), cfg, checkpoint=ckpt, interrupt_at=7)
    state = torch.load(ckpt, weights_only=True)  # tensors and plain data only
    assert state["step"] == 6  # last multiple of 3
    resumed, resumed_hist = _train(make_fabric(cfg), cfg, checkpoint=ckpt, resume=True)
    for a, b in zip(full, resumed):
        torch.testing.assert_close(a, b, atol=0, rtol=0)
    assert resumed_hist["loss"] == full_hist["loss"]
    lines = (ckpt.parent / "metrics.jsonl").read_text().splitlines()
    assert json.loads(lines[-1])["step"] == cfg.steps - 1


def test_nonfinite_loss_stops_the_run():
    cfg = ToyConfig(device="cpu")
    fabric = make_fabric(cfg)
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model, opt = fabric.setup(model, opt)
    x, y = _data()

    def bad_step(m, batch):
        loss = nn.functional.cross_entropy(m(batch[0]), batch[1])
        return loss * float("nan"), {}

    hist = fit(fabric, model, opt, StepBatches((x, y), 16, 0), bad_step, steps=10)
    assert hist.steps("diverged") == [0]


def _ddp_worker(fabric, cfg):
    params, _ = _train(fabric, cfg)
    gathered = fabric.all_gather(torch.cat([p.flatten() for p in params]))
    return gathered.cpu().tolist()  # plain data: tensors do not outlive spawned workers


@pytest.mark.slow
def test_ddp_on_cpu_ranks_end_identical():
    cfg = ToyConfig(device="cpu", devices=2, strategy="ddp_spawn", dropout=0.0)
    gathered = torch.tensor(launch(cfg, _ddp_worker, cfg))
    assert gathered.shape[0] == 2
    torch.testing.assert_close(gathered[0], gathered[1], atol=0, rtol=0)
    single_cfg = ToyConfig(device="cpu", dropout=0.0)
    single, _ = _train(make_fabric(single_cfg), single_cfg)
    # the two ranks split each batch, and DDP averages their gradients: the parameters
    # differ from a single process only by floating-point order
    torch.testing.assert_close(
        gathered[0], torch.cat([p.flatten() for p in single]), atol=1e-5, rtol=1e-4
    )


# ---------------------------------------------------------------- claims and results


def test_claim_report_table_and_roundtrip(tmp_path):
    report = ClaimReport((Claim("a", "1.00", "> 0", True), Claim("b", "0.00", "> 1", False)))
    text = str(report)
    assert text.splitlines()[-1] == "claims hold: 1/2"
    assert "yes" in text and "no" in text and not report.all_hold
    write_json(tmp_path / "c.json", report.to_dict())
    assert ClaimReport.from_dict(read_json(tmp_path / "c.json")) == report


def test_write_json_is_atomic(tmp_path):
    path = tmp_path / "r.json"
    write_json(path, {"a": 1})
    with pytest.raises(TypeError):
        write_json(path, {"a": object()})  # fails half-way: the old file survives
    assert read_json(path) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


# ---------------------------------------------------------------- small helpers


@torch.no_grad()
def _decorated(x):
    return x + 1


def test_show_source_unwraps_decorators(capsys):
    from companion.core import show_source

    text = show_source(_decorated)
    assert "return x + 1" in text


def test_progress_switch(monkeypatch):
    from companion.core import progress

    monkeypatch.setenv("COMPANION_PROGRESS", "0")
    assert progress(range(3)).disable
    monkeypatch.setenv("COMPANION_PROGRESS", "1")
    assert not progress(range(3), file=open(os.devnull, "w")).disable


def test_mlp_slices_share_parameters():
    from companion.nn import MLP

    mlp = MLP(4, [8, 8], 2)
    head = mlp[:3]
    assert isinstance(head, nn.Sequential) and head[1] is mlp[1]
    assert head(torch.randn(5, 4)).shape == (5, 8)


@dataclasses.dataclass
class _Part(Result):
    value: float


def test_launch_or_resume_never_trains_a_finished_part_twice(tmp_path):
    from companion.core import launch_or_resume

    calls = []

    def part(fabric, x):
        calls.append(x)
        return _Part(value=x * 2)

    cfg = ToyConfig(device="cpu")
    assert launch_or_resume(cfg, None, True, _Part, part, 1.0).value == 2.0  # no folder
    folder = tmp_path / "arm"
    first = launch_or_resume(cfg, folder, False, _Part, part, 3.0, filename="part.json")
    assert first.value == 6.0 and (folder / "part.json").exists()
    again = launch_or_resume(cfg, folder, True, _Part, part, 99.0, filename="part.json")
    assert again.value == 6.0 and calls == [1.0, 3.0]  # loaded, not launched
    fresh = launch_or_resume(cfg, folder, False, _Part, part, 4.0, filename="part.json")
    assert fresh.value == 8.0 and _Part.load(folder / "part.json").value == 8.0


def test_train_arms_trains_each_arm_once_into_its_own_folder(tmp_path):
    from companion.core import train_arms

    calls = []

    def train_arm(fabric, cfg, arm, folder, resume):
        calls.append((arm, folder, resume))
        return _Part(value=len(arm))

    cfg = ToyConfig(device="cpu")
    arms = train_arms(cfg, ("a", "bb"), tmp_path, False, _Part, train_arm, lambda a: f"tau_{a}")
    assert {k: v.value for k, v in arms.items()} == {"a": 1, "bb": 2}
    assert calls == [("a", tmp_path / "tau_a", False), ("bb", tmp_path / "tau_bb", False)]
    assert (tmp_path / "tau_bb" / "arm.json").exists()
    (tmp_path / "tau_a" / "arm.json").unlink()  # "a" was interrupted, "bb" finished
    again = train_arms(cfg, ("a", "bb"), tmp_path, True, _Part, train_arm, lambda a: f"tau_{a}")
    assert calls[2:] == [("a", tmp_path / "tau_a", True)] and again["bb"].value == 2
    assert train_arms(cfg, ("c",), None, True, _Part, train_arm)["c"].value == 1  # writes nothing
    assert calls[-1] == ("c", None, True)


@dataclasses.dataclass
class _Nested(Result):
    arms: dict[str, _Part]
    runs: list[_Part]
    pairs: list[dict[str, _Part]]
    best: _Part | None = None
    note: str = "old results lack this field"
    extra: dict[str, float] = dataclasses.field(default_factory=dict)


def test_from_dict_rebuilds_nested_results_from_their_annotations(tmp_path):
    made = _Nested(
        arms={"a": _Part(1.0)}, runs=[_Part(2.0)], pairs=[{"b": _Part(3.0)}], best=_Part(4.0)
    )
    loaded = _Nested.load(made.save(tmp_path / "r.json"))
    assert loaded == made and isinstance(loaded.pairs[0]["b"], _Part)
    old = {"arms": {}, "runs": [{"value": 5.0}], "pairs": [], "best": None}  # saved earlier
    assert _Nested.from_dict(old) == _Nested({}, [_Part(5.0)], [], None)
    with pytest.raises(TypeError):  # a field the class does not have is an error, not dropped
        _Nested.from_dict({**old, "typo": 1})
