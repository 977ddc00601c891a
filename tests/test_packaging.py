"""The install files agree: environment.yml's pip section mirrors pyproject's pins."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_environment_yml_mirrors_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = set(project["dependencies"])
    for extra in ("dev", "classroom", "docs", "browser"):  # every extra `make setup` installs
        wanted |= set(project["optional-dependencies"][extra])
    wanted = {w for w in wanted if not re.match(r"torch[<>=~]", w)} | {"torch==2.13.0"}
    env = (ROOT / "environment.yml").read_text()
    listed = set(re.findall(r"^\s+- ([A-Za-z][^\s#]*[=~<>]=[^\s#]*)$", env, flags=re.M))
    assert listed == wanted


def test_constraints_pin_torch():
    assert (ROOT / "constraints.txt").read_text().split() == ["torch==2.13.0"]
