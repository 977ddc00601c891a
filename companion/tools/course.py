"""The course as pages: the README's course section, the site's landing page, a page per module
and per track, and the prerequisite graph (from :mod:`companion.course`, the notebooks' first
cells and the claims files).

The prerequisite graph comes from each notebook's "What to know first" paragraph (the first
markdown cell, from that label to the next bold label): every link ``[text](other.ipynb)`` in it
to another notebook. A link counts as a *prerequisite* (``other`` before this notebook) when
``other`` comes earlier in the course's order (:func:`companion.course.order`); a link to a
notebook later in the order is *related*, not a prerequisite. The graph is therefore acyclic by
construction, and the order decides which of two notebooks that name each other comes first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

from companion import course, registry
from companion.core.robustness import (
    EFFECT_LARGER,
    EFFECT_NO,
    EFFECT_YES,
    effect_rows,
    effect_visible,
    load_claims,
    robust_rows,
)
from companion.errors import CompanionError
from companion.tools import notebooks

KNOW_FIRST = re.compile(r"\*\*What (?:you should|to) know first")
LEARN = re.compile(r"\*\*What you will learn\**\.?\**")
LINK = re.compile(r"\[[^\]]*\]\(([A-Za-z0-9_]+)\.ipynb\)")
GRAPH_FILE = "course-graph.svg"
GUIDE_PAGE = "instructor-guide"  # the site's page of classroom.instructor_guide, linked from here
#: fill colour of a notebook in the graph, by :func:`effect_visible`
EFFECT_COLOURS = {EFFECT_YES: "#b7e4c7", EFFECT_LARGER: "#ffe8a3", EFFECT_NO: "#f4b6b6"}


def _paragraph(source: str, label: re.Pattern) -> str:
    """The text of the first markdown cell from ``label`` to the next bold label (``**`` at the
    start of a paragraph) or the end; empty when the label is missing."""
    match = label.search(source)
    if not match:
        return ""
    rest = source[match.end() :]
    end = rest.find("\n\n**")
    return rest if end < 0 else rest[:end]


def first_markdown(slug: str, notebook_dir: Path | None = None) -> str:
    """The source of the notebook's first markdown cell (title, goals, what to know first)."""
    nb = nbformat.read(notebooks.notebook_path(slug, notebook_dir), as_version=4)
    return next((c.source for c in nb.cells if c.cell_type == "markdown"), "")


def know_first_links(source: str) -> list[str]:
    """The notebooks linked from the "What to know first" paragraph of ``source`` (a first
    markdown cell), in order, without repeats."""
    found = LINK.findall(_paragraph(source, KNOW_FIRST))
    return list(dict.fromkeys(found))


def learning_goals(source: str) -> list[str]:
    """The bullets of the "What you will learn" paragraph of ``source`` (without the dash)."""
    text = _paragraph(source, LEARN)
    return [line[2:].strip() for line in text.splitlines() if line.startswith("- ")]


@dataclass(frozen=True)
class Graph:
    """The notebooks' links split by the course's order: ``prerequisites`` holds (before,
    after) pairs, ``related`` the links that point later in the order (from, to)."""

    prerequisites: tuple[tuple[str, str], ...]
    related: tuple[tuple[str, str], ...]

    def before(self, slug: str) -> list[str]:
        """What to know first for ``slug``, in the course: its prerequisites."""
        return [a for a, b in self.prerequisites if b == slug]

    def after(self, slug: str) -> list[str]:
        """The notebooks that build on ``slug``."""
        return [b for a, b in self.prerequisites if a == slug]


def graph(links: dict[str, list[str]], order: list[str]) -> Graph:
    """Split ``links`` (notebook -> the notebooks its "What to know first" names) by ``order``:
    a link to an earlier notebook is a prerequisite, to a later one related. Links to a
    notebook outside ``order`` (a planned paper, a typo) raise :class:`CompanionError`."""
    position = {slug: i for i, slug in enumerate(order)}
    prerequisites, related = [], []
    for slug in order:
        for other in links.get(slug, []):
            if other == slug:
                continue
            if other not in position:
                raise CompanionError(f"{slug} links to {other}.ipynb, which is not in the course")
            if position[other] < position[slug]:
                prerequisites.append((other, slug))
            else:
                related.append((slug, other))
    return Graph(tuple(prerequisites), tuple(related))


def course_graph(notebook_dir: Path | None = None) -> Graph:
    """The prerequisite graph of the course, read from the notebooks."""
    slugs = course.order()
    return graph({s: know_first_links(first_markdown(s, notebook_dir)) for s in slugs}, slugs)


