"""A minimal reader and writer of (free) MPS files for binary MILPs, the format the official code
reads through Gurobi or SCIP. Supported: one objective row (``N``), ``L`` and ``G`` rows (``G``
rows are negated to ``≤``), ``COLUMNS`` inside ``MARKER INTORG``/``INTEND``, ``RHS`` and the bounds
``BV`` or ``UP 1`` (every column must be binary: Predict-and-Search predicts binaries)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from companion.errors import CompanionError
from companion.papers.predict_and_search.method import Instance


def write_mps(inst: Instance, path: str | Path) -> Path:
    """``inst`` as a free-format MPS file (rows ``R0..``, columns ``x0..``, all ``BV``)."""
    path = Path(path)
    m, n = inst.A.shape
    lines = [f"NAME {inst.name or path.stem}", "ROWS", " N OBJ"]
    lines += [f" L R{i}" for i in range(m)]
    lines += ["COLUMNS", " MARKER 'MARKER' 'INTORG'"]
    for j in range(n):
        lines.append(f" x{j} OBJ {float(inst.c[j])!r}")
        for i in np.flatnonzero(inst.A[:, j]):
            lines.append(f" x{j} R{i} {float(inst.A[i, j])!r}")
    lines += [" MARKER 'MARKER' 'INTEND'", "RHS"]
    lines += [f" RHS R{i} {float(inst.b[i])!r}" for i in range(m)]
    lines += ["BOUNDS"] + [f" BV BND x{j}" for j in range(n)] + ["ENDATA", ""]
    path.write_text("\n".join(lines))
    return path


def read_mps(path: str | Path) -> Instance:
    """An :class:`Instance` from a free-format MPS file (columns in file order)."""
    path = Path(path)
    section, rows, sense, cols = None, [], {}, {}
    entries, rhs, upper = [], {}, {}
    for raw in path.read_text().splitlines():
        if not raw.strip() or raw.startswith("*"):
            continue
        if not raw[0].isspace():
            section = raw.split()[0].upper()
            continue
        tok = raw.split()
        if section == "ROWS":
            kind, name = tok[0].upper(), tok[1]
            if kind not in ("N", "L", "G"):
                raise CompanionError(f"{path.name}: row type {kind} is not supported (N, L, G)")
            sense[name] = kind
            if kind != "N":
                rows.append(name)
        elif section == "COLUMNS":
            if "'MARKER'" in tok:
                continue
            col = tok[0]
            cols.setdefault(col, len(cols))
            for name, value in zip(tok[1::2], tok[2::2]):
                entries.append((name, col, float(value)))
        elif section == "RHS":
            for name, value in zip(tok[1::2], tok[2::2]):
                rhs[name] = float(value)
        elif section == "BOUNDS":
            kind, col = tok[0].upper(), tok[2]
            if kind == "BV" or (kind == "UP" and float(tok[3]) == 1.0):
                upper[col] = 1.0
            else:
                raise CompanionError(f"{path.name}: bound {kind} on {col}: only binaries")
    missing = [c for c in cols if c not in upper]
    if missing:
        raise CompanionError(f"{path.name}: columns without a binary bound: {missing[:3]}")
    row_index = {r: i for i, r in enumerate(rows)}
    c, A = np.zeros(len(cols)), np.zeros((len(rows), len(cols)))
    for name, col, value in entries:
        if sense[name] == "N":
            c[cols[col]] = value
        else:
            A[row_index[name], cols[col]] = value
    b = np.array([rhs.get(r, 0.0) for r in rows])
    flip = np.array([sense[r] == "G" for r in rows], dtype=bool)
    A[flip], b[flip] = -A[flip], -b[flip]
    return Instance(c=c, A=A, b=b, name=path.stem)


def read_folder(folder: str | Path) -> list[Instance]:
    """Every ``*.mps`` file of ``folder``, sorted by name."""
    files = sorted(Path(folder).glob("*.mps"))
    if not files:
        raise CompanionError(f"no .mps files in {folder}")
    return [read_mps(f) for f in files]
