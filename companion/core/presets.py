"""Presets: frozen dataclasses with validated overrides.

Every paper defines one ``Config`` subclass and a ``PRESETS`` dict with ``smoke``, ``notebook``
and ``full``. Overrides go through :meth:`Config.replace` (from Python) or
:meth:`Config.with_strings` (from the command line / papermill), and both refuse an unknown key
or a value of the wrong type with one line naming the valid keys or the expected type::

    cfg = PRESETS["notebook"].replace(lr=3e-3, seed=1)
    cfg = PRESETS["full"].with_strings({"lr": "1e-3"})
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar

from companion.errors import CompanionError, unknown


@dataclasses.dataclass(frozen=True)
class Config:
    """Fields every run shares: seed and where it runs.

    ``device`` is "auto" (CUDA, then MPS, then CPU), "cpu", "cuda" or "mps"; ``devices`` and
    ``num_nodes`` are passed to Lightning Fabric, as are ``strategy`` and ``precision``.
    """

    seed: int = 0
    device: str = "auto"
    devices: int = 1
    num_nodes: int = 1
    strategy: str = "auto"
    precision: str = "32-true"

    DEVICES: ClassVar[tuple[str, ...]] = ("auto", "cpu", "cuda", "mps")
    PRECISIONS: ClassVar[tuple[str, ...]] = ("32-true", "16-mixed", "bf16-mixed", "64-true")

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            _check_type(
                type(self).__name__,
                field.name,
                getattr(self, field.name),
                _hints(type(self))[field.name],
            )
        if self.device not in self.DEVICES:
            raise unknown("device", self.device, self.DEVICES)
        if self.precision not in self.PRECISIONS:
            raise unknown("precision", self.precision, self.PRECISIONS)
        if self.devices < 1 or self.num_nodes < 1:
            raise CompanionError(
                f"devices and num_nodes must be >= 1, got {self.devices}, {self.num_nodes}"
            )
        self.validate()

    def validate(self) -> None:
        """Range checks of a paper's own fields; override and raise CompanionError."""

    @classmethod
    def keys(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    def replace(self, **overrides: Any) -> Config:
        """A copy with ``overrides`` applied; unknown keys and wrong types are refused."""
        bad = [k for k in overrides if k not in self.keys()]
        if bad:
            raise unknown(f"{type(self).__name__} key", bad[0], self.keys())
        return dataclasses.replace(self, **overrides)

    def with_strings(self, overrides: Mapping[str, str]) -> Config:
        """Like :meth:`replace`, parsing each text value by the field's type (CLI ``--set``)."""
        hints = _hints(type(self))
        parsed = {}
        for key, text in overrides.items():
            if key not in hints:
                raise unknown(f"{type(self).__name__} key", key, self.keys())
            parsed[key] = _parse(key, text, hints[key])
        return self.replace(**parsed)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp))


def _check_type(owner: str, key: str, value: Any, tp: Any) -> None:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(tp)
        errors = 0
        for option in options:
            try:
                _check_type(owner, key, value, option)
            except CompanionError:
                errors += 1
        if errors == len(options):
            raise CompanionError(f"{owner}.{key} must be {tp}, got {value!r}")
        return
    if tp is type(None):
        ok = value is None
    elif origin is tuple:
        args = typing.get_args(tp)
        ok = isinstance(value, tuple)
        if ok and args and args[-1] is Ellipsis:
            for item in value:
                _check_type(owner, key, item, args[0])
        elif ok and args:
            ok = len(value) == len(args)
            for item, arg in zip(value, args):
                _check_type(owner, key, item, arg)
    elif tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, tp)
    if not ok:
        raise CompanionError(
            f"{owner}.{key} must be {_type_name(tp)}, got {value!r} ({type(value).__name__})"
        )


def _parse(key: str, text: str, tp: Any) -> Any:
    """Parse a command-line string into the field's type."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        if text.lower() == "none" and type(None) in typing.get_args(tp):
            return None
        for option in typing.get_args(tp):
            if option is not type(None):
                try:
                    return _parse(key, text, option)
                except CompanionError:
                    continue
        raise CompanionError(f"cannot read {key}={text!r} as {tp}")
    if origin is tuple:
        args = typing.get_args(tp)
        parts = [p for p in text.strip("()[] ").split(",") if p.strip()]
        item_types = [args[0]] * len(parts) if args and args[-1] is Ellipsis else list(args)
        if len(item_types) != len(parts):
            raise CompanionError(
                f"{key} needs {len(item_types)} comma-separated values, got {text!r}"
            )
        return tuple(_parse(key, p.strip(), t) for p, t in zip(parts, item_types))
    try:
        if tp is bool:
            if text.lower() in ("true", "1", "yes"):
                return True
            if text.lower() in ("false", "0", "no"):
                return False
            raise ValueError
        if tp is int:
            return int(text)
        if tp is float:
            return float(text)
        if tp is str:
            return text
    except ValueError:
        raise CompanionError(f"{key} must be {_type_name(tp)}, got {text!r}") from None
    raise CompanionError(f"{key}: cannot parse values of type {_type_name(tp)} from text")


def get_preset(presets: Mapping[str, Config], name: str) -> Config:
    """``presets[name]`` or one clear error naming the valid presets."""
    if name not in presets:
        raise unknown("preset", name, list(presets))
    return presets[name]
