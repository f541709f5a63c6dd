"""Reassembly of a whole store into the graph in its ORIGINAL numbering (hash-checked)."""

from __future__ import annotations

import os
from types import SimpleNamespace

import numpy as np

from gcntrain.data.graph import Graph
from gcntrain.data.shards.layout import NODE_NAMES
from gcntrain.data.shards.manifest import Manifest
from gcntrain.data.shards.manifest_check import as_manifest
from gcntrain.data.shards.perm import read_perm
from gcntrain.data.shards.read import (
    read_block_nodes,
    read_block_shard,
    read_edge_shard,
    read_row_shard,
)
from gcntrain.data.shards.reorder import (
    inverse_permutation,
    permute_csr,
    row_ids,
    row_sort_order,
    sort_rows_csr,
)
from gcntrain.data.store import index_dtype
from gcntrain.errors import FormatError


def assemble_rows(manifest: Manifest | str | os.PathLike) -> Graph:
    """Read every shard of a rows store and rebuild the graph in the ORIGINAL numbering.

    The result equals the sharded graph exactly (entry order included); its content hash is
    checked against the manifest.
    """
    m = as_manifest(manifest, check_files=True)
    m.require_kind("rows")
    where = str(m.path)
    shards = [read_row_shard(m, k) for k in range(len(m.shards))]
    perm_arrays = read_perm(m)
    perm = _concat_ids([s.orig_ids for s in shards])
    if not np.array_equal(perm, perm_arrays["perm"]):
        raise FormatError("the shards' orig_ids disagree with perm.h5", where)
    iperm = perm_arrays["iperm"]
    counts = _concat_ids([np.diff(s.indptr) for s in shards])
    indptr = np.zeros(m.n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    indices = _concat_ids([s.indices for s in shards])
    data = _concat_optional([s.data for s in shards], where, "data")
    o_ptr, o_idx, o_data = permute_csr(indptr, indices, data, iperm, perm)
    return _finish(m, o_ptr, o_idx, o_data, _gather_nodes(shards, where), iperm)


def assemble_blocks(manifest: Manifest | str | os.PathLike) -> Graph:
    """Read every block and node file of a blocks2d store; rebuild the graph (ORIGINAL numbering).

    Each row's entries come back sorted by column (stable), i.e. the source in canonical form;
    the content hash is checked against the manifest's `content_hash`.
    """
    m = as_manifest(manifest, check_files=True)
    m.require_kind("blocks2d")
    where = str(m.path)
    r, c = m.grid
    perms = read_perm(m)
    ident = np.arange(m.n, dtype=np.int64)
    row_perm = perms.get("row_perm", ident)
    row_iperm = perms.get("row_iperm", ident)
    col_perm = perms.get("col_perm", ident)
    rows_l, cols_l, data_l = [], [], []
    for i in range(r):
        for j in range(c):
            b = read_block_shard(m, i, j)
            rows_l.append(row_ids(b.indptr, b.row_start))
            cols_l.append(b.indices.astype(np.int64) + b.col_start)
            data_l.append(b.data)
    rows = _concat_ids(rows_l)
    cols = _concat_ids(cols_l)
    data = _concat_optional(data_l, where, "data") if data_l else None
    order = np.argsort(rows, kind="stable")
    indptr = np.zeros(m.n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=m.n), out=indptr[1:])
    cols = cols[order]
    data = None if data is None else data[order]
    o_ptr, o_idx, o_data = permute_csr(indptr, cols, data, row_iperm, col_perm)
    o_ptr, o_idx, o_data = sort_rows_csr(o_ptr, o_idx, o_data)
    nodes = [read_block_nodes(m, i) for i in range(r)]
    ids = _concat_ids([nb.orig_ids for nb in nodes])
    if not np.array_equal(ids, row_perm):
        raise FormatError("the node files' orig_ids disagree with the row permutation", where)
    return _finish(m, o_ptr, o_idx, o_data, _gather_nodes(nodes, where), row_iperm)


