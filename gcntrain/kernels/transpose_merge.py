"""The receiving end of a distributed transpose: rows of S^T assembled straight from this
block's own transposed entries and the (row, column) pairs the other blocks sent, without
a COO detour (no row-sorted copy, no per-row sort).

Block `me` holds rows ``lo:hi`` of S (global column ids) and has transposed them locally
(`gcntrain.kernels.transpose_blocks.csr_transpose_blocked`): row j of that transpose lists
the rows i of the block with an entry in column j, ascending.  Every other block p sends
the entries of its transpose that fall in rows ``lo:hi`` as (j, global i) pairs, by
ascending j, then i; all of block p's i lie in block p's row range.  So row j of S^T is the
concatenation, over p in block order, of block p's run for j: it comes out sorted by
column (duplicates kept, in the order a stable counting sort on j followed by a stable
per-row sort would give them), and no sort is needed.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from gcntrain.kernels.csr import STRICT, csr_row_order, csr_sum_duplicates


def rows32(m: int):
    """The narrowest of int32 and int64 holding the row ids of an m-row block."""
    return np.int32 if m <= np.iinfo(np.int32).max else np.int64


@njit(nogil=True, cache=True)
def merge_transposed_rows(
    ip_t, ix_t, dv_t, lo, hi, col_offset, me, got, gvals, seg
):  # pragma: no cover - jitted
    """Rows ``lo:hi`` of S^T in CSR (see the module's docstring): one pass counting every
    row's entries, one writing each source's runs, sources in order, through a cursor per
    row (O(entries + rows + sources) time, two arrays of rows + 1 beside the output).

    Parameters
    ----------
    ip_t, ix_t, dv_t : numpy.ndarray
        This block's transpose (CSR, one row per global column; row ids local to the block).
    lo, hi : int
        This block's rows of S^T.
    col_offset : int
        This block's first global row of S (added to ``ix_t``).
    me : int
        This block's index among the sources (its own run comes from the local transpose).
    got : numpy.ndarray
        (k, 2) int64 received (global j, global i) pairs, source after source.
    gvals : numpy.ndarray
        (k,) float64 received values, in `got`'s order.
    seg : numpy.ndarray
        (sources + 1,) int64: source p's pairs are ``got[seg[p]:seg[p + 1]]`` (empty for
        `me`).

    Returns
    -------
    tuple of numpy.ndarray
        ``(indptr int64 (hi - lo + 1), indices int64, data float64)``.
    """
    m = hi - lo
    P = seg.shape[0] - 1
    indptr = np.zeros(m + 1, dtype=np.int64)
    for j in range(m):
        indptr[j + 1] = ip_t[lo + j + 1] - ip_t[lo + j]
    for k in range(got.shape[0]):
        indptr[got[k, 0] - lo + 1] += 1
    for j in range(m):
        indptr[j + 1] += indptr[j]
    cursor = indptr[:m].copy()
    indices = np.empty(indptr[m], dtype=np.int64)
    data = np.empty(indptr[m], dtype=np.float64)
    for p in range(P):
        if p == me:
            for j in range(m):
                pos = cursor[j]
                for k in range(ip_t[lo + j], ip_t[lo + j + 1]):
                    indices[pos] = col_offset + ix_t[k]
                    data[pos] = dv_t[k]
                    pos += 1
                cursor[j] = pos
        else:
            for k in range(seg[p], seg[p + 1]):
                j = got[k, 0] - lo
                pos = cursor[j]
                indices[pos] = got[k, 1]
                data[pos] = gvals[k]
                cursor[j] = pos + 1
    return indptr, indices, data


@njit(parallel=True, nogil=True, cache=True)
def pack_remote_pairs(ip_t, ix_t, dv_t, lo, hi, col_offset):  # pragma: no cover - jitted
    """The entries of a block's transpose outside its own rows ``lo:hi``, as the send
    buffers of the transposition: ``pairs[q] = (j, col_offset + ix_t[k])`` and ``vals[q] =
    dv_t[k]`` (float64) for entry k of row j, in entry order with rows ``lo:hi`` left out
    (so the other blocks' runs follow one another in block order); rows in parallel.

    Returns
    -------
    tuple of numpy.ndarray
        ``(pairs (k, 2) int64, vals (k,) float64)``.
    """
    n = ip_t.shape[0] - 1
    a, b = ip_t[lo], ip_t[hi]
    k_out = ip_t[n] - ip_t[0] - (b - a)
    pairs = np.empty((k_out, 2), dtype=np.int64)
    vals = np.empty(k_out, dtype=np.float64)
    first = ip_t[0]
    for r in prange(n):
        if r >= lo and r < hi:
            continue
        shift = first if r < lo else first + (b - a)
        for k in range(ip_t[r], ip_t[r + 1]):
            q = k - shift
            pairs[q, 0] = r
            pairs[q, 1] = col_offset + ix_t[k]
            vals[q] = dv_t[k]
    return pairs, vals


def distinct_rows(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray):
    """Rows with sorted columns (as `merge_transposed_rows` gives them) with their repeated
    columns summed left to right: the arrays themselves when no row repeats a column.

    Returns
    -------
    tuple of numpy.ndarray
        ``(indptr int64, indices int64, data float64)``.
    """
    if csr_row_order(indptr, indices) == STRICT:
        return indptr, indices, data
    out = np.empty_like(indptr)
    kept = int(csr_sum_duplicates(indptr, indices, data, out))
    return out, indices[:kept].copy(), data[:kept].copy()
