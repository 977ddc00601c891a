"""Claims over seeds: does a paper's claim hold at seeds other than the notebook's?

``companion claims SLUG --seeds 0-4`` runs ``paper.run`` and ``paper.check_claims`` once per seed
(no notebook) and writes ``data/claims/<slug>.json``: per claim and seed the measured text and the
verdict, plus the machine and versions that made them. A notebook prints the file with
:func:`robustness_table`, so its robustness section cannot drift from the measurement, and the
README's catalog reads the same files (:func:`catalog_cell`).

Finished seeds are written as they finish (atomically); ``resume=True`` keeps the seeds a file
already holds for the same preset and overrides, so an interrupted sweep loses no finished work.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import os
import platform
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from companion.core.results import read_json, write_json
from companion.errors import CompanionError

CLAIMS_DIR = Path(__file__).resolve().parents[2] / "data" / "claims"


def parse_seeds(text: str) -> list[int]:
    """``"0-4"`` -> [0, 1, 2, 3, 4]; ``"0,3,7"`` and ``"0-2,9"`` work too."""
    seeds: list[int] = []
    try:
        for part in text.split(","):
            lo, _, hi = part.strip().partition("-")
            seeds += range(int(lo), int(hi) + 1) if hi else [int(lo)]
    except ValueError:
        raise CompanionError(
            f"--seeds {text!r} is not a seed list; use a range like 0-4 or a list like 0,3,7"
        ) from None
    if not seeds or any(s < 0 for s in seeds) or len(set(seeds)) != len(seeds):
        raise CompanionError(f"--seeds {text!r} must name distinct seeds >= 0, e.g. 0-4")
    return seeds


def machine() -> dict[str, Any]:
    """What made the numbers: CPU, the kernels torch picked, versions, threads."""
    import numpy
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "ATEN_CPU_CAPABILITY": os.environ.get("ATEN_CPU_CAPABILITY", ""),
        "MKL_CBWR": os.environ.get("MKL_CBWR", ""),
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
    }


def _one_seed(slug: str, preset: str, overrides: dict, seed: int, threads: int, out: str | None):
    """Run one seed and check its claims (in a worker process when ``jobs > 1``)."""
    import torch

    from companion.cli import load_paper
    from companion.core.presets import get_preset

    if threads:
        torch.set_num_threads(threads)
    paper = load_paper(slug)
    cfg = get_preset(paper.PRESETS, preset).with_strings(overrides).replace(seed=seed)
    start = time.perf_counter()
    folder = Path(out) / f"seed{seed}" if out else None
    result = paper.run(cfg, out_dir=folder, resume=folder is not None)
    report = paper.check_claims(result)
    return seed, report.to_dict(), time.perf_counter() - start


def claims_over_seeds(
    slug: str,
    seeds: list[int],
    preset: str = "notebook",
    overrides: dict[str, str] | None = None,
    jobs: int = 1,
    claims_dir: Path | None = None,
    resume: bool = False,
    run_dir: str | Path | None = None,
    echo=print,
) -> dict[str, Any]:
    """Run the claims at every seed and write ``<claims_dir>/<slug>.json``; returns its content.

    ``jobs > 1`` runs seeds in parallel processes with ``cores // jobs`` threads each.
    ``run_dir`` keeps each seed's run folder (checkpoints, finished arms) for long presets.
    """
    from companion.cli import load_paper
    from companion.core.presets import get_preset

    overrides = dict(overrides or {})
    paper = load_paper(slug)
    get_preset(paper.PRESETS, preset).with_strings(overrides)  # bad input fails here, once
    path = Path(claims_dir or CLAIMS_DIR) / f"{slug}.json"
    done: dict[int, dict] = {}
    if resume and path.exists():
        old = read_json(path)
        if old.get("preset") == preset and old.get("overrides") == overrides:
            done = {int(s): r for s, r in old["reports"].items() if int(s) in seeds}
    todo = [s for s in seeds if s not in done]
    info = {"slug": slug, "preset": preset, "overrides": overrides, "machine": machine()}
    threads = max(1, (os.cpu_count() or 1) // jobs) if jobs > 1 else 0
    out = str(run_dir) if run_dir else None

    def record(seed: int, report: dict, seconds: float) -> None:
        done[seed] = {**report, "seconds": round(seconds, 1)}
        echo(f"{slug} seed {seed}: claims hold {report['n_hold']}/{report['n']} ({seconds:.0f} s)")
        write_json(path, _summarize(info, seeds, done))

    if jobs > 1 and len(todo) > 1:
        with ProcessPoolExecutor(jobs, mp_context=get_context("spawn")) as pool:
            futures = [
                pool.submit(_one_seed, slug, preset, overrides, s, threads, out) for s in todo
            ]
            for future in futures:
                record(*future.result())
    else:
        for seed in todo:
            record(*_one_seed(slug, preset, overrides, seed, threads, out))
    data = _summarize(info, seeds, done)
    write_json(path, data)
    return data


def _summarize(info: dict, seeds: list[int], done: dict[int, dict]) -> dict[str, Any]:
    """The file's content: per claim its verdict and measured text at every finished seed."""
    finished = [s for s in seeds if s in done]
    claims = []
    if finished:
        first = done[finished[0]]
        for i, row in enumerate(first["rows"]):
            per_seed = {str(s): _row(done[s]["rows"], i, row["claim"]) for s in finished}
            claims.append(
                {
                    "claim": row["claim"],
                    "criterion": row["criterion"],
                    "holds_at": sum(v["holds"] for v in per_seed.values()),
                    "per_seed": per_seed,
                }
            )
    return {
        **info,
        "made": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "seeds": finished,
        "all_hold_at": sum(done[s]["n_hold"] == done[s]["n"] for s in finished),
        "claims": claims,
        "reports": {str(s): done[s] for s in finished},
    }


