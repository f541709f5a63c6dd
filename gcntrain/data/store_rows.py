"""A 1D row-shard store read one shard (or one block of a shard's rows) at a time, for a
plan that must not hold the whole graph.

`row_store_summary` makes one pass over the shards, each read and validated whole (its
content hash included) by `gcntrain.data.shards.read_row_shard` and dropped before the next:
it keeps the row pointers, the stored ids of the rows (the store's ``perm``) and, of the node
data, the counts a plan needs.  `row_store_blocks` then reads the column ids and values of a
range of rows straight from a shard's file, a block at a time, and checks them as
`read_row_shard` does.  Both work in the store's numbering (its rows in shard order, its
columns renumbered alike).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gcntrain.data.shards import read_perm, read_row_shard
from gcntrain.data.shards.layout import shard_label
from gcntrain.data.store import open_h5
from gcntrain.data.validate import MASK_NAMES, validate_csr, validate_values
from gcntrain.errors import FormatError


@dataclass
class RowStoreSummary:
    """What a plan keeps of a rows store (the store's numbering).

    Attributes
    ----------
    indptr : (n + 1,) int64 row pointers of the whole store
    order : (n,) int64 original id of every store row (the store's ``perm``), None where
        the store keeps the original order (a block partition)
    stored : (n,) int64 stored feature entries per row, or None without features
    nonzero : nonzero feature values in all
    itemsize : bytes per stored feature value (None without features)
    num_features : feature columns
    labels : (n,) labels or None
    masks : the masks present (of "train", "val", "test")
    largest_shard : bytes of the largest shard read whole (adjacency and node data)
    """

    indptr: np.ndarray
    order: np.ndarray | None
    stored: np.ndarray | None
    nonzero: int
    itemsize: int | None
    num_features: int
    labels: np.ndarray | None
    masks: tuple
    largest_shard: int


def shard_bytes(man, k: int) -> int:
    """Bytes `read_row_shard` holds for shard `k` (adjacency, values and node data), from
    its manifest entry."""
    e = man.shards[k]
    rows = int(e["row_stop"]) - int(e["row_start"])
    per_entry = 8 + (4 if man.has_data else 0)  # column ids as stored or int64, values
    per_row = 8 + 8 + 8 + 3 + man.num_features * 4  # indptr, orig_ids, labels, masks, X
    return int(e["nnz"]) * per_entry + rows * per_row


def row_store_summary(man) -> RowStoreSummary:
    """One validated pass over a rows store's shards (module docstring)."""
    n = man.n
    indptr = np.zeros(n + 1, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    stored = labels = None
    nonzero, itemsize, nf = 0, None, int(man.num_features)
    present = set()
    for k in range(len(man.shards)):
        sh = read_row_shard(man, k)
        lo, hi = sh.row_start, sh.row_stop
        indptr[lo + 1 : hi + 1] = np.diff(np.asarray(sh.indptr, dtype=np.int64))
        order[lo:hi] = sh.orig_ids
        if sh.features is not None:
            if stored is None:
                stored = np.zeros(n, dtype=np.int64)
                itemsize = int(sh.features.dtype.itemsize)
                nf = int(sh.features.shape[1])
            stored[lo:hi] = np.count_nonzero(sh.features, axis=1)
        if sh.labels is not None:
            if labels is None:
                labels = np.zeros(n, dtype=np.asarray(sh.labels).dtype)
            labels[lo:hi] = sh.labels
        present.update(m for m in MASK_NAMES if getattr(sh, m) is not None)
        del sh
    np.cumsum(indptr, out=indptr)
    ident = np.arange(n, dtype=np.int64)
    if not np.array_equal(order, read_perm(man).get("perm", ident)):
        raise FormatError("the shards' orig_ids disagree with perm.h5", str(man.path))
    if np.array_equal(order, ident):
        order = None  # the original numbering: nothing to map
    del ident
    if stored is not None:
        nonzero = int(stored.sum())
    masks = tuple(m.removesuffix("_mask") for m in MASK_NAMES if m in present)
    largest = max((shard_bytes(man, k) for k in range(len(man.shards))), default=0)
    return RowStoreSummary(indptr, order, stored, nonzero, itemsize, nf, labels, masks, largest)


def row_ranges(indptr: np.ndarray, lo: int, stop: int, limit: int) -> list[tuple[int, int]]:
    """[a, b) ranges of rows ``lo..stop`` of about `limit` entries each (at least one row
    each)."""
    out = []
    while lo < stop:
        hi = int(np.searchsorted(indptr, indptr[lo] + limit, side="right")) - 1
        hi = min(max(hi, lo + 1), stop)
        out.append((lo, hi))
        lo = hi
    return out


def row_store_blocks(man, indptr: np.ndarray, limit: int):
    """Yield (lo, hi, row pointers from 0, column ids, values or None) of a rows store, in
    its numbering: ranges of rows of about `limit` entries, read from the shards' files and
    validated (`FormatError` naming the shard's file).  A range may span several shards: a
    store of many small shards is read in blocks of `limit` entries all the same (a plan's
    cost per block does not grow with the shard count)."""
    bounds = np.array([int(e["row_start"]) for e in man.shards] + [man.n], dtype=np.int64)
    for lo, hi in row_ranges(indptr, 0, man.n, limit):
        k = int(np.searchsorted(bounds, lo, side="right")) - 1
        at, ids, vals = lo, [], []
        while at < hi:  # the pieces of [lo, hi) in shards k, k + 1, ...
            stop = min(hi, int(bounds[k + 1]))
            ix, dv = _shard_piece(man, k, indptr, at, stop)
            ids.append(ix)
            vals.append(dv)
            at, k = stop, k + 1
        a = int(indptr[lo])
        ix = ids[0] if len(ids) == 1 else np.concatenate(ids)
        data = None if not man.has_data else vals[0] if len(vals) == 1 else np.concatenate(vals)
        del ids, vals
        yield lo, hi, indptr[lo : hi + 1] - a, ix, data


def _shard_piece(man, k: int, indptr: np.ndarray, lo: int, hi: int):
    """(column ids, values or None) of rows [lo, hi) of the store, all in shard `k`, read
    from its file and checked as `read_row_shard` checks them."""
    path = man.listed_file(man.shards[k]["file"], f"{shard_label(k)} file")
    where = str(path)
    base = int(indptr[int(man.shards[k]["row_start"])])
    a, b = int(indptr[lo]), int(indptr[hi])
    with open_h5(path, "shard file") as f:
        if ("data" in f) != man.has_data:
            raise FormatError("edge values (data) present/absent unlike the manifest", where)
        ix = np.asarray(f["indices"][a - base : b - base])
        validate_csr(indptr[lo : hi + 1] - a, ix, man.n, where, n_rows=hi - lo)
        data = np.asarray(f["data"][a - base : b - base]) if man.has_data else None
    if data is not None:
        validate_values(data, b - a, where)
    return ix, data
