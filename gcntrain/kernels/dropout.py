"""Counter-based dropout: masks that do not depend on how rows are distributed.

Whether element (i, j) of a node-wise matrix is kept is decided by a 64-bit integer hash of
(seed, stream, GLOBAL row id i, GLOBAL column j) alone, so a rank holding any block of rows
and columns (``col0`` is the global id of its first column) draws exactly the part of the
mask a single process would draw, and the backward pass can recompute the mask instead of
storing it.

The hash chains SplitMix64 finalisers::

    k_stream = mix(mix(seed) ^ stream)
    k_row    = mix(k_stream ^ row)
    h        = mix(k_row + column * GAMMA)      # GAMMA: the SplitMix64 increment

where ``mix(x)`` is SplitMix64's output function applied to ``x + GAMMA``.  An element is kept
when ``h >= threshold`` with ``threshold = floor(p * 2**64)``, so P(keep) = 1 - p up to 2**-64.
Kept elements are scaled by ``1 / (1 - p)`` (inverted dropout).

All kernels take caller-preallocated outputs and are row-parallel.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

_MASK64 = (1 << 64) - 1
_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)


@njit(nogil=True, cache=True, inline="always")
def _mix(x):  # pragma: no cover - jitted
    """SplitMix64 output function of ``x + GAMMA`` (uint64 in, uint64 out)."""
    z = x + _GAMMA
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(nogil=True, cache=True)
def _row_key(seed, stream, row):  # pragma: no cover - jitted
    return _mix(_mix(_mix(seed) ^ stream) ^ row)


@njit(parallel=True, nogil=True, cache=True)
def dropout_hash_rows(rows, ncols, seed, stream, out_hash, col0=0):  # pragma: no cover
    """out_hash[i, j] = the 64-bit hash of (seed, stream, rows[i], col0 + j) (tests, tools)."""
    for i in prange(rows.shape[0]):
        key = _row_key(seed, stream, np.uint64(rows[i]))
        for j in range(ncols):
            out_hash[i, j] = _mix(key + np.uint64(col0 + j) * _GAMMA)
    return out_hash


@njit(parallel=True, nogil=True, cache=True)
def dropout_mask_rows_kernel(
    rows, ncols, seed, stream, threshold, out_mask, col0
):  # pragma: no cover - jitted
    """out_mask[i, j] = hash(seed, stream, rows[i], col0 + j) >= threshold."""
    for i in prange(rows.shape[0]):
        key = _row_key(seed, stream, np.uint64(rows[i]))
        for j in range(ncols):
            out_mask[i, j] = _mix(key + np.uint64(col0 + j) * _GAMMA) >= threshold
    return out_mask


@njit(parallel=True, nogil=True, cache=True)
def dropout_apply_dense(X, rows, seed, stream, threshold, scale, out, col0):  # pragma: no cover
    """Fused inverted dropout: out[i, j] = X[i, j] * scale if kept else 0 (out may be X);
    column j of the block is global column ``col0 + j``."""
    ncols = X.shape[1]
    for i in prange(X.shape[0]):
        key = _row_key(seed, stream, np.uint64(rows[i]))
        for j in range(ncols):
            if _mix(key + np.uint64(col0 + j) * _GAMMA) >= threshold:
                out[i, j] = X[i, j] * scale
            else:
                out[i, j] = 0
    return out


@njit(parallel=True, nogil=True, cache=True)
def dropout_apply_csr(
    indptr, indices, data, rows, seed, stream, threshold, scale, out_data, col0
):  # pragma: no cover - jitted
    """Inverted dropout on the stored entries of a CSR row block (same mask as the dense one).

    Row i of the block is global row ``rows[i]``; ``indices`` are column ids of the block
    (global column ``col0 + indices[k]``).  Dropped entries are stored as explicit zeros so
    the structure is unchanged.
    """
    for i in prange(indptr.shape[0] - 1):
        key = _row_key(seed, stream, np.uint64(rows[i]))
        for k in range(indptr[i], indptr[i + 1]):
            if _mix(key + np.uint64(col0 + indices[k]) * _GAMMA) >= threshold:
                out_data[k] = data[k] * scale
            else:
                out_data[k] = 0
    return out_data


def _u64(x: int) -> np.uint64:
    return np.uint64(int(x) & _MASK64)


def keep_threshold(p: float) -> np.uint64:
    """The uint64 threshold t with P(hash >= t) = 1 - p for a uniform 64-bit hash."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout rate must be in [0, 1), got {p}")
    return np.uint64(min(int(p * 2.0**64), _MASK64))


def dropout_mask_rows(
    rows: np.ndarray,
    ncols: int,
    seed: int,
    stream: int,
    p: float,
    out_mask: np.ndarray,
    col0: int = 0,
) -> np.ndarray:
    """Fill the boolean keep-mask of the rows `rows` (global ids) of an (n x ncols) matrix.

    Parameters
    ----------
    rows : int64 array (m,)
        Global row ids of the local rows.
    ncols : int
        Number of columns.
    seed, stream : int
        Run seed and stream (e.g. ``epoch * 1024 + layer``); negative values wrap mod 2**64.
    p : float
        Drop probability in [0, 1).
    out_mask : bool array (m, ncols)
        Output, preallocated by the caller.
    col0 : int
        Global id of the first column (a block of columns of a wider matrix).

    Returns
    -------
    out_mask
    """
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    return dropout_mask_rows_kernel(
        rows, int(ncols), _u64(seed), _u64(stream), keep_threshold(p), out_mask, int(col0)
    )


def dropout_apply_rows(
    X: np.ndarray,
    rows: np.ndarray,
    seed: int,
    stream: int,
    p: float,
    out: np.ndarray,
    col0: int = 0,
) -> np.ndarray:
    """Fused inverted dropout of a dense block: ``out = X * mask / (1 - p)``.

    The block's rows are global rows `rows`, its columns global columns ``col0, col0 + 1, ...``.
    Applying it to an upstream gradient with the same arguments is the backward pass.
    `out` may be `X` (in place).
    """
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    scale = X.dtype.type(1.0 / (1.0 - p))
    return dropout_apply_dense(
        X, rows, _u64(seed), _u64(stream), keep_threshold(p), scale, out, int(col0)
    )


def dropout_apply_csr_rows(
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    rows: np.ndarray,
    seed: int,
    stream: int,
    p: float,
    out_data: np.ndarray,
    col0: int = 0,
) -> np.ndarray:
    """Inverted dropout of the stored entries of a CSR block (sparse input dropout); column
    ids of the block are global ids minus `col0`."""
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    scale = data.dtype.type(1.0 / (1.0 - p))
    return dropout_apply_csr(
        indptr,
        indices,
        data,
        rows,
        _u64(seed),
        _u64(stream),
        keep_threshold(p),
        scale,
        out_data,
        int(col0),
    )
