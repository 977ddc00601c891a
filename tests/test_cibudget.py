"""The CI budget report: stage times split into a fixed part and a part per notebook."""

import xml.etree.ElementTree as ET

import pytest

from companion.tools import cibudget, notebooks


def junit(path, cases):
    suite = ET.Element("testsuite")
    for classname, name, seconds in cases:
        ET.SubElement(suite, "testcase", classname=classname, name=name, time=str(seconds))
    ET.ElementTree(suite).write(path)


def test_report_projects_per_notebook_stages_and_keeps_fixed_ones(tmp_path):
    n = len(notebooks.all_slugs())
    slug = notebooks.all_slugs()[0]
    times = {"setup": 100, "lint": 1, "unit": 40, "smoke": 9 * n, "classroom": 30, "nbval": 20 * n}
    for stage, seconds in times.items():
        (tmp_path / f"{stage}.s").write_text(f"{seconds}\n")
    # a quarter of the unit tests' time names a paper: 10 s of 40 grow with the notebooks
    junit(
        tmp_path / "unit.xml",
        [("tests.test_core", "a", 3.0), (f"tests.papers.test_{slug}", "b", 1.0)],
    )
    text, projected = cibudget.report(papers=2 * n, budget_min=45, times=tmp_path)
    expected = 100 + 1 + (30 + 10 * 2) + 9 * 2 * n + 30 + 20 * 2 * n
    assert projected == pytest.approx(expected)
    verdict = "within" if expected <= 45 * 60 else "OVER"
    assert text.splitlines()[-1].endswith(f"({verdict} the 45 min budget)")
    assert any(line.split() == ["browser", "-", "-", "-", "-"] for line in text.splitlines())
    row = next(line for line in text.splitlines() if line.startswith("classroom"))
    assert row.split()[1:4] == ["30", "30", "0.0"]  # fixed: the same for any number of notebooks


def test_record_writes_the_seconds_and_returns_the_status(tmp_path, monkeypatch):
    monkeypatch.setattr(cibudget, "TIMES", tmp_path)
    assert cibudget.record("lint", ["python3", "-c", "raise SystemExit(3)"]) == 3
    assert float((tmp_path / "lint.s").read_text()) >= 0
