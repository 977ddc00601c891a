"""The house's layers: machinery (core, data, nn) never imports what sits above it."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "companion"
LOWER = ("core", "data", "nn")
UPPER = ("companion.cli", "companion.tools", "companion.papers")


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at the top or inside functions."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def upward(path: Path) -> list[str]:
    return sorted(
        name
        for name in imported_modules(path)
        if any(name == up or name.startswith(up + ".") for up in UPPER)
    )


@pytest.mark.parametrize("layer", LOWER)
def test_no_arrow_runs_up_from_the_machinery(layer):
    bad = {
        str(path.relative_to(PACKAGE)): upward(path)
        for path in sorted((PACKAGE / layer).rglob("*.py"))
        if upward(path)
    }
    assert not bad, f"modules under companion/{layer} import a layer above them: {bad}"


def test_the_check_sees_an_upward_import(tmp_path):
    nested = tmp_path / "m.py"
    nested.write_text("def f():\n    from companion.cli import main\n    return main\n")
    assert upward(nested) == ["companion.cli", "companion.cli.main"]
    sibling = tmp_path / "n.py"
    sibling.write_text("from companion.tools import notebooks\nimport companion.registry\n")
    assert upward(sibling) == ["companion.tools", "companion.tools.notebooks"]


def test_importing_the_machinery_and_the_papers_leaves_fabric_out():
    """lightning_fabric (which loads torch._dynamo, seconds of a notebook's imports cell) is
    imported where a run makes a Fabric (``core.training.make_fabric``), not by importing
    ``companion.core`` or a paper package; making one imports it."""
    import subprocess
    import sys

    from companion.tools.notebooks import all_slugs

    code = (
        "import sys, companion.core\n"
        f"for slug in {all_slugs()!r}:\n"
        "    __import__(f'companion.papers.{slug}')\n"
        "print(sorted(m for m in ('lightning_fabric', 'torch._dynamo') if m in sys.modules))\n"
        "from companion.core import make_fabric\n"
        "from companion.papers import sigma_reparam\n"
        "make_fabric(sigma_reparam.PRESETS['smoke'])\n"
        "print('lightning_fabric' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["[]", "True"]
