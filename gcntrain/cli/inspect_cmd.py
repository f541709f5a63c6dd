"""`gcntrain inspect FILE`: validate a graph file or a shard store and print its counts."""

from __future__ import annotations

from pathlib import Path

import click
import numpy as np

from gcntrain.cli.display import emit, format_table
from gcntrain.cli.options import json_option
from gcntrain.data.graph import Graph
from gcntrain.errors import InputError


def degree_stats(indptr: np.ndarray) -> dict:
    """Min/mean/max of stored entries per row (zeros for an empty graph)."""
    deg = np.diff(indptr)
    if not deg.size:
        return {"min": 0, "mean": 0.0, "max": 0}
    return {"min": int(deg.min()), "mean": float(deg.mean()), "max": int(deg.max())}


def inspect_summary(g: Graph) -> dict:
    """Counts of a validated graph, as printed by `inspect` (one flat dict plus `degree`)."""

    def count(mask: np.ndarray | None) -> int | None:
        return None if mask is None else int(np.count_nonzero(mask))

    return {
        "name": g.name,
        "num_nodes": g.n,
        "nnz": g.nnz,
        "num_edges": g.num_undirected_edges(),
        "self_loops": g.self_loop_count(),
        "directed": bool(g.directed),
        "weighted": g.data is not None,
        "num_features": g.num_features,
        "num_classes": g.num_classes,
        "labeled": None if g.labels is None else int(np.count_nonzero(g.labels >= 0)),
        "train": count(g.train_mask),
        "val": count(g.val_mask),
        "test": count(g.test_mask),
        "degree": degree_stats(g.indptr),
        "content_hash": g.content_hash(),
    }


def _imbalance(nnz: list[int]) -> float:
    mean = sum(nnz) / len(nnz) if nnz else 0.0
    return float(max(nnz) / mean) if mean else 1.0


def store_summary(m) -> dict:
    """Store-level fields of a manifest: kind, parts/grid, per-shard rows and nnz (edges: rows
    are the roots, plus clones and the replication factor, mean clones per vertex)."""
    out: dict = {"kind": m.kind}
    if m.kind in ("rows", "edges"):
        out["parts"] = m.num_parts
        out["shards"] = [
            {"id": e["id"], "rows": e["row_stop"] - e["row_start"], "nnz": e["nnz"]}
            for e in m.shards
        ]
        if m.kind == "edges":
            for s, e in zip(out["shards"], m.shards):
                s["clones"] = e["clones"]
            clones = sum(e["clones"] for e in m.shards)
            out["replication_factor"] = round(clones / m.n, 4) if m.n else 1.0
    else:
        out["grid"] = list(m.grid)
        out["permuted"] = {"rows": m.row_perm, "cols": m.col_perm}
        out["shards"] = [
            {
                "block": [e["block_row"], e["block_col"]],
                "rows": e["row_stop"] - e["row_start"],
                "cols": e["col_stop"] - e["col_start"],
                "nnz": e["nnz"],
            }
            for e in m.shards
        ]
    out["nnz_imbalance"] = round(_imbalance([e["nnz"] for e in m.shards]), 4)
    out["source_content_hash"] = m.source_content_hash
    return out


def shard_lines(shards: list[dict]) -> str:
    """Human table of per-shard rows/nnz (and cols or clones; one line per shard)."""
    lines = ["shards:"]
    for s in shards:
        label = f"({s['block'][0]}, {s['block'][1]})" if "block" in s else str(s["id"])
        cols = f"  cols {s['cols']:>10}" if "cols" in s else ""
        cols += f"  clones {s['clones']:>10}" if "clones" in s else ""
        lines.append(f"  {label:>10}  rows {s['rows']:>10}{cols}  nnz {s['nnz']:>12}")
    return "\n".join(lines)


def human_summary(obj: dict) -> str:
    """Aligned key: value lines, then the shard table when present."""
    rest = {k: v for k, v in obj.items() if k != "shards"}
    text = format_table(rest)
    if "shards" in obj:
        text += "\n" + shard_lines(obj["shards"])
    return text


def _is_store(p: Path) -> bool:
    if p.is_dir() or p.suffix == ".json":
        return True
    try:
        with open(p, "rb") as f:
            head = f.read(64).lstrip()
    except OSError:
        return False
    return head.startswith(b"{")


@click.command("inspect")
@click.argument("file", metavar="FILE")
@json_option
def inspect(file: str, as_json: bool) -> None:
    """Validate FILE (a graph .h5, a shard manifest.json or a store directory); print counts.

    A store is validated completely: every shard is read, checked and reassembled.
    """
    p = Path(file)
    if not p.exists():
        raise InputError("no such file or directory", file)
    if _is_store(p):
        from gcntrain.data.shards import assemble, open_manifest

        m = open_manifest(p)
        obj = {"file": file, "type": "shard store"}
        obj.update(inspect_summary(assemble(m)))
        obj.update(store_summary(m))
    else:
        from gcntrain.data.store import read_graph

        obj = {"file": file, "type": "graph"}
        obj.update(inspect_summary(read_graph(p)))
    emit(obj, as_json, human_summary)
