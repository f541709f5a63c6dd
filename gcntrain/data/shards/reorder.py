"""Pure array helpers that renumber, permute, sort and split CSR matrices."""

from __future__ import annotations

import numpy as np

CSR = tuple[np.ndarray, np.ndarray, np.ndarray | None]


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


def row_ids(indptr: np.ndarray, start: int = 0) -> np.ndarray:
    """Row id of every entry of a CSR matrix, rows numbered from `start` (int64)."""
    nrows = indptr.shape[0] - 1
    return np.repeat(np.arange(start, start + nrows, dtype=np.int64), np.diff(indptr))


def row_slice(
    indptr: np.ndarray, indices: np.ndarray, data: np.ndarray | None, s: int, e: int
) -> CSR:
    """Rows ``[s, e)`` of a CSR matrix as a CSR matrix of their own (views where possible)."""
    lo, hi = int(indptr[s]), int(indptr[e])
    return indptr[s : e + 1] - lo, indices[lo:hi], None if data is None else data[lo:hi]


def permute_csr(
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray | None,
    row_order: np.ndarray,
    col_map: np.ndarray | None,
) -> CSR:
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


def row_sort_order(indptr: np.ndarray, indices: np.ndarray) -> np.ndarray | None:
    """Entry order that sorts each row by column id (stable); None when already sorted.

    Rows already sorted are detected first (one vectorised pass).
    """
    nrows = indptr.shape[0] - 1
    rows = row_ids(indptr)
    if indices.size < 2 or not np.any((indices[1:] < indices[:-1]) & (rows[1:] == rows[:-1])):
        return None
    span = int(indices.max()) + 1
    if nrows * span < 2**62:
        # one stable argsort of a combined key: ~10x faster than lexsort on two keys
        return np.argsort(rows * span + indices.astype(np.int64), kind="stable")
    return np.lexsort((indices, rows))


def sort_rows_csr(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray | None) -> CSR:
    """Sort each row's entries by column id (stable: duplicates keep their order).

    Rows already sorted are returned as they are (`row_sort_order`).
    """
    order = row_sort_order(indptr, indices)
    if order is None:
        return indptr, indices, data
    return indptr, indices[order], None if data is None else data[order]


def split_columns(
    indptr: np.ndarray, indices: np.ndarray, data: np.ndarray | None, col_ranges: np.ndarray
) -> list[CSR]:
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
    rows = row_ids(indptr)
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
