"""The site's source: the catalog page, a page per track, every notebook (`make site` builds it)."""

from companion import registry
from companion.tools import notebooks, site


def test_site_source_lists_every_notebook_by_track(tmp_path):
    src = site.write_source(tmp_path / "src")
    slugs = notebooks.all_slugs()
    index = (src / "index.md").read_text()
    assert (src / "conf.py").exists()
    for slug in slugs:
        paper = registry.get(slug)
        assert (src / f"{slug}.ipynb").exists()
        assert f"({slug}.ipynb)" in index and paper.paper_url in index
        track = (src / f"track-{paper.track.replace(' ', '-')}.md").read_text()
        assert f"\n{slug}\n" in track
    tracks = {registry.get(s).track for s in slugs}
    assert index.count("track-") == len(tracks)
