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
