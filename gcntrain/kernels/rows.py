"""Row gather / scatter kernels of partial-aggregate exchanges (DistGNN's pre- and
post-processing, section 5.3): pack the rows a message carries, add or write the rows a
message brings.  Gathers and writes are row-parallel; adding (indices may repeat) runs in
order.  Callers preallocate."""

from __future__ import annotations

from numba import njit, prange


@njit(parallel=True, nogil=True, cache=True)
def gather_rows(X, idx, out):  # pragma: no cover - jitted
    """out[k] = X[idx[k]]; returns out."""
    f = X.shape[1]
    for k in prange(idx.shape[0]):
        i = idx[k]
        for j in range(f):
            out[k, j] = X[i, j]
    return out


@njit(nogil=True, cache=True)
def scatter_add_rows(src, idx, out):  # pragma: no cover - jitted
    """out[idx[k]] += src[k] (an index may repeat: sequential, in order); returns out."""
    f = src.shape[1]
    for k in range(idx.shape[0]):
        i = idx[k]
        for j in range(f):
            out[i, j] += src[k, j]
    return out


@njit(parallel=True, nogil=True, cache=True)
def scatter_rows(src, idx, out):  # pragma: no cover - jitted
    """out[idx[k]] = src[k] (indices distinct); returns out."""
    f = src.shape[1]
    for k in prange(idx.shape[0]):
        i = idx[k]
        for j in range(f):
            out[i, j] = src[k, j]
    return out