def assemble_edges(manifest: Manifest | str | os.PathLike) -> Graph:
    """Read every shard of an edges store; rebuild the graph (ORIGINAL numbering) exactly.

    Every shard's entries are mapped back to original ids and sorted by (row, column), stably
    (duplicates lie in one shard, in the graph's order); ``entry_order`` of perm.h5, when
    present, then restores the graph's order within rows.  Node data come from the roots.
    The part of every entry is checked against ``edge_part`` of perm.h5, and the content
    hash against the manifest.
    """
    m = as_manifest(manifest, check_files=True)
    m.require_kind("edges")
    where = str(m.path)
    shards = [read_edge_shard(m, k) for k in range(len(m.shards))]
    p = read_perm(m)
    perm = p["perm"]
    for sh in shards:
        if not np.array_equal(sh.orig_ids, perm[sh.ids]):
            raise FormatError(f"shard {sh.k}'s orig_ids disagree with perm.h5", where)
    rows = perm[_concat_ids([sh.ids[row_ids(sh.indptr)] for sh in shards])]
    cols = perm[_concat_ids([sh.indices for sh in shards])]
    part = _concat_ids([np.full(sh.nnz, sh.k, np.int64) for sh in shards])
    data = _concat_optional([sh.data for sh in shards], where, "data")
    order = np.argsort(rows, kind="stable")
    indptr = np.zeros(m.n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=m.n), out=indptr[1:])
    within = row_sort_order(indptr, cols[order])
    if within is not None:
        order = order[within]
    if "entry_order" in p:
        # sorted entry k is the graph's entry entry_order[k]
        order = order[inverse_permutation(p["entry_order"])]
    cols, part = cols[order], part[order]
    data = None if data is None else data[order]
    if not np.array_equal(part, p["edge_part"]):
        raise FormatError("the shards' entries disagree with edge_part in perm.h5", where)
    roots = [_root_rows(sh) for sh in shards]
    return _finish(m, indptr, cols, data, _gather_nodes(roots, where), p["iperm"])


def assemble(manifest: Manifest | str | os.PathLike) -> Graph:
    """Rebuild the graph of a store of any kind (`assemble_rows`, `_blocks`, `_edges`)."""
    m = as_manifest(manifest, check_files=True)
    if m.kind == "rows":
        return assemble_rows(m)
    return assemble_edges(m) if m.kind == "edges" else assemble_blocks(m)


def _root_rows(sh) -> SimpleNamespace:
    """Node data of an edges shard's roots (its first rows), as attributes for `_gather_nodes`."""
    r = sh.roots
    return SimpleNamespace(
        **{
            name: None if getattr(sh, name) is None else getattr(sh, name)[:r]
            for name in NODE_NAMES
        }
    )


def _concat_ids(parts: list[np.ndarray]) -> np.ndarray:
    """Concatenation of integer arrays as int64 (an empty int64 array for no parts)."""
    return np.concatenate(parts or [np.zeros(0, np.int64)]).astype(np.int64, copy=False)


def _concat_optional(parts: list[np.ndarray | None], where: str, name: str) -> np.ndarray | None:
    present = [p is not None for p in parts]
    if not any(present):
        return None
    if not all(present):
        raise FormatError(f"'{name}' is present in some shards and absent in others", where)
    return np.concatenate(parts)


def _gather_nodes(blocks: list, where: str) -> dict:
    return {
        name: _concat_optional([getattr(b, name) for b in blocks], where, name)
        for name in NODE_NAMES
    }


def _finish(m: Manifest, indptr, indices, data, node_new: dict, iperm: np.ndarray) -> Graph:
    """Build the graph in original numbering and check it against the manifest's hash."""
    node = {name: None if a is None else a[iperm] for name, a in node_new.items()}
    g = Graph(
        indptr=indptr,
        indices=indices.astype(index_dtype(m.n)),
        data=data,
        **node,
        name=m.name,
        directed=m.directed,
        num_classes=m.num_classes,
    )
    actual = g.content_hash()
    if actual != m.content_hash:
        raise FormatError(
            f"reassembled graph hash {actual[:12]}... differs from the manifest's "
            f"{m.content_hash[:12]}...",
            str(m.path),
        )
    return g
