"""Readers of one shard, block or node file; each opens only the manifest and that file."""

from __future__ import annotations

import os

import numpy as np

from gcntrain.data.shards.hashing import check_hash
from gcntrain.data.shards.layout import (
    CSR_ARRAYS,
    CUT_ARRAYS,
    ID_ARRAYS,
    NODE_ARRAYS,
    NODES_FORMAT,
    SHARD_FORMAT,
    block_label,
    nodes_label,
    shard_label,
)
from gcntrain.data.shards.manifest import Manifest
from gcntrain.data.shards.manifest_check import as_manifest
from gcntrain.data.shards.records import BlockShard, EdgeShard, NodeBlock, RowShard
from gcntrain.data.shards.reorder import row_ids
from gcntrain.data.store import int_attr, open_h5, read_dataset, str_attr, to_mask
from gcntrain.data.validate import (
    MASK_NAMES,
    check_format,
    validate_csr,
    validate_node_data,
    validate_values,
)
from gcntrain.errors import FormatError, InputError
from gcntrain.partition.cut_layout import root_of

Arrays = dict[str, np.ndarray | None]


def read_row_shard(
    manifest: Manifest | str | os.PathLike, k: int, *, validate: bool = True
) -> RowShard:
    """Read shard `k` of a rows store, opening only the manifest and the shard's own file.

    Parameters
    ----------
    manifest : Manifest or path-like
        An open manifest, or the store directory / manifest path (opened without checking the
        other shard files).
    k : int
        Shard (part) id.
    validate : bool
        Check arrays and the content hash (attributes are always compared with the manifest).

    Returns
    -------
    RowShard
    """
    m = as_manifest(manifest, check_files=False)
    m.require_kind("rows", " (use read_block_shard)")
    if not 0 <= k < len(m.shards):
        raise InputError(f"shard {k} does not exist (the store has {len(m.shards)})", str(m.path))
    entry = m.shards[k]
    s, e = entry["row_start"], entry["row_stop"]
    expected = {"shard": k, "row_start": s, "row_stop": e, "n_global": m.n, "nnz": entry["nnz"]}
    arrays = _read_file(
        m, entry, shard_label(k), SHARD_FORMAT, expected, CSR_ARRAYS + NODE_ARRAYS, m.n, validate
    )
    return RowShard(k=k, row_start=s, row_stop=e, n_global=m.n, num_classes=m.num_classes, **arrays)


def read_block_shard(
    manifest: Manifest | str | os.PathLike, i: int, j: int, *, validate: bool = True
) -> BlockShard:
    """Read block (i, j) of a blocks2d store, opening only the manifest and the block's file.

    Parameters
    ----------
    manifest : Manifest or path-like
        An open manifest, or the store directory / manifest path.
    i, j : int
        Block row and block column.
    validate : bool
        Check arrays and the content hash.

    Returns
    -------
    BlockShard
        CSR of the block with local column ids (``global = local + col_start``).
    """
    m = as_manifest(manifest, check_files=False)
    m.require_kind("blocks2d", " (use read_row_shard)")
    entry = m.block_entry(i, j)
    rs, re_, cs, ce = (entry[k] for k in ("row_start", "row_stop", "col_start", "col_stop"))
    expected = {
        "block_row": i,
        "block_col": j,
        "row_start": rs,
        "row_stop": re_,
        "col_start": cs,
        "col_stop": ce,
        "n_global": m.n,
        "nnz": entry["nnz"],
    }
    arrays = _read_file(
        m, entry, block_label(i, j), SHARD_FORMAT, expected, CSR_ARRAYS, ce - cs, validate
    )
    return BlockShard(
        i=i, j=j, row_start=rs, row_stop=re_, col_start=cs, col_stop=ce, n_global=m.n, **arrays
    )


