"""Writers of the store kinds: 1D row shards, 2D r x c blocks and vertex-cut shards
(docs/format.md)."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gcntrain.data.graph import Graph
from gcntrain.data.shards.edges import edge_layout
from gcntrain.data.shards.hashing import hash_arrays
from gcntrain.data.shards.layout import (
    MANIFEST_NAME,
    NODE_NAMES,
    NODES_FORMAT,
    PERM_NAME,
    SHARD_FORMAT,
    STORE_FORMAT,
)
from gcntrain.data.shards.manifest import write_manifest
from gcntrain.data.shards.outdir import atomic_dir
from gcntrain.data.shards.perm import write_perm_file
from gcntrain.data.shards.reorder import (
    even_ranges,
    inverse_permutation,
    part_row_ranges,
    permute_csr,
    row_slice,
    row_sort_order,
    sort_rows_csr,
    split_columns,
)
from gcntrain.data.store import (
    atomic_h5,
    index_dtype,
    normalize_graph,
    validate_graph,
    write_dataset,
)
from gcntrain.data.validate import FORMAT_VERSION, validate_partition, validate_permutation
from gcntrain.errors import InputError
from gcntrain.partition.cut_layout import root_of

#: The file attribute that repeats a manifest entry's field, where the names differ.
_ATTR_NAME = {"id": "shard"}


def write_row_shards(
    graph: Graph,
    part: np.ndarray,
    out_dir: str | os.PathLike,
    *,
    num_parts: int | None = None,
    overwrite: bool = False,
) -> Path:
    """Write a 1D row-block store of `graph` under partition vector `part`.

    Parameters
    ----------
    graph : Graph
        The graph (validated first).
    part : int array (n,)
        Part of each node; parts are renumbered stably, part by part (docs/format.md).
    out_dir : path-like
        Destination directory (created; written under a temporary name, then renamed).
    num_parts : int, optional
        Number of parts P (default ``max(part) + 1``); parts may be empty.
    overwrite : bool
        Replace an existing shard store at `out_dir`.

    Returns
    -------
    Path
        Path of `manifest.json`.
    """
    g, source_hash = _prepare(graph)
    n = g.n
    part = np.asarray(part)
    if num_parts is None:
        num_parts = int(part.max()) + 1 if part.size else 1
    validate_partition(part, n, num_parts, "partition vector")
    perm, ranges = part_row_ranges(part, num_parts)
    iperm = inverse_permutation(perm)
    b_ptr, b_idx, b_data = permute_csr(g.indptr, g.indices, g.data, perm, iperm)
    b_idx = b_idx.astype(index_dtype(n))
    manifest = _base_manifest(g, "rows", source_hash, source_hash)
    manifest.update({"perm_file": PERM_NAME, "num_parts": num_parts, "shards": []})
    with atomic_dir(out_dir, overwrite) as tmp:
        files = _StoreFiles(tmp, g, "rows", source_hash)
        write_perm_file(tmp / PERM_NAME, n, source_hash, {"perm": perm, "iperm": iperm})
        for k in range(num_parts):
            s, e = int(ranges[k, 0]), int(ranges[k, 1])
            ptr, idx, vals = row_slice(b_ptr, b_idx, b_data, s, e)
            arrays = {"indptr": ptr, "indices": idx, "data": vals, **_node_arrays(g, perm[s:e])}
            span = {"row_start": s, "row_stop": e, "nnz": int(ptr[-1])}
            manifest["shards"].append(files.write(f"shard-{k:05d}.h5", arrays, {"id": k}, span))
        write_manifest(tmp / MANIFEST_NAME, manifest)
    return Path(out_dir) / MANIFEST_NAME


def write_block_shards(
    graph: Graph,
    r: int,
    c: int,
    out_dir: str | os.PathLike,
    row_perm: np.ndarray | None = None,
    col_perm: np.ndarray | None = None,
    *,
    overwrite: bool = False,
) -> Path:
    """Write an r x c 2D block store of `graph` (Plexus-style).

    Parameters
    ----------
    graph : Graph
        The graph (validated first).
    r, c : int
        Grid shape (block rows, block columns), each >= 1.
    out_dir : path-like
        Destination directory (temporary name, then renamed).
    row_perm, col_perm : int arrays (n,), optional
        New -> original id of rows and of columns (None: identity). Block (i, j) holds
        ``A[row_perm[rows_i]][:, col_perm[cols_j]]``.
    overwrite : bool
        Replace an existing shard store at `out_dir`.

    Returns
    -------
    Path
        Path of `manifest.json`.
    """
    if int(r) < 1 or int(c) < 1:
        raise InputError(f"grid must be at least 1 x 1 (got {r} x {c})")
    r, c = int(r), int(c)
    g, source_hash = _prepare(graph)
    n = g.n
    rp = _check_perm_arg(row_perm, n, "row permutation")
    cp = _check_perm_arg(col_perm, n, "column permutation")
    s_ptr, s_idx, s_data = sort_rows_csr(g.indptr, g.indices, g.data)
    canonical = dataclasses.replace(g, indptr=s_ptr, indices=s_idx, data=s_data)
    rows_new = np.arange(n, dtype=np.int64) if rp is None else rp
    b_ptr, b_idx, b_data = permute_csr(
        g.indptr, g.indices, g.data, rows_new, None if cp is None else inverse_permutation(cp)
    )
    b_ptr, b_idx, b_data = sort_rows_csr(b_ptr, b_idx, b_data)
    rr, cr = even_ranges(n, r), even_ranges(n, c)
    manifest = _base_manifest(g, "blocks2d", source_hash, canonical.content_hash())
    manifest.update(
        {
            "perm_file": PERM_NAME if (rp is not None or cp is not None) else None,
            "grid": [r, c],
            "row_ranges": rr.tolist(),
            "col_ranges": cr.tolist(),
            "row_perm": rp is not None,
            "col_perm": cp is not None,
            "node_files": [],
            "shards": [],
        }
    )
    with atomic_dir(out_dir, overwrite) as tmp:
        files = _StoreFiles(tmp, g, "blocks2d", source_hash)
        if manifest["perm_file"]:
            arrays = {}
            if rp is not None:
                arrays.update(row_perm=rp, row_iperm=inverse_permutation(rp))
            if cp is not None:
                arrays.update(col_perm=cp, col_iperm=inverse_permutation(cp))
            write_perm_file(tmp / PERM_NAME, n, source_hash, arrays)
        for i in range(r):
            s, e = int(rr[i, 0]), int(rr[i, 1])
            blocks = split_columns(*row_slice(b_ptr, b_idx, b_data, s, e), cr)
            for j, (ptr, local, vals) in enumerate(blocks):
                cs, ce = int(cr[j, 0]), int(cr[j, 1])
                arrays = {
                    "indptr": ptr,
                    "indices": local.astype(index_dtype(ce - cs)),
                    "data": vals,
                }
                span = {
                    "row_start": s,
                    "row_stop": e,
                    "col_start": cs,
                    "col_stop": ce,
                    "nnz": int(ptr[-1]),
                }
                ids = {"block_row": i, "block_col": j}
                manifest["shards"].append(
                    files.write(f"block-{i:03d}-{j:03d}.h5", arrays, ids, span)
                )
            arrays = _node_arrays(g, rows_new[s:e])
            span = {"row_start": s, "row_stop": e}
            manifest["node_files"].append(
                files.write(f"nodes-{i:03d}.h5", arrays, {"block_row": i}, span)
            )
        write_manifest(tmp / MANIFEST_NAME, manifest)
    return Path(out_dir) / MANIFEST_NAME


def write_edge_shards(
    graph: Graph,
    edge_part: np.ndarray,
    root: np.ndarray,
    out_dir: str | os.PathLike,
    *,
    num_parts: int,
    overwrite: bool = False,
) -> Path:
    """Write a vertex-cut ("edges") store of `graph`: one shard per part of an edge partition.

    Parameters
    ----------
    graph : Graph
        The graph (validated first).
    edge_part : int array (nnz,)
        Part of every stored entry, in the graph's entry order (a Libra cut,
        `gcntrain.partition.libra.libra_partition`); duplicate entries follow their first copy.
    root : int array (n,)
        Root (master) part of every vertex; -1 for a vertex without edges.
    out_dir : path-like
        Destination directory (temporary name, then renamed).
    num_parts : int
        Number of parts P.
    overwrite : bool
        Replace an existing shard store at `out_dir`.

    Returns
    -------
    Path
        Path of `manifest.json`.
    """
    g, source_hash = _prepare(graph)
    n = g.n
    lay = edge_layout(g.indptr, g.indices, np.asarray(edge_part), np.asarray(root), num_parts)
    manifest = _base_manifest(g, "edges", source_hash, source_hash)
    manifest.update({"perm_file": PERM_NAME, "num_parts": int(num_parts), "shards": []})
    perm_arrays = {"perm": lay.perm, "iperm": lay.inv, "edge_part": lay.cut.part, "root": lay.root}
    entry_order = row_sort_order(g.indptr, g.indices)
    if entry_order is not None:
        perm_arrays["entry_order"] = entry_order
    with atomic_dir(out_dir, overwrite) as tmp:
        files = _StoreFiles(tmp, g, "edges", source_hash)
        write_perm_file(tmp / PERM_NAME, n, source_hash, perm_arrays)
        for p in range(int(num_parts)):
            ids = lay.cut.clones_of(p)
            ptr, idx, vals = lay.clone_csr(p, ids, g.data)
            rptr, rparts = lay.replica_lists(p)
            arrays = {
                "indptr": ptr,
                "indices": idx.astype(index_dtype(n)),
                "data": vals,
                "ids": ids,
                "root": root_of(ids, lay.offsets),
                "replica_ptr": rptr,
                "replica_parts": rparts,
                **_node_arrays(g, lay.perm[ids]),
            }
            span = {
                "row_start": int(lay.offsets[p]),
                "row_stop": int(lay.offsets[p + 1]),
                "clones": int(ids.shape[0]),
                "nnz": int(ptr[-1]),
            }
            manifest["shards"].append(files.write(f"shard-{p:05d}.h5", arrays, {"id": p}, span))
        write_manifest(tmp / MANIFEST_NAME, manifest)
    return Path(out_dir) / MANIFEST_NAME


@dataclass
class _StoreFiles:
    """Writes the HDF5 files of one store into its (temporary) directory `root`."""

    root: Path
    graph: Graph
    kind: str
    source_hash: str

    def write(self, fname: str, arrays: dict, ids: dict[str, int], span: dict[str, int]) -> dict:
        """Write one shard, block or node file; return its manifest entry.

        The entry is `ids`, ``file``, `span` and ``content_hash``; the file's root attributes
        repeat `ids` and `span` (docs/format.md). A file is a node file when it has no
        ``indptr`` and holds node data when it has ``orig_ids``.
        """
        chash = hash_arrays(arrays.items())
        has_nodes = "orig_ids" in arrays
        with atomic_h5(self.root / fname) as f:
            for name, a in arrays.items():
                write_dataset(f, name, a)
            attrs = f.attrs
            attrs["format"] = SHARD_FORMAT if "indptr" in arrays else NODES_FORMAT
            attrs["format_version"] = FORMAT_VERSION
            attrs["kind"] = self.kind
            attrs["n_global"] = self.graph.n
            for key, value in {**ids, **span}.items():
                attrs[_ATTR_NAME.get(key, key)] = int(value)
            if has_nodes:
                nc = self.graph.num_classes
                attrs["num_classes"] = -1 if nc is None else int(nc)
            attrs["source_content_hash"] = self.source_hash
            attrs["content_hash"] = chash
        return {**ids, "file": fname, **span, "content_hash": chash}


def _prepare(graph: Graph) -> tuple[Graph, str]:
    g = normalize_graph(graph)
    validate_graph(g, f"graph '{g.name}'")
    return g, g.content_hash()


def _check_perm_arg(perm: np.ndarray | None, n: int, name: str) -> np.ndarray | None:
    if perm is None:
        return None
    perm = np.asarray(perm)
    validate_permutation(perm, n, name)
    return perm.astype(np.int64, copy=False)


def _base_manifest(g: Graph, kind: str, source_hash: str, content_hash: str) -> dict:
    return {
        "format": STORE_FORMAT,
        "format_version": FORMAT_VERSION,
        "kind": kind,
        "name": g.name,
        "n": g.n,
        "nnz": g.nnz,
        "num_features": g.num_features,
        "num_classes": g.num_classes,
        "directed": bool(g.directed),
        "has_data": g.data is not None,
        "source_content_hash": source_hash,
        "content_hash": content_hash,
    }


def _node_arrays(g: Graph, ids: np.ndarray) -> dict[str, np.ndarray | None]:
    """`orig_ids` and the node data of rows `ids` (original numbering), in hashing order."""
    out: dict[str, np.ndarray | None] = {"orig_ids": ids}
    for name in NODE_NAMES:
        a = getattr(g, name)
        out[name] = None if a is None else a[ids]
    return out
