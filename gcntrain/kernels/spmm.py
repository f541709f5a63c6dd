"""Sparse (CSR) times dense kernels: ``out = A @ X``.  Numba over raw arrays; callers preallocate.

Layout of every kernel here: the rows of A are cut into contiguous chunks of about equal
*work* (nonzeros plus one per row, see `balanced_row_splits`); a ``prange`` runs over the chunks
and each chunk keeps one private accumulator row, so ``out`` is written once per row and never
re-read.  While gathering ``X[indices[k]]`` the kernel prefetches the row needed
`prefetch_distance` nonzeros later (about 128 cache lines ahead), which overlaps the cache
misses of the random gathers.

Supported: float32 and float64 (``data`` has X's dtype), int32 or int64 ``indices``, int32 or
int64 ``indptr``, any width (including 1 and 0), empty rows, rows != columns.  X and ``out`` must
be C-contiguous 2-D arrays; ``out`` must not overlap X.  Results match ``scipy.sparse`` up to
floating-point summation order (same order: nonzeros of a row in storage order).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from gcntrain.kernels.prefetch import prefetch_distance, prefetch_row_read

#: `spmm_csr_dense` cuts the rows into at most this many equal-work chunks ...
MAX_PARTS = 1024
#: ... of at least this many rows each (small matrices get fewer chunks)
MIN_ROWS_PER_PART = 32


@njit(nogil=True, cache=True)
def balanced_row_splits_csr(indptr, parts):  # pragma: no cover - jitted
    """Jitted core of `balanced_row_splits` (``parts >= 1``; no validation)."""
    n = indptr.shape[0] - 1
    splits = np.empty(parts + 1, dtype=np.int64)
    splits[0] = 0
    splits[parts] = n
    base = np.int64(indptr[0])
    total = np.int64(indptr[n]) - base + n
    lo = 0
    for p in range(1, parts):
        target = (total * p) // parts
        a = lo
        b = n
        while a < b:  # smallest row boundary i with work(0..i) >= target
            m = (a + b) // 2
            if np.int64(indptr[m]) - base + m < target:
                a = m + 1
            else:
                b = m
        splits[p] = a
        lo = a
    return splits


def balanced_row_splits(indptr: np.ndarray, parts: int) -> np.ndarray:
    """Cut the rows of a CSR matrix into `parts` contiguous chunks of about equal work.

    The work of a row is its number of nonzeros plus one (the cost of writing the row), so
    chunks balance both sparse and empty rows.  A row is never split: a single row heavier than
    ``total / parts`` makes its chunk heavier (its cost is still only its own nonzeros).

    Parameters
    ----------
    indptr : numpy.ndarray
        CSR row pointer, length ``n + 1`` (int32 or int64), non-decreasing.
    parts : int
        Number of chunks, >= 1 (chunks may be empty when ``parts > n``).

    Returns
    -------
    numpy.ndarray
        int64 array ``splits`` of length ``parts + 1``: ``splits[0] == 0``,
        ``splits[-1] == n``, non-decreasing; chunk p is rows ``splits[p]:splits[p + 1]``.
        Compute it once per matrix and pass it to `spmm_csr_dense_balanced`.
    """
    parts = int(parts)
    if parts < 1:
        raise ValueError(f"parts must be >= 1, got {parts}")
    indptr = np.asarray(indptr)
    if indptr.ndim != 1 or indptr.shape[0] < 1:
        raise ValueError("indptr must be a 1-D array of length n + 1 >= 1")
    return balanced_row_splits_csr(indptr, parts)


@njit(nogil=True, cache=True)
def _spmm_rows(indptr, indices, data, X, out, r0, r1, acc, add):  # pragma: no cover - jitted
    """out[r0:r1] = A[r0:r1] @ X (``+=`` when `add`: rows without entries are not touched),
    serially, with accumulator row `acc` (length X.shape[1])."""
    f = X.shape[1]
    kend = indptr[r1]
    ahead = prefetch_distance(f, X.itemsize)
    # the chunk's first `ahead` gathers: the loop below prefetches from the next ones on
    for k in range(indptr[r0], min(indptr[r0] + ahead, kend)):
        prefetch_row_read(X, indices[k])
    for i in range(r0, r1):
        if add:
            if indptr[i] == indptr[i + 1]:
                continue
            for j in range(f):
                acc[j] = out[i, j]
        else:
            for j in range(f):
                acc[j] = 0
        for k in range(indptr[i], indptr[i + 1]):
            kp = k + ahead
            if kp < kend:
                prefetch_row_read(X, indices[kp])
            c = indices[k]
            v = data[k]
            for j in range(f):
                acc[j] += v * X[c, j]
        for j in range(f):
            out[i, j] = acc[j]


@njit(parallel=True, nogil=True, cache=True)
def spmm_csr_dense_balanced(
    indptr, indices, data, X, out, row_splits, add=False
):  # pragma: no cover - jitted
    """out = A @ X (``out += A @ X`` when `add`) over caller-given row chunks (see
    `balanced_row_splits`).

    Parameters
    ----------
    indptr, indices, data : numpy.ndarray
        CSR arrays of A (n x m); ``data`` has X's dtype.
    X : numpy.ndarray
        Dense m x f, C-contiguous.
    out : numpy.ndarray
        Preallocated n x f, C-contiguous, X's dtype; fully overwritten.
    row_splits : numpy.ndarray
        int64 chunk boundaries covering ``0..n`` (one chunk per prange iteration).

    Returns
    -------
    numpy.ndarray
        ``out``.
    """
    parts = row_splits.shape[0] - 1
    f = X.shape[1]
    for p in prange(parts):
        acc = np.empty(f, dtype=out.dtype)
        _spmm_rows(indptr, indices, data, X, out, row_splits[p], row_splits[p + 1], acc, add)
    return out


@njit(nogil=True, cache=True)
def spmm_csr_dense(indptr, indices, data, X, out):  # pragma: no cover - jitted
    """out = A @ X (A: CSR n x m, X: m x f); row-parallel over equal-work chunks, no atomics.

    Computes up to `MAX_PARTS` balanced chunks on each call (a binary search per chunk: tens
    of microseconds) and runs the parallel `spmm_csr_dense_balanced` over them.  The chunk
    count does not depend on the thread count (Numba cannot cache kernels that query it), but
    with 1024 equal-work chunks any thread count up to a few hundred gets an even share.

    Parameters
    ----------
    indptr, indices, data : numpy.ndarray
        CSR arrays of A; ``data`` has X's dtype (float32 or float64).
    X : numpy.ndarray
        Dense m x f, C-contiguous.
    out : numpy.ndarray
        Preallocated n x f, C-contiguous, X's dtype; fully overwritten.

    Returns
    -------
    numpy.ndarray
        ``out``.
    """
    n = indptr.shape[0] - 1
    parts = max(1, min(MAX_PARTS, n // MIN_ROWS_PER_PART))
    splits = balanced_row_splits_csr(indptr, parts)
    return spmm_csr_dense_balanced(indptr, indices, data, X, out, splits)


@njit(nogil=True, cache=True)
def spmm_csr_dense_add(indptr, indices, data, X, out):  # pragma: no cover - jitted
    """out += A @ X in place, without a temporary: each row with entries is read, summed
    onto in storage order and written once; rows without entries are not touched (a block
    of remote rows with few entries costs its entries, not its rows).  Chunks and arguments
    as `spmm_csr_dense`."""
    n = indptr.shape[0] - 1
    parts = max(1, min(MAX_PARTS, n // MIN_ROWS_PER_PART))
    splits = balanced_row_splits_csr(indptr, parts)
    return spmm_csr_dense_balanced(indptr, indices, data, X, out, splits, True)


def spmm(
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    X: np.ndarray,
    out: np.ndarray | None = None,
    row_splits: np.ndarray | None = None,
) -> np.ndarray:
    """Convenience wrapper: ``A @ X`` with checks, dtype matching and optional allocation.

    Parameters
    ----------
    indptr, indices, data : numpy.ndarray
        CSR arrays of A (n x m); ``data`` is cast to X's dtype when it differs.
    X : numpy.ndarray
        Dense m x f (made C-contiguous when it is not).
    out : numpy.ndarray, optional
        Preallocated n x f C-contiguous array of X's dtype; allocated when None.
    row_splits : numpy.ndarray, optional
        Chunks from `balanced_row_splits`; when given, `spmm_csr_dense_balanced` is used.

    Returns
    -------
    numpy.ndarray
        ``out`` holding ``A @ X``.
    """
    X = np.ascontiguousarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}")
    n = indptr.shape[0] - 1
    if out is None:
        out = np.empty((n, X.shape[1]), dtype=X.dtype)
    elif out.shape != (n, X.shape[1]) or out.dtype != X.dtype or not out.flags.c_contiguous:
        raise ValueError(
            f"out must be a C-contiguous {X.dtype} array of shape {(n, X.shape[1])}, "
            f"got {out.dtype} {out.shape}"
        )
    data = data.astype(X.dtype, copy=False)
    if row_splits is None:
        return spmm_csr_dense(indptr, indices, data, X, out)
    return spmm_csr_dense_balanced(indptr, indices, data, X, out, row_splits)
