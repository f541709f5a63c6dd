"""Pure structural helpers over COO/CSR arrays: build, symmetrize, self-loops, relabel.

Every function returns new arrays and leaves its inputs untouched.  CSR results always have
sorted column indices within each row and no duplicate entries.  ``data`` is ``None`` for a
pattern (all ones) matrix throughout.
"""

from __future__ import annotations

import numpy as np

from gcntrain.errors import InputError
from gcntrain.partition.unique import unique_ints

#: how duplicate entries are merged by `coo_to_csr`
DUPLICATE_MODES = ("max", "sum", "first")
#: self-loop handling choices of `set_self_loops`
SELF_LOOP_MODES = ("keep", "add", "drop")


def index_dtype(n: int) -> type:
    """Smallest index dtype that holds ids ``0..n-1`` (int32 below 2**31, else int64)."""
    return np.int32 if n < 2**31 else np.int64


def csr_rows(indptr: np.ndarray) -> np.ndarray:
    """Row id of every stored entry (int64, length nnz)."""
    n = indptr.shape[0] - 1
    return np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))


def coo_to_csr(
    rows: np.ndarray,
    cols: np.ndarray,
    data: np.ndarray | None,
    n_rows: int,
    n_cols: int | None = None,
    duplicates: str = "max",
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Sort COO entries into CSR and merge duplicates.

    Parameters
    ----------
    rows, cols : integer arrays (m,)
        Entry coordinates, ``0 <= rows < n_rows`` and ``0 <= cols < n_cols`` (checked).
    data : float array (m,) or None
        Entry values; ``None`` for a pattern matrix.
    n_rows, n_cols : int
        Matrix shape (``n_cols`` defaults to ``n_rows``).
    duplicates : {"max", "sum", "first"}
        How values of repeated coordinates combine ("first" keeps the first in input order).

    Returns
    -------
    indptr : int64 (n_rows + 1,)
    indices : int32/int64 (nnz,), sorted within each row, unique
    data : float32 (nnz,) or None
    """
    if duplicates not in DUPLICATE_MODES:
        raise ValueError(f"duplicates must be one of {DUPLICATE_MODES}")
    n_cols = n_rows if n_cols is None else n_cols
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    if rows.shape != cols.shape or rows.ndim != 1:
        raise ValueError("rows and cols must be 1-D arrays of the same length")
    if data is not None and np.shape(data) != rows.shape:
        raise ValueError("data must have the same length as rows")
    if rows.size:
        if rows.min() < 0 or cols.min() < 0:
            raise InputError("negative node id")
        if rows.max() >= n_rows or cols.max() >= n_cols:
            raise InputError(f"node id out of range (shape {n_rows} x {n_cols})")
    if n_cols < 2**31 and n_rows < 2**32:
        key = rows * n_cols + cols
        if data is None:  # pattern: sorting the keys alone is enough (and much faster)
            key = np.sort(key)
            uniq = key[_first_of_runs(key)]
            r_sorted = uniq // n_cols
            c_sorted = uniq - r_sorted * n_cols
            return _finish_csr(r_sorted, c_sorted, None, n_rows, n_cols)
        # stability matters only when the first of several duplicates must win
        order = np.argsort(key, kind="stable" if duplicates == "first" else "quicksort")
        keep = _first_of_runs(key[order])
    else:  # key would overflow int64: sort on two keys
        order = np.lexsort((cols, rows))
        r, c = rows[order], cols[order]
        keep = np.ones(r.shape[0], dtype=bool)
        if r.size:
            keep[1:] = (r[1:] != r[:-1]) | (c[1:] != c[:-1])
    r_sorted = rows[order][keep]
    c_sorted = cols[order][keep]
    out_data = None
    if data is not None:
        d = np.asarray(data)[order]
        starts = np.flatnonzero(keep)
        if duplicates == "first" or starts.size == d.size:
            out_data = d[keep]
        elif duplicates == "max":
            out_data = np.maximum.reduceat(d, starts) if d.size else d
        else:
            out_data = np.add.reduceat(d, starts) if d.size else d
        out_data = np.ascontiguousarray(out_data, dtype=np.float32)
    return _finish_csr(r_sorted, c_sorted, out_data, n_rows, n_cols)


def _first_of_runs(sorted_keys: np.ndarray) -> np.ndarray:
    """Boolean mask of the first element of each run of equal values."""
    keep = np.empty(sorted_keys.shape[0], dtype=bool)
    if sorted_keys.size:
        keep[0] = True
        np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=keep[1:])
    return keep


def _finish_csr(
    r_sorted: np.ndarray, c_sorted: np.ndarray, data: np.ndarray | None, n_rows: int, n_cols: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    counts = np.bincount(r_sorted, minlength=n_rows)
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    indices = c_sorted.astype(index_dtype(n_cols))
    return indptr, indices, data


def symmetrize(
    indptr: np.ndarray, indices: np.ndarray, data: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Pattern of ``A + A^T`` without duplicates; values become ``max(A[u,v], A[v,u])``.

    A pattern input (``data is None``) gives a pattern output (all ones).
    """
    n = indptr.shape[0] - 1
    rows = csr_rows(indptr)
    cols = np.asarray(indices, dtype=np.int64)
    r2 = np.concatenate([rows, cols])
    c2 = np.concatenate([cols, rows])
    d2 = None if data is None else np.concatenate([data, data])
    return coo_to_csr(r2, c2, d2, n, n, duplicates="max")


def set_self_loops(
    indptr: np.ndarray, indices: np.ndarray, data: np.ndarray | None, mode: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Add, drop or keep diagonal entries.

    Parameters
    ----------
    mode : {"keep", "add", "drop"}
        ``add`` gives every node a self-loop (value 1 where one is added; existing diagonal
        values are kept); ``drop`` removes all diagonal entries; ``keep`` returns the input.
    """
    if mode not in SELF_LOOP_MODES:
        raise InputError(f"unknown self-loop mode '{mode}' (known: {', '.join(SELF_LOOP_MODES)})")
    if mode == "keep":
        return indptr, indices, data
    n = indptr.shape[0] - 1
    rows = csr_rows(indptr)
    cols = np.asarray(indices, dtype=np.int64)
    diag = rows == cols
    if mode == "drop":
        keep = ~diag
        counts = np.bincount(rows[keep], minlength=n)
        new_indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=new_indptr[1:])
        return new_indptr, indices[keep], None if data is None else data[keep]
    has = np.zeros(n, dtype=bool)
    has[rows[diag]] = True
    missing = np.flatnonzero(~has).astype(np.int64)
    r2 = np.concatenate([rows, missing])
    c2 = np.concatenate([cols, missing])
    d2 = None
    if data is not None:
        d2 = np.concatenate([data, np.ones(missing.size, dtype=np.float32)])
    return coo_to_csr(r2, c2, d2, n, n, duplicates="first")


def relabel_compact(
    rows: np.ndarray, cols: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Map the ids used in an edge list onto ``0..k-1``, keeping their order.

    Returns
    -------
    rows, cols : int64 arrays with new ids
    original : int64 (k,), ``original[new_id]`` is the id in the input
    """
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    hi = int(max(rows.max(initial=-1), cols.max(initial=-1)))
    if rows.size and rows.min() >= 0 and cols.min() >= 0 and hi < 4 * (rows.size + cols.size):
        present = np.zeros(hi + 1, dtype=bool)  # O(ids) instead of a sort
        present[rows] = True
        present[cols] = True
        original = np.flatnonzero(present).astype(np.int64)
    else:
        original = unique_ints(np.concatenate([rows, cols]), overwrite=True)
    if original.size == 0 or original[-1] == original.size - 1:  # already compact
        return rows, cols, original
    return np.searchsorted(original, rows), np.searchsorted(original, cols), original


def is_symmetric(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray | None) -> bool:
    """Whether the stored matrix equals its transpose (pattern and values)."""
    n = indptr.shape[0] - 1
    rows = csr_rows(indptr)
    cols = np.asarray(indices, dtype=np.int64)
    t_indptr, t_indices, t_data = coo_to_csr(cols, rows, data, n, n, duplicates="first")
    if not np.array_equal(t_indptr, indptr) or not np.array_equal(t_indices, indices):
        return False
    return data is None or bool(np.array_equal(t_data, data))
