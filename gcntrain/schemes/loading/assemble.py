"""A rank's rows, read by a source, assembled into a `LocalGraph` (`local_graph`): columns
sorted within rows, the request's column and feature windows applied, scattered rows
(`LoadRequest.ids`) kept to the request's entries.
"""

from __future__ import annotations

import numpy as np

from gcntrain.data.validate import require_node_data
from gcntrain.errors import InputError
from gcntrain.kernels.csr import (
    STRICT,
    UNSORTED,
    csr_gather_rows,
    csr_row_order,
    csr_sort_rows,
)
from gcntrain.partition.csr import keep_entries
from gcntrain.schemes.graphs import LoadRequest, LocalGraph, Numbering


def _window(indptr, indices, data, cols: tuple[int, int] | None):
    """Keep the entries whose column lies in [lo, hi) (all when `cols` is None)."""
    if cols is None:
        return indptr, indices, data
    return keep_entries(indptr, indices, data, (indices >= cols[0]) & (indices < cols[1]))


def sorted_csr(indptr, indices, data, keep_index_dtype: bool = False):
    """(indptr int64, indices int64, data float32 or None) with every row sorted by column:
    the arrays given where they already are (cast where their dtype differs), else sorted
    copies (`csr_sort_rows`: only the rows out of order, stably).  Weighted rows that repeat
    a column are sorted by scipy, as before, whose order their values keep.  With
    `keep_index_dtype`, int32 column ids stay int32 (a whole graph's ids, not widened)."""
    ip = np.ascontiguousarray(indptr, dtype=np.int64)
    narrow = keep_index_dtype and np.asarray(indices).dtype == np.int32
    ix = np.ascontiguousarray(indices, dtype=np.int32 if narrow else np.int64)
    dv = None if data is None else np.ascontiguousarray(data, dtype=np.float32)
    if csr_row_order(ip, ix) != UNSORTED:
        return ip, ix, dv
    keep = dv is not None or np.may_share_memory(ix, indices)  # ix: the fallback's input
    sx = ix.copy() if keep else ix
    sd = None if dv is None else dv.copy()
    csr_sort_rows(ip, sx, np.zeros(0, np.float32) if sd is None else sd)
    if sd is None or csr_row_order(ip, sx) == STRICT:  # values of distinct columns
        return ip, sx, sd
    return _sorted_with_data(ip, ix, dv)


def _sorted_with_data(ip, ix, dv):
    import scipy.sparse as sp

    shape = (ip.shape[0] - 1, int(ix.max(initial=-1)) + 1)
    M = sp.csr_matrix((dv, ix, ip), shape=shape, copy=True)  # sorted in place below
    M.sort_indices()
    return ip, M.indices.astype(np.int64), M.data.astype(np.float32)


def gather_rows(indptr, indices, data, rows: np.ndarray, colmap: np.ndarray | None):
    """Rows `rows` of a CSR matrix with their column ids mapped through `colmap` (None:
    kept), in one pass (`csr_gather_rows`): (indptr int64, indices int64, data float32 or
    None), rows in their stored order."""
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    indptr = np.ascontiguousarray(indptr)
    total = int((indptr[rows + 1] - indptr[rows]).sum())
    ip = np.empty(rows.shape[0] + 1, dtype=np.int64)
    ix = np.empty(total, dtype=np.int64)
    dv = np.empty(total if data is not None else 0, dtype=np.float32)
    cmap = np.zeros(0, np.int64) if colmap is None else np.ascontiguousarray(colmap, np.int64)
    src = np.zeros(0, np.float32) if data is None else np.ascontiguousarray(data)
    csr_gather_rows(indptr, np.ascontiguousarray(indices), src, rows, cmap, ip, ix, dv)
    return ip, ix, (None if data is None else dv)


def take_rows(a, rows: np.ndarray, share: bool = False):
    """``a[rows]`` (None stays None); a contiguous ascending `rows` is a slice (copied later
    by `local_graph`), and with `share` all the rows in order are `a` itself."""
    if a is None:
        return None
    k = int(rows.shape[0])
    if k and int(rows[-1]) - int(rows[0]) == k - 1 and bool(np.all(np.diff(rows) == 1)):
        lo = int(rows[0])
        if share and lo == 0 and k == a.shape[0]:
            return a
        return a[lo : lo + k]
    return a[rows]


def _feature_window(X, cols: tuple[int, int] | None):
    if X is None or cols is None:
        return X
    return X[:, cols[0] : cols[1]]


def _own(a):
    """`a` in its own buffer: a window (view) of the rows read must not keep them all."""
    return a.copy() if isinstance(a, np.ndarray) and a.base is not None else a


