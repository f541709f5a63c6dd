"""Sparse (CSR) times dense kernels. Pure Numba over raw arrays; callers preallocate `out`."""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(parallel=True, nogil=True, cache=True)
def spmm_csr_dense(indptr, indices, data, X, out):  # pragma: no cover - jitted
    """out[i, :] = sum_k data[k] * X[indices[k], :] for k in row i (row-parallel, no atomics)."""
    n = indptr.shape[0] - 1
    f = X.shape[1]
    for i in prange(n):
        for j in range(f):
            out[i, j] = 0
        for k in range(indptr[i], indptr[i + 1]):
            c = indices[k]
            v = data[k]
            for j in range(f):
                out[i, j] += v * X[c, j]
    return out


def spmm(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, X: np.ndarray,
         out: np.ndarray | None = None) -> np.ndarray:
    """Convenience wrapper: allocate `out` (rows = len(indptr) - 1) when not given."""
    X = np.ascontiguousarray(X)
    if out is None:
        out = np.empty((indptr.shape[0] - 1, X.shape[1]), dtype=X.dtype)
    return spmm_csr_dense(indptr, indices, data.astype(X.dtype, copy=False), X, out)