def draw_graph(g: Graph, path: Path, modules: tuple[course.Module, ...] = course.MODULES):
    """Draw the graph into ``path`` (SVG or PNG, by its suffix): a row per module in the
    course's order, the foundation on the left; arrows from a prerequisite to what builds on it
    (lighter when they skip a module); the fill says whether the effect is visible at notebook
    scale, a dashed border marks a case study."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    dx, dy = 2.7, 1.5  # a row per module, its notebooks from left to right
    where = {s: (j * dx, -i * dy) for i, m in enumerate(modules) for j, s in enumerate(m.slugs)}
    width = max(len(m.slugs) for m in modules)
    fig, ax = plt.subplots(figsize=(2.3 * width + 1.5, 1.05 * len(modules) + 0.8))
    for a, b in g.prerequisites:
        (xa, ya), (xb, yb) = where[a], where[b]
        # in a row, arrows that skip a notebook arch over it; between rows they run straight
        cells = round(abs(xb - xa) / dx)
        bend = -0.45 / cells if ya == yb and cells > 1 else 0.0
        near = abs(yb - ya) <= dy  # within a module or to the next: drawn darker
        ax.annotate(
            "",
            xy=(xb, yb),
            xytext=(xa, ya),
            arrowprops=dict(
                arrowstyle="-|>",
                color="#444444" if near else "#aaaaaa",
                lw=0.8 if near else 0.5,
                shrinkA=14,
                shrinkB=14,
                connectionstyle=f"arc3,rad={bend}",
            ),
        )
    for m in modules:
        for slug in m.slugs:
            x, y = where[slug]
            ax.text(
                x,
                y,
                slug,
                ha="center",
                va="center",
                fontsize=8,
                fontweight="bold" if m.role(slug) == "foundation" else "normal",
                bbox=dict(
                    boxstyle="round,pad=0.35",
                    fc=EFFECT_COLOURS.get(effect_visible(slug), "white"),
                    ec="#333333",
                    ls="--" if m.role(slug) == "case study" else "-",
                ),
            )
    for i, m in enumerate(modules):
        ax.text(-1.5, -i * dy, f"{i + 1}. {m.key}", ha="right", va="center", fontsize=10)
    legend = [
        Patch(fc=c, ec="#333333", label=f"effect visible: {k}") for k, c in EFFECT_COLOURS.items()
    ]
    legend.append(Patch(fc="white", ec="#333333", ls="--", label="case study"))
    ax.legend(handles=legend, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=4, fontsize=8)
    ax.set_xlim(-1.4, dx * (width - 1) + 1.4)
    ax.set_ylim(-dy * (len(modules) - 1) - 0.5, 0.9)
    ax.axis("off")
    path.parent.mkdir(parents=True, exist_ok=True)
    svg = path.suffix == ".svg"  # the site's; the date is left out so that rebuilds agree
    fig.savefig(path, bbox_inches="tight", dpi=110, metadata={"Date": None} if svg else None)
    plt.close(fig)
    return path


# --- text -----------------------------------------------------------------------------------


def _link(slug: str, prefix: str, title: bool = False) -> str:
    text = registry.get(slug).title if title else slug
    return f"[{text}]({prefix}{slug}.ipynb)"


def _with_effect(slug: str, prefix: str) -> str:
    return f"{_link(slug, prefix)} ({effect_visible(slug)})"


def module_table(prefix: str, module_link=None) -> str:
    """The modules in order, their notebooks by role with the effect each shows at notebook
    scale. ``prefix`` goes before every notebook's file name; ``module_link(module)`` may
    return a link for the module's title."""
    rows = [
        "| # | module | foundation | applications | case study |",
        "|---|---|---|---|---|",
    ]
    for i, m in enumerate(course.MODULES, 1):
        title = module_link(m) if module_link else m.title
        apps = ", ".join(_with_effect(s, prefix) for s in m.applications)
        case = _with_effect(m.case_study, prefix) if m.case_study else "-"
        rows.append(f"| {i} | {title} | {_with_effect(m.foundation, prefix)} | {apps} | {case} |")
    return "\n".join(rows)


def readme_section() -> str:
    """The README's course part: the modules in their suggested order."""
    return module_table("notebooks/")


def _lists_by_effect() -> list[str]:
    lines = []
    for effect, use in (
        (EFFECT_YES, "for a lab that shows the paper's effect"),
        (EFFECT_LARGER, "to show the effect from the stored larger run"),
        (EFFECT_NO, "for a research-methods discussion of a claim that does not reproduce"),
    ):
        slugs = [s for s in course.order() if effect_visible(s) == effect]
        if slugs:
            lines.append(f"- *{effect}*, {use}: " + ", ".join(_link(s, "") for s in slugs))
    return lines


