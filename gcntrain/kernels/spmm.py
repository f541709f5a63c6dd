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

from gcntrain.kernels.prefetch import (
    CACHE_LINE,
    LLC_BYTES,
    line_step,
    prefetch_distance,
    prefetch_lines_read,
    prefetch_span,
)
from gcntrain.kernels.simd import LANES, vec_load, vec_madd, vec_store, vec_zero

#: `spmm_csr_dense` cuts the rows into at most this many equal-work chunks ...
MAX_PARTS = 1024
#: ... of at least this many rows each (small matrices get fewer chunks)
MIN_ROWS_PER_PART = 32
#: a column slab of X is sized to take at most 1 / SLAB_CACHE_SHARE of the last-level cache
#: (the rest holds the streamed matrix, the output and the other tenants)
SLAB_CACHE_SHARE = 2
#: ... and to span at least this many cache lines of each row (else no slabs: one pass)
SLAB_MIN_LINES = 4


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
def slab_width(m, f, itemsize):  # pragma: no cover - jitted
    """Columns per slab when gathering from an m x f X of `itemsize` bytes.

    Rule: one slab (`f`) unless X exceeds ``LLC_BYTES / SLAB_CACHE_SHARE`` (`prefetch.
    LLC_BYTES`: the last-level cache the machine reports) and a slab of at least
    `SLAB_MIN_LINES` cache lines per row fits in that budget; then the widest multiple of
    `LANES` columns that fits, evened out over the slabs it takes.  Narrower slabs were
    measured slower than one pass on the 2-core EPYC (32 MiB L3): a slab of one line per
    row makes every gather a lone random line, 2-3x slower than gathering 4 adjacent lines
    (docs/measurements/spmm-2026-12-07.md)."""
    budget = LLC_BYTES // SLAB_CACHE_SHARE
    if m * f * itemsize <= budget:
        return max(f, 1)
    w = (budget // max(1, m * itemsize)) // LANES * LANES
    if w * itemsize < SLAB_MIN_LINES * CACHE_LINE or w >= f:
        return max(f, 1)
    slabs = (f + w - 1) // w
    return min(f, ((f + slabs - 1) // slabs + LANES - 1) // LANES * LANES)


@njit(nogil=True, cache=True, inline="always")
def _row_v4(indices, data, X, out, i, k0, k1, jb, add, pf):  # pragma: no cover - jitted
    """out[i, jb : jb + 4 LANES] (=, or += when `add`) the row's sum over nonzeros k0..k1
    in storage order, four vector accumulators in registers.  `pf`: (prefetch?, kend,
    ahead, j0, lines, step, last) for the rows gathered `ahead` nonzeros later."""
    if add:
        a0 = vec_load(out, i, jb)
        a1 = vec_load(out, i, jb + LANES)
        a2 = vec_load(out, i, jb + 2 * LANES)
        a3 = vec_load(out, i, jb + 3 * LANES)
    else:
        a0 = vec_zero(out)
        a1 = a0
        a2 = a0
        a3 = a0
    on, kend, ahead, j0, lines, step, last = pf
    for k in range(k0, k1):
        if on and k + ahead < kend:
            prefetch_lines_read(X, indices[k + ahead], j0, lines, step, last)
        c = indices[k]
        v = data[k]
        a0 = vec_madd(a0, v, X, c, jb)
        a1 = vec_madd(a1, v, X, c, jb + LANES)
        a2 = vec_madd(a2, v, X, c, jb + 2 * LANES)
        a3 = vec_madd(a3, v, X, c, jb + 3 * LANES)
    vec_store(out, i, jb, a0)
    vec_store(out, i, jb + LANES, a1)
    vec_store(out, i, jb + 2 * LANES, a2)
    vec_store(out, i, jb + 3 * LANES, a3)


@njit(nogil=True, cache=True, inline="always")
def _row_v1(indices, data, X, out, i, k0, k1, jb, add, pf):  # pragma: no cover - jitted
    """`_row_v4` for `LANES` columns: one vector accumulator."""
    a0 = vec_load(out, i, jb) if add else vec_zero(out)
    on, kend, ahead, j0, lines, step, last = pf
    for k in range(k0, k1):
        if on and k + ahead < kend:
            prefetch_lines_read(X, indices[k + ahead], j0, lines, step, last)
        a0 = vec_madd(a0, data[k], X, indices[k], jb)
    vec_store(out, i, jb, a0)


@njit(nogil=True, cache=True, inline="always")
def _row_acc(indices, data, X, out, i, k0, k1, ja, j1, acc, add, pf):  # pragma: no cover
    """`_row_v4` for the columns ja..j1 (fewer than `LANES`, any count) through the
    accumulator row `acc` in memory."""
    if add:
        for j in range(ja, j1):
            acc[j - ja] = out[i, j]
    else:
        for j in range(j1 - ja):
            acc[j] = 0
    on, kend, ahead, j0, lines, step, last = pf
    for k in range(k0, k1):
        if on and k + ahead < kend:
            prefetch_lines_read(X, indices[k + ahead], j0, lines, step, last)
        c = indices[k]
        v = data[k]
        for j in range(ja, j1):
            acc[j - ja] += v * X[c, j]
    for j in range(ja, j1):
        out[i, j] = acc[j - ja]


@njit(nogil=True, cache=True)
def _spmm_rows(indptr, indices, data, X, out, r0, r1, j0, j1, acc, add):  # pragma: no cover
    """out[r0:r1, j0:j1] = A[r0:r1] @ X[:, j0:j1] (``+=`` when `add`: rows without entries
    are not touched), serially.  Each row is summed in passes of 4 `LANES`, then `LANES`,
    columns with accumulators in vector registers, then the remaining columns through `acc`
    (length >= ``LANES - 1``); the first pass of a row prefetches the rows gathered
    `prefetch_distance` nonzeros later (columns j0..j1, at most `MAX_LINES` lines).  Every
    element is the sum of its row's products in storage order, whatever the pass."""
    if j1 <= j0:
        return
    kend = indptr[r1]
    step = line_step(X.itemsize)
    lines, last = prefetch_span(j0, j1, step)
    ahead = prefetch_distance(j1 - j0, X.itemsize)
    # the chunk's first `ahead` gathers: the passes below prefetch from the next ones on
    for k in range(indptr[r0], min(indptr[r0] + ahead, kend)):
        prefetch_lines_read(X, indices[k], j0, lines, step, last)
    jw = j0 + (j1 - j0) // (4 * LANES) * (4 * LANES)
    jv = j0 + (j1 - j0) // LANES * LANES
    first = (True, kend, ahead, j0, lines, step, last)
    rest = (False, kend, ahead, j0, lines, step, last)
    for i in range(r0, r1):
        k0 = indptr[i]
        k1 = indptr[i + 1]
        if add and k0 == k1:
            continue
        for jb in range(j0, jw, 4 * LANES):
            _row_v4(indices, data, X, out, i, k0, k1, jb, add, first if jb == j0 else rest)
        for jb in range(jw, jv, LANES):
            _row_v1(indices, data, X, out, i, k0, k1, jb, add, first if jb == j0 else rest)
        if jv < j1:
            _row_acc(
                indices, data, X, out, i, k0, k1, jv, j1, acc, add, first if jv == j0 else rest
            )


@njit(parallel=True, nogil=True, cache=True)
def spmm_csr_dense_balanced(
    indptr, indices, data, X, out, row_splits, add=False, slab=0
):  # pragma: no cover - jitted
    """out = A @ X (``out += A @ X`` when `add`) over caller-given row chunks (see
    `balanced_row_splits`), in column slabs of `slab_width` columns: all chunks finish a
    slab before the next starts, so that the threads gather from one slab of X at a time
    (a slab sized to stay in the last-level cache).

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
    add : bool
        ``out += A @ X`` (rows without entries untouched) instead of ``out = A @ X``.
    slab : int
        Columns per slab; 0 (default): `slab_width`'s choice for this X.  Any value gives
        the same bits.

    Returns
    -------
    numpy.ndarray
        ``out``.
    """
    parts = row_splits.shape[0] - 1
    f = X.shape[1]
    w = slab if slab > 0 else slab_width(X.shape[0], f, X.itemsize)
    for j0 in range(0, f, w):
        j1 = min(f, j0 + w)
        for p in prange(parts):
            acc = np.empty(LANES, dtype=out.dtype)
            _spmm_rows(
                indptr, indices, data, X, out, row_splits[p], row_splits[p + 1], j0, j1, acc, add
            )
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
    # add and slab as runtime values (`np.bool_`, `np.int64`), not the literal constants or
    # omitted defaults Numba would specialise on: every caller (this one, the in-place add,
    # a Python call with add and slab) shares one compiled kernel per array types
    return spmm_csr_dense_balanced(
        indptr, indices, data, X, out, splits, np.bool_(False), np.int64(0)
    )


@njit(nogil=True, cache=True)
def spmm_csr_dense_add(indptr, indices, data, X, out):  # pragma: no cover - jitted
    """out += A @ X in place, without a temporary: each row with entries is read, summed
    onto in storage order and written once; rows without entries are not touched (a block
    of remote rows with few entries costs its entries, not its rows).  Chunks and arguments
    as `spmm_csr_dense`."""
    n = indptr.shape[0] - 1
    parts = max(1, min(MAX_PARTS, n // MIN_ROWS_PER_PART))
    splits = balanced_row_splits_csr(indptr, parts)
    return spmm_csr_dense_balanced(
        indptr, indices, data, X, out, splits, np.bool_(True), np.int64(0)
    )


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
    return spmm_csr_dense_balanced(indptr, indices, data, X, out, row_splits, False, 0)
