"""The one display layer: human text or a single JSON object, printed by rank 0 only."""

from __future__ import annotations

import sys
from collections.abc import Callable

from gcntrain.comm.env import launcher_rank
from gcntrain.jsonutil import to_json


def is_printer(rank: int | None = None) -> bool:
    return (launcher_rank() if rank is None else rank) == 0


def emit(
    obj: dict, as_json: bool, human: Callable[[dict], str] | None = None, rank: int | None = None
) -> None:
    """Print `obj` as one JSON line (``--json``) or as `human(obj)` text; rank 0 only."""
    if not is_printer(rank):
        return
    if as_json:
        sys.stdout.write(to_json(obj) + "\n")
    else:
        sys.stdout.write((human(obj) if human else format_table(obj)) + "\n")
    sys.stdout.flush()


def rows_table(rows: list[tuple[str, str]]) -> str:
    """Aligned ``label  value`` lines (the human summaries of train and simulate)."""
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


def format_table(obj: dict, indent: int = 0) -> str:
    """Aligned `key: value` lines, nested dicts indented."""
    if not obj:
        return ""
    width = max(len(str(k)) for k in obj)
    lines = []
    pad = " " * indent
    for k, v in obj.items():
        if isinstance(v, dict):
            lines.append(f"{pad}{k}:")
            lines.append(format_table(v, indent + 2))
        else:
            if isinstance(v, float):
                v = f"{v:.6g}"
            lines.append(f"{pad}{str(k).ljust(width)}  {v}")
    return "\n".join(lines)


def info(msg: str, rank: int | None = None) -> None:
    """Progress text to stderr (rank 0 only), so stdout stays machine-readable."""
    if is_printer(rank):
        sys.stderr.write(msg + "\n")
        sys.stderr.flush()
