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


def test_instructor_guide_page_is_generated_and_linked_from_the_course(tmp_path):
    """The site has the instructor guide (generated from the notebooks: a section per notebook
    linked to its page, with every answer key), reachable from the landing page's text and its
    navigation."""
    import nbformat

    from companion.tools.notebooks import ANSWER_KEY_TAG

    src = site.write_source(tmp_path / "src")
    index = (src / "index.md").read_text()
    assert f"]({pages.GUIDE_PAGE}.md)" in index
    assert f"\ncatalog\n{pages.GUIDE_PAGE}\n```" in index  # in the course's navigation
    guide = (src / f"{pages.GUIDE_PAGE}.md").read_text()
    assert guide.startswith("# Instructor guide\n")
    keys = 0
    for slug in notebooks.all_slugs():
        assert f"\n## [{slug}]({slug}.ipynb)\n" in guide
        section = guide.split(f"({slug}.ipynb)\n")[1].split("\n## ")[0]
        nb = nbformat.read(notebooks.notebook_path(slug), as_version=4)
        for cell in nb.cells:
            if ANSWER_KEY_TAG in cell.metadata.get("tags", []):
                keys += 1
                text = cell.source.split("**", 2)[-1].strip()  # after the bold lead
                assert text in section, (slug, text[:60])
    assert keys > 0
