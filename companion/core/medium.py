"""Stored larger runs: effects that need more than the notebook's minute.

Some effects appear only with more steps or data than a one-minute run allows (an EMA teacher
that has time to move, a prototype loss that has time to compact its classes). Such a paper
gets a ``medium`` preset (at most 20 minutes on 2 CPU cores, offline data), run once by::

    companion claims SLUG --preset medium --seeds 0-2

which writes the claims over those seeds (``data/claims/medium/SLUG.json``) and the lowest seed's
whole result with its provenance (``data/runs/SLUG/medium.json``: the command, the commit, the
machine, the date and the config). The notebook's "At a larger scale" section draws its figure
from that file with :func:`load_stored_run` and prints the claims with
``robustness_table(SLUG, preset="medium")``; nothing is re-run. A test checks that the stored
config equals ``PRESETS["medium"]`` (so the file cannot go stale silently) and runs the medium
preset end to end at smoke sizes (:func:`at_smoke_sizes`).
"""

from __future__ import annotations

import datetime as _dt
import subprocess
from pathlib import Path
from typing import Any

from companion.core.presets import Config
from companion.core.results import Result, read_json, write_json
from companion.errors import CompanionError

RUNS_DIR = Path(__file__).resolve().parents[2] / "data" / "runs"
STORED_PRESETS = ("medium",)


def stored_run_path(slug: str, preset: str = "medium", runs_dir: Path | None = None) -> Path:
    return Path(runs_dir or RUNS_DIR) / slug / f"{preset}.json"


def _commit() -> str:
    root = Path(__file__).resolve().parents[2]
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def write_stored_run(
    slug: str,
    preset: str,
    cfg: Config,
    result: dict[str, Any],
    seeds: list[int],
    claims_dir: Path | None = None,
) -> Path:
    """Store one seed's result with its provenance. With a custom ``claims_dir`` (tests) the
    run goes to ``<claims_dir>/runs`` instead of ``data/runs``."""
    from companion.core.robustness import _seed_range, machine

    runs_dir = Path(claims_dir) / "runs" if claims_dir else None
    data = {
        "slug": slug,
        "preset": preset,
        "provenance": {
            "command": f"companion claims {slug} --preset {preset} --seeds "
            + _seed_range(seeds).replace("–", "-").replace(", ", ","),
            "commit": _commit(),
            "machine": machine(),
            "made": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        },
        "config": cfg.to_dict(),
        "result": result,
    }
    return write_json(stored_run_path(slug, preset, runs_dir), data)


def load_stored_run(slug: str, result_type: type[Result], preset: str = "medium", runs_dir=None):
    """``(result, info)``: the stored result as the paper's ``Result`` class, and the file's
    provenance and config, for a notebook's "At a larger scale" section."""
    path = stored_run_path(slug, preset, runs_dir)
    if not path.exists():
        raise CompanionError(
            f"no {path}: make it with `companion claims {slug} --preset {preset} --seeds 0-2`"
        )
    data = read_json(path)
    return result_type.from_dict(data["result"]), {
        "provenance": data["provenance"],
        "config": data["config"],
    }


def describe_stored(info: dict[str, Any]) -> str:
    """One paragraph saying where a stored run came from."""
    p = info["provenance"]
    m = p["machine"]
    return (
        f"stored run: `{p['command']}` at commit {p['commit']}, {p['made'][:10]}, "
        f"on {m['cpu']} ({m['cores']} cores), torch {m['torch']}"
    )


def config_differences(stored: dict[str, Any], preset: Config) -> dict[str, tuple]:
    """Fields (seed, device placement and CPU threads aside) where a stored config and the preset
    differ. Threads change the speed, not the experiment."""
    ignore = {"seed", "device", "devices", "num_nodes", "strategy", "threads"}
    current = preset.to_dict()
    keys = (set(stored) | set(current)) - ignore
    return {
        k: (stored.get(k), current.get(k))
        for k in sorted(keys)
        if _plain(stored.get(k)) != _plain(current.get(k))
    }


def _plain(value):
    return list(map(_plain, value)) if isinstance(value, list | tuple) else value


def at_smoke_sizes(presets: dict[str, Config]) -> Config:
    """The ``medium`` preset with the sizes of ``smoke``: every field where ``smoke`` differs
    from ``notebook`` (steps, data, widths) takes smoke's value; every other choice of the
    medium preset (a decay, a loss weight) is kept. For a test that runs it end to end."""
    smoke, notebook, medium = presets["smoke"], presets["notebook"], presets["medium"]
    sizes = {k: v for k, v in smoke.to_dict().items() if v != notebook.to_dict()[k] and k != "seed"}
    return medium.replace(**{k: getattr(smoke, k) for k in sizes})
