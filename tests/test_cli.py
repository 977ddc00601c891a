"""The command line: listing, info, runs with resume, and one clear line for bad input."""

import json

import pytest

from companion import cli, registry


def run_cli(capsys, *argv):
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def one_planned(monkeypatch):
    """Mark one paper planned (no notebook yet), as a paper is before it is written."""
    real = registry.Paper.status
    monkeypatch.setattr(
        registry.Paper,
        "status",
        property(lambda p: "planned" if p.slug == "unimax" else real.fget(p)),
    )
    return "unimax"


def test_list_shows_all_papers(capsys, one_planned):
    code, out, _ = run_cli(capsys, "list")
    assert code == 0
    assert (
        len([line for line in out.splitlines() if "ICML 2023" in line or "ICLR 2023" in line]) == 56
    )
    assert "sigma_reparam" in out and "available" in out and "planned" in out


def test_info_shows_links_presets_and_commands(capsys):
    code, out, _ = run_cli(capsys, "info", "sigma_reparam")
    assert code == 0
    assert "github.com/apple/ml-sigma-reparam" in out
    for preset in ("smoke", "notebook", "full"):
        assert f"companion run sigma_reparam --preset {preset}" in out


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["info", "sigma_reparm"], "unknown paper 'sigma_reparm'"),
        (["run", "nope"], "unknown paper 'nope'"),
        (
            ["run", "sigma_reparam", "--preset", "huge"],
            "unknown preset 'huge'; valid: smoke, notebook, full",
        ),
        (
            ["run", "sigma_reparam", "--preset", "smoke", "--set", "lrr=1"],
            "unknown SigmaReparamConfig key 'lrr'",
        ),
        (
            ["run", "sigma_reparam", "--preset", "smoke", "--set", "lr=fast"],
            "lr must be float, got 'fast'",
        ),
        (["run", "sigma_reparam", "--preset", "smoke", "--set", "lr"], "expected key=value"),
        (["run", "sigma_reparam", "--preset", "smoke", "--device", "tpu"], "unknown device 'tpu'"),
        (["list", "--track", "poetry"], "unknown track 'poetry'"),
        (["notebooks", "execute", "nope", "--out", "x"], "unknown notebook 'nope'"),
    ],
)
def test_bad_input_gives_one_clear_line(capsys, argv, needle):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert err.startswith("error: ") and needle in err
    assert len(err.strip().splitlines()) == 1


def test_planned_paper_is_refused(capsys, one_planned):
    code, _, err = run_cli(capsys, "run", one_planned)
    assert code == 2 and "no implementation yet" in err


def test_run_smoke_writes_outputs_and_resumes(capsys, tmp_path):
    out = tmp_path / "run"
    code, text, _ = run_cli(
        capsys,
        "run",
        "sigma_reparam",
        "--preset",
        "smoke",
        "--device",
        "cpu",
        "--set",
        "steps=8",
        "--out",
        str(out),
    )
    assert code == 0 and "claims hold:" in text
    for name in (
        "result.json",
        "claims.json",
        "config.json",
        "figures/entropy.png",
        "baseline/checkpoint.ckpt",
        "baseline/metrics.jsonl",
        "sigma_reparam/arm.json",
    ):
        assert (out / name).exists(), name
    first = json.loads((out / "result.json").read_text())
    assert json.loads((out / "config.json").read_text())["steps"] == 8
    # an interrupted second arm: resume keeps the finished arm and continues the other
    (out / "sigma_reparam" / "arm.json").unlink()
    code, _, _ = run_cli(
        capsys,
        "run",
        "sigma_reparam",
        "--preset",
        "smoke",
        "--device",
        "cpu",
        "--set",
        "steps=8",
        "--out",
        str(out),
        "--resume",
    )
    assert code == 0
    again = json.loads((out / "result.json").read_text())
    for arm in ("baseline", "sigma_reparam"):
        assert again["arms"][arm]["loss"] == first["arms"][arm]["loss"]


def test_student_versions(capsys, tmp_path):
    code, out, _ = run_cli(capsys, "notebooks", "student", "sigma_reparam", "--out", str(tmp_path))
    assert code == 0
    text = (tmp_path / "sigma_reparam.ipynb").read_text()
    assert "BEGIN SOLUTION" not in text and "NotImplementedError" in text
