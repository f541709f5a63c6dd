"""Dense products of the model (``H @ W``, ``H.T @ dZ``, ``dZ @ W.T``) parallelised by Numba
over row chunks, each chunk one single-threaded BLAS call.

Why not numpy's multithreaded BLAS: an epoch alternates Numba's parallel kernels (SpMM,
element-wise) with the dense products.  OpenBLAS's idle threads spin for about 0.1 s after
each call and take the cores from Numba's threads: on the 200k-node / 4M-nonzero benchmark
graph a width-16 SpMM took 30-41 ms right after a 2-thread GEMM and 21 ms after a 0.2 s
pause (docs/kernels.md).  With one thread pool (Numba's) for everything, BLAS runs one
thread per call (`single_threaded_blas`, applied by `gcntrain.kernels.threads.set_threads`)
and the row chunks give the parallelism.

The chunks depend only on the number of rows (`row_chunks`), never on the thread count, so
results are the same at any ``--threads``.  ``H.T @ dZ`` sums the per-chunk products in
chunk order (`gemm_tn`): it differs from one BLAS call by rounding only.

Supported: float32 and float64 with one dtype for all operands, 2-D arrays; ``gemm_nn``'s B
may be C- or F-contiguous (``W.T``).  Anything else (CSR features, mixed dtypes, small
products) goes to numpy in `matmul` / `matmul_tn`.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

#: at most this many row chunks per product ...
MAX_CHUNKS = 64
#: ... of at least this many rows each
MIN_CHUNK_ROWS = 512
#: products below this many multiply-adds run as one numpy call (a parallel launch costs more)
MIN_PARALLEL_MACS = 1 << 18


def row_chunks(n: int) -> np.ndarray:
    """int64 boundaries of the row chunks of an n-row product (depends on n only)."""
    parts = max(1, min(MAX_CHUNKS, n // MIN_CHUNK_ROWS))
    return (np.arange(parts + 1, dtype=np.int64) * n) // parts


@njit(parallel=True, nogil=True, cache=True)
def gemm_nn(A, B, out, splits):  # pragma: no cover - jitted
    """out[r0:r1] = A[r0:r1] @ B for every chunk [r0, r1) of `splits` (one BLAS call each)."""
    for p in prange(splits.shape[0] - 1):
        r0 = splits[p]
        r1 = splits[p + 1]
        if r1 > r0:
            np.dot(A[r0:r1], B, out[r0:r1])
    return out


@njit(parallel=True, nogil=True, cache=True)
def gemm_tn_partials(A, B, partial, splits):  # pragma: no cover - jitted
    """partial[p] = A[r0:r1].T @ B[r0:r1] for every chunk p = [r0, r1) of `splits`."""
    for p in prange(splits.shape[0] - 1):
        r0 = splits[p]
        r1 = splits[p + 1]
        if r1 > r0:
            np.dot(A[r0:r1].T, B[r0:r1], partial[p])
        else:
            partial[p][:] = 0
    return partial


@njit(parallel=True, nogil=True, cache=True)
def sum_partials(partial, out):  # pragma: no cover - jitted
    """out = partial.sum(0), adding the partials in order (row-parallel)."""
    P, k, f = partial.shape
    for i in prange(k):
        for j in range(f):
            out[i, j] = partial[0, i, j]
        for p in range(1, P):
            for j in range(f):
                out[i, j] += partial[p, i, j]
    return out


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_blas_capped = False


def single_threaded_blas() -> None:
    """Cap every BLAS library of the process at one thread (once per process; `set_threads`
    does it on every call)."""
    global _blas_capped
    if not _blas_capped:
        from gcntrain.kernels.threads import cap_blas

        cap_blas()
        _blas_capped = True


def _dense_ok(*arrays) -> bool:
    dt = arrays[0].dtype if isinstance(arrays[0], np.ndarray) else None
    return dt in _FLOATS and all(
        isinstance(a, np.ndarray) and a.ndim == 2 and a.dtype == dt for a in arrays
    )


def _contig(a: np.ndarray) -> np.ndarray:
    return a if a.flags.c_contiguous or a.flags.f_contiguous else np.ascontiguousarray(a)


def matmul(A, B) -> np.ndarray:
    """``A @ B`` (A: n x k dense or CSR, B: k x f); parallel over row chunks of A."""
    if (
        not _dense_ok(A, B)
        or A.shape[1] != B.shape[0]
        or A.shape[0] * A.shape[1] * B.shape[1] < MIN_PARALLEL_MACS
    ):
        return A @ B  # numpy's rules and errors
    single_threaded_blas()
    A = np.ascontiguousarray(A)
    out = np.empty((A.shape[0], B.shape[1]), dtype=A.dtype)
    return gemm_nn(A, _contig(B), out, row_chunks(A.shape[0]))


def matmul_tn(A, B) -> np.ndarray:
    """``A.T @ B`` (A: n x k dense or CSR, B: n x f): per-chunk products summed in order."""
    if (
        not _dense_ok(A, B)
        or A.shape[0] != B.shape[0]
        or A.shape[0] * A.shape[1] * B.shape[1] < MIN_PARALLEL_MACS
    ):
        return A.T @ B  # numpy's rules and errors
    single_threaded_blas()
    A, B = np.ascontiguousarray(A), np.ascontiguousarray(B)
    splits = row_chunks(A.shape[0])
    k, f = A.shape[1], B.shape[1]
    partial = np.empty((splits.shape[0] - 1, k, f), dtype=A.dtype)
    gemm_tn_partials(A, B, partial, splits)
    return sum_partials(partial, np.empty((k, f), dtype=A.dtype))
