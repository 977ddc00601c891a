"""The companion as a static web site: ``make site`` (or ``python -m companion.tools.site OUT``).

Writes a Sphinx source folder (``docs/conf.py``; a landing page that is the course, with its
prerequisite graph drawn into the folder; a page per module of the course; the catalog; one page
per track with its notebooks, :mod:`companion.tools.course`; the instructor guide,
:func:`companion.tools.classroom.instructor_guide`) and builds HTML with myst-nb from the
notebooks' stored outputs: nothing is executed and nothing is downloaded (MathJax is served by
``sphinx-mathjax-offline``). Warnings are errors. The theme (sphinx-book-theme) gives the
navigation by module and track, and the search page.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from companion import course, registry
from companion.core.robustness import catalog_cell, effect_visible
from companion.tools import course as pages
from companion.tools import notebooks
from companion.tools.classroom import instructor_guide

DOCS = registry.ROOT / "docs"


def catalog_page(papers: list) -> str:
    """The catalog: paper, venue, track, claims over seeds, effect visible, run time, links."""
    rows = []
    for p in papers:
        seconds = notebooks.duration(p.notebook)
        time = "-" if seconds is None else f"~{max(5, 5 * round(seconds / 5))} s"
        rows.append(
            f"| [{p.title}]({p.slug}.ipynb) | {p.venue} | {p.track} | {catalog_cell(p.slug)} "
            f"| {catalog_cell(p.slug, heldout=True)} | {effect_visible(p.slug)} | {time} "
            f"| [paper]({p.paper_url})" + (f" · [code]({p.code_url})" if p.code_url else "") + " |"
        )
    return "\n".join(
        [
            "# Catalog",
            "",
            "Every notebook with its claims over seeds; *effect visible at notebook scale* is"
            " explained on the [course page](index.md).",
            "",
            "| paper | venue | track | claims hold at (seeds 0–4) | held-out seeds 5–9 "
            "| effect visible at notebook scale | time, 2 CPU cores | links |",
            "|---|---|---|---|---|---|---|---|",
            *rows,
            "",
        ]
    )


def write_source(src: Path) -> Path:
    """The Sphinx source folder: conf.py, the course (index.md, a page per module, the
    prerequisite graph), the catalog, the instructor guide, a page per track, the notebooks."""
    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    shutil.copy(DOCS / "conf.py", src / "conf.py")
    papers = [p for p in registry.PAPERS.values() if p.slug in notebooks.all_slugs()]
    (src / "index.md").write_text(pages.landing_page())
    graph = pages.course_graph()
    pages.draw_graph(graph, src / pages.GRAPH_FILE)
    for i, module in enumerate(course.MODULES, 1):
        (src / f"module-{module.key}.md").write_text(pages.module_page(i, graph))
    (src / "catalog.md").write_text(catalog_page(papers))
    guide = instructor_guide([p.slug for p in papers], link_notebooks=True)
    (src / f"{pages.GUIDE_PAGE}.md").write_text(guide)
    for track in sorted({p.track for p in papers}):
        (src / f"track-{track.replace(' ', '-')}.md").write_text(pages.track_page(track))
    for p in papers:
        shutil.copy(p.notebook, src / p.notebook.name)
    return src


def build(out: Path) -> int:
    """Write the source next to ``out`` and build HTML into ``out``; returns sphinx's status."""
    src = write_source(out.parent / f"{out.name}-src")
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html"]
    return subprocess.call([*command, str(src), str(out)])


if __name__ == "__main__":
    sys.exit(build(Path(sys.argv[1] if len(sys.argv) > 1 else "build/site")))
