"""Sharded graph stores: 1D row blocks ("rows") and 2D r x c blocks ("blocks2d").

A store is a directory with `manifest.json`, `perm.h5` and one HDF5 file per shard; the exact
layout is specified in docs/format.md. Readers of one shard open only the manifest and that
shard's own file, so shards may be staged to node-local disks.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from gcntrain.data.graph import Graph
from gcntrain.data.store import (
    atomic_h5,
    index_dtype,
    int_attr,
    normalize_graph,
    open_h5,
    read_dataset,
    read_mask,
    str_attr,
    to_mask,
    validate_graph,
    write_dataset,
)
from gcntrain.data.validate import (
    FORMAT_VERSION,
    MASK_NAMES,
    check_format,
    validate_csr,
    validate_node_data,
    validate_partition,
    validate_permutation,
    validate_values,
)
from gcntrain.errors import FormatError, InputError

STORE_FORMAT = "gcntrain-shards"
SHARD_FORMAT = "gcntrain-shard"
NODES_FORMAT = "gcntrain-nodes"
PERM_FORMAT = "gcntrain-perm"
MANIFEST_NAME = "manifest.json"
PERM_NAME = "perm.h5"
KINDS = ("rows", "blocks2d")

_ID_ARRAYS = ("indptr", "indices", "orig_ids")
_NODE_NAMES = ("features", "labels", *MASK_NAMES)


# =========================================================================== pure helpers


def hash_arrays(items: Iterable[tuple[str, np.ndarray | None]]) -> str:
    """SHA-256 over named arrays, built like `Graph.content_hash` (docs/format.md).

    Id arrays (`indptr`, `indices`, `orig_ids`) are hashed as int64 so the stored width does
    not matter; absent arrays contribute their name and a marker.
    """
    h = hashlib.sha256()
    for name, a in items:
        h.update(name.encode())
        if a is None:
            h.update(b"\x00none")
            continue
        a = np.ascontiguousarray(a)
        if name in _ID_ARRAYS:
            a = a.astype(np.int64, copy=False)
        h.update(str(a.dtype).encode() + str(a.shape).encode())
        h.update(a.reshape(-1).view(np.uint8))  # the bytes of tobytes(), without a copy
    return h.hexdigest()


def inverse_permutation(perm: np.ndarray) -> np.ndarray:
    """`iperm` with ``iperm[perm[i]] == i`` (int64)."""
    iperm = np.empty(perm.shape[0], dtype=np.int64)
    iperm[perm] = np.arange(perm.shape[0], dtype=np.int64)
    return iperm


def part_row_ranges(part: np.ndarray, num_parts: int) -> tuple[np.ndarray, np.ndarray]:
    """Stable part-by-part renumbering of a partition vector.

    Parameters
    ----------
    part : int array (n,)
        Part of each node, values in ``[0, num_parts)``.
    num_parts : int
        Number of parts P (parts may be empty).

    Returns
    -------
    perm : int64 array (n,)
        New id -> original id: part 0's nodes in increasing original id, then part 1's, ...
    ranges : int64 array (P, 2)
        ``[row_start, row_stop)`` of each part in the new numbering.
    """
    perm = np.argsort(part, kind="stable").astype(np.int64, copy=False)
    counts = np.bincount(part, minlength=num_parts).astype(np.int64)
    stops = np.cumsum(counts)
    ranges = np.stack([stops - counts, stops], axis=1)
    return perm, ranges


def even_ranges(n: int, k: int) -> np.ndarray:
    """`k` contiguous near-equal ranges covering ``[0, n)``.

    Range i is ``[floor(i n / k), floor((i+1) n / k))``.

    Returns an int64 array (k, 2).
    """
    bounds = (np.arange(k + 1, dtype=np.int64) * n) // k
    return np.stack([bounds[:-1], bounds[1:]], axis=1)


def permute_csr(
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray | None,
    row_order: np.ndarray,
    col_map: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Gather rows of a CSR matrix and relabel its columns, keeping the order within rows.

    Parameters
    ----------
    indptr, indices, data : arrays
        Source CSR (`data` may be None).
    row_order : int array (m,)
        Target row i is source row ``row_order[i]`` (any selection, not only permutations).
    col_map : int array or None
        Target column id of each source column id (None keeps the ids).

    Returns
    -------
    indptr (int64), indices (int64, or the source dtype when `col_map` is None), data
    """
    counts = np.diff(indptr)[row_order]
    out_ptr = np.zeros(row_order.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=out_ptr[1:])
    starts = indptr[:-1][row_order]
    pos = np.repeat(starts - out_ptr[:-1], counts) + np.arange(out_ptr[-1], dtype=np.int64)
    cols = indices[pos]
    if col_map is not None:
        cols = col_map[cols]
    return out_ptr, cols, None if data is None else data[pos]