def read_block_nodes(
    manifest: Manifest | str | os.PathLike, i: int, *, validate: bool = True
) -> NodeBlock:
    """Read the node data of block row `i` of a blocks2d store (its node file only)."""
    m = as_manifest(manifest, check_files=False)
    m.require_kind("blocks2d")
    if not 0 <= i < len(m.node_files):
        raise InputError(
            f"block row {i} does not exist (the grid has {len(m.node_files)})", str(m.path)
        )
    entry = m.node_files[i]
    rs, re_ = entry["row_start"], entry["row_stop"]
    expected = {"block_row": i, "row_start": rs, "row_stop": re_, "n_global": m.n}
    arrays = _read_file(m, entry, nodes_label(i), NODES_FORMAT, expected, NODE_ARRAYS, 0, validate)
    return NodeBlock(i=i, row_start=rs, row_stop=re_, num_classes=m.num_classes, **arrays)


def read_edge_shard(
    manifest: Manifest | str | os.PathLike, k: int, *, validate: bool = True
) -> EdgeShard:
    """Read shard `k` of a vertex-cut (edges) store, opening only the manifest and its file.

    Parameters
    ----------
    manifest : Manifest or path-like
        An open manifest, or the store directory / manifest path.
    k : int
        Shard (part) id.
    validate : bool
        Check arrays (CSR, node data, clone ids, roots, replica lists) and the content hash.

    Returns
    -------
    EdgeShard
    """
    m = as_manifest(manifest, check_files=False)
    m.require_kind("edges", " (use read_row_shard or read_block_shard)")
    if not 0 <= k < len(m.shards):
        raise InputError(f"shard {k} does not exist (the store has {len(m.shards)})", str(m.path))
    entry = m.shards[k]
    s, e = entry["row_start"], entry["row_stop"]
    expected = {
        "shard": k,
        "row_start": s,
        "row_stop": e,
        "clones": entry["clones"],
        "n_global": m.n,
        "nnz": entry["nnz"],
    }
    names = CSR_ARRAYS + CUT_ARRAYS + NODE_ARRAYS
    arrays = _read_file(m, entry, shard_label(k), SHARD_FORMAT, expected, names, m.n, validate)
    return EdgeShard(
        k=k, row_start=s, row_stop=e, n_global=m.n, num_classes=m.num_classes, **arrays
    )


def _read_file(
    m: Manifest,
    entry: dict,
    label: str,
    fmt: str,
    expected: dict[str, int],
    names: tuple[str, ...],
    n_cols: int,
    validate: bool,
) -> Arrays:
    """Datasets `names` of a listed file, masks as bool, after the checks of docs/format.md.

    Attributes are always compared with `expected` (the manifest's values); with `validate`
    the CSR arrays (columns in ``[0, n_cols)``), the node data, an edges shard's clone ids,
    roots and replica lists, and the content hash too.
    """
    path = m.listed_file(entry["file"], f"{label} file")
    where = str(path)
    with open_h5(path, "node file" if fmt == NODES_FORMAT else "shard file") as f:
        _check_store_attrs(f, m, entry, fmt, label, where)
        _expect_attrs(f.attrs, where, label, expected)
        arrays = {name: read_dataset(f, name, where, required=name in ID_ARRAYS) for name in names}
    rows = expected.get("clones", expected["row_stop"] - expected["row_start"])
    if validate:
        if "indptr" in arrays:
            _validate_csr_arrays(m, arrays, n_cols, rows, entry["nnz"], where)
        if "orig_ids" in arrays:
            _validate_node_arrays(m, arrays, rows, where)
        if "ids" in arrays:
            _validate_cut_arrays(m, expected["shard"], arrays, where)
    for name in MASK_NAMES:
        if name in arrays:
            arrays[name] = to_mask(arrays[name])
    if validate:
        check_hash([(name, arrays[name]) for name in names], entry["content_hash"], where)
    return arrays


def _check_store_attrs(f, m: Manifest, entry: dict, fmt: str, label: str, where: str) -> None:
    """Format, kind and hashes of a file against the store's manifest."""
    check_format(f.attrs, fmt, where)
    kind = str_attr(f.attrs, "kind", where)
    if kind != m.kind:
        raise FormatError(f"{label} is of kind '{kind}' but the store is '{m.kind}'", where)
    src = str_attr(f.attrs, "source_content_hash", where)
    if src != m.source_content_hash:
        raise FormatError(
            f"{label} belongs to a different store (source hash {src[:12]}..., "
            f"manifest {m.source_content_hash[:12]}...)",
            where,
        )
    chash = str_attr(f.attrs, "content_hash", where)
    if chash != entry["content_hash"]:
        raise FormatError(
            f"{label} content hash {chash[:12]}... differs from the manifest's "
            f"{entry['content_hash'][:12]}...",
            where,
        )


