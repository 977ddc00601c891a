"""The companion as a static web site: ``make site`` (or ``python -m companion.tools.site OUT``).

Writes a Sphinx source folder (``docs/conf.py``, an index that is the catalog, one page per track
with its notebooks) and builds HTML with myst-nb from the notebooks' stored outputs: nothing is
executed and nothing is downloaded (MathJax is served by ``sphinx-mathjax-offline``). Warnings
are errors. The theme (sphinx-book-theme) gives the navigation by track and the search page.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from companion import registry
from companion.core.robustness import catalog_cell
from companion.tools import notebooks

DOCS = registry.ROOT / "docs"


def _track_page(track: str, papers: list) -> str:
    title = track[:1].upper() + track[1:]
    lines = [f"# {title}", "", "```{toctree}", ":maxdepth: 1", ""]
    lines += [f"{p.slug}" for p in papers]
    lines += ["```", ""]
    return "\n".join(lines)


def index_page(papers: list) -> str:
    """The catalog: paper, venue, track, claims over seeds, run time; then the tracks."""
    rows = []
    for p in papers:
        seconds = notebooks.duration(p.notebook)
        time = "-" if seconds is None else f"~{max(5, 5 * round(seconds / 5))} s"
        rows.append(
            f"| [{p.title}]({p.slug}.ipynb) | {p.venue} | {p.track} | {catalog_cell(p.slug)} "
            f"| {catalog_cell(p.slug, heldout=True)} | {time} | [paper]({p.paper_url})"
            + (f" · [code]({p.code_url})" if p.code_url else "")
            + " |"
        )
    tracks = sorted({p.track for p in papers})
    return "\n".join(
        [
            "# companion: ICML and ICLR 2023 papers you can run",
            "",
            "One executable notebook per paper: the method walked through, run on a laptop CPU in"
            " under a minute, the paper's central claim measured at several seeds, exercises,"
            " and the same code at paper scale. These pages show each notebook as it was last"
            " executed; run them yourself with `make lab`.",
            "",
            "| paper | venue | track | claims hold at (seeds 0–4) | held-out seeds 5–9 "
            "| time, 2 CPU cores | links |",
            "|---|---|---|---|---|---|---|",
            *rows,
            "",
            "```{toctree}",
            ":maxdepth: 2",
            ":caption: Tracks",
            "",
            *[f"track-{t.replace(' ', '-')}" for t in tracks],
            "```",
            "",
        ]
    )


def write_source(src: Path) -> Path:
    """The Sphinx source folder: conf.py, index.md, a page per track, the notebooks."""
    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    shutil.copy(DOCS / "conf.py", src / "conf.py")
    papers = [p for p in registry.PAPERS.values() if p.slug in notebooks.all_slugs()]
    (src / "index.md").write_text(index_page(papers))
    for track in sorted({p.track for p in papers}):
        members = [p for p in papers if p.track == track]
        (src / f"track-{track.replace(' ', '-')}.md").write_text(_track_page(track, members))
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
