"""The SpMM kernel as it was before issue 52 (main d7d3ee4), kept as the benches' baseline.

`legacy_spmm_csr_dense` is the old ``spmm_csr_dense``: one accumulator row in memory per
chunk (loaded and stored for every nonzero), and the prefetch's ``CACHE_LINE // itemsize``
computed for every nonzero.  Same sums in the same order as today's kernel, so the two give
the same bits; `scripts/bench_kernels.py` runs both, interleaved, to measure the change.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from gcntrain.kernels.prefetch import CACHE_LINE, MAX_LINES, prefetch_distance, prefetch_read
from gcntrain.kernels.spmm import MAX_PARTS, MIN_ROWS_PER_PART, balanced_row_splits_csr


@njit(nogil=True, cache=True)
def _legacy_prefetch_row_read(X, r):  # pragma: no cover - jitted
    """The old per-call prefetch: a division per call, a range with a run-time step."""
    f = X.shape[1]
    if f == 0:
        return
    step = max(1, CACHE_LINE // X.itemsize)
    stop = min(f, MAX_LINES * step)
    for j in range(0, stop, step):
        prefetch_read(X, r, j)
    prefetch_read(X, r, stop - 1)


@njit(nogil=True, cache=True)
def _legacy_rows(indptr, indices, data, X, out, r0, r1, acc):  # pragma: no cover - jitted
    """out[r0:r1] = A[r0:r1] @ X through the accumulator row `acc` (the old `_spmm_rows`)."""
    f = X.shape[1]
    kend = indptr[r1]
    ahead = prefetch_distance(f, X.itemsize)
    for k in range(indptr[r0], min(indptr[r0] + ahead, kend)):
        _legacy_prefetch_row_read(X, indices[k])
    for i in range(r0, r1):
        for j in range(f):
            acc[j] = 0
        for k in range(indptr[i], indptr[i + 1]):
            kp = k + ahead
            if kp < kend:
                _legacy_prefetch_row_read(X, indices[kp])
            c = indices[k]
            v = data[k]
            for j in range(f):
                acc[j] += v * X[c, j]
        for j in range(f):
            out[i, j] = acc[j]


@njit(parallel=True, nogil=True, cache=True)
def _legacy_balanced(indptr, indices, data, X, out, row_splits):  # pragma: no cover - jitted
    parts = row_splits.shape[0] - 1
    f = X.shape[1]
    for p in prange(parts):
        acc = np.empty(f, dtype=out.dtype)
        _legacy_rows(indptr, indices, data, X, out, row_splits[p], row_splits[p + 1], acc)
    return out


@njit(nogil=True, cache=True)
def legacy_spmm_csr_dense(indptr, indices, data, X, out):  # pragma: no cover - jitted
    """out = A @ X with the pre-issue-52 kernel (chunks computed per call, as before)."""
    n = indptr.shape[0] - 1
    parts = max(1, min(MAX_PARTS, n // MIN_ROWS_PER_PART))
    splits = balanced_row_splits_csr(indptr, parts)
    return _legacy_balanced(indptr, indices, data, X, out, splits)
