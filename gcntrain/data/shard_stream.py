"""A rows store of a graph file under a block partition, written one shard at a time.

`gcntrain.data.shards.write_row_shards` holds the whole graph (and a renumbered copy of
its adjacency); under a block partition the renumbering is the identity and every shard is
a contiguous slice of the file's rows, so `write_block_row_store` reads the file a shard at a
time: the memory of the row pointers and of one shard, not of the graph.  The file is
validated and its content hash checked first, streamed (`verify_content_hash`, the checks
of `read_graph`); the store is the one `write_row_shards` writes, file for file (the same
arrays, attributes and content hashes).
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from gcntrain.data.shards.layout import MANIFEST_NAME, NODE_NAMES, PERM_NAME
from gcntrain.data.shards.manifest import write_manifest
from gcntrain.data.shards.outdir import atomic_dir
from gcntrain.data.shards.perm import write_perm_file
from gcntrain.data.shards.write import _base_manifest, _StoreFiles
from gcntrain.data.store import (
    index_dtype,
    int_attr,
    open_h5,
    read_dataset,
    str_attr,
    to_mask,
    verify_content_hash,
)

#: the node data as `normalize_graph` stores them (masks: bool)
NODE_DTYPES = {"features": np.float32, "labels": np.int64}


def block_ranges(n: int, parts: int) -> np.ndarray:
    """(parts, 2) [start, stop) of the block partition ``part[u] = floor(u parts / n)``
    (the shard command's), as `part_row_ranges` renumbers it."""
    counts = np.bincount((np.arange(n, dtype=np.int64) * parts) // max(n, 1), minlength=parts)
    stops = np.cumsum(counts.astype(np.int64))
    return np.stack([stops - counts, stops], axis=1)


def write_block_row_store(
    path: str | os.PathLike, parts: int, out_dir: str | os.PathLike, *, overwrite: bool = False
) -> Path:
    """Write the rows store of graph file `path` under the block partition into `parts`
    shards (module docstring); the path of its manifest."""
    where = str(path)
    verify_content_hash(path)
    with open_h5(path, "graph file") as f:
        a = f.attrs
        n = int_attr(a, "n", where)
        ncls = int_attr(a, "num_classes", where, default=-1)
        g = SimpleNamespace(
            name=str_attr(a, "name", where, default=Path(where).stem),
            n=n,
            nnz=int(f["indices"].shape[0]),
            num_features=int(f["features"].shape[1]) if "features" in f else 0,
            num_classes=None if ncls < 0 else ncls,
            directed=bool(int_attr(a, "directed", where, default=0)),
            data=True if "data" in f else None,
        )
        source_hash = str_attr(a, "content_hash", where)
        indptr = np.asarray(read_dataset(f, "indptr", where), dtype=np.int64)
        ranges = block_ranges(n, parts)
        manifest = _base_manifest(g, "rows", source_hash, source_hash)
        manifest.update({"perm_file": PERM_NAME, "num_parts": parts, "shards": []})
        with atomic_dir(out_dir, overwrite) as tmp:
            files = _StoreFiles(tmp, g, "rows", source_hash)
            ident = np.arange(n, dtype=np.int64)
            write_perm_file(tmp / PERM_NAME, n, source_hash, {"perm": ident, "iperm": ident})
            del ident
            for k in range(parts):
                s, e = int(ranges[k, 0]), int(ranges[k, 1])
                arrays = _shard_arrays(f, indptr, s, e, n, where)
                span = {"row_start": s, "row_stop": e, "nnz": int(arrays["indptr"][-1])}
                manifest["shards"].append(files.write(f"shard-{k:05d}.h5", arrays, {"id": k}, span))
            write_manifest(tmp / MANIFEST_NAME, manifest)
    return Path(out_dir) / MANIFEST_NAME


def _shard_arrays(f, indptr: np.ndarray, s: int, e: int, n: int, where: str) -> dict:
    """Rows [s, e) of an open graph file with the dtypes and order of `write_row_shards`."""
    lo, hi = int(indptr[s]), int(indptr[e])
    out = {
        "indptr": indptr[s : e + 1] - lo,
        "indices": np.asarray(f["indices"][lo:hi]).astype(index_dtype(n), copy=False),
        "data": np.asarray(f["data"][lo:hi], dtype=np.float32) if "data" in f else None,
        "orig_ids": np.arange(s, e, dtype=np.int64),
    }
    for name in NODE_NAMES:
        if name not in f:
            out[name] = None
        elif name in NODE_DTYPES:
            out[name] = np.ascontiguousarray(f[name][s:e], dtype=NODE_DTYPES[name])
        else:
            out[name] = to_mask(np.asarray(f[name][s:e]))
    return out