def local_graph(
    *,
    n: int,
    nnz: int,
    name: str,
    num_classes: int | None,
    num_features: int,
    req: LoadRequest,
    orig_ids: np.ndarray,
    indptr: np.ndarray,
    cols_new: np.ndarray,
    data: np.ndarray | None,
    features,
    labels: np.ndarray,
    masks: dict,
    where: str,
    ids_new: np.ndarray | None = None,
    keep_index_dtype: bool = False,
) -> LocalGraph:
    """Assemble a `LocalGraph`: sort each row's columns, apply the request's windows (and,
    for scattered rows `ids_new`, keep the request's `entries` only); with
    `keep_index_dtype`, int32 column ids are kept (`sorted_csr`)."""
    require_node_data(features, labels, masks.get("train"), where)
    ip, ix, dv = _window(*sorted_csr(indptr, cols_new, data, keep_index_dtype), req.cols)
    ncls = num_classes
    if ncls is None:
        ncls = max(int(np.asarray(labels).max(initial=0)) + 1, 2)
    common = dict(n=n, nnz=nnz, name=name, num_classes=int(ncls), num_features=int(num_features))
    if ids_new is not None:
        if req.entries is not None:  # scattered rows: the request's entries of them only
            key = np.repeat(np.asarray(ids_new, np.int64), np.diff(ip)) * n + ix
            pos = np.searchsorted(req.entries, key)
            pos[pos >= req.entries.size] = 0
            keep = req.entries.size > 0
            keep = (req.entries[pos] == key) if keep else np.zeros(key.size, dtype=bool)
            ip, ix, dv = keep_entries(ip, ix, dv, keep)
        m = int(np.asarray(orig_ids).shape[0])
        node_data = (orig_ids, features, labels, masks)
        return _assembled(common, req, (ip, ix, dv), node_data, (0, m), (0, m), ids_new)
    nodes = req.node_rows or req.rows
    if tuple(nodes) != tuple(req.rows):
        cut = slice(int(nodes[0] - req.rows[0]), int(nodes[1] - req.rows[0]))
        orig_ids, features, labels = orig_ids[cut], features[cut], np.asarray(labels)[cut]
        masks = {k: None if v is None else np.asarray(v)[cut] for k, v in masks.items()}
    rows = (int(req.rows[0]), int(req.rows[1]))
    node_data = (orig_ids, features, labels, masks)
    return _assembled(common, req, (ip, ix, dv), node_data, rows, (int(nodes[0]), int(nodes[1])))


def _assembled(common: dict, req, csr, node_data, rows, node_rows, ids=None) -> LocalGraph:
    """The `LocalGraph` of `csr` (indptr, indices, data) and the node data (original ids,
    features, labels, masks) of its node rows, owned (`_own`), the request's feature
    window applied."""
    ip, ix, dv = csr
    orig_ids, features, labels, masks = node_data
    return LocalGraph(
        **common,
        rows=rows,
        orig_ids=_own(np.asarray(orig_ids, dtype=np.int64)),
        indptr=ip,
        indices=ix,
        data=dv,
        features=_own(_feature_window(features, req.features)),
        labels=_own(np.asarray(labels, dtype=np.int64)),
        masks={k: _own(np.asarray(v)) for k, v in masks.items() if v is not None},
        node_rows=node_rows,
        **({} if ids is None else {"ids": np.asarray(ids, dtype=np.int64)}),
    )


def _rows_of(req: LoadRequest, numbering: Numbering) -> tuple[np.ndarray, np.ndarray | None]:
    """(original ids to read, ascending for scattered rows; their new ids or None)."""
    if req.ids is None:
        lo, hi = req.rows
        return numbering.perm[lo:hi], None
    old = np.sort(numbering.perm[np.asarray(req.ids, dtype=np.int64)])
    return old, numbering.inv[old]


def _rows_in_order(read_rows, path, old: np.ndarray) -> dict:
    """`read_rows(path, ids)` (which reads ascending ids) for the ids `old` in their given
    order: a part ordered by ``--reorder`` lists its original ids out of order."""
    srt = np.argsort(old, kind="stable")
    if np.array_equal(srt, np.arange(old.shape[0])):
        return read_rows(path, old)
    r = read_rows(path, old[srt])
    pos = np.empty_like(srt)
    pos[srt] = np.arange(srt.shape[0], dtype=srt.dtype)  # row i of `old` is row pos[i] read
    ip = np.asarray(r["indptr"], np.int64)
    counts = np.diff(ip)[pos]
    starts = ip[:-1][pos]
    take = np.repeat(starts - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
    take += np.arange(int(counts.sum()), dtype=np.int64)
    out = dict(r)
    out["indptr"] = np.concatenate(([0], np.cumsum(counts))).astype(ip.dtype)
    out["indices"] = np.asarray(r["indices"])[take]
    for key in ("data", "features", "labels", "train_mask", "val_mask", "test_mask"):
        if out.get(key) is not None:
            out[key] = np.asarray(out[key])[take if key == "data" else pos]
    return out


def check_classes(local: LocalGraph) -> LocalGraph:
    """Classification needs at least two classes (same rule as the serial path)."""
    if local.num_classes < 2:
        raise InputError(f"need at least 2 classes, found {local.num_classes}", local.name)
    return local