def sort_rows_csr(
    indptr: np.ndarray, indices: np.ndarray, data: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Sort each row's entries by column id (stable: duplicates keep their order).

    Rows already sorted are detected first (one vectorised pass) and returned as they are.
    """
    nrows = indptr.shape[0] - 1
    rows = np.repeat(np.arange(nrows, dtype=np.int64), np.diff(indptr))
    if indices.size < 2 or not np.any((indices[1:] < indices[:-1]) & (rows[1:] == rows[:-1])):
        return indptr, indices, data
    span = int(indices.max()) + 1
    if nrows * span < 2**62:
        # one stable argsort of a combined key: ~10x faster than lexsort on two keys
        order = np.argsort(rows * span + indices.astype(np.int64), kind="stable")
    else:
        order = np.lexsort((indices, rows))
    return indptr, indices[order], None if data is None else data[order]


def split_columns(
    indptr: np.ndarray, indices: np.ndarray, data: np.ndarray | None, col_ranges: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    """Split a CSR row block into column blocks with local column ids.

    Parameters
    ----------
    indptr, indices, data : arrays
        CSR of the row block (`indices` global column ids, sorted within rows or not).
    col_ranges : int array (c, 2)
        Contiguous column ranges covering the columns.

    Returns
    -------
    list of (indptr, local indices, data), one per column block; within each row the entries
    keep their relative order.
    """
    nrows = indptr.shape[0] - 1
    c = col_ranges.shape[0]
    rows = np.repeat(np.arange(nrows, dtype=np.int64), np.diff(indptr))
    bj = np.searchsorted(col_ranges[:, 1], indices, side="right")
    counts = np.bincount(bj * nrows + rows, minlength=c * nrows).reshape(c, nrows)
    # numpy's stable sort is a radix sort for 16-bit keys
    order = np.argsort(bj.astype(np.int16) if c < 2**15 else bj, kind="stable")
    out = []
    offset = 0
    for j in range(c):
        ptr = np.zeros(nrows + 1, dtype=np.int64)
        np.cumsum(counts[j], out=ptr[1:])
        sel = order[offset : offset + ptr[-1]]
        offset += int(ptr[-1])
        local = indices[sel].astype(np.int64) - col_ranges[j, 0]
        out.append((ptr, local, None if data is None else data[sel]))
    return out


# =========================================================================== records


@dataclass
class Manifest:
    """A validated store manifest (docs/format.md); file names resolve against `root`."""

    path: Path
    kind: str
    name: str
    n: int
    nnz: int
    num_features: int
    num_classes: int | None
    directed: bool
    has_data: bool
    source_content_hash: str
    content_hash: str
    perm_file: str | None
    shards: list[dict]
    num_parts: int | None = None
    grid: tuple[int, int] | None = None
    row_ranges: list[list[int]] = field(default_factory=list)
    col_ranges: list[list[int]] = field(default_factory=list)
    row_perm: bool = False
    col_perm: bool = False
    node_files: list[dict] = field(default_factory=list)
    raw: dict = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return self.path.parent

    def file(self, name: str) -> Path:
        """Path of a file listed in the manifest."""
        return self.root / name

    def block_entry(self, i: int, j: int) -> dict:
        """Manifest entry of block (i, j)."""
        r, c = self.grid or (0, 0)
        if not (0 <= i < r and 0 <= j < c):
            raise InputError(f"block ({i}, {j}) is outside the {r} x {c} grid", str(self.path))
        return self.shards[i * c + j]


@dataclass
class RowShard:
    """Rows ``[row_start, row_stop)`` of the renumbered adjacency (kind "rows")."""

    k: int
    row_start: int
    row_stop: int
    n_global: int
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray | None
    orig_ids: np.ndarray
    features: np.ndarray | None = None
    labels: np.ndarray | None = None
    train_mask: np.ndarray | None = None
    val_mask: np.ndarray | None = None
    test_mask: np.ndarray | None = None
    num_classes: int | None = None

    @property
    def rows(self) -> int:
        return self.row_stop - self.row_start

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    @property
    def global_rows(self) -> np.ndarray:
        """Global ids (new numbering) of the local rows."""
        return np.arange(self.row_start, self.row_stop, dtype=np.int64)

    def adjacency(self) -> sp.csr_matrix:
        """The rows as a scipy CSR matrix (rows x n_global), columns in the new numbering."""
        vals = np.ones(self.nnz, np.float32) if self.data is None else self.data
        return sp.csr_matrix((vals, self.indices, self.indptr), shape=(self.rows, self.n_global))


@dataclass
class BlockShard:
    """Block (i, j) of the (optionally permuted) adjacency with local column ids."""

    i: int
    j: int
    row_start: int
    row_stop: int
    col_start: int
    col_stop: int
    n_global: int
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray | None

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    def adjacency(self) -> sp.csr_matrix:
        """The block as scipy CSR (rows x cols of the block), local column ids."""
        vals = np.ones(self.nnz, np.float32) if self.data is None else self.data
        shape = (self.row_stop - self.row_start, self.col_stop - self.col_start)
        return sp.csr_matrix((vals, self.indices, self.indptr), shape=shape)


@dataclass
class NodeBlock:
    """Node data of block row i (kind "blocks2d"), rows in the row-permuted order."""

    i: int
    row_start: int
    row_stop: int
    orig_ids: np.ndarray
    features: np.ndarray | None = None
    labels: np.ndarray | None = None
    train_mask: np.ndarray | None = None
    val_mask: np.ndarray | None = None
    test_mask: np.ndarray | None = None
    num_classes: int | None = None


# =========================================================================== writing


def _plain_name(name: object) -> bool:
    return (
        isinstance(name, str)
        and name not in ("", ".", "..")
        and os.path.basename(name) == name
        and "\\" not in name
    )


@contextmanager
def _atomic_dir(out_dir: str | os.PathLike, overwrite: bool) -> Iterator[Path]:
    """Yield a temporary directory beside `out_dir`; rename it to `out_dir` when complete."""
    out = Path(out_dir)
    parent = out.parent
    if not parent.is_dir():
        raise InputError(f"parent directory '{parent}' does not exist", str(out))
    if out.exists():
        if not out.is_dir():
            raise InputError("exists and is not a directory", str(out))
        if any(out.iterdir()):
            if not overwrite:
                raise InputError(
                    "output directory is not empty (pass --overwrite to replace "
                    "an existing shard store)",
                    str(out),
                )
            if not (out / MANIFEST_NAME).is_file():
                raise InputError(
                    f"refusing to overwrite: not a shard store (no {MANIFEST_NAME})", str(out)
                )
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=parent))
    try:
        yield tmp
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)
        if out.exists() and any(out.iterdir()):
            trash = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=parent))
            os.rename(out, trash / "store")
            os.rename(tmp, out)
            shutil.rmtree(trash, ignore_errors=True)
        else:
            if out.exists():
                out.rmdir()
            os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def manifest_text(manifest: dict) -> str:
    """JSON text of a manifest: one key per line, one line per shard entry."""
    lines = []
    for key, value in manifest.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            body = ",\n".join(f"  {json.dumps(v)}" for v in value)
            lines.append(f" {json.dumps(key)}: [\n{body}\n ]")
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def _write_manifest(path: Path, manifest: dict) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(manifest_text(manifest), encoding="utf-8")
    os.replace(tmp, path)


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


def _node_items(g: Graph, ids: np.ndarray) -> list[tuple[str, np.ndarray | None]]:
    out: list[tuple[str, np.ndarray | None]] = [("orig_ids", ids)]
    for name in _NODE_NAMES:
        a = getattr(g, name)
        out.append((name, None if a is None else a[ids]))
    return out


def _write_perm_file(path: Path, n: int, source_hash: str, arrays: dict[str, np.ndarray]) -> None:
    with atomic_h5(path) as f:
        for name, a in arrays.items():
            write_dataset(f, name, a.astype(np.int64, copy=False))
        f.attrs["format"] = PERM_FORMAT
        f.attrs["format_version"] = FORMAT_VERSION
        f.attrs["n"] = n
        f.attrs["source_content_hash"] = source_hash


def _shard_attrs(
    f,
    fmt: str,
    source_hash: str,
    chash: str,
    n: int,
    *,
    kind: str = "rows",
    num_classes: int | None = None,
    has_nodes: bool = True,
    **ints: int,
) -> None:
    """Root attributes of a shard, block or node file (docs/format.md)."""
    a = f.attrs
    a["format"] = fmt
    a["format_version"] = FORMAT_VERSION
    a["kind"] = kind
    a["n_global"] = n
    for key, value in ints.items():
        a[key] = int(value)
    if has_nodes:
        a["num_classes"] = -1 if num_classes is None else int(num_classes)
    a["source_content_hash"] = source_hash
    a["content_hash"] = chash


def _prepare(graph: Graph) -> tuple[Graph, str]:
    g = normalize_graph(graph)
    validate_graph(g, f"graph '{g.name}'")
    return g, g.content_hash()


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
    with _atomic_dir(out_dir, overwrite) as tmp:
        _write_perm_file(tmp / PERM_NAME, n, source_hash, {"perm": perm, "iperm": iperm})
        for k in range(num_parts):
            s, e = int(ranges[k, 0]), int(ranges[k, 1])
            lo, hi = int(b_ptr[s]), int(b_ptr[e])
            items = [
                ("indptr", b_ptr[s : e + 1] - lo),
                ("indices", b_idx[lo:hi]),
                ("data", None if b_data is None else b_data[lo:hi]),
            ]
            items += _node_items(g, perm[s:e])
            chash = hash_arrays(items)
            fname = f"shard-{k:05d}.h5"
            with atomic_h5(tmp / fname) as f:
                for name, a in items:
                    write_dataset(f, name, a)
                _shard_attrs(
                    f,
                    SHARD_FORMAT,
                    source_hash,
                    chash,
                    n,
                    num_classes=g.num_classes,
                    shard=k,
                    row_start=s,
                    row_stop=e,
                    nnz=hi - lo,
                )
            manifest["shards"].append(
                {
                    "id": k,
                    "file": fname,
                    "row_start": s,
                    "row_stop": e,
                    "nnz": hi - lo,
                    "content_hash": chash,
                }
            )
        _write_manifest(tmp / MANIFEST_NAME, manifest)
    return Path(out_dir) / MANIFEST_NAME


def _check_perm_arg(perm: np.ndarray | None, n: int, name: str) -> np.ndarray | None:
    if perm is None:
        return None
    perm = np.asarray(perm)
    validate_permutation(perm, n, name)
    return perm.astype(np.int64, copy=False)


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
    canonical = Graph(
        indptr=s_ptr,
        indices=s_idx,
        data=s_data,
        features=g.features,
        labels=g.labels,
        train_mask=g.train_mask,
        val_mask=g.val_mask,
        test_mask=g.test_mask,
        num_classes=g.num_classes,
    )
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
    with _atomic_dir(out_dir, overwrite) as tmp:
        if manifest["perm_file"]:
            arrays = {}
            if rp is not None:
                arrays.update(row_perm=rp, row_iperm=inverse_permutation(rp))
            if cp is not None:
                arrays.update(col_perm=cp, col_iperm=inverse_permutation(cp))
            _write_perm_file(tmp / PERM_NAME, n, source_hash, arrays)
        for i in range(r):
            s, e = int(rr[i, 0]), int(rr[i, 1])
            lo, hi = int(b_ptr[s]), int(b_ptr[e])
            blocks = split_columns(
                b_ptr[s : e + 1] - lo, b_idx[lo:hi], None if b_data is None else b_data[lo:hi], cr
            )
            for j, (ptr, local, vals) in enumerate(blocks):
                cs, ce = int(cr[j, 0]), int(cr[j, 1])
                items = [
                    ("indptr", ptr),
                    ("indices", local.astype(index_dtype(ce - cs))),
                    ("data", vals),
                ]
                chash = hash_arrays(items)
                fname = f"block-{i:03d}-{j:03d}.h5"
                with atomic_h5(tmp / fname) as f:
                    for name, a in items:
                        write_dataset(f, name, a)
                    _shard_attrs(
                        f,
                        SHARD_FORMAT,
                        source_hash,
                        chash,
                        n,
                        kind="blocks2d",
                        has_nodes=False,
                        block_row=i,
                        block_col=j,
                        row_start=s,
                        row_stop=e,
                        col_start=cs,
                        col_stop=ce,
                        nnz=int(ptr[-1]),
                    )
                manifest["shards"].append(
                    {
                        "block_row": i,
                        "block_col": j,
                        "file": fname,
                        "row_start": s,
                        "row_stop": e,
                        "col_start": cs,
                        "col_stop": ce,
                        "nnz": int(ptr[-1]),
                        "content_hash": chash,
                    }
                )
            items = _node_items(g, rows_new[s:e])
            chash = hash_arrays(items)
            fname = f"nodes-{i:03d}.h5"
            with atomic_h5(tmp / fname) as f:
                for name, a in items:
                    write_dataset(f, name, a)
                _shard_attrs(
                    f,
                    NODES_FORMAT,
                    source_hash,
                    chash,
                    n,
                    kind="blocks2d",
                    num_classes=g.num_classes,
                    block_row=i,
                    row_start=s,
                    row_stop=e,
                )
            manifest["node_files"].append(
                {
                    "block_row": i,
                    "file": fname,
                    "row_start": s,
                    "row_stop": e,
                    "content_hash": chash,
                }
            )
        _write_manifest(tmp / MANIFEST_NAME, manifest)
    return Path(out_dir) / MANIFEST_NAME


# =========================================================================== manifest


def _get(
    d: dict,
    key: str,
    types: type | tuple,
    where: str,
    *,
    nullable: bool = False,
    what: str = "manifest",
):
    if key not in d:
        raise FormatError(f"{what} has no '{key}' field", where)
    value = d[key]
    if value is None and nullable:
        return None
    ok = isinstance(value, types) and not (isinstance(value, bool) and types is int)
    if not ok:
        raise FormatError(f"{what} field '{key}' has a wrong type ({value!r})", where)
    return value


def _get_count(d: dict, key: str, where: str, what: str = "manifest") -> int:
    value = _get(d, key, int, where, what=what)
    if value < 0:
        raise FormatError(f"{what} field '{key}' is negative ({value})", where)
    return value


def _check_ranges(ranges: list, n: int, label: str, where: str) -> list[list[int]]:
    """Contiguous ``[start, stop)`` ranges covering ``[0, n)`` in order."""
    out = []
    prev = 0
    for idx, rg in enumerate(ranges):
        if (
            not isinstance(rg, list)
            or len(rg) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in rg)
        ):
            raise FormatError(
                f"inconsistent {label} ranges: entry {idx} is not [start, stop]", where
            )
        s, e = rg
        if s != prev:
            raise FormatError(
                f"inconsistent {label} ranges: range {idx} starts at {s} but the "
                f"previous one stops at {prev}",
                where,
            )
        if e < s:
            raise FormatError(f"inconsistent {label} ranges: range {idx} is [{s}, {e})", where)
        out.append([s, e])
        prev = e
    if prev != n:
        raise FormatError(
            f"inconsistent {label} ranges: they end at {prev}, expected n = {n}", where
        )
    return out


def _check_entry_file(entry: dict, label: str, where: str) -> str:
    name = _get(entry, "file", str, where, what=label)
    if not _plain_name(name):
        raise FormatError(f"{label} file name '{name}' must be a plain file name", where)
    return name


def open_manifest(path: str | os.PathLike, *, check_files: bool = True) -> Manifest:
    """Read and validate a store manifest.

    Parameters
    ----------
    path : path-like
        The store directory or its `manifest.json`.
    check_files : bool
        Also check that every listed file exists (a rank holding only its own shard passes
        False; the shard readers check their own file).

    Returns
    -------
    Manifest

    Raises
    ------
    FormatError
        Invalid JSON, wrong format/version/kind, inconsistent ranges or counts, a listed file
        missing.
    """
    p = Path(path)
    if p.is_dir():
        p = p / MANIFEST_NAME
        if not p.exists():
            raise InputError(
                f"no shard manifest ({MANIFEST_NAME}) in this directory", str(p.parent)
            )
    where = str(p)
    if not p.exists():
        raise InputError("no such manifest file", where)
    try:
        d = json.loads(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise FormatError("manifest is not UTF-8 text", where) from None
    except json.JSONDecodeError as e:
        raise FormatError(f"manifest is not valid JSON (line {e.lineno}: {e.msg})", where) from None
    if not isinstance(d, dict):
        raise FormatError("manifest is not a JSON object", where)
    check_format(d, STORE_FORMAT, where)
    kind = _get(d, "kind", str, where)
    if kind not in KINDS:
        raise FormatError(f"unknown store kind '{kind}' (expected rows or blocks2d)", where)
    n = _get_count(d, "n", where)
    nnz = _get_count(d, "nnz", where)
    num_classes = _get(d, "num_classes", int, where, nullable=True)
    m = Manifest(
        path=p,
        kind=kind,
        n=n,
        nnz=nnz,
        name=_get(d, "name", str, where),
        num_features=_get_count(d, "num_features", where),
        num_classes=num_classes,
        directed=_get(d, "directed", bool, where),
        has_data=_get(d, "has_data", bool, where),
        source_content_hash=_get(d, "source_content_hash", str, where),
        content_hash=_get(d, "content_hash", str, where),
        perm_file=_get(d, "perm_file", str, where, nullable=True),
        shards=_get(d, "shards", list, where),
        raw=d,
    )
    if m.perm_file is not None and not _plain_name(m.perm_file):
        raise FormatError(f"perm_file '{m.perm_file}' must be a plain file name", where)
    for idx, entry in enumerate(m.shards):
        if not isinstance(entry, dict):
            raise FormatError(f"shard entry {idx} is not an object", where)
    if kind == "rows":
        _check_rows_manifest(m, d, where)
    else:
        _check_blocks_manifest(m, d, where)
    total = sum(_get_count(e, "nnz", where, what="shard entry") for e in m.shards)
    if total != nnz:
        raise FormatError(f"shard nnz sum to {total} but the manifest says nnz = {nnz}", where)
    if check_files:
        _check_files_exist(m, where)
    return m


def _check_rows_manifest(m: Manifest, d: dict, where: str) -> None:
    m.num_parts = _get_count(d, "num_parts", where)
    if m.num_parts != len(m.shards):
        raise FormatError(
            f"num_parts is {m.num_parts} but {len(m.shards)} shards are listed", where
        )
    if m.perm_file is None:
        raise FormatError("a rows store needs a perm_file", where)
    ranges = []
    for k, e in enumerate(m.shards):
        if _get(e, "id", int, where, what="shard entry") != k:
            raise FormatError(f"shard entry {k} has id {e['id']} (ids must be 0, 1, ...)", where)
        _check_entry_file(e, f"shard {k}", where)
        _get(e, "content_hash", str, where, what=f"shard {k} entry")
        ranges.append([e.get("row_start"), e.get("row_stop")])
    _check_ranges(ranges, m.n, "row", where)


def _check_blocks_manifest(m: Manifest, d: dict, where: str) -> None:
    grid = _get(d, "grid", list, where)
    if (
        len(grid) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in grid)
        or min(grid) < 1
    ):
        raise FormatError(f"grid must be [r, c] with r, c >= 1 (is {grid})", where)
    r, c = grid
    m.grid = (r, c)
    m.row_ranges = _check_ranges(_get(d, "row_ranges", list, where), m.n, "row", where)
    m.col_ranges = _check_ranges(_get(d, "col_ranges", list, where), m.n, "column", where)
    if len(m.row_ranges) != r or len(m.col_ranges) != c:
        raise FormatError(
            f"grid is {r} x {c} but {len(m.row_ranges)} row and "
            f"{len(m.col_ranges)} column ranges are listed",
            where,
        )
    m.row_perm = _get(d, "row_perm", bool, where)
    m.col_perm = _get(d, "col_perm", bool, where)
    if (m.row_perm or m.col_perm) and m.perm_file is None:
        raise FormatError("the store is permuted but has no perm_file", where)
    if len(m.shards) != r * c:
        raise FormatError(f"grid is {r} x {c} but {len(m.shards)} shards are listed", where)
    for idx, e in enumerate(m.shards):
        i, j = divmod(idx, c)
        label = f"shard ({i}, {j})"
        if (
            _get(e, "block_row", int, where, what=label) != i
            or _get(e, "block_col", int, where, what=label) != j
        ):
            raise FormatError(
                f"shard entry {idx} is block ({e['block_row']}, {e['block_col']}),"
                f" expected ({i}, {j}) (row-major order)",
                where,
            )
        _check_entry_file(e, label, where)
        _get(e, "content_hash", str, where, what=label)
        got = [e.get("row_start"), e.get("row_stop"), e.get("col_start"), e.get("col_stop")]
        if got != m.row_ranges[i] + m.col_ranges[j]:
            raise FormatError(
                f"inconsistent ranges: {label} lists rows/cols {got}, the grid "
                f"gives {m.row_ranges[i] + m.col_ranges[j]}",
                where,
            )
    m.node_files = _get(d, "node_files", list, where)
    if len(m.node_files) != r:
        raise FormatError(
            f"grid has {r} block rows but {len(m.node_files)} node files are listed", where
        )
    for i, e in enumerate(m.node_files):
        label = f"node file of block row {i}"
        if not isinstance(e, dict) or e.get("block_row") != i:
            raise FormatError(f"node_files entry {i} is not block row {i}", where)
        _check_entry_file(e, label, where)
        _get(e, "content_hash", str, where, what=label)
        if [e.get("row_start"), e.get("row_stop")] != m.row_ranges[i]:
            raise FormatError(
                f"inconsistent ranges: {label} lists rows "
                f"[{e.get('row_start')}, {e.get('row_stop')}), the grid gives "
                f"{m.row_ranges[i]}",
                where,
            )


def _entry_label(m: Manifest, entry: dict) -> str:
    if m.kind == "rows":
        return f"shard {entry['id']}"
    return f"shard ({entry['block_row']}, {entry['block_col']})"


def _check_files_exist(m: Manifest, where: str) -> None:
    for e in m.shards:
        if not m.file(e["file"]).is_file():
            raise FormatError(
                f"{_entry_label(m, e)} file '{e['file']}' listed in manifest is missing", where
            )
    for i, e in enumerate(m.node_files):
        if not m.file(e["file"]).is_file():
            raise FormatError(
                f"node file of block row {i} '{e['file']}' listed in manifest is missing", where
            )
    if m.perm_file is not None and not m.file(m.perm_file).is_file():
        raise FormatError(f"perm file '{m.perm_file}' listed in manifest is missing", where)


def _as_manifest(manifest: Manifest | str | os.PathLike) -> Manifest:
    if isinstance(manifest, Manifest):
        return manifest
    return open_manifest(manifest, check_files=False)


# =========================================================================== reading


def _listed_file(m: Manifest, entry: dict, label: str) -> Path:
    path = m.file(entry["file"])
    if not path.is_file():
        raise FormatError(
            f"{label} file '{entry['file']}' listed in manifest is missing", str(m.path)
        )
    return path


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


def _check_store_attrs(f, m: Manifest, entry: dict, fmt: str, label: str, where: str) -> None:
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


def _read_node_arrays(f, where: str) -> dict[str, np.ndarray | None]:
    out = {"orig_ids": read_dataset(f, "orig_ids", where)}
    out["features"] = read_dataset(f, "features", where, required=False)
    out["labels"] = read_dataset(f, "labels", where, required=False)
    for name in MASK_NAMES:
        out[name] = read_mask(f, name, where)
    return out


def _validate_node_arrays(m: Manifest, arrays: dict, rows: int, where: str) -> None:
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


def _check_content(items: list[tuple[str, np.ndarray | None]], expected: str, where: str) -> None:
    actual = hash_arrays(items)
    if actual != expected:
        raise FormatError(
            f"content hash mismatch (attribute {expected[:12]}..., arrays hash "
            f"to {actual[:12]}...)",
            where,
        )


def _node_hash_items(arrays: dict) -> list[tuple[str, np.ndarray | None]]:
    return [("orig_ids", arrays["orig_ids"])] + [
        (k, to_mask(arrays[k]) if k in MASK_NAMES else arrays[k]) for k in _NODE_NAMES
    ]


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
    m = _as_manifest(manifest)
    if m.kind != "rows":
        raise InputError(f"store kind is '{m.kind}', not rows (use read_block_shard)", str(m.path))
    if not 0 <= k < len(m.shards):
        raise InputError(f"shard {k} does not exist (the store has {len(m.shards)})", str(m.path))
    entry = m.shards[k]
    label = f"shard {k}"
    path = _listed_file(m, entry, label)
    where = str(path)
    s, e = entry["row_start"], entry["row_stop"]
    rows = e - s
    with open_h5(path, "shard file") as f:
        _check_store_attrs(f, m, entry, SHARD_FORMAT, label, where)
        _expect_attrs(
            f.attrs,
            where,
            label,
            {"shard": k, "row_start": s, "row_stop": e, "n_global": m.n, "nnz": entry["nnz"]},
        )
        indptr = read_dataset(f, "indptr", where)
        indices = read_dataset(f, "indices", where)
        data = read_dataset(f, "data", where, required=False)
        nodes = _read_node_arrays(f, where)
    if validate:
        validate_csr(indptr, indices, m.n, where, n_rows=rows, nnz=entry["nnz"])
        if (data is not None) != m.has_data:
            raise FormatError("edge values (data) present/absent unlike the manifest", where)
        if data is not None:
            validate_values(data, entry["nnz"], where)
        _validate_node_arrays(m, nodes, rows, where)
        _check_content(
            [("indptr", indptr), ("indices", indices), ("data", data)] + _node_hash_items(nodes),
            entry["content_hash"],
            where,
        )
    return RowShard(
        k=k,
        row_start=s,
        row_stop=e,
        n_global=m.n,
        indptr=indptr,
        indices=indices,
        data=data,
        orig_ids=nodes["orig_ids"],
        features=nodes["features"],
        labels=nodes["labels"],
        train_mask=to_mask(nodes["train_mask"]),
        val_mask=to_mask(nodes["val_mask"]),
        test_mask=to_mask(nodes["test_mask"]),
        num_classes=m.num_classes,
    )


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
    m = _as_manifest(manifest)
    if m.kind != "blocks2d":
        raise InputError(
            f"store kind is '{m.kind}', not blocks2d (use read_row_shard)", str(m.path)
        )
    entry = m.block_entry(i, j)
    label = f"shard ({i}, {j})"
    path = _listed_file(m, entry, label)
    where = str(path)
    rs, re_, cs, ce = (entry[k] for k in ("row_start", "row_stop", "col_start", "col_stop"))
    with open_h5(path, "shard file") as f:
        _check_store_attrs(f, m, entry, SHARD_FORMAT, label, where)
        _expect_attrs(
            f.attrs,
            where,
            label,
            {
                "block_row": i,
                "block_col": j,
                "row_start": rs,
                "row_stop": re_,
                "col_start": cs,
                "col_stop": ce,
                "n_global": m.n,
                "nnz": entry["nnz"],
            },
        )
        indptr = read_dataset(f, "indptr", where)
        indices = read_dataset(f, "indices", where)
        data = read_dataset(f, "data", where, required=False)
    if validate:
        validate_csr(indptr, indices, ce - cs, where, n_rows=re_ - rs, nnz=entry["nnz"])
        if (data is not None) != m.has_data:
            raise FormatError("edge values (data) present/absent unlike the manifest", where)
        if data is not None:
            validate_values(data, entry["nnz"], where)
        _check_content(
            [("indptr", indptr), ("indices", indices), ("data", data)], entry["content_hash"], where
        )
    return BlockShard(
        i=i,
        j=j,
        row_start=rs,
        row_stop=re_,
        col_start=cs,
        col_stop=ce,
        n_global=m.n,
        indptr=indptr,
        indices=indices,
        data=data,
    )


def read_block_nodes(
    manifest: Manifest | str | os.PathLike, i: int, *, validate: bool = True
) -> NodeBlock:
    """Read the node data of block row `i` of a blocks2d store (its node file only)."""
    m = _as_manifest(manifest)
    if m.kind != "blocks2d":
        raise InputError(f"store kind is '{m.kind}', not blocks2d", str(m.path))
    if not 0 <= i < len(m.node_files):
        raise InputError(
            f"block row {i} does not exist (the grid has {len(m.node_files)})", str(m.path)
        )
    entry = m.node_files[i]
    label = f"node file of block row {i}"
    path = _listed_file(m, entry, label)
    where = str(path)
    rs, re_ = entry["row_start"], entry["row_stop"]
    with open_h5(path, "node file") as f:
        _check_store_attrs(f, m, entry, NODES_FORMAT, label, where)
        _expect_attrs(
            f.attrs,
            where,
            label,
            {"block_row": i, "row_start": rs, "row_stop": re_, "n_global": m.n},
        )
        nodes = _read_node_arrays(f, where)
    if validate:
        _validate_node_arrays(m, nodes, re_ - rs, where)
        _check_content(_node_hash_items(nodes), entry["content_hash"], where)
    return NodeBlock(
        i=i,
        row_start=rs,
        row_stop=re_,
        orig_ids=nodes["orig_ids"],
        features=nodes["features"],
        labels=nodes["labels"],
        train_mask=to_mask(nodes["train_mask"]),
        val_mask=to_mask(nodes["val_mask"]),
        test_mask=to_mask(nodes["test_mask"]),
        num_classes=m.num_classes,
    )


def read_perm(manifest: Manifest | str | os.PathLike) -> dict[str, np.ndarray]:
    """The permutations of a store (`perm.h5`), validated; {} for an unpermuted blocks2d store.

    Keys: ``perm``/``iperm`` (rows) or ``row_perm``/``row_iperm``/``col_perm``/``col_iperm``
    (blocks2d, those present). ``perm[new] = original``, ``iperm[original] = new``.
    """
    m = _as_manifest(manifest)
    if m.perm_file is None:
        return {}
    path = m.file(m.perm_file)
    if not path.is_file():
        raise FormatError(f"perm file '{m.perm_file}' listed in manifest is missing", str(m.path))
    where = str(path)
    if m.kind == "rows":
        pairs = [("perm", "iperm")]
    else:
        pairs = ([("row_perm", "row_iperm")] if m.row_perm else []) + (
            [("col_perm", "col_iperm")] if m.col_perm else []
        )
    out = {}
    with open_h5(path, "perm file") as f:
        check_format(f.attrs, PERM_FORMAT, where)
        if int_attr(f.attrs, "n", where) != m.n:
            raise FormatError(
                f"perm file has n = {int(f.attrs['n'])} but the manifest says {m.n}", where
            )
        if str_attr(f.attrs, "source_content_hash", where) != m.source_content_hash:
            raise FormatError("perm file belongs to a different store", where)
        for p, ip in pairs:
            out[p] = read_dataset(f, p, where)
            out[ip] = read_dataset(f, ip, where)
    for p, ip in pairs:
        validate_permutation(out[p], m.n, where, p)
        validate_permutation(out[ip], m.n, where, ip)
        if not np.array_equal(out[ip][out[p]], np.arange(m.n)):
            raise FormatError(f"{ip} is not the inverse of {p}", where)
        out[p] = out[p].astype(np.int64, copy=False)
        out[ip] = out[ip].astype(np.int64, copy=False)
    return out


# =========================================================================== reassembly


def _concat_optional(parts: list[np.ndarray | None], where: str, name: str) -> np.ndarray | None:
    present = [p is not None for p in parts]
    if not any(present):
        return None
    if not all(present):
        raise FormatError(f"'{name}' is present in some shards and absent in others", where)
    return np.concatenate(parts)


def _finish(m: Manifest, indptr, indices, data, node_new: dict, iperm: np.ndarray) -> Graph:
    """Build the graph in original numbering and check it against the manifest's hash."""
    where = str(m.path)
    node = {}
    for name in _NODE_NAMES:
        a = node_new[name]
        node[name] = None if a is None else a[iperm]
    g = Graph(
        indptr=indptr,
        indices=indices.astype(index_dtype(m.n)),
        data=data,
        features=node["features"],
        labels=node["labels"],
        train_mask=node["train_mask"],
        val_mask=node["val_mask"],
        test_mask=node["test_mask"],
        name=m.name,
        directed=m.directed,
        num_classes=m.num_classes,
    )
    actual = g.content_hash()
    if actual != m.content_hash:
        raise FormatError(
            f"reassembled graph hash {actual[:12]}... differs from the manifest's "
            f"{m.content_hash[:12]}...",
            where,
        )
    return g


def _gather_nodes(blocks: list, where: str) -> dict:
    return {
        name: _concat_optional([getattr(b, name) for b in blocks], where, name)
        for name in _NODE_NAMES
    }


def assemble_rows(manifest: Manifest | str | os.PathLike) -> Graph:
    """Read every shard of a rows store and rebuild the graph in the ORIGINAL numbering.

    The result equals the sharded graph exactly (entry order included); its content hash is
    checked against the manifest.
    """
    m = manifest if isinstance(manifest, Manifest) else open_manifest(manifest)
    if m.kind != "rows":
        raise InputError(f"store kind is '{m.kind}', not rows", str(m.path))
    where = str(m.path)
    shards = [read_row_shard(m, k) for k in range(len(m.shards))]
    perm_arrays = read_perm(m)
    perm = (
        np.concatenate([s.orig_ids for s in shards]).astype(np.int64)
        if shards
        else np.zeros(0, np.int64)
    )
    if not np.array_equal(perm, perm_arrays["perm"]):
        raise FormatError("the shards' orig_ids disagree with perm.h5", where)
    iperm = perm_arrays["iperm"]
    counts = np.concatenate([np.diff(s.indptr) for s in shards] or [np.zeros(0, np.int64)])
    indptr = np.zeros(m.n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    indices = np.concatenate(
        [s.indices.astype(np.int64) for s in shards] or [np.zeros(0, np.int64)]
    )
    data = _concat_optional([s.data for s in shards], where, "data")
    o_ptr, o_idx, o_data = permute_csr(indptr, indices, data, iperm, perm)
    return _finish(m, o_ptr, o_idx, o_data, _gather_nodes(shards, where), iperm)


def assemble_blocks(manifest: Manifest | str | os.PathLike) -> Graph:
    """Read every block and node file of a blocks2d store; rebuild the graph (ORIGINAL numbering).

    Each row's entries come back sorted by column (stable), i.e. the source in canonical form;
    the content hash is checked against the manifest's `content_hash`.
    """
    m = manifest if isinstance(manifest, Manifest) else open_manifest(manifest)
    if m.kind != "blocks2d":
        raise InputError(f"store kind is '{m.kind}', not blocks2d", str(m.path))
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
            local_rows = np.repeat(
                np.arange(b.row_start, b.row_stop, dtype=np.int64), np.diff(b.indptr)
            )
            rows_l.append(local_rows)
            cols_l.append(b.indices.astype(np.int64) + b.col_start)
            data_l.append(b.data)
    rows = np.concatenate(rows_l or [np.zeros(0, np.int64)])
    cols = np.concatenate(cols_l or [np.zeros(0, np.int64)])
    data = _concat_optional(data_l, where, "data") if data_l else None
    order = np.argsort(rows, kind="stable")
    indptr = np.zeros(m.n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=m.n), out=indptr[1:])
    cols = cols[order]
    data = None if data is None else data[order]
    o_ptr, o_idx, o_data = permute_csr(indptr, cols, data, row_iperm, col_perm)
    o_ptr, o_idx, o_data = sort_rows_csr(o_ptr, o_idx, o_data)
    nodes = [read_block_nodes(m, i) for i in range(r)]
    ids = np.concatenate([nb.orig_ids for nb in nodes]).astype(np.int64)
    if not np.array_equal(ids, row_perm):
        raise FormatError("the node files' orig_ids disagree with the row permutation", where)
    return _finish(m, o_ptr, o_idx, o_data, _gather_nodes(nodes, where), row_iperm)


def assemble(manifest: Manifest | str | os.PathLike) -> Graph:
    """Rebuild the graph of a store of either kind (see `assemble_rows`, `assemble_blocks`)."""
    m = manifest if isinstance(manifest, Manifest) else open_manifest(manifest)
    return assemble_rows(m) if m.kind == "rows" else assemble_blocks(m)
