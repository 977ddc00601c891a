"""JupyterLab in a real browser: open a notebook, run it at the smoke preset through the UI, move
its widget's control, and check that the figure changed and no cell shows an error. Then the
static site: open the course page, check that its prerequisite graph loads, open a module, then
the instructor guide from the course page.

Run with ``make browser-test`` (installs Debian's chromium and Playwright for Python; Playwright's
own browser download is not used). The screenshots are kept in ``build/browser/``.
"""

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from companion.tools import notebooks

pytestmark = pytest.mark.browser
ALL_RUN = """() => {
  const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')];
  return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
}"""
SLUG = "sigma_reparam"
ARTIFACTS = Path("build/browser")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lab(tmp_path):
    """JupyterLab on a free loopback port, serving a copy of the notebook set to smoke."""
    nb = nbformat.read(notebooks.notebook_path(SLUG), as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    params.source = re.sub(r'(?m)^preset\s*=\s*"[^"]*"', 'preset = "smoke"', params.source)
    for cell in nb.cells:  # start from a blank notebook, as a student would
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.write(nb, tmp_path / f"{SLUG}.ipynb")
    port, token = _free_port(), "companion-test"
    command = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        f"--port={port}",
        "--ip=127.0.0.1",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={tmp_path}",
    ]
    if os.geteuid() == 0:
        command.append("--allow-root")
    env = {**os.environ, "COMPANION_PROGRESS": "0"}
    env.pop("MPLBACKEND", None)  # the kernel's own inline backend, as in `make lab`
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=1)
            break
        except OSError:
            time.sleep(0.5)
    else:
        server.kill()
        pytest.fail("JupyterLab did not start: " + server.stderr.read().decode()[-2000:])
    yield f"{url}/lab/tree/{SLUG}.ipynb?token={token}"
    server.terminate()
    server.wait(timeout=30)


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
def test_notebook_runs_in_jupyterlab_and_the_widget_redraws(lab):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(lab)
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        page.wait_for_selector("text=Python 3 (ipykernel) | Idle", timeout=60_000)
        try:
            page.click(".lm-MenuBar-itemLabel >> text=Run", timeout=10_000)
            page.click(".lm-Menu-itemLabel >> text=Run All Cells", timeout=10_000)
            # every code cell shows an execution count ([*] while it runs)
            page.wait_for_function(ALL_RUN, timeout=240_000)
        finally:
            page.screenshot(path=str(ARTIFACTS / "lab-after-run.png"))
        errors = page.locator(
            ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
            " >> text=Traceback"
        )
        assert errors.count() == 0, errors.first.inner_text()
        assert page.locator(".jp-RenderedText >> text=/Error:/").count() == 0
        slider = page.locator(".widget-slider").first
        slider.scroll_into_view_if_needed()
        figure = slider.locator(
            "xpath=ancestor::div[contains(concat(' ', @class, ' '), ' jp-CodeCell ')][1]//img"
        ).last
        before = figure.get_attribute("src")
        readout = slider.locator(".widget-readout")
        value = readout.inner_text()
        slider.locator(".noUi-handle").first.focus()
        page.keyboard.press("ArrowRight")
        for _ in range(60):  # the kernel redraws the figure in place (a display update)
            if figure.get_attribute("src") != before:
                break
            page.wait_for_timeout(500)
        assert readout.inner_text() != value, "the slider did not move"
        assert figure.get_attribute("src") != before, "the figure did not change"
        figure.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "lab.png"))
        browser.close()


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory):
    """The built site: `make site`'s build/site when it has the course pages (CI builds it before
    this test), else a fresh build into a temporary folder."""
    from companion import course
    from companion.tools import site

    built = Path("build/site")
    pages = [f"module-{m.key}.html" for m in course.MODULES] + ["instructor-guide.html"]
    if all((built / name).exists() for name in pages):
        return built.resolve()
    out = tmp_path_factory.mktemp("site") / "site"
    assert site.build(out) == 0, "the site did not build"
    return out


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
def test_course_page_opens_a_module_and_its_graph_loads(site_dir):
    from playwright.sync_api import sync_playwright

    from companion import course

    first = course.MODULES[0]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto((site_dir / "index.html").as_uri())
        page.wait_for_selector("h2:has-text('Suggested order')", timeout=30_000)
        graph = page.locator("img[src*='course-graph']")
        graph.scroll_into_view_if_needed()
        assert graph.evaluate("img => img.complete && img.naturalWidth > 0"), "no graph image"
        page.screenshot(path=str(ARTIFACTS / "course.png"))
        page.locator(f"article a[href='module-{first.key}.html']").first.click()
        page.wait_for_selector("article strong:has-text('Learning outcomes')", timeout=30_000)
        assert page.url.endswith(f"module-{first.key}.html")
        assert first.title in page.locator("h1").first.inner_text()
        for slug in first.slugs:
            assert page.locator(f"article a[href='{slug}.html']").count() >= 1, slug
        page.screenshot(path=str(ARTIFACTS / "course-module.png"))
        page.goto((site_dir / "index.html").as_uri())
        page.locator("article a[href='instructor-guide.html']").first.click()
        page.wait_for_selector("article h1:has-text('Instructor guide')", timeout=30_000)
        assert page.locator(f"article a[href='{first.foundation}.html']").count() >= 1
        assert page.locator("article p:has-text('(answer key):')").count() >= 1
        page.screenshot(path=str(ARTIFACTS / "guide.png"))
        browser.close()
