"""The one display layer: human text or a single JSON object, printed by rank 0 only."""

from __future__ import annotations

import sys
from collections.abc import Callable

from gcntrain.job.progress import count, info, is_printer, optional  # noqa: F401 (shared)
from gcntrain.jsonutil import to_json


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


def grid_choice(search: list[dict]) -> tuple[str, str]:
    """The ``--grid auto`` row of a summary: the chosen grid and the runner-up."""
    ok = [r for r in search if "error" not in r]

    def one(r):
        return f"{r['grid']} ({r['volume_max'] / 1e6:.3f} MB/epoch max per rank)"

    text = one(ok[0]) + (f"; runner-up {one(ok[1])}" if len(ok) > 1 else "; no other grid")
    return ("grid auto", text)


def grid_ranking(search: list[dict]) -> str:
    """Every planned grid, best first (volume: bytes sent + received per epoch, max rank)."""
    lines = [
        "grid search (least volume first; volume: bytes sent + received per epoch, busiest rank):",
        "  rank  grid        volume max MB  messages max",
    ]
    ok = [r for r in search if "error" not in r]
    for k, r in enumerate(ok, 1):
        lines.append(
            f"  {k:4d}  {r['grid']:<10s}  {r['volume_max'] / 1e6:13.3f}  {r['messages_max']:12d}"
        )
    lines += [
        f"     -  {r['grid']:<10s}  not possible: {r['error']}" for r in search if "error" in r
    ]
    return "\n".join(lines)


def _ms(x: float) -> str:
    """Seconds `x` in milliseconds: three decimals, or four significant digits with an
    exponent where that would run past a million (a profile's absurd rate must not print a
    300-digit time)."""
    ms = x * 1e3
    return f"{ms:.3f} ms" if abs(ms) < 1e6 else f"{ms:.4g} ms"


def time_rows(s: dict) -> list[tuple[str, str]]:
    """The predicted-time rows of a `simulate` summary (`gcntrain.simulate.timing`)."""
    b = s["breakdown"]
    comp = ", ".join(f"{k} {_ms(v)}" for k, v in b["compute_parts"].items() if v > 0)
    comm = ", ".join(f"{k} {_ms(v)}" for k, v in b["comm_parts"].items())
    r = s["rank_epoch_seconds"]
    return [
        (
            "machine",
            f"{s['machine']}: {s['nodes']} nodes x {s['ranks_per_node']} ranks per node"
            + (f" ({s['network']})" if s.get("network", "none") != "none" else ""),
        ),
        ("epoch (predicted)", f"{_ms(s['epoch_seconds'])} (critical rank {b['critical_rank']})"),
        (
            "  breakdown",
            f"compute {_ms(b['compute'])} ({comp}); comm {_ms(b['comm'])}"
            + (f" ({comm})" if comm else "")
            + f"; wait {_ms(b['wait'])}",
        ),
        (
            "  per rank",
            f"min {_ms(r['min'])}, median {_ms(r['median'])}, max {_ms(r['max'])}",
        ),
    ]


def sweep_text(s: dict, top: int) -> str:
    """`simulate --sweep`: the header, the best `top` configurations, the refused count."""
    rec = s["recommended"]
    mem = s["node_memory_bytes"]
    head = rows_table(
        [
            (
                "graph",
                f"{s['graph']} ({s['num_nodes']} nodes, {s['nnz']} stored adjacency entries)",
            ),
            (
                "machine",
                f"{s['machine']}: {count(s['ranks'], 'rank')} = {count(s['nodes'], 'node')} x "
                f"{s['ranks_per_node']} ranks per node"
                + (f", {mem / 2**30:.0f} GiB per node" if mem else ""),
            ),
            (
                "configurations",
                f"{s['configurations']} ({len(s['refused'])} refused by their plan)",
            ),
            (
                "sweep time",
                f"{s['sweep_seconds']:.1f} s: partitioning {s['partition_seconds']:.1f} s, "
                f"planning and pricing {s['plan_seconds']:.1f} s",
            ),
            (
                "recommended",
                "no exact configuration fits"
                if rec is None
                else f"{rec['label']}: {_ms(rec['epoch_seconds'])}",
            ),
        ]
    )
    lines = [
        "",
        "  rank  epoch ms  compute    comm    wait  sent MB max  memory MB  exact  fits  "
        "configuration",
    ]
    for k, r in enumerate(s["ranking"][:top], 1):
        lines.append(
            f"  {k:4d}  {r['epoch_seconds'] * 1e3:8.3f}  {r['compute_seconds'] * 1e3:7.3f} "
            f"{r['comm_seconds'] * 1e3:7.3f} {r['wait_seconds'] * 1e3:7.3f}  "
            f"{r['bytes_sent_max'] / 1e6:11.3f}  {r['memory_bytes_max'] / 1e6:9.1f}  "
            f"{'yes' if r['exact'] else 'no':>5s}  {'yes' if r['fits'] else 'no':>4s}  "
            f"{r['label']}"
        )
    more = len(s["ranking"]) - top
    if more > 0:
        lines.append(f"  ... {more} more (--top N, or --json for all)")
    for r in s["refused"][:3]:
        lines.append(f"  refused: {r['scheme']} {r['options']} [{r['partition']}]: {r['error']}")
    if len(s["refused"]) > 3:
        lines.append(f"  ... {len(s['refused']) - 3} more refused (--json lists them)")
    return head + "\n".join(lines)
