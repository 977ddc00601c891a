"""Held-out seeds, premise rows and stored larger (`medium`) runs."""

import nbformat
import pytest

from companion.core import Claim, ClaimReport, medium, robustness_table
from companion.core.robustness import claims_over_seeds, claims_path, load_claims
from companion.errors import CompanionError
from companion.papers import unimax
from companion.registry import load_paper
from companion.tools import notebooks


def test_a_failed_premise_is_printed_and_never_counts():
    report = ClaimReport(
        (
            Claim("premise: the baseline collapses", "0.9", "< 0.5", False),
            Claim("the method prevents it", "0.9", ">= 0.8", True, premise_ok=False),
            Claim("another claim", "1", "> 0", True),
        )
    )
    assert report.rows[1].holds is False and report.n_hold == 1
    assert "not tested: premise failed" in str(report)
    assert str(report).endswith("claims hold: 1/3")
    assert ClaimReport.from_dict(report.to_dict()) == report


def test_heldout_seeds_go_to_their_own_file_and_the_table_shows_both(tmp_path):
    claims_over_seeds("unimax", [0, 1], preset="smoke", claims_dir=tmp_path)
    data = claims_over_seeds("unimax", [5, 6], preset="smoke", claims_dir=tmp_path)
    assert claims_path("unimax", "smoke", True, tmp_path) == tmp_path / "heldout" / "unimax.json"
    assert (tmp_path / "heldout" / "unimax.json").exists() and data["seeds"] == [5, 6]
    # independent computation: the held-out seeds checked one by one
    reports = [
        unimax.check_claims(unimax.run(unimax.PRESETS["smoke"].replace(seed=s))) for s in (5, 6)
    ]
    assert data["all_hold_at"] == sum(r.all_hold for r in reports)
    table = str(robustness_table("unimax", tmp_path))
    assert "seeds 5, 6 (held out)" in table and "seed 6:" in table
    assert table.endswith(f"at {data['all_hold_at']}/2 held-out seeds (5, 6)")


def test_medium_runs_store_claims_and_the_figure_seed_with_provenance(tmp_path, monkeypatch):
    monkeypatch.setitem(unimax.PRESETS, "medium", unimax.PRESETS["smoke"].replace(steps=40))
    claims_over_seeds("unimax", [0, 1], preset="medium", claims_dir=tmp_path)
    assert (tmp_path / "medium" / "unimax.json").exists()
    result, info = medium.load_stored_run("unimax", unimax.Result, runs_dir=tmp_path / "runs")
    expected = unimax.run(unimax.PRESETS["medium"].replace(seed=0))
    assert str(unimax.check_claims(result)) == str(unimax.check_claims(expected))
    assert result.arms["unimax"].probs == expected.arms["unimax"].probs
    assert info["provenance"]["command"] == "companion claims unimax --preset medium --seeds 0,1"
    assert medium.config_differences(info["config"], unimax.PRESETS["medium"]) == {}
    assert medium.config_differences(info["config"], unimax.PRESETS["smoke"]) == {
        "steps": (40, unimax.PRESETS["smoke"].steps)
    }
    assert "stored run: `companion claims unimax" in medium.describe_stored(info)
    with pytest.raises(CompanionError, match="--preset medium --seeds 0-2"):
        medium.load_stored_run("unimax", unimax.Result, runs_dir=tmp_path / "nothing")


def test_at_smoke_sizes_keeps_the_medium_choices():
    presets = {
        "smoke": unimax.PRESETS["smoke"],
        "notebook": unimax.PRESETS["notebook"],
        "medium": unimax.PRESETS["notebook"].replace(lr=0.123),
    }
    small = medium.at_smoke_sizes(presets)
    assert small.lr == 0.123
    for key, value in unimax.PRESETS["smoke"].to_dict().items():
        if value != unimax.PRESETS["notebook"].to_dict()[key] and key != "seed":
            assert getattr(small, key) == value


def _papers_with_medium():
    return [s for s in notebooks.all_slugs() if "medium" in load_paper(s).PRESETS]


@pytest.mark.parametrize("slug", _papers_with_medium())
def test_stored_medium_run_matches_its_preset_and_the_preset_runs(slug):
    paper = load_paper(slug)
    _, info = medium.load_stored_run(slug, paper.Result)
    assert medium.config_differences(info["config"], paper.PRESETS["medium"]) == {}, (
        f"{slug}: the stored medium run is stale; rerun "
        f"`companion claims {slug} --preset medium --seeds 0-2`"
    )
    stored = load_claims(slug, preset="medium")
    report = paper.check_claims(paper.run(medium.at_smoke_sizes(paper.PRESETS)))
    assert [r.claim for r in report.rows] == [c["claim"] for c in stored["claims"]]
    nb = nbformat.read(notebooks.notebook_path(slug), as_version=4)
    text = "\n".join(cell.source for cell in nb.cells)
    assert "load_stored_run" in text and 'preset="medium"' in text, (
        f"{slug}: show the stored medium run in an 'At a larger scale' section"
    )
