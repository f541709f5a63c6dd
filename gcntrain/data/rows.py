"""Read selected rows of a single-file graph store (each MPI rank reads only its rows).

Rows are read in contiguous windows: neighbouring runs of wanted rows are fetched together
(and the rows between them dropped) only while a window holds at most as many unwanted rows
as wanted ones plus `gap`, so a block partition costs one read per array and a scattered
partition never makes a rank read much more than twice its own rows.  Each array's window is
one ``read_direct`` slice in the file's dtype (column ids stay int32 where the file has them);
a window whose rows are all wanted (a block partition's) is kept as read, with no gather.
What is read is validated like a whole file (monotone indptr, column range, finite features,
label range, disjoint masks); the content hash, which needs every array, is checked only by
whole-file reads.
"""

from __future__ import annotations

import os

import numpy as np

from gcntrain.data.store import check_declared_sizes, int_attr, open_h5, read_mask, to_mask
from gcntrain.data.validate import check_format, validate_csr, validate_node_data
from gcntrain.errors import FormatError
from gcntrain.partition.csr import concat_ranges

GRAPH_FORMAT = "gcntrain-graph"


def windows(rows: np.ndarray, gap: int) -> list[tuple[int, int]]:
    """Cover sorted `rows` with [start, stop) windows of bounded waste.

    Consecutive runs merge while the merged window's unwanted rows stay <= its wanted rows +
    `gap`.
    """
    if rows.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(rows) > 1)
    starts = np.concatenate(([rows[0]], rows[breaks + 1])).tolist()
    stops = (np.concatenate((rows[breaks], [rows[-1]])) + 1).tolist()
    out: list[tuple[int, int]] = []
    a, b, want = starts[0], stops[0], stops[0] - starts[0]
    for s_, e_ in zip(starts[1:], stops[1:]):
        w2 = want + (e_ - s_)
        if (e_ - a) - w2 <= w2 + gap:
            b, want = e_, w2
        else:
            out.append((a, b))
            a, b, want = s_, e_, e_ - s_
    out.append((a, b))
    return out


def read_slice(ds, lo: int, hi: int, dtype=None) -> np.ndarray:
    """Elements [lo, hi) along the first axis of the h5py dataset `ds`, read by
    ``read_direct`` into one new array of `dtype` (default: the dataset's; HDF5 converts);
    datasets of other than numeric dtypes by h5py's slicing."""
    if ds.dtype.kind not in "biuf":  # strings, compounds: h5py's own read (then validated)
        return np.asarray(ds[lo:hi])
    out = np.empty((hi - lo,) + ds.shape[1:], dtype=ds.dtype if dtype is None else dtype)
    if hi > lo:
        ds.read_direct(out, source_sel=np.s_[lo:hi])
    return out


