"""Stream a generated graph into a graph file: every array written slice by slice, hashed
as it is written, so memory stays at the structure plus one block of node data.

The file is the one `gcntrain.data.store.write_graph` writes for the same graph: the same
datasets (contiguous, stored dtypes), the same attributes, and `content_hash` by the
definition of `Graph.content_hash` (docs/format.md), computed incrementally.
"""

from __future__ import annotations

import hashlib
import os
import time

import numpy as np

from gcntrain.data.generators.build import BLOCK_ROWS, GeneratedGraph
from gcntrain.data.store import GRAPH_FORMAT, _extra_json, atomic_h5
from gcntrain.data.validate import (
    FORMAT_VERSION,
    validate_features,
    validate_node_data,
)
from gcntrain.errors import FormatError

#: entries of a 1-D array written (and hashed) per slice
SLICE_ENTRIES = 1 << 23


class _HashedWriter:
    """Writes datasets to an open HDF5 file and feeds `Graph.content_hash`'s construction."""

    def __init__(self, f, slice_entries: int) -> None:
        self.f = f
        self.h = hashlib.sha256()
        self.step = max(int(slice_entries), 1)

    def _header(self, name: str, dtype: str, shape: tuple) -> None:
        self.h.update(name.encode())
        self.h.update(dtype.encode() + str(shape).encode())

    def absent(self, name: str) -> None:
        self.h.update(name.encode())
        self.h.update(b"\x00none")

    def ids(self, name: str, a: np.ndarray) -> None:
        """A 1-D id array: stored as is, hashed as int64."""
        self._header(name, "int64", a.shape)
        ds = self.f.create_dataset(name, shape=a.shape, dtype=a.dtype)
        for lo in range(0, a.shape[0], self.step):
            part = a[lo : lo + self.step]
            ds[lo : lo + part.shape[0]] = part
            self.h.update(np.ascontiguousarray(part, dtype=np.int64))

    def array(self, name: str, a: np.ndarray, stored=None) -> None:
        """A 1-D node array, hashed in its own dtype, stored as `stored` (default: same)."""
        self._header(name, str(a.dtype), a.shape)
        ds = self.f.create_dataset(name, shape=a.shape, dtype=stored or a.dtype)
        for lo in range(0, a.shape[0], self.step):
            part = np.ascontiguousarray(a[lo : lo + self.step])
            ds[lo : lo + part.shape[0]] = part if stored is None else part.astype(stored)
            self.h.update(part)

    def rows(self, name: str, n: int, width: int, blocks, where: str) -> None:
        """A float32 (n, width) array from blocks of rows, in order."""
        self._header(name, "float32", (n, width))
        ds = self.f.create_dataset(name, shape=(n, width), dtype=np.float32)
        lo = 0
        for block in blocks:
            block = np.ascontiguousarray(block, dtype=np.float32)
            if block.ndim != 2 or block.shape[1] != width or lo + block.shape[0] > n:
                raise ValueError(f"feature block of shape {block.shape} at row {lo}")
            validate_features(block, block.shape[0], where)
            if block.size:
                ds[lo : lo + block.shape[0]] = block
            self.h.update(block)
            lo += block.shape[0]
        if lo != n:
            raise ValueError(f"feature blocks gave {lo} rows, expected {n}")


def structure_counts(g: GeneratedGraph) -> dict:
    """Checks the structure (rows sorted without repeats, ids in range) in one pass and
    returns its counts: ``self_loops`` and ``undirected_edges`` (distinct pairs {u, v},
    u != v, as `Graph.num_undirected_edges`), without the int64 keys of every entry."""
    from gcntrain.kernels.edges import csr_check, reciprocal_pairs

    where = f"graph '{g.name}'"
    n = g.n
    if g.indptr.dtype != np.int64 or g.indptr.shape != (n + 1,) or g.indptr[0] != 0:
        raise FormatError("indptr must be int64 (n + 1,) starting at 0", where)
    if g.indices.shape != (g.nnz,):
        raise FormatError(f"indices has {g.indices.shape[0]} entries, indptr says {g.nnz}", where)
    bad, loops = csr_check(g.indptr, g.indices, n)
    if bad >= 0:
        raise FormatError(f"row {bad} is not sorted, repeats a column or is out of range", where)
    off = g.nnz - int(loops)
    both = off // 2 if not g.directed else int(reciprocal_pairs(g.indptr, g.indices))
    return {"self_loops": int(loops), "undirected_edges": off - both}


def write_generated(
    path: str | os.PathLike,
    g: GeneratedGraph,
    *,
    block_rows: int = BLOCK_ROWS,
    slice_entries: int = SLICE_ENTRIES,
    counts: dict | None = None,
) -> dict:
    """Write `g` to a graph file (temporary name, then rename), drawing its node data.

    Parameters
    ----------
    path : path-like
        Destination; its parent directory must exist.
    g : GeneratedGraph
        The graph; its node data are drawn here (once).
    block_rows : int
        Node rows of features drawn and written at once (the file does not depend on it).
    slice_entries : int
        Entries of a 1-D array written and hashed at once.
    counts : dict, optional
        `structure_counts(g)` when already known (computed otherwise).

    Returns
    -------
    dict
        ``nodes, nnz, undirected_edges, self_loops, train, val, test, content_hash`` and
        ``seconds_write``.
    """
    t0 = time.perf_counter()
    where = f"graph '{g.name}'"
    counts = counts or structure_counts(g)
    n = g.n
    with atomic_h5(path) as f:
        w = _HashedWriter(f, slice_entries)
        w.ids("indptr", g.indptr)
        w.ids("indices", g.indices)
        w.absent("data")
        blocks, rest = g.node_data(block_rows)
        w.rows("features", n, g.num_features, blocks, where)
        labels, *masks = rest()
        labels = np.asarray(labels, dtype=np.int64)
        masks = [np.asarray(m, dtype=bool) for m in masks]
        names = ("train_mask", "val_mask", "test_mask")
        validate_node_data(
            n, where, labels=labels, num_classes=g.num_classes, **dict(zip(names, masks))
        )
        w.array("labels", labels)
        for name, m in zip(names, masks):
            w.array(name, m, stored=np.uint8)
        chash = w.h.hexdigest()
        a = f.attrs
        a["format"] = GRAPH_FORMAT
        a["format_version"] = FORMAT_VERSION
        a["name"] = g.name
        a["n"] = n
        a["nnz"] = g.nnz
        a["directed"] = np.uint8(g.directed)
        a["self_loops"] = counts["self_loops"]
        a["num_classes"] = -1 if g.num_classes is None else g.num_classes
        a["num_features"] = g.num_features
        a["content_hash"] = chash
        if g.extra:
            a["extra"] = _extra_json(g.extra)
    sizes = [int(np.count_nonzero(m)) for m in masks]
    return {
        "nodes": n,
        "nnz": g.nnz,
        "undirected_edges": counts["undirected_edges"],
        "self_loops": counts["self_loops"],
        "train": sizes[0],
        "val": sizes[1],
        "test": sizes[2],
        "content_hash": chash,
        "seconds_write": time.perf_counter() - t0,
    }