def landing_page(graph_file: str = GRAPH_FILE) -> str:
    """The site's landing page: the course (modules, graph, picks by effect), a link to the
    instructor guide, then the navigation to the modules, the catalog, the guide and the
    tracks."""
    tracks = sorted({registry.get(s).track for s in course.order()})
    return "\n".join(
        [
            "# companion: a course on ICML and ICLR 2023 papers you can run",
            "",
            "One executable notebook per paper: the method walked through, run on a laptop CPU,"
            " the paper's central claim measured at several seeds, exercises, and the same code"
            " at paper scale. The notebooks form a course of"
            f" {len(course.MODULES)} modules. Each module starts with a *foundation* notebook"
            " that the others build on, continues with *applications* and ends, where one fits,"
            " with a *case study*: a paper whose claim does not reproduce at notebook scale, to"
            " discuss what the measurements say. These pages show each notebook as it was last"
            " executed; run them yourself with `make lab`.",
            "",
            "## Suggested order",
            "",
            "In parentheses: is the paper's effect visible at notebook scale? *yes* when most of"
            " its claims hold at 4 of 5 seeds, on the seeds 0-4 and on held-out seeds 5-9;"
            " *in the stored larger run* when that holds only for the larger preset the companion"
            " stores; *no* otherwise (the rule: `companion.core.robustness.effect_visible`).",
            "",
            module_table("", lambda m: f"[{m.title}](module-{m.key}.md)"),
            "",
            "## What builds on what",
            "",
            f"![The course's prerequisite graph]({graph_file})",
            "",
            "An arrow goes from a notebook to one whose *What to know first* names it and that"
            " comes later in the suggested order; a name that points later in the order is a"
            " related notebook, not a prerequisite. Colour: effect visible at notebook scale"
            " (green yes, yellow in the stored larger run, red no); dashed: case study.",
            "",
            "## Picking notebooks for a class",
            "",
            *_lists_by_effect(),
            "",
            f"Teaching with them: the [instructor guide]({GUIDE_PAGE}.md) gives, per notebook,"
            " its time in class, the settings to change and the answer keys of its explain"
            " prompts.",
            "",
            "```{toctree}",
            ":maxdepth: 1",
            ":caption: Course",
            "",
            *[f"module-{m.key}" for m in course.MODULES],
            "catalog",
            GUIDE_PAGE,
            "```",
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


def _failing_rows(slug: str) -> list[str]:
    """The effect rows of the seeds 0-4 claims file that do not hold at 4 of 5 seeds."""
    data = load_claims(slug)
    robust = {id(c) for c in robust_rows(data)}
    n = len(data["seeds"])
    return [
        f"{c['claim']}: holds at {c['holds_at']}/{n} seeds"
        for c in effect_rows(data)
        if id(c) not in robust
    ]


def module_page(index: int, g: Graph, notebook_dir: Path | None = None) -> str:
    """The page of module ``index`` (1-based): summary, learning outcomes, then each notebook
    in order with its role, effect, prerequisites and the goals its first cell states."""
    m = course.MODULES[index - 1]
    lines = [
        f"# {index}. {m.title}",
        "",
        m.summary,
        "",
        "**Learning outcomes.** After this module you can",
        "",
        *[f"- {o};" for o in m.outcomes[:-1]],
        f"- {m.outcomes[-1]}.",
        "",
    ]
    for j, slug in enumerate(m.slugs, 1):
        paper = registry.get(slug)
        role = m.role(slug)
        before = g.before(slug)
        lines += [
            f"## {index}.{j} {paper.title}",
            "",
            f"{role[:1].upper()}{role[1:]}: [the notebook]({slug}.ipynb) ({paper.venue},"
            f" track {paper.track}). Effect visible at notebook scale: *{effect_visible(slug)}*.",
            "",
            "Know first, in the course: "
            + (", ".join(_link(s, "") for s in before) if before else "nothing")
            + ". Builds on it: "
            + (", ".join(_link(s, "") for s in g.after(slug)) or "nothing yet")
            + ".",
            "",
        ]
        goals = learning_goals(first_markdown(slug, notebook_dir))
        if goals:
            lines += ["What you will learn:", "", *[f"- {goal}" for goal in goals], ""]
        if role == "case study":
            lines += [
                "What does not reproduce (claims at seeds 0-4):",
                "",
                *[f"- {row}" for row in _failing_rows(slug)],
                "",
            ]
    return "\n".join(lines)


def track_page(track: str) -> str:
    """A track's page: what it teaches, its notebooks in the course's order (each with its
    module), then its planned papers; the notebooks form the page's table of contents."""
    if track not in course.TRACK_INTROS:
        raise CompanionError(f"track {track!r} has no introduction in companion.course")
    slugs = course.track_order(track)
    planned = [p for p in registry.PAPERS.values() if p.track == track and p.slug not in slugs]
    lines = [
        f"# {track[:1].upper()}{track[1:]}",
        "",
        course.TRACK_INTROS[track],
        "",
        "In order:",
        "",
    ]
    for i, slug in enumerate(slugs, 1):
        m = course.module_of(slug)
        lines.append(
            f"{i}. {_link(slug, '', title=True)}: {m.role(slug)} of module"
            f" [{m.title}](module-{m.key}.md)"
        )
    if planned:
        lines += ["", "Planned (no notebook yet): " + "; ".join(p.title for p in planned) + "."]
    lines += ["", "```{toctree}", ":hidden:", "", *slugs, "```", ""]
    return "\n".join(lines)
