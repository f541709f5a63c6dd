"""A rank's rows, read by a source, assembled into a `LocalGraph` (`local_graph`): columns
sorted within rows, the request's column and feature windows applied, scattered rows
(`LoadRequest.ids`) kept to the request's entries.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from gcntrain.data.validate import require_node_data
from gcntrain.errors import InputError
from gcntrain.partition.csr import keep_entries
from gcntrain.schemes.graphs import LoadRequest, LocalGraph, Numbering


def _window(indptr, indices, data, cols: tuple[int, int] | None):
    """Keep the entries whose column lies in [lo, hi) (all when `cols` is None)."""
    if cols is None:
        return indptr, indices, data
    return keep_entries(indptr, indices, data, (indices >= cols[0]) & (indices < cols[1]))


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
) -> LocalGraph:
    """Assemble a `LocalGraph`: sort each row's columns, apply the request's windows (and,
    for scattered rows `ids_new`, keep the request's `entries` only)."""
    require_node_data(features, labels, masks.get("train"), where)
    m = int(orig_ids.shape[0])
    M = sp.csr_matrix(
        (np.ones(cols_new.size) if data is None else data, cols_new, indptr), shape=(m, n)
    )
    M.sort_indices()
    ip, ix, dv = _window(
        M.indptr.astype(np.int64),
        M.indices.astype(np.int64),
        None if data is None else M.data.astype(np.float32),
        req.cols,
    )
    if ids_new is not None:
        return _scattered(
            n=n,
            nnz=nnz,
            name=name,
            num_classes=num_classes,
            num_features=num_features,
            req=req,
            orig_ids=orig_ids,
            ids_new=ids_new,
            csr=(ip, ix, dv),
            features=features,
            labels=labels,
            masks=masks,
        )
    ncls = num_classes
    if ncls is None:
        ncls = max(int(np.asarray(labels).max(initial=0)) + 1, 2)
    nodes = req.node_rows or req.rows
    if tuple(nodes) != tuple(req.rows):
        cut = slice(int(nodes[0] - req.rows[0]), int(nodes[1] - req.rows[0]))
        orig_ids, features, labels = orig_ids[cut], features[cut], np.asarray(labels)[cut]
        masks = {k: None if v is None else np.asarray(v)[cut] for k, v in masks.items()}
    return LocalGraph(
        n=n,
        nnz=nnz,
        name=name,
        num_classes=int(ncls),
        num_features=int(num_features),
        rows=(int(req.rows[0]), int(req.rows[1])),
        orig_ids=_own(np.asarray(orig_ids, dtype=np.int64)),
        indptr=ip,
        indices=ix,
        data=dv,
        features=_own(_feature_window(features, req.features)),
        labels=_own(np.asarray(labels, dtype=np.int64)),
        masks={k: _own(np.asarray(v)) for k, v in masks.items() if v is not None},
        node_rows=(int(nodes[0]), int(nodes[1])),
    )


def _scattered(
    *, n, nnz, name, num_classes, num_features, req, orig_ids, ids_new, csr, features, labels, masks
) -> LocalGraph:
    """The `LocalGraph` of scattered rows: the request's entries of them, every row's node
    data."""
    ip, ix, dv = csr
    if req.entries is not None:
        key = np.repeat(np.asarray(ids_new, np.int64), np.diff(ip)) * n + ix
        pos = np.searchsorted(req.entries, key)
        pos[pos >= req.entries.size] = 0
        keep = req.entries.size > 0
        keep = (req.entries[pos] == key) if keep else np.zeros(key.size, dtype=bool)
        ip, ix, dv = keep_entries(ip, ix, dv, keep)
    ncls = num_classes
    if ncls is None:
        ncls = max(int(np.asarray(labels).max(initial=0)) + 1, 2)
    m = int(np.asarray(orig_ids).shape[0])
    return LocalGraph(
        n=n,
        nnz=nnz,
        name=name,
        num_classes=int(ncls),
        num_features=int(num_features),
        rows=(0, m),
        orig_ids=_own(np.asarray(orig_ids, dtype=np.int64)),
        indptr=ip,
        indices=ix,
        data=dv,
        features=_own(_feature_window(features, req.features)),
        labels=_own(np.asarray(labels, dtype=np.int64)),
        masks={k: _own(np.asarray(v)) for k, v in masks.items() if v is not None},
        node_rows=(0, m),
        ids=np.asarray(ids_new, dtype=np.int64),
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