def _expect_attrs(attrs, where: str, label: str, expected: dict[str, int]) -> None:
    """Compare integer attributes with the manifest's values."""
    got = {k: int_attr(attrs, k, where) for k in expected}
    for key in ("row_start", "col_start"):
        stop = key.replace("start", "stop")
        if key in expected and (got[key], got[stop]) != (expected[key], expected[stop]):
            what = "rows" if key == "row_start" else "columns"
            raise FormatError(
                f"{label} has {what} [{got[key]}, {got[stop]}) but the manifest "
                f"says [{expected[key]}, {expected[stop]})",
                where,
            )
    for key, value in expected.items():
        if got[key] != value:
            raise FormatError(
                f"{label} has {key} = {got[key]} but the manifest says {value}", where
            )


def _validate_csr_arrays(
    m: Manifest, arrays: Arrays, n_cols: int, rows: int, nnz: int, where: str
) -> None:
    validate_csr(arrays["indptr"], arrays["indices"], n_cols, where, n_rows=rows, nnz=nnz)
    data = arrays["data"]
    if (data is not None) != m.has_data:
        raise FormatError("edge values (data) present/absent unlike the manifest", where)
    if data is not None:
        validate_values(data, nnz, where)


def _validate_node_arrays(m: Manifest, arrays: Arrays, rows: int, where: str) -> None:
    ids = arrays["orig_ids"]
    if not isinstance(ids, np.ndarray) or ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
        raise FormatError("orig_ids must be a 1-D integer array", where)
    if ids.shape[0] != rows:
        raise FormatError(f"orig_ids has {ids.shape[0]} entries, expected {rows} rows", where)
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= m.n):
        raise FormatError(f"orig_ids out of range [0, {m.n})", where)
    validate_node_data(
        rows,
        where,
        features=arrays["features"],
        labels=arrays["labels"],
        num_classes=m.num_classes,
        **{k: arrays[k] for k in MASK_NAMES},
    )
    nf = 0 if arrays["features"] is None else int(arrays["features"].shape[1])
    if nf != m.num_features:
        raise FormatError(
            f"features have {nf} columns but the manifest says num_features = {m.num_features}",
            where,
        )


def _validate_cut_arrays(m: Manifest, k: int, arrays: Arrays, where: str) -> None:
    """Clone ids (roots ``row_start..row_stop - 1``, then ascending leaves of other parts),
    their root parts, and the replica lists of the roots (each naming part k once)."""
    s, e = m.shards[k]["row_start"], m.shards[k]["row_stop"]
    ids = arrays["ids"]
    if not isinstance(ids, np.ndarray) or ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
        raise FormatError("ids must be a 1-D integer array", where)
    if ids.shape[0] != arrays["orig_ids"].shape[0]:
        raise FormatError(
            f"ids has {ids.shape[0]} entries, expected {m.shards[k]['clones']}", where
        )
    r = e - s
    if not np.array_equal(ids[:r], np.arange(s, e)):
        raise FormatError(f"the first {r} ids are not the roots [{s}, {e})", where)
    leaves = ids[r:]
    if leaves.size and (
        int(leaves.min()) < 0
        or int(leaves.max()) >= m.n
        or np.any(np.diff(leaves) <= 0)
        or np.any((leaves >= s) & (leaves < e))
    ):
        raise FormatError(f"leaf ids are not ascending ids in [0, {m.n}) outside [{s}, {e})", where)
    root = arrays["root"]
    if not isinstance(root, np.ndarray) or not np.array_equal(root, root_of(ids, m.offsets)):
        raise FormatError("root disagrees with the root ranges of the manifest", where)
    ptr, parts = arrays["replica_ptr"], arrays["replica_parts"]
    validate_csr(ptr, parts, m.num_parts, where, n_rows=r)
    own = np.bincount(row_ids(ptr)[parts == k], minlength=r)
    if np.any(own != 1):
        raise FormatError(f"a replica list of a root does not name part {k} exactly once", where)
