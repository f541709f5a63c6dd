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
    from gcntrain.data.store import str_attr

    return str_attr(f.attrs, name, path)


def read_partition(
    path: str | os.PathLike,
    graph_hash: str | None = None,
    *,
    n: int | None = None,
    nnz: int | None = None,
) -> PartitionResult:
    """Read a partition file; with `graph_hash`, check it was computed for that graph.

    Parameters
    ----------
    path : path-like
        The partition file.
    graph_hash : str, optional
        Content hash of the graph the partition must belong to.
    n, nnz : int, optional
        The graph's node and stored-entry counts: each dataset's declared shape is checked
        against them (and against the ``parts`` attribute) before anything is read, so a few
        KB declaring 1e11 entries is one line, not minutes of reading and all memory.

    Raises
    ------
    InputError
        Missing file, or a graph hash that does not match.
    FormatError
        Not a readable gcntrain partition file (damaged HDF5 metadata or data included: every
        h5py error while reading names the file).
    """
    from gcntrain.data.store import open_h5

    spath = str(path)
    if not Path(path).is_file():
        raise InputError(f"partition file {spath} does not exist")
    with open_h5(path, "partition file") as f:
        result = _read(f, spath, graph_hash, n, nnz)
    _validate(result, spath)
    return result


def _read(f, spath: str, graph_hash: str | None, n: int | None, nnz: int | None):
    """The body of `read_partition` inside the open file (h5py errors map to `FormatError`
    in `open_h5`; the attributes' and datasets' own oddities are mapped here)."""
    from gcntrain.data.store import int_attr, read_dataset

    fmt = f.attrs.get("format")
    fmt = fmt.decode("utf-8", "replace") if isinstance(fmt, bytes) else fmt
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
    version = int_attr(f.attrs, "format_version", spath, default=-1)
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
    parts = int_attr(f.attrs, "parts", spath, default=0)
    if parts < 1:
        raise FormatError(f"attribute 'parts' must be >= 1 (got {parts})", spath)
    try:
        seed = int(f.attrs.get("seed", 0))
        seconds = float(f.attrs.get("seconds", 0.0))
    except (TypeError, ValueError):
        raise FormatError("attribute 'seed' or 'seconds' is not a number", spath) from None
    result = PartitionResult(
        method=_attr_str(f, "method", spath),
        parts=parts,
        params=params,
        seed=seed,
        graph_content_hash=stored,
        seconds=seconds,
    )
    if "grid" in f.attrs:
        grid = np.asarray(f.attrs["grid"])
        if grid.shape != (2,) or grid.dtype.kind not in "iu":
            raise FormatError(f"attribute 'grid' must be two integers (got {grid!r})", spath)
        result.grid = (int(grid[0]), int(grid[1]))
    _check_shapes(f, spath, parts, n, nnz)
    for name in _ARRAYS:
        if name in f:
            setattr(result, name, np.asarray(read_dataset(f, name, spath), dtype=np.int64))
    if "mvc" in f:
        g = f["mvc"]
        result.mvc = {k: np.asarray(read_dataset(g, k, spath)) for k in MVC_ARRAYS if k in g}
    return result


def _check_shapes(f, spath: str, parts: int, n: int | None, nnz: int | None) -> None:
    """Before any dataset is read: each is a 1-D integer dataset whose declared length fits
    the graph's `n` and `nnz` (when given; else the file's own per-node arrays) and the
    ``parts`` attribute."""
    import h5py

    def dataset(group, name):
        ds = group.get(name)
        if ds is None:
            return None
        if not isinstance(ds, h5py.Dataset):
            raise FormatError(f"'{name}' is not a dataset", spath)
        if ds.ndim != 1 or ds.dtype.kind not in "iu":
            raise FormatError(
                f"dataset {name!r} must be a 1-D integer array (shape {ds.shape}, "
                f"dtype {ds.dtype})",
                spath,
            )
        return ds

    sets = {name: dataset(f, name) for name in _ARRAYS}
    per_node = [name for name in ("part", "root", "row_perm", "col_perm") if sets[name]]
    if n is None and per_node:
        n = int(sets[per_node[0]].shape[0])
    for name in per_node:
        if n is not None and sets[name].shape[0] != n:
            raise FormatError(
                f"dataset {name!r} has {sets[name].shape[0]:,} entries but the graph has "
                f"{n:,} nodes",
                spath,
            )
    if n is None:  # no per-node array: the layout check names what is missing
        n = 0
    most_entries = n * n if nnz is None else nnz
    limits = {
        "replica_ptr": (n + 1, n + 1),
        "replica_parts": (0, n * min(parts, n + 1)),
        "edge_part": (0 if nnz is None else nnz, most_entries),
    }
    for name, (least, most) in limits.items():
        ds = sets[name]
        if ds is None:
            continue
        size = int(ds.shape[0])
        if name == "edge_part" and nnz is not None and size != nnz:
            raise FormatError(
                f"vertex cut assigns {size:,} entries but the graph stores {nnz:,}", spath
            )
        if not least <= size <= most:
            raise FormatError(
                f"dataset {name!r} declares {size:,} entries where {n:,} nodes and "
                f"{parts:,} parts allow {least:,} to {most:,}",
                spath,
            )
    if "mvc" in f:
        g = f["mvc"]
        if not isinstance(g, h5py.Group):
            raise FormatError("'mvc' is not a group", spath)
        for name in MVC_ARRAYS:
            ds = g.get(name)
            if ds is None:
                continue
            if not isinstance(ds, h5py.Dataset) or ds.ndim != 1:
                raise FormatError(f"'mvc/{name}' must be a 1-D dataset", spath)
            most = most_entries if name == "edge_mode" else parts * parts
            if ds.shape[0] > most:
                raise FormatError(
                    f"dataset 'mvc/{name}' declares {ds.shape[0]:,} entries, more than {most:,}",
                    spath,
                )


def read_report(path: str | os.PathLike) -> dict | None:
    """The JSON report stored with a partition file, or None.

    Raises
    ------
    InputError
        Missing file.
    FormatError
        Not readable as HDF5, or a report that is not JSON.
    """
    from gcntrain.data.store import open_h5

    spath = str(path)
    if not Path(path).is_file():
        raise InputError(f"partition file {spath} does not exist")
    with open_h5(path, "partition file") as f:
        if "report" not in f.attrs:
            return None
        text = _attr_str(f, "report", spath)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise FormatError("attribute 'report' is not valid JSON", spath) from None


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
    n: int | None = None,
) -> tuple[np.ndarray, np.ndarray, int]:
    """(edge_part, root, parts) of a vertex-cut partition file of the graph with content hash
    `graph_hash`, `nnz` stored entries and `n` nodes (when given), holding `parts` parts when
    given (`parts_label` names where that number comes from); `InputError` (one line)
    otherwise."""
    spath = str(path)
    res = read_partition(path, graph_hash or None, n=n, nnz=nnz)
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
