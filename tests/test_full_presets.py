"""Every paper's `full` preset, end to end on fixtures in the real data format, at the preset's
own precision: interrupted once right after its first save, resumed, and compared with an
uninterrupted run. `companion gpu-check` is tested here too, on CPU at the tiny scale."""

import pytest
import torch

from companion.cli import main
from companion.core import fullscale, results, training
from companion.core.fullscale import full_config
from companion.papers import unimax
from companion.tools import notebooks

SLUGS = notebooks.all_slugs()


def _without_clock(value):
    """A result's content without wall-clock fields (``seconds``, ``*_seconds``): a resumed run
    repeats the computation, not the time it took."""
    if isinstance(value, dict):
        return {
            k: _without_clock(v)
            for k, v in value.items()
            if not (k == "seconds" or k.endswith("_seconds"))
        }
    if isinstance(value, list):
        return [_without_clock(v) for v in value]
    return value


class Interrupted(Exception):
    """A run killed right after it saved something (a checkpoint or a finished part)."""


def _interrupt_after_first_save(monkeypatch):
    saves = []
    real_save, real_json = training._atomic_save, results.write_json

    def save_then_die(*args, **kwargs):
        real_save(*args, **kwargs)
        saves.append(args)
        raise Interrupted

    def json_then_die(path, data):
        real_json(path, data)
        saves.append(path)
        raise Interrupted

    monkeypatch.setattr(training, "_atomic_save", save_then_die)
    monkeypatch.setattr(results, "write_json", json_then_die)
    return saves


@pytest.mark.parametrize("slug", SLUGS)
def test_full_preset_runs_and_resumes_on_fixtures(slug, tmp_path, monkeypatch):
    paper, check, cfg = full_config(slug, tmp_path / "data", "tiny", device="cpu")
    full = paper.PRESETS["full"]
    assert cfg.precision == full.precision, "the check must keep the preset's precision"
    assert check.steps_key in check.overrides and hasattr(full, check.steps_key)
    uninterrupted = paper.run(cfg, out_dir=tmp_path / "a")
    report = paper.check_claims(uninterrupted)
    assert report.rows and str(report).splitlines()[-1].startswith("claims hold: ")

    with monkeypatch.context() as patch:
        saves = _interrupt_after_first_save(patch)
        with pytest.raises(Interrupted):
            paper.run(cfg, out_dir=tmp_path / "b")
    assert saves, "the full preset saved nothing it could resume from"
    resumed = paper.run(cfg, out_dir=tmp_path / "b", resume=True)
    assert _without_clock(resumed.to_dict()) == _without_clock(uninterrupted.to_dict()), (
        "a resumed run must end where an uninterrupted one does"
    )


def test_gpu_check_refuses_without_cuda(capsys):
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    assert main(["gpu-check", "sigma_reparam"]) == 2
    assert "no CUDA device" in capsys.readouterr().err


def test_gpu_check_code_path_on_cpu(tmp_path):
    slugs = ["unimax", "sigma_reparam"]  # generated data, and CIFAR files written once
    rows = fullscale.gpu_check(slugs, tmp_path, device="cpu", scale="tiny", echo=lambda s: None)
    assert [r.slug for r in rows] == slugs
    assert all(r.seconds > 0 and r.projected_h > 0 for r in rows)
    full_steps = unimax.PRESETS["full"].steps
    assert rows[0].projected_h == pytest.approx(rows[0].seconds / rows[0].steps * full_steps / 3600)
    table = fullscale.gpu_table(rows, "cpu")
    assert all(s in table for s in slugs) and "claims hold:" in table
    assert (tmp_path / "data" / ".cifar10-40-20").exists()
