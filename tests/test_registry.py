"""Tests for companion.registry: the 56 catalog entries, lookups and on-disk status."""

import dataclasses
import keyword
import re
from pathlib import Path

import pytest

from companion import registry
from companion.errors import CompanionError

CATALOG = Path(__file__).resolve().parents[2] / "shared" / "CATALOG.md"
VENUES = {"ICML 2023", "ICLR 2023"}


def _catalog_rows() -> list[tuple[int, str, str, str, str]]:
    """(number, slug, title, venue, track) for every row of the catalog's table."""
    rows = []
    for line in CATALOG.read_text(encoding="utf-8").splitlines():
        if re.match(r"^\|\s*\d+\s*\|", line):
            number, slug, title, venue, track = (c.strip() for c in line.strip("|").split("|"))
            rows.append((int(number), slug, title, venue, track))
    return rows


needs_catalog = pytest.mark.skipif(not CATALOG.is_file(), reason=f"{CATALOG} not present")


def test_has_56_entries():
    assert len(registry.PAPERS) == 56


def test_numbers_are_1_to_56_unique_and_in_order():
    numbers = [p.number for p in registry.PAPERS.values()]
    assert numbers == list(range(1, 57))


def test_keys_are_slugs_and_valid_module_names():
    for slug, paper in registry.PAPERS.items():
        assert paper.slug == slug
        assert slug.isidentifier() and not keyword.iskeyword(slug)
        assert slug == slug.lower()


@needs_catalog
def test_slugs_equal_catalog_slugs():
    assert [row[1] for row in _catalog_rows()] == list(registry.PAPERS)


#: Papers the course moved to another track than the catalog's: (catalog's, registry's).
RETRACKED = {
    "contextual_similarity": ("robustness", "representations"),
    "instaaug": ("self-supervised", "representations"),
    "cocoa": ("self-supervised", "representations"),
    "leadfl": ("federated", "security"),
    "sfat": ("federated", "security"),
    "byz_vr_marina": ("federated", "security"),
    "selective_prediction": ("robustness", "evaluation"),
}


@needs_catalog
def test_entries_match_catalog_rows():
    got = [(p.number, p.slug, p.title, p.venue, p.track) for p in registry.PAPERS.values()]
    expected = [
        (n, slug, title, venue, RETRACKED.get(slug, (track, track))[1])
        for n, slug, title, venue, track in _catalog_rows()
    ]
    assert got == expected
    for slug, (catalog_track, _) in RETRACKED.items():
        assert next(r for r in _catalog_rows() if r[1] == slug)[4] == catalog_track, slug


def test_venues_are_only_icml_and_iclr_2023():
    assert {p.venue for p in registry.PAPERS.values()} <= VENUES


def test_every_url_is_https():
    for p in registry.PAPERS.values():
        assert p.paper_url.startswith("https://"), p.slug
        assert p.code_url is None or p.code_url.startswith("https://"), p.slug


def test_paper_links_point_where_the_venue_publishes():
    for p in registry.PAPERS.values():
        if p.venue == "ICLR 2023":
            assert p.paper_url.startswith("https://openreview.net/forum?id="), p.slug
        else:
            assert p.paper_url.startswith(
                ("https://proceedings.mlr.press/v202/", "https://arxiv.org/abs/")
            ), p.slug


def test_text_fields_are_filled():
    for p in registry.PAPERS.values():
        assert p.title and p.track and p.authors, p.slug


def test_get_returns_the_entry():
    paper = registry.get("sigma_reparam")
    assert paper is registry.PAPERS["sigma_reparam"]
    assert paper.number == 1


def test_get_unknown_slug_names_it_and_the_valid_choices():
    with pytest.raises(CompanionError) as info:
        registry.get("nope")
    message = str(info.value)
    assert "nope" in message
    assert "sigma_reparam" in message
    assert "\n" not in message


def test_get_suggests_a_close_match():
    with pytest.raises(CompanionError, match="did you mean 'sigma_reparam'"):
        registry.get("sigma-reparam")


def test_paper_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        registry.get("sigma_reparam").slug = "other"  # type: ignore[misc]


def test_notebook_path_is_under_repo_root():
    paper = registry.get("mega")
    assert paper.notebook == registry.ROOT / "notebooks" / "mega.ipynb"
    assert (registry.ROOT / "companion" / "registry.py").is_file()


def test_status_follows_notebook_and_package(tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "ROOT", tmp_path)
    paper = registry.get("repair")
    assert paper.notebook == tmp_path / "notebooks" / "repair.ipynb"

    assert paper.status == "planned"
    assert registry.available() == []

    (tmp_path / "companion" / "papers" / "repair").mkdir(parents=True)
    assert paper.status == "planned"  # package without notebook

    (tmp_path / "notebooks").mkdir()
    paper.notebook.write_text("{}", encoding="utf-8")
    assert paper.status == "available"
    assert registry.available() == [paper]


def test_notebook_without_package_is_planned(tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "ROOT", tmp_path)
    paper = registry.get("unimax")
    (tmp_path / "notebooks").mkdir()
    paper.notebook.write_text("{}", encoding="utf-8")
    assert paper.status == "planned"


def test_available_is_in_catalog_order():
    numbers = [p.number for p in registry.available()]
    assert numbers == sorted(numbers)
    assert all(p.status == "available" for p in registry.available())
