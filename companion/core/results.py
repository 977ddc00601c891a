"""Results: plain data (lists, numbers, strings) that save to and load from JSON atomically."""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from pathlib import Path
from typing import Any, TypeVar

R = TypeVar("R", bound="Result")


def write_json(path, data: Any) -> Path:
    """Write JSON atomically: a temp file in the same folder, then rename over the target."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read_json(path) -> Any:
    return json.loads(Path(path).read_text())


@dataclasses.dataclass
class Result:
    """Base class of every paper's result: a dataclass of JSON-friendly fields."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def save(self, path) -> Path:
        return write_json(path, self.to_dict())

    @classmethod
    def from_dict(cls: type[R], data: dict[str, Any]) -> R:
        return cls(**data)

    @classmethod
    def load(cls: type[R], path) -> R:
        return cls.from_dict(read_json(path))
