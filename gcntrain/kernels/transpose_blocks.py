"""A parallel, cache-blocked CSR transpose, equal to `gcntrain.kernels.transpose.csr_transpose`
array for array (the same stable counting sort, in three passes instead of one).

`csr_transpose` scatters every entry to its final place in one serial pass: a random write
into the whole output for each nonzero.  Here the columns (rows of A.T) are cut into blocks of
`block_width` columns, a power of two of at most 65536, so that a column's place within its
block fits a uint16:

1. every thread counts the entries of its rows (balanced by work) per column block;
2. every thread scatters its rows' entries, rows in order, to its slice of each block's
   region of the output (the row id, the value and the column within the block, a uint16);
   the slices are in thread order, so within a block the entries keep A's row order;
3. every block's region (a few hundred KB: in cache) is counting-sorted by the column within
   the block, stably, through a scratch buffer of the region's size.

Entries equal to a column's keep A's row order in every pass, so each row of A.T lists its
column ids ascending (duplicates kept) exactly as `csr_transpose`'s single pass does, on any
number of threads.  Extra memory: two bytes per nonzero and one block's scratch per thread.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from gcntrain.kernels.spmm import balanced_row_splits_csr

#: column blocks aimed at (the block width is the smallest power of two giving at most this
#: many blocks, between `MIN_WIDTH` and 65536)
TARGET_BLOCKS = 256
MIN_WIDTH = 64


def block_width(n_cols: int) -> int:
    """Columns per block for a matrix of `n_cols` columns (a power of two in
    [`MIN_WIDTH`, 65536])."""
    w = MIN_WIDTH
    while w < 65536 and w * TARGET_BLOCKS < n_cols:
        w *= 2
    return w


@njit(parallel=True, nogil=True, cache=True)
def _transpose_blocked(indptr, indices, data, n_cols, parts, shift, like):  # pragma: no cover
    """Jitted core of `csr_transpose_blocked` (see the module's docstring)."""
    n = indptr.shape[0] - 1
    base = indptr[0]
    nnz = indptr[n] - base
    width = np.int64(1) << shift
    mask = width - 1
    nb = (n_cols + width - 1) >> shift
    parts = max(1, min(parts, n))
    splits = balanced_row_splits_csr(indptr, parts)
    cursor = np.zeros((parts, nb + 1), dtype=np.int64)
    for p in prange(parts):  # 1. entries per (thread, column block)
        for k in range(indptr[splits[p]], indptr[splits[p + 1]]):
            cursor[p, (indices[k] >> shift) + 1] += 1
    starts = np.zeros(nb + 1, dtype=np.int64)  # each block's region of the output
    run = np.int64(0)
    for b in range(nb):
        starts[b] = run
        for p in range(parts):
            c = cursor[p, b + 1]
            cursor[p, b + 1] = run  # thread p's slice of block b starts here
            run += c
    starts[nb] = run
    indices_t = np.empty(nnz, dtype=like.dtype)
    data_t = np.empty(nnz, dtype=data.dtype)
    local = np.empty(nnz, dtype=np.uint16)
    for p in prange(parts):  # 2. scatter, rows in order, into the thread's slices
        row = cursor[p, 1:]
        for i in range(splits[p], splits[p + 1]):
            for k in range(indptr[i], indptr[i + 1]):
                c = indices[k]
                b = c >> shift
                pos = row[b]
                indices_t[pos] = i
                data_t[pos] = data[k]
                local[pos] = c & mask
                row[b] = pos + 1
    indptr_t = np.empty(n_cols + 1, dtype=np.int64)
    indptr_t[n_cols] = nnz
    for b in prange(nb):  # 3. counting sort of each block's region by column
        lo, hi = starts[b], starts[b + 1]
        c0 = b * width
        w = min(width, n_cols - c0)
        nxt = np.zeros(w + 1, dtype=np.int64)
        for q in range(lo, hi):
            nxt[local[q] + 1] += 1
        for j in range(w):
            nxt[j + 1] += nxt[j]
        for j in range(w):
            indptr_t[c0 + j] = lo + nxt[j]
        tmp_i = np.empty(hi - lo, dtype=indices_t.dtype)
        tmp_d = np.empty(hi - lo, dtype=data_t.dtype)
        for q in range(lo, hi):
            j = local[q]
            d = nxt[j]
            tmp_i[d] = indices_t[q]
            tmp_d[d] = data_t[q]
            nxt[j] = d + 1
        for q in range(hi - lo):
            indices_t[lo + q] = tmp_i[q]
            data_t[lo + q] = tmp_d[q]
    return indptr_t, indices_t, data_t


def csr_transpose_blocked(
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    n_cols: int,
    parts: int = 0,
    row_dtype=None,
):
    """A.T in CSR for the CSR matrix A (n x `n_cols`): the arrays `csr_transpose` returns.

    Parameters
    ----------
    indptr, indices, data : numpy.ndarray
        CSR arrays of A; column ids in ``[0, n_cols)``.
    n_cols : int
        Columns of A (rows of A.T).
    parts : int
        Row chunks scattered in parallel (default: Numba's thread count); the result does
        not depend on it.
    row_dtype : numpy dtype, optional
        dtype of ``indices_t`` (A's row ids; default `indices`' dtype): ``np.int32`` halves
        its bytes when A has fewer than 2**31 rows.

    Returns
    -------
    tuple of numpy.ndarray
        ``(indptr_t int64, indices_t of row_dtype, data_t of data's dtype)``, each row
        of A.T sorted by column, duplicates kept, bit for bit `csr_transpose`'s.
    """
    parts = int(parts) if parts > 0 else numba.get_num_threads()
    shift = int(block_width(int(n_cols))).bit_length() - 1
    like = np.empty(0, dtype=indices.dtype if row_dtype is None else row_dtype)
    if like.dtype.kind != "i" or (indptr.shape[0] - 1) > np.iinfo(like.dtype).max:
        raise ValueError(f"row_dtype {like.dtype} cannot hold {indptr.shape[0] - 1} row ids")
    return _transpose_blocked(
        np.ascontiguousarray(indptr),
        np.ascontiguousarray(indices),
        np.ascontiguousarray(data),
        int(n_cols),
        parts,
        shift,
        like,
    )


@njit(parallel=True, nogil=True, cache=True)
def csr_to_pairs(indptr, indices, data, row_offset, col_offset, pairs, vals):  # pragma: no cover
    """The entries of a CSR matrix as (row, column) pairs and values, in entry order:
    ``pairs[k] = (row_offset + r, col_offset + indices[k])``, ``vals[k] = data[k]`` (cast to
    `vals`' dtype) for entry k of row r; rows in parallel (each writes its own entries).

    `pairs` (nnz x 2) and `vals` (nnz) are preallocated; `indptr` may start above 0."""
    n = indptr.shape[0] - 1
    base = indptr[0]
    for r in prange(n):
        for k in range(indptr[r], indptr[r + 1]):
            pairs[k - base, 0] = row_offset + r
            pairs[k - base, 1] = col_offset + indices[k]
            vals[k - base] = data[k]
