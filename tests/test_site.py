"""The site's source: the course as landing page, a page per module, the prerequisite graph, the
catalog, a page per track, every notebook (`make site` builds it; the browser test opens it)."""

from companion import course, registry
from companion.tools import course as pages
from companion.tools import notebooks, site


def test_site_source_lists_every_notebook_by_track(tmp_path):
    src = site.write_source(tmp_path / "src")
    slugs = notebooks.all_slugs()
    index = (src / "index.md").read_text()
    catalog = (src / "catalog.md").read_text()
    assert (src / "conf.py").exists()
    for slug in slugs:
        paper = registry.get(slug)
        assert (src / f"{slug}.ipynb").exists()
        assert f"({slug}.ipynb)" in index
        assert f"[{paper.title}]({slug}.ipynb)" in catalog and paper.paper_url in catalog
        track = (src / f"track-{paper.track.replace(' ', '-')}.md").read_text()
        assert f"\n{slug}\n" in track
    tracks = {registry.get(s).track for s in slugs}
    assert index.count("\ntrack-") == len(tracks)
    # the course: a page per module, linked from the landing page, and the graph drawn
    assert index.count("\nmodule-") == len(course.MODULES) and "\ncatalog\n" in index
    for m in course.MODULES:
        assert (src / f"module-{m.key}.md").read_text().count(f"]({m.foundation}.ipynb)") >= 1
    assert (src / pages.GRAPH_FILE).read_text().startswith("<?xml")
