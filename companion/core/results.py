"""Results: plain data (lists, numbers, strings) that save to and load from JSON atomically."""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
import types
import typing
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
        """The inverse of :meth:`to_dict`: fields annotated with a Result type, alone or inside
        ``list``, ``tuple``, ``dict`` values or ``| None``, are rebuilt as that type; everything
        else is taken as stored. Fields missing from ``data`` (results saved before the field
        existed) take their defaults."""
        hints = typing.get_type_hints(cls)
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: _revive(hints[k], v) if k in fields else v for k, v in data.items()})

    @classmethod
    def load(cls: type[R], path) -> R:
        return cls.from_dict(read_json(path))


def _revive(hint: Any, value: Any) -> Any:
    """``value`` (plain JSON data) rebuilt as the annotation ``hint`` asks (see ``from_dict``)."""
    if value is None:
        return None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if isinstance(hint, type) and issubclass(hint, Result):
        return hint.from_dict(value)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return _revive(inner[0], value) if len(inner) == 1 else value
    if origin in (list, tuple) and args:
        return type(value)(_revive(args[0], v) for v in value)
    if origin is dict and len(args) == 2:
        return {k: _revive(args[1], v) for k, v in value.items()}
    return value