def _joined(parts: list, dtype, empty_shape=(0,)) -> np.ndarray:
    """The parts end to end (one part as it is, not copied); an empty `dtype` array when
    there are none."""
    if not parts:
        return np.zeros(empty_shape, dtype)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def read_graph_rows(path: str | os.PathLike, rows: np.ndarray, gap: int = 8) -> dict:
    """Rows `rows` (sorted original ids) of the graph file at `path`.

    Returns
    -------
    dict with n, num_classes, directed, name, content_hash, and for the selected rows:
    indptr (local), indices (original column ids), data or None, features or None, labels or
    None, train_mask / val_mask / test_mask or None.
    """
    where = str(path)
    rows = np.asarray(rows, dtype=np.int64)
    with open_h5(path, "graph file") as f:
        check_format(f.attrs, GRAPH_FORMAT, where)
        check_declared_sizes(f, where)
        n = int_attr(f.attrs, "n", where)
        nc = int_attr(f.attrs, "num_classes", where, default=-1)
        out = {
            "n": n,
            "num_classes": None if nc < 0 else nc,
            "directed": bool(int_attr(f.attrs, "directed", where, default=0)),
            "name": str(f.attrs.get("name", os.path.basename(where))),
            "content_hash": str(f.attrs.get("content_hash", "")),
        }
        if rows.size and (rows[0] < 0 or rows[-1] >= n):
            raise FormatError(f"requested rows outside 0..{n - 1}", where)
        ip_ds, ix_ds = f["indptr"], f["indices"]
        if ip_ds.shape != (n + 1,):
            raise FormatError(f"indptr has {ip_ds.shape[0]} entries, expected n+1 = {n + 1}", where)
        nnz = int(ix_ds.shape[0])
        first, last = int(ip_ds[0]), int(ip_ds[n])
        if first != 0 or last != nnz:
            msg = f"indptr runs from {first} to {last}, expected 0 to nnz = {nnz}"
            raise FormatError(msg, where)
        has = {k: k in f for k in ("data", "features", "labels")}
        counts, idx_parts, data_parts, feat_parts, lab_parts = [], [], [], [], []
        mask_parts = {m: [] for m in ("train_mask", "val_mask", "test_mask")}
        masks_full = {m: read_mask(f, m, where) for m in mask_parts}
        for a, b in windows(rows, gap):
            ip = read_slice(ip_ds, a, b + 1, np.int64)
            if np.any(np.diff(ip) < 0) or ip[0] < 0 or ip[-1] > nnz:
                raise FormatError(f"indptr is not monotone within 0..nnz (near row {a})", where)
            sel = rows[np.searchsorted(rows, a) : np.searchsorted(rows, b)] - a
            lo, hi = int(ip[0]), int(ip[-1])
            # the file's own index dtype (int32 where it fits): no widened copy
            ix = read_slice(ix_ds, lo, hi)
            dv = read_slice(f["data"], lo, hi) if has["data"] else None
            if sel.shape[0] == b - a and sel[-1] == b - a - 1 and bool(np.all(np.diff(sel))):
                # every row of the window (sorted, distinct): the slices as read
                counts.append(np.diff(ip))
                idx_parts.append(ix)
                if dv is not None:
                    data_parts.append(dv)
                if has["features"]:
                    feat_parts.append(read_slice(f["features"], a, b))
                if has["labels"]:
                    lab_parts.append(read_slice(f["labels"], a, b))
                for m in mask_parts:
                    if masks_full[m] is not None:
                        mask_parts[m].append(masks_full[m][a:b])
                continue
            starts, ends = ip[sel] - lo, ip[sel + 1] - lo
            take = concat_ranges(starts, ends - starts)
            counts.append(ends - starts)
            idx_parts.append(ix[take])
            if dv is not None:
                data_parts.append(dv[take])
            if has["features"]:
                feat_parts.append(f["features"][a:b][sel])
            if has["labels"]:
                lab_parts.append(f["labels"][a:b][sel])
            for m in mask_parts:
                if masks_full[m] is not None:
                    mask_parts[m].append(masks_full[m][a:b][sel])
        nf = f["features"].shape[1] if has["features"] else 0
    cnt = np.concatenate(counts) if counts else np.zeros(0, np.int64)
    indptr = np.zeros(rows.size + 1, dtype=np.int64)
    np.cumsum(cnt, out=indptr[1:])
    indices = _joined(idx_parts, np.int64)
    validate_csr(indptr, indices, n, where, n_rows=rows.size, nnz=int(indptr[-1]))
    out.update(
        indptr=indptr,
        indices=indices,
        data=_joined(data_parts, np.float32) if has["data"] else None,
        features=_joined(feat_parts, np.float32, (0, nf)) if has["features"] else None,
        labels=_joined(lab_parts, np.int64) if has["labels"] else None,
    )
    for m, parts in mask_parts.items():
        out[m] = (
            to_mask(np.concatenate(parts))
            if masks_full[m] is not None and parts
            else (np.zeros(0, bool) if masks_full[m] is not None else None)
        )
    validate_node_data(
        rows.size,
        where,
        features=out["features"],
        labels=out["labels"],
        num_classes=out["num_classes"],
        train_mask=out["train_mask"],
        val_mask=out["val_mask"],
        test_mask=out["test_mask"],
    )
    return out
