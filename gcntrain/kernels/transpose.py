"""Transposed products ``out = A.T @ X`` for a CSR matrix A (n x m, X: n x f, out: m x f).

Two ways, both here so that the benchmark can compare them (docs/kernels.md):

* `csr_transpose` builds A.T in CSR once (counting sort, O(nnz + m)); then the forward kernel
  `gcntrain.kernels.spmm.spmm_csr_dense` computes ``A.T @ X`` as fast as ``A @ X``, at the cost
  of storing the matrix twice.  This is what the model uses, built by its parallel,
  cache-blocked twin `gcntrain.kernels.transpose_blocks.csr_transpose_blocked` (the same
  arrays).
* `spmm_csr_t_dense` scatters ``data[k] * X[i]`` into ``out[indices[k]]`` straight from A: no
  second matrix, but a scatter has write conflicts, so each extra thread needs a private
  m x f buffer (reduced at the end), or the scatter runs serially.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from gcntrain.kernels.prefetch import (
    line_step,
    prefetch_distance,
    prefetch_lines_write,
    prefetch_span,
)
from gcntrain.kernels.spmm import balanced_row_splits_csr


@njit(nogil=True, cache=True)
def csr_transpose(indptr, indices, data, n_cols):  # pragma: no cover - jitted
    """Transpose a CSR matrix by a stable counting sort (O(nnz + n_cols), serial).

    Parameters
    ----------
    indptr, indices, data : numpy.ndarray
        CSR arrays of A (n x n_cols); column indices must lie in ``[0, n_cols)``.
    n_cols : int
        Number of columns of A (= rows of A.T).

    Returns
    -------
    tuple of numpy.ndarray
        ``(indptr_t, indices_t, data_t)``: A.T in CSR with int64 ``indptr_t``, ``indices_t`` of
        ``indices``' dtype and ``data_t`` of ``data``'s dtype.  Column indices within each row
        of A.T come out sorted ascending (rows of A are visited in order), so the result
        equals scipy's ``A.T.tocsr()`` after ``sort_indices()``, duplicates kept.
    """
    n = indptr.shape[0] - 1
    nnz = indptr[n] - indptr[0]
    indptr_t = np.zeros(n_cols + 1, dtype=np.int64)
    for k in range(indptr[0], indptr[n]):
        indptr_t[indices[k] + 1] += 1
    for c in range(n_cols):
        indptr_t[c + 1] += indptr_t[c]
    nxt = indptr_t[:-1].copy()
    indices_t = np.empty(nnz, dtype=indices.dtype)
    data_t = np.empty(nnz, dtype=data.dtype)
    for i in range(n):
        for k in range(indptr[i], indptr[i + 1]):
            c = indices[k]
            pos = nxt[c]
            indices_t[pos] = i
            data_t[pos] = data[k]
            nxt[c] = pos + 1
    return indptr_t, indices_t, data_t


@njit(nogil=True, cache=True)
def _scatter_rows(indptr, indices, data, X, Y, r0, r1):  # pragma: no cover - jitted
    """Y[indices[k]] += data[k] * X[i] for the nonzeros of rows r0..r1 (Y already zeroed)."""
    f = X.shape[1]
    if f == 0:
        return
    kend = indptr[r1]
    ahead = prefetch_distance(f, Y.itemsize)
    step = line_step(Y.itemsize)  # once per call: no division per nonzero (issue 52)
    lines, last = prefetch_span(0, f, step)
    for i in range(r0, r1):
        for k in range(indptr[i], indptr[i + 1]):
            kp = k + ahead
            if kp < kend:
                prefetch_lines_write(Y, indices[kp], 0, lines, step, last)
            c = indices[k]
            v = data[k]
            for j in range(f):
                Y[c, j] += v * X[i, j]


@njit(parallel=True, nogil=True, cache=True)
def spmm_csr_t_dense_parts(indptr, indices, data, X, out, parts):  # pragma: no cover - jitted
    """out = A.T @ X by scattering from `parts` equal-work row chunks of A (see below)."""
    m = out.shape[0]
    f = out.shape[1]
    n = indptr.shape[0] - 1
    parts = max(1, min(parts, n))
    splits = balanced_row_splits_csr(indptr, parts)
    bufs = np.empty((parts - 1, m, f), dtype=out.dtype)
    for p in prange(parts):  # each task zeroes its own target (first touch by its thread)
        Y = out if p == 0 else bufs[p - 1]
        for r in range(m):
            for j in range(f):
                Y[r, j] = 0
        _scatter_rows(indptr, indices, data, X, Y, splits[p], splits[p + 1])
    if parts > 1:
        for r in prange(m):
            for q in range(parts - 1):
                for j in range(f):
                    out[r, j] += bufs[q, r, j]
    return out


def spmm_csr_t_dense(
    indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, X: np.ndarray, out: np.ndarray
) -> np.ndarray:
    """out = A.T @ X by scattering from A's rows; threads use private buffers, then reduce.

    With T Numba threads the rows of A are cut into T equal-work chunks; chunk 0 scatters into
    ``out`` and chunk t > 0 into a private m x f buffer; a row-parallel pass then adds the
    buffers into ``out``.  Extra memory: (T - 1) x m x f elements; none with one thread.
    (A thin Python dispatcher: jitted code that asks for the thread count cannot be cached.)

    Parameters
    ----------
    indptr, indices, data : numpy.ndarray
        CSR arrays of A (n x m); ``data`` has X's dtype.
    X : numpy.ndarray
        Dense n x f, C-contiguous.
    out : numpy.ndarray
        Preallocated m x f, C-contiguous, X's dtype; fully overwritten.

    Returns
    -------
    numpy.ndarray
        ``out``.
    """
    return spmm_csr_t_dense_parts(indptr, indices, data, X, out, numba.get_num_threads())