def _row(rows: list[dict], i: int, claim: str) -> dict:
    if i >= len(rows) or rows[i]["claim"] != claim:
        raise CompanionError(f"seeds disagree on the claim rows (row {i}: {claim!r})")
    return {"measured": rows[i]["measured"], "holds": rows[i]["holds"]}


@dataclasses.dataclass(frozen=True)
class RobustnessTable:
    """``data/claims/<slug>.json`` as a table: how many seeds each claim holds at."""

    data: dict[str, Any]

    @property
    def n_seeds(self) -> int:
        return len(self.data["seeds"])

    def __str__(self) -> str:
        d, n = self.data, self.n_seeds
        seeds = _seed_range(d["seeds"])
        m = d["machine"]
        lines = [
            f"claims over seeds {seeds} (preset {d['preset']!r}"
            + (f", {d['overrides']}" if d["overrides"] else "")
            + f"), from data/claims/{d['slug']}.json",
            f"made on {m['cpu']} ({m['cpu_capability']}), torch {m['torch']}",
            "",
        ]
        header = ("claim", "criterion", "holds at")
        table = [header] + [
            (c["claim"], c["criterion"], f"{c['holds_at']}/{n} seeds") for c in d["claims"]
        ]
        widths = [max(len(r[i]) for r in table) for i in range(3)]
        rows = ["  ".join(x.ljust(w) for x, w in zip(r, widths)).rstrip() for r in table]
        rows.insert(1, "  ".join("-" * w for w in widths))
        lines += rows + ["", "measured at each seed:"]
        for c in d["claims"]:
            lines.append(f"  {c['claim']}")
            lines += [
                f"    seed {s}: {v['measured']} ({'holds' if v['holds'] else 'does not hold'})"
                for s, v in c["per_seed"].items()
            ]
        lines.append(f"every claim holds at {d['all_hold_at']}/{n} seeds")
        return "\n".join(lines)


def _seed_range(seeds: list[int]) -> str:
    if seeds and seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
        return f"{seeds[0]}–{seeds[-1]}"
    return ", ".join(map(str, seeds))


def load_claims(slug: str, claims_dir: Path | None = None) -> dict[str, Any]:
    path = Path(claims_dir or CLAIMS_DIR) / f"{slug}.json"
    if not path.exists():
        raise CompanionError(
            f"no {path}: make it with `companion claims {slug} --seeds 0-4` (or `make claims`)"
        )
    return read_json(path)


def robustness_table(slug: str, claims_dir: Path | None = None) -> RobustnessTable:
    """The notebook's robustness section: read from the file, so it cannot drift."""
    return RobustnessTable(load_claims(slug, claims_dir))


def catalog_cell(slug: str, claims_dir: Path | None = None) -> str:
    """The README catalog's entry, e.g. ``5/5 seeds (3/3 claims at each)``."""
    try:
        d = load_claims(slug, claims_dir)
    except CompanionError:
        return "not measured"
    per_row = ", ".join(str(c["holds_at"]) for c in d["claims"])
    return f"{d['all_hold_at']}/{len(d['seeds'])} seeds (per claim: {per_row})"
