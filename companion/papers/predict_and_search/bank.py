"""The labelled bank that the notebook and smoke presets read (labelling is the slow part).

``python -m companion.papers.predict_and_search.bank`` generates ``N_INSTANCES`` maximum
independent set instances (``make_independent_set(N_VARS, EDGE_P)``, seed 2023), labels each with
a pool of ``POOL_SIZE`` solutions from HiGHS with no-good cuts (``LABEL_NODES`` nodes per solve)
and writes ``data/predict_and_search/bank.json`` with the command, the versions and the date.
Each seed of a run draws its own split of the bank. ``--part i/k`` labels every k-th instance
(for parallel processes), ``--merge k`` joins the parts.
"""

from __future__ import annotations

import datetime
import platform
import sys
import time
from pathlib import Path

import numpy as np
import scipy

from companion.core import results as _results
from companion.papers.predict_and_search.method import Instance, solution_pool

BANK = Path(__file__).resolve().parents[3] / "data" / "predict_and_search" / "bank.json"
N_INSTANCES, N_VARS, EDGE_P, POOL_SIZE, LABEL_NODES = 64, 80, 0.1, 3, 200


def instances(n: int = N_INSTANCES) -> list[Instance]:
    from companion.papers.predict_and_search.experiment import make_independent_set

    rng = np.random.default_rng(2023)
    return [make_independent_set(N_VARS, EDGE_P, rng, f"mis{i}") for i in range(n)]


def provenance(seconds: float) -> dict:
    return {
        "command": "python -m companion.papers.predict_and_search.bank",
        "generator": f"make_independent_set(n={N_VARS}, p={EDGE_P}), rng seed 2023",
        "labels": f"solution_pool(size={POOL_SIZE}, node_limit={LABEL_NODES}), HiGHS via "
        f"scipy {scipy.__version__}",
        "date": datetime.date.today().isoformat(),
        "machine": platform.machine(),
        "cpu_seconds": round(seconds),
    }


def build(path: Path = BANK, n: int = N_INSTANCES, part: int = 0, parts: int = 1) -> Path:
    start = time.process_time()
    items = {}
    for i, inst in enumerate(instances(n)):
        if i % parts != part:
            continue
        xs, objs = solution_pool(inst, POOL_SIZE, LABEL_NODES)
        items[str(i)] = {"pool": xs.astype(int).tolist(), "objs": objs.tolist()}
        print(i, objs, f"{time.process_time() - start:.0f} CPU s", flush=True)
    data = {"provenance": provenance(time.process_time() - start), "instances": items}
    path.parent.mkdir(parents=True, exist_ok=True)
    _results.write_json(path, data)
    return path


def merge(parts: int, path: Path = BANK) -> Path:
    items, seconds = {}, 0.0
    for p in range(parts):
        d = _results.read_json(path.with_suffix(f".part{p}.json"))
        items.update(d["instances"])
        seconds += d["provenance"]["cpu_seconds"]
    prov = provenance(seconds)
    prov["command"] += f" --part i/{parts} (i = 0..{parts - 1}), then --merge {parts}"
    data = {"provenance": prov,
            "instances": [items[str(i)] for i in range(len(items))]}  # fmt: skip
    _results.write_json(path, data)
    return path


def load(path: Path = BANK) -> tuple[list[Instance], list[list], list[list]]:
    """The instances (regenerated from the seed: the bank stores only the labels), the pools and
    their objectives."""
    data = _results.read_json(path)
    labels = data["instances"]
    insts = instances(len(labels))
    return insts, [it["pool"] for it in labels], [it["objs"] for it in labels]


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--part":
        i, k = map(int, sys.argv[2].split("/"))
        build(BANK.with_suffix(f".part{i}.json"), part=i, parts=k)
    elif len(sys.argv) > 2 and sys.argv[1] == "--merge":
        merge(int(sys.argv[2]))
    else:
        build()
