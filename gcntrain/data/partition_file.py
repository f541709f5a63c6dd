"""Partition files: one HDF5 file per partition, checked against the graph's content hash.

Layout (``format = "gcntrain-partition"``, ``format_version = 1``):

* root attributes: ``format``, ``format_version``, ``method``, ``parts`` (also as
  ``num_parts``), ``params`` (JSON),
  ``seed``, ``graph_content_hash``, ``seconds``, optionally ``report`` (JSON) and ``grid``;
* a vertex partition: dataset ``part`` (int64, n);
* a vertex cut: ``edge_part`` (int64, nnz in CSR order), ``replica_ptr`` (int64, n + 1),
  ``replica_parts`` (int64), ``root`` (int64, n; -1 for vertices without edges);
* a 2D permutation: ``row_perm``, ``col_perm`` (int64, n) and attribute ``grid`` (r, c);
* optional group ``mvc``: ``edge_mode`` (int8, nnz: -1 local, 0 pre, 1 post), ``pair_src``,
  ``pair_dst``, ``pre_volume``, ``post_volume``, ``hybrid_volume``.

Other tools (the shard command) read ``part`` and ``graph_content_hash`` directly.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from gcntrain.errors import FormatError, InputError
from gcntrain.jsonutil import to_json
from gcntrain.partition.result import PartitionResult

FORMAT = "gcntrain-partition"
FORMAT_VERSION = 1

_ARRAYS = ("part", "edge_part", "replica_ptr", "replica_parts", "root", "row_perm", "col_perm")
MVC_ARRAYS = ("edge_mode", "pair_src", "pair_dst", "pre_volume", "post_volume", "hybrid_volume")


def write_partition(
    path: str | os.PathLike, result: PartitionResult, report: dict | None = None
) -> None:
    """Write `result` (and an optional JSON-serialisable report) to `path` atomically.

    The file is written to a temporary name in the same directory and renamed when complete.
    """
    from gcntrain.data.store import atomic_h5

    path = Path(path)
    if not path.parent.is_dir():
        raise InputError(f"output directory {path.parent} does not exist")
    with atomic_h5(path) as f:
        f.attrs["format"] = FORMAT
        f.attrs["format_version"] = FORMAT_VERSION
        f.attrs["method"] = result.method
        f.attrs["parts"] = int(result.parts)
        f.attrs["num_parts"] = int(result.parts)  # the name the shard command reads
        f.attrs["params"] = to_json(result.params)
        f.attrs["seed"] = int(result.seed)
        f.attrs["graph_content_hash"] = result.graph_content_hash
        f.attrs["seconds"] = float(result.seconds)
        if result.grid is not None:
            f.attrs["grid"] = np.asarray(result.grid, dtype=np.int64)
        if report is not None:
            f.attrs["report"] = to_json(report)
        for name in _ARRAYS:
            a = getattr(result, name)
            if a is not None:
                f.create_dataset(name, data=np.asarray(a, dtype=np.int64))
        if result.mvc is not None:
            g = f.create_group("mvc")
            for name in MVC_ARRAYS:
                if name in result.mvc:
                    g.create_dataset(name, data=np.asarray(result.mvc[name]))


def _attr_str(f, name: str, path: str) -> str:
    if name not in f.attrs:
        raise FormatError(f"missing attribute {name!r}", path)
    v = f.attrs[name]
    return v.decode() if isinstance(v, bytes) else str(v)


def read_partition(path: str | os.PathLike, graph_hash: str | None = None) -> PartitionResult:
    """Read a partition file; with `graph_hash`, check it was computed for that graph.

    Raises
    ------
    InputError
        Missing file, or a graph hash that does not match.
    FormatError
        Not a readable gcntrain partition file.
    """
    import h5py

    spath = str(path)
    if not Path(path).is_file():
        raise InputError(f"partition file {spath} does not exist")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise FormatError(f"cannot open as HDF5 ({e})", spath) from None
    with f:
        fmt = f.attrs.get("format")
        fmt = fmt.decode() if isinstance(fmt, bytes) else fmt
        if fmt != FORMAT:
            what = {
                "gcntrain-graph": "a gcntrain graph",
                None: "an HDF5 file without a 'format' attribute",
            }.get(fmt, f"a '{fmt}' file")
            raise FormatError(
                f"is {what}, not a partition file (--partition takes block, random, metis, "
                "hypergraph, libra or a file written by `gcntrain partition`)",
                spath,
            )
        version = int(f.attrs.get("format_version", -1))
        if version != FORMAT_VERSION:
            raise FormatError(
                f"unsupported partition format version {version} (expected {FORMAT_VERSION})",
                spath,
            )
        stored = _attr_str(f, "graph_content_hash", spath)
        if graph_hash is not None and stored != graph_hash:
            raise InputError(
                f"partition file {spath} was computed for a different graph "
                f"(hash {stored[:12]}... != {graph_hash[:12]}...)"
            )
        try:
            params = json.loads(_attr_str(f, "params", spath))
        except json.JSONDecodeError:
            raise FormatError("attribute 'params' is not valid JSON", spath) from None
        result = PartitionResult(
            method=_attr_str(f, "method", spath),
            parts=int(f.attrs["parts"]) if "parts" in f.attrs else 0,
            params=params,
            seed=int(f.attrs.get("seed", 0)),
            graph_content_hash=stored,
            seconds=float(f.attrs.get("seconds", 0.0)),
        )
        if "grid" in f.attrs:
            r, c = (int(x) for x in f.attrs["grid"])
            result.grid = (r, c)
        for name in _ARRAYS:
            if name in f:
                setattr(result, name, np.asarray(f[name][...], dtype=np.int64))
        if "mvc" in f:
            result.mvc = {k: np.asarray(f["mvc"][k][...]) for k in f["mvc"]}
    _validate(result, spath)
    return result


def read_report(path: str | os.PathLike) -> dict | None:
    """The JSON report stored with a partition file, or None."""
    import h5py

    with h5py.File(path, "r") as f:
        if "report" not in f.attrs:
            return None
        return json.loads(_attr_str(f, "report", str(path)))


def _validate(r: PartitionResult, path: str) -> None:
    if r.parts < 1:
        raise FormatError(f"attribute 'parts' must be >= 1 (got {r.parts})", path)
    layouts = [r.part is not None, r.edge_part is not None, r.row_perm is not None]
    if sum(layouts) != 1:
        raise FormatError("expected exactly one of 'part', 'edge_part', 'row_perm'", path)
    for name in ("part", "edge_part", "replica_parts"):
        a = getattr(r, name)
        if a is not None and a.size and (a.min() < 0 or a.max() >= r.parts):
            raise FormatError(f"dataset {name!r} has part ids outside [0, {r.parts})", path)
    if r.edge_part is not None:
        if r.replica_ptr is None or r.replica_parts is None or r.root is None:
            raise FormatError("vertex cut needs 'replica_ptr', 'replica_parts' and 'root'", path)
        ptr = r.replica_ptr
        if ptr.size != r.root.size + 1 or ptr[0] != 0 or ptr[-1] != r.replica_parts.size:
            raise FormatError("'replica_ptr' does not match 'root' and 'replica_parts'", path)
        if np.any(np.diff(ptr) < 0):
            raise FormatError("'replica_ptr' is not monotone", path)
    if r.row_perm is not None:
        for name in ("row_perm", "col_perm"):
            a = getattr(r, name)
            if a is None or not np.array_equal(np.sort(a), np.arange(r.row_perm.size)):
                raise FormatError(f"dataset {name!r} is not a permutation", path)


def read_vertex_cut(
    path: str | os.PathLike,
    graph_hash: str | None,
    nnz: int,
    parts: int | None = None,
    parts_label: str = "--parts",
) -> tuple[np.ndarray, np.ndarray, int]:
    """(edge_part, root, parts) of a vertex-cut partition file of the graph with content hash
    `graph_hash` and `nnz` stored entries, holding `parts` parts when given (`parts_label`
    names where that number comes from); `InputError` (one line) otherwise."""
    spath = str(path)
    res = read_partition(path, graph_hash or None)
    if res.edge_part is None:
        kind = "vertex partition" if res.part is not None else "2D permutation"
        raise InputError(
            f"holds a {res.method} {kind}, not a vertex cut (write one with "
            "`gcntrain partition -m libra`)",
            spath,
        )
    if res.edge_part.shape[0] != nnz:
        raise InputError(
            f"vertex cut assigns {res.edge_part.shape[0]} entries but the graph stores {nnz}",
            spath,
        )
    if parts is not None and res.parts != parts:
        raise InputError(f"vertex cut has {res.parts} parts but {parts_label} is {parts}", spath)
    return res.edge_part, res.root, int(res.parts)
