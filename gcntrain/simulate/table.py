"""The per-rank table: bytes and messages of every rank and phase, as CSV.

`gcntrain train --per-rank FILE` writes the measured table, `gcntrain simulate --per-rank
FILE` the planned one, in the same format, so that the two can be compared line by line:
one line per (rank, phase) with any traffic, sorted by rank then phase, covering the whole run
up to the end of training (setup, every epoch, the final evaluation; not the job report).
"""

from __future__ import annotations

import numpy as np

from gcntrain.errors import InputError

HEADER = "rank,phase,bytes_sent,bytes_recv,msgs_sent,msgs_recv"


def table_text(phases: dict[str, np.ndarray]) -> str:
    """CSV text of {phase: int64 (P, 4)}."""
    lines = [HEADER]
    names = sorted(phases)
    if names:
        P = phases[names[0]].shape[0]
        for r in range(P):
            for k in names:
                v = phases[k][r]
                if v.any():
                    lines.append(f"{r},{k},{v[0]},{v[1]},{v[2]},{v[3]}")
    return "\n".join(lines) + "\n"


def write_table(path, phases: dict[str, np.ndarray]) -> None:
    """Write `table_text` atomically (temporary name, then rename)."""
    from pathlib import Path

    from gcntrain.data.atomic import write_text

    write_text(Path(path), table_text(phases))


def read_table(path) -> dict[tuple[int, str], tuple[int, int, int, int]]:
    """{(rank, phase): (bytes sent, bytes received, messages sent, messages received)}."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if not lines or lines[0] != HEADER:
        raise InputError(f"not a per-rank table (expected the header {HEADER!r})", str(path))
    out = {}
    for ln in lines[1:]:
        r, k, a, b, c, d = ln.split(",")
        out[(int(r), k)] = (int(a), int(b), int(c), int(d))
    return out
