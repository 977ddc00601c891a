"""Claims over seeds: does a paper's claim hold at seeds other than the notebook's?

``companion claims SLUG --seeds 0-4`` runs ``paper.run`` and ``paper.check_claims`` once per seed
(no notebook) and writes ``data/claims/<slug>.json``: per claim and seed the measured text and the
verdict, plus the machine and versions that made them. A notebook prints the file with
:func:`robustness_table`, so its robustness section cannot drift from the measurement, and the
README's catalog reads the same files (:func:`catalog_cell`).

Finished seeds are written as they finish (atomically); ``resume=True`` keeps the seeds a file
already holds for the same preset and overrides, so an interrupted sweep loses no finished work.

Where the files go (:func:`claims_path`):

* ``data/claims/<slug>.json``: seeds 0–4, the seeds settings and margins were chosen on;
* ``data/claims/heldout/<slug>.json``: seeds 5–9 (any list of seeds all ≥ :data:`HELDOUT_FIRST`),
  which nobody looked at while choosing them: a claim that holds at 0–4 only is not robust;
* ``data/claims/medium/<slug>.json``: the ``medium`` preset, for effects that need more than a
  minute; its lowest seed's result is stored too (:mod:`companion.core.medium`), so a notebook
  can draw the larger run's figure without running it.
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

from companion.core.claims import NOT_TESTED
from companion.core.results import read_json, write_json
from companion.errors import CompanionError

CLAIMS_DIR = Path(__file__).resolve().parents[2] / "data" / "claims"
PER_SEED = ("failures", "all")  # what a robustness table lists under its counts
HELDOUT_FIRST = 5  # seeds from here on are held out: never looked at while choosing settings
#: presets whose claims live at the top of ``data/claims`` (smoke only in tests)
_TOP_LEVEL_PRESETS = ("notebook", "smoke")


def claims_path(
    slug: str, preset: str = "notebook", heldout: bool = False, claims_dir: Path | None = None
) -> Path:
    """``<claims_dir>/[<preset>/][heldout/]<slug>.json`` (see the module's docstring)."""
    folder = Path(claims_dir or CLAIMS_DIR)
    if preset not in _TOP_LEVEL_PRESETS:
        folder = folder / preset
    if heldout:
        folder = folder / "heldout"
    return folder / f"{slug}.json"


def is_heldout(seeds: list[int]) -> bool:
    return bool(seeds) and min(seeds) >= HELDOUT_FIRST


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


def _one_seed(
    slug: str,
    preset: str,
    overrides: dict,
    seed: int,
    threads: int,
    out: str | None,
    keep_result: bool = False,
):
    """Run one seed and check its claims (in a worker process when ``jobs > 1``); with
    ``keep_result`` also return the result's data (for the stored ``medium`` run)."""
    import torch

    from companion.core.presets import get_preset
    from companion.registry import load_paper

    if threads:
        torch.set_num_threads(threads)
    paper = load_paper(slug)
    cfg = get_preset(paper.PRESETS, preset).with_strings(overrides).replace(seed=seed)
    start = time.perf_counter()
    folder = Path(out) / f"seed{seed}" if out else None
    result = paper.run(cfg, out_dir=folder, resume=folder is not None)
    report = paper.check_claims(result)
    seconds = time.perf_counter() - start
    return seed, report.to_dict(), seconds, (result.to_dict() if keep_result else None)


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
    """Run the claims at every seed and write the file :func:`claims_path` names (held-out seeds
    and presets other than ``notebook`` each get their own); returns its content.

    ``jobs > 1`` runs seeds in parallel processes with ``cores // jobs`` threads each.
    ``run_dir`` keeps each seed's run folder (checkpoints, finished arms) for long presets.
    For a preset in :data:`companion.core.medium.STORED_PRESETS` the lowest seed's result is
    stored with its provenance (``data/runs/<slug>/<preset>.json``) for the notebook's figure;
    held-out seeds only confirm the claims and never replace that stored run.
    """
    from companion.core import medium
    from companion.core.presets import get_preset
    from companion.registry import load_paper

    overrides = dict(overrides or {})
    paper = load_paper(slug)
    get_preset(paper.PRESETS, preset).with_strings(overrides)  # bad input fails here, once
    path = claims_path(slug, preset, is_heldout(seeds), claims_dir)
    store = preset in medium.STORED_PRESETS and not overrides and not is_heldout(seeds)
    done: dict[int, dict] = {}
    if resume and path.exists():
        old = read_json(path)
        if old.get("preset") == preset and old.get("overrides") == overrides:
            done = {int(s): r for s, r in old["reports"].items() if int(s) in seeds}
    todo = [s for s in seeds if s not in done]
    info = {"slug": slug, "preset": preset, "overrides": overrides, "machine": machine()}
    threads = max(1, (os.cpu_count() or 1) // jobs) if jobs > 1 else 0
    out = str(run_dir) if run_dir else None

    figure_seed = min(seeds)
    keep = store and figure_seed in todo

    def record(seed: int, report: dict, seconds: float, result: dict | None) -> None:
        done[seed] = {**report, "seconds": round(seconds, 1)}
        echo(f"{slug} seed {seed}: claims hold {report['n_hold']}/{report['n']} ({seconds:.0f} s)")
        write_json(path, _summarize(info, seeds, done))
        if result is not None:
            cfg = get_preset(paper.PRESETS, preset).replace(seed=seed)
            medium.write_stored_run(slug, preset, cfg, result, seeds, claims_dir)

    args = (slug, preset, overrides)
    if jobs > 1 and len(todo) > 1:
        with ProcessPoolExecutor(jobs, mp_context=get_context("spawn")) as pool:
            futures = [
                pool.submit(_one_seed, *args, s, threads, out, keep and s == figure_seed)
                for s in todo
            ]
            for future in futures:
                record(*future.result())
    else:
        for seed in todo:
            record(*_one_seed(*args, seed, threads, out, keep and seed == figure_seed))
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
                    "not_tested_at": sum(not v["premise_ok"] for v in per_seed.values()),
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
    ok = rows[i].get("premise_ok", True)
    return {"measured": rows[i]["measured"], "holds": rows[i]["holds"], "premise_ok": ok}


@dataclasses.dataclass(frozen=True)
class RobustnessTable:
    """The claims files as tables: how many seeds each claim holds at, on the seeds the settings
    were chosen on (``data``) and, when measured, on held-out seeds (``heldout``)."""

    data: dict[str, Any]
    heldout: dict[str, Any] | None = None
    per_seed: str = "failures"
    """``"failures"``: under the table, only the seeds where a claim did not hold (or was not
    tested), with what was measured there; ``"all"``: every seed's measurement."""

    def __post_init__(self):
        if self.per_seed not in PER_SEED:
            raise CompanionError(f"per_seed={self.per_seed!r}: valid choices are {PER_SEED}")

    @property
    def n_seeds(self) -> int:
        return len(self.data["seeds"])

    def __str__(self) -> str:
        d = self.data
        m = d["machine"]
        lines = [
            f"claims over seeds {_seed_range(d['seeds'])} (preset {d['preset']!r}"
            + (f", {d['overrides']}" if d["overrides"] else "")
            + f"), from {_relative(d)}",
            f"made on {m['cpu']} ({m['cpu_capability']}), torch {m['torch']}",
            "",
        ]
        parts = [d] + ([self.heldout] if self.heldout else [])
        header = ("claim", "criterion") + tuple(
            f"seeds {_seed_range(p['seeds'])}" + (" (held out)" if p is self.heldout else "")
            for p in parts
        )
        table = [header]
        for i, c in enumerate(d["claims"]):
            cells = []
            for p in parts:
                row = p["claims"][i] if i < len(p["claims"]) else None
                cells.append(_holds_cell(row, len(p["seeds"])) if row else "-")
            table.append((c["claim"], c["criterion"], *cells))
        widths = [max(len(r[i]) for r in table) for i in range(len(header))]
        rows = ["  ".join(x.ljust(w) for x, w in zip(r, widths)).rstrip() for r in table]
        rows.insert(1, "  ".join("-" * w for w in widths))
        lines += rows + [""] + self._per_seed_lines(parts)
        summary = f"every claim holds at {d['all_hold_at']}/{self.n_seeds} seeds"
        if self.heldout:
            h = self.heldout
            summary += (
                f" ({_seed_range(d['seeds'])}); at {h['all_hold_at']}/{len(h['seeds'])} "
                f"held-out seeds ({_seed_range(h['seeds'])})"
            )
        lines.append(summary)
        return "\n".join(lines)

    def _per_seed_lines(self, parts: list[dict[str, Any]]) -> list[str]:
        """What was measured at each seed (``per_seed="all"``), or where a claim failed."""
        if self.per_seed == "all":
            lines = ["measured at each seed:"]
            for i, c in enumerate(self.data["claims"]):
                lines.append(f"  {c['claim']}")
                for p in parts:
                    if i < len(p["claims"]):
                        lines += [
                            f"    seed {s}: {v['measured']} ({_verdict(v)})"
                            for s, v in p["claims"][i]["per_seed"].items()
                        ]
            return lines
        lines = []
        for i, c in enumerate(self.data["claims"]):
            failed = [
                f"seed {s}: {v['measured']}"
                + (" (not tested)" if _verdict(v) == NOT_TESTED else "")
                for p in parts
                if i < len(p["claims"])
                for s, v in p["claims"][i]["per_seed"].items()
                if _verdict(v) != "holds"
            ]
            if failed:
                lines += [f"  {c['claim']}", *(f"    {f}" for f in failed)]
        if not lines:
            return []
        d = self.data
        show = f"companion claims {d['slug']} --show" + (
            f" --preset {d['preset']}" if d["preset"] != "notebook" else ""
        )
        return [f"where a claim did not hold (every seed: `{show}`):"] + lines


def _holds_cell(row: dict, n: int) -> str:
    text = f"{row['holds_at']}/{n} seeds"
    untested = row.get("not_tested_at", 0)
    return text + (f" ({untested} not tested)" if untested else "")


def _verdict(v: dict) -> str:
    if not v.get("premise_ok", True):
        return NOT_TESTED
    return "holds" if v["holds"] else "does not hold"


def _relative(d: dict) -> str:
    path = claims_path(d["slug"], d["preset"], is_heldout(d["seeds"]), Path("data/claims"))
    return path.as_posix()


def _seed_range(seeds: list[int]) -> str:
    if seeds and seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
        return f"{seeds[0]}–{seeds[-1]}"
    return ", ".join(map(str, seeds))


def load_claims(
    slug: str, claims_dir: Path | None = None, preset: str = "notebook", heldout: bool = False
) -> dict[str, Any]:
    path = claims_path(slug, preset, heldout, claims_dir)
    if not path.exists():
        seeds = "5-9" if heldout else ("0-2" if preset == "medium" else "0-4")
        flag = "" if preset in _TOP_LEVEL_PRESETS else f" --preset {preset}"
        raise CompanionError(
            f"no {path}: make it with `companion claims {slug}{flag} --seeds {seeds}`"
            + ("" if heldout or flag else " (or `make claims`)")
        )
    return read_json(path)


def robustness_table(
    slug: str, claims_dir: Path | None = None, preset: str = "notebook", per_seed: str = "failures"
) -> RobustnessTable:
    """The notebook's robustness section: read from the files (the held-out one beside the
    main one when it exists), so it cannot drift from the measurement. ``per_seed`` (one of
    :data:`PER_SEED`) says which seeds' measurements are listed under the table."""
    heldout = claims_path(slug, preset, True, claims_dir)
    return RobustnessTable(
        load_claims(slug, claims_dir, preset),
        read_json(heldout) if heldout.exists() else None,
        per_seed,
    )


def catalog_cell(slug: str, claims_dir: Path | None = None, heldout: bool = False) -> str:
    """The README catalog's entry, e.g. ``5/5 seeds (per claim: 5, 4, 5)``; ``heldout`` reads
    the held-out file instead (``-`` when it was not measured)."""
    try:
        d = load_claims(slug, claims_dir, heldout=heldout)
    except CompanionError:
        return "-" if heldout else "not measured"
    per_row = ", ".join(str(c["holds_at"]) for c in d["claims"])
    return f"{d['all_hold_at']}/{len(d['seeds'])} seeds (per claim: {per_row})"


#: The three answers of :func:`effect_visible` (and ``not measured`` without a claims file).
EFFECT_YES = "yes"
EFFECT_LARGER = "in the stored larger run"
EFFECT_NO = "no"
EFFECT_NOT_MEASURED = "not measured"
#: Rows whose text starts so check the experiment's setting, not the paper's effect.
SETTING_ROWS = ("premise:", "control:")


def effect_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The claims of one claims file that state the paper's effect: those whose text does not
    start with ``premise:`` or ``control:`` (:data:`SETTING_ROWS`: they check the setting) or,
    when a file has only such rows, all of them."""
    rows = [c for c in data["claims"] if not c["claim"].lower().startswith(SETTING_ROWS)]
    return rows or list(data["claims"])


def robust_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The effect rows (:func:`effect_rows`) of one claims file that hold robustly: at
    ``holds_at >= ceil(4 n / 5)`` of the file's ``n`` seeds (4 of 5 seeds, 3 of 3)."""
    need = -(-4 * len(data["seeds"]) // 5)  # ceil(4n/5) in integers
    return [c for c in effect_rows(data) if c["holds_at"] >= need]


def shows_effect(data: dict[str, Any]) -> bool:
    """True when most of a claims file's effect rows (more than half) hold robustly
    (:func:`robust_rows`); a file without seeds shows nothing."""
    return bool(data["seeds"]) and 2 * len(robust_rows(data)) > len(effect_rows(data))


def effect_visible(slug: str, claims_dir: Path | None = None) -> str:
    """Is the paper's effect visible at notebook scale? One of :data:`EFFECT_YES`,
    :data:`EFFECT_LARGER`, :data:`EFFECT_NO` (or :data:`EFFECT_NOT_MEASURED` when the seeds 0-4
    file does not exist), computed from the claims files by this rule:

    * ``yes``: the file of seeds 0-4 (``<slug>.json``) *and* the held-out file of seeds 5-9
      (``heldout/<slug>.json``, which must exist) both show the effect (:func:`shows_effect`:
      more than half of the effect rows hold at >= 4/5 seeds);
    * ``in the stored larger run``: not ``yes``, but the ``medium`` preset's file
      (``medium/<slug>.json``) shows the effect by the same test (>= 3/3 seeds per row);
    * ``no``: otherwise.

    An instructor picks ``yes`` notebooks for a lab that shows the effect, and ``no`` ones for a
    discussion of a claim that does not reproduce at this scale."""
    try:
        main = load_claims(slug, claims_dir)
    except CompanionError:
        return EFFECT_NOT_MEASURED
    heldout = claims_path(slug, heldout=True, claims_dir=claims_dir)
    if heldout.exists() and shows_effect(main) and shows_effect(read_json(heldout)):
        return EFFECT_YES
    medium = claims_path(slug, "medium", claims_dir=claims_dir)
    if medium.exists() and shows_effect(read_json(medium)):
        return EFFECT_LARGER
    return EFFECT_NO
