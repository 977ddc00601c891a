"""Claims over seeds (`companion claims`): the file, its table, resume, the README catalog."""

import pytest

from companion import registry
from companion.cli import main
from companion.core import Claim, ClaimReport, Invariant, robustness, robustness_table
from companion.core.robustness import claims_over_seeds, parse_seeds
from companion.errors import CompanionError
from companion.papers import unimax
from companion.tools import notebooks


def test_parse_seeds():
    assert parse_seeds("0-4") == [0, 1, 2, 3, 4]
    assert parse_seeds("0,3,7") == [0, 3, 7]
    assert parse_seeds("0-2,9") == [0, 1, 2, 9]
    for bad in ("", "a-b", "3,3", "-1"):
        with pytest.raises(CompanionError, match="seeds"):
            parse_seeds(bad)


def test_invariants_are_printed_but_not_counted():
    report = ClaimReport(
        (Claim("a", "1.0", "> 0", True), Claim("b", "0.0", "> 1", False)),
        invariants=(Invariant("shares sum to 1", "1.000", True), Invariant("cap", "5 > 4", False)),
    )
    text = str(report)
    assert text.endswith("claims hold: 1/2")
    assert "ok: shares sum to 1 (1.000)" in text and "VIOLATED: cap (5 > 4)" in text
    assert ClaimReport.from_dict(report.to_dict()) == report


def test_claims_over_seeds_matches_separate_runs(tmp_path):
    seeds = [0, 1]
    data = claims_over_seeds(
        "unimax",
        seeds,
        preset="smoke",
        claims_dir=tmp_path,
    )
    assert (tmp_path / "unimax.json").exists()
    assert data["seeds"] == seeds and data["preset"] == "smoke"
    assert {"cpu", "torch", "cpu_capability"} <= set(data["machine"])
    # independent computation: the same runs, checked one by one
    reports = [
        unimax.check_claims(unimax.run(unimax.PRESETS["smoke"].replace(seed=s))) for s in seeds
    ]
    for i, row in enumerate(data["claims"]):
        assert row["claim"] == reports[0].rows[i].claim
        assert row["holds_at"] == sum(r.rows[i].holds for r in reports)
        assert [v["holds"] for v in row["per_seed"].values()] == [r.rows[i].holds for r in reports]
    assert data["all_hold_at"] == sum(r.all_hold for r in reports)
    table = str(robustness_table("unimax", tmp_path))
    assert "claims over seeds 0, 1 (preset 'smoke')" in table
    assert table.endswith(f"every claim holds at {data['all_hold_at']}/2 seeds")
    for row in data["claims"]:
        assert f"{row['holds_at']}/2 seeds" in table


def test_resume_keeps_finished_seeds(tmp_path, monkeypatch):
    claims_over_seeds("unimax", [0], preset="smoke", claims_dir=tmp_path)
    calls = []
    real = robustness._one_seed
    monkeypatch.setattr(
        robustness,
        "_one_seed",
        lambda slug, preset, o, seed, t, out, keep=False: (
            calls.append(seed) or real(slug, preset, o, seed, t, out, keep)
        ),
    )
    data = claims_over_seeds("unimax", [0, 1], preset="smoke", claims_dir=tmp_path, resume=True)
    assert calls == [1] and data["seeds"] == [0, 1]
    # another preset or other overrides: nothing is kept
    calls.clear()
    claims_over_seeds(
        "unimax", [0], preset="smoke", overrides={"seed": "0"}, claims_dir=tmp_path, resume=True
    )
    assert calls == [0]


def test_only_the_chosen_seeds_store_the_medium_run(tmp_path, monkeypatch):
    """The stored figure run comes from seeds 0-2; a held-out medium run must not replace it."""
    from companion.core import medium

    kept, written = [], []
    report = ClaimReport((Claim("a", "1.0", "> 0", True),))

    def fake(slug, preset, o, seed, t, out, keep=False):
        kept.append((seed, keep))
        return seed, report.to_dict(), 0.0, ({"seed": seed} if keep else None)

    monkeypatch.setattr(robustness, "_one_seed", fake)
    monkeypatch.setattr(medium, "write_stored_run", lambda *a, **k: written.append(a[3]))
    claims_over_seeds("sfat", [5, 6], preset="medium", claims_dir=tmp_path)
    assert kept == [(5, False), (6, False)] and written == []
    assert (tmp_path / "medium" / "heldout" / "sfat.json").exists()
    claims_over_seeds("sfat", [0, 1], preset="medium", claims_dir=tmp_path)
    assert kept[2:] == [(0, True), (1, False)] and written == [{"seed": 0}]


def test_claims_command_rejects_bad_input(capsys):
    assert main(["claims", "unimax", "--seeds", "x"]) == 2
    assert "--seeds 'x'" in capsys.readouterr().err
    assert main(["claims", "no_such_paper"]) == 2
    assert "valid:" in capsys.readouterr().err
    assert main(["claims"]) == 2
    assert "--all" in capsys.readouterr().err
    assert main(["claims", "unimax", "--preset", "huge"]) == 2
    assert "huge" in capsys.readouterr().err


def test_missing_claims_file_says_how_to_make_it(tmp_path):
    with pytest.raises(CompanionError, match="companion claims unimax --seeds 0-4"):
        robustness_table("unimax", tmp_path)


def test_every_notebook_has_its_claims_file_and_the_readme_shows_it():
    for slug in notebooks.all_slugs():
        data = robustness.load_claims(slug)
        assert len(data["seeds"]) >= 5, f"{slug}: run `companion claims {slug} --seeds 0-4`"
        report_rows = data["reports"][str(data["seeds"][0])]["rows"]
        assert [c["claim"] for c in data["claims"]] == [r["claim"] for r in report_rows]
    readme = (registry.ROOT / "README.md").read_text()
    for name, table in notebooks.readme_tables().items():
        stored = readme.split(f"<!-- {name}:start -->", 1)[1].split(f"<!-- {name}:end -->", 1)[0]
        assert _same_on_any_machine(stored.strip()) == _same_on_any_machine(table), (
            f"the README's {name} part: run `companion catalog --write README.md`"
        )


def _same_on_any_machine(table: str) -> str:
    """A README table without what depends on the machine that last ran the notebooks: the
    catalog's last column (stored run times; `make notebooks` rewrites them with the README)."""
    lines = table.splitlines()
    if not lines or "time, 2 CPU cores" not in lines[0]:
        return table
    return "\n".join(line.rsplit("|", 2)[0] for line in lines)


def test_the_readme_check_ignores_run_times_only():
    a = "| # | x | time, 2 CPU cores |\n|---|---|---|\n| 1 | 5/5 seeds | ~35 s |"
    assert _same_on_any_machine(a) == _same_on_any_machine(a.replace("~35 s", "~315 s"))
    assert _same_on_any_machine(a) != _same_on_any_machine(a.replace("5/5", "4/5"))


def test_the_table_lists_the_seeds_where_a_claim_failed(tmp_path, capsys):
    """Under the counts, ``failures`` lists exactly the (claim, seed) pairs that did not hold,
    ``all`` every pair; ``companion claims --show`` prints every seed without running."""
    data = robustness.load_claims("sigma_reparam")
    pairs = [
        (c["claim"], s)
        for c in data["claims"]
        for s, v in c["per_seed"].items()
        if not (v["holds"] and v.get("premise_ok", True))
    ]
    short = str(robustness.RobustnessTable(data))
    listed = [line.strip() for line in short.splitlines() if line.startswith("    seed ")]
    assert [x.split(":")[0] for x in listed] == [f"seed {s}" for _, s in pairs]
    full = str(robustness.RobustnessTable(data, per_seed="all"))
    n_rows = sum(len(c["per_seed"]) for c in data["claims"])
    assert sum(line.startswith("    seed ") for line in full.splitlines()) == n_rows
    with pytest.raises(CompanionError, match="valid choices"):
        robustness.RobustnessTable(data, per_seed="some")
    assert main(["claims", "sigma_reparam", "--show"]) in (0, None)
    assert capsys.readouterr().out.count("    seed ") >= n_rows
