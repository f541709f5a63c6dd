"""Element-wise and row-wise math used by the layers: activations, dropout, init, features.

Node-wise matrices are blocks (local rows with global ids ``rows``, local columns starting at
global column ``col0``); nothing here needs the other rows.  The first layer's input may be a
scipy CSR block (sparse features).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from gcntrain.kernels.dropout import dropout_apply_csr_rows, dropout_apply_rows


def relu(Z: np.ndarray) -> np.ndarray:
    """max(Z, 0) (new array)."""
    return np.maximum(Z, 0)


def relu_inplace(Z: np.ndarray) -> np.ndarray:
    """``Z = max(Z, 0)`` in place; returns Z.  The values of `relu` bit for bit (NaN and -0.0
    stay as they are, as ``np.maximum`` leaves them): one pass of
    `gcntrain.kernels.elementwise.relu_inplace` for 2-D C-contiguous float arrays."""
    if Z.ndim == 2 and Z.flags.c_contiguous and Z.dtype in _FLOATS and Z.size:
        from gcntrain.kernels.elementwise import relu_inplace as kernel

        return kernel(Z)
    return np.maximum(Z, 0, out=Z)


def relu_backward(dH: np.ndarray, Z: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Gradient through ReLU: dH where Z > 0, else 0 (subgradient 0 at Z = 0), in dH's dtype
    (one pass of `gcntrain.kernels.elementwise.relu_backward` for 2-D arrays of one dtype,
    without NumPy's boolean temporary).

    `Z` may be the pre-activation or ``relu(Z)`` (positive at the same places).  `out`: where
    to write (may be `dH` itself: in place); a new array when None or when it cannot take
    the kernel's result (another shape or dtype, not C-contiguous).
    """
    if dH.ndim == 2 and dH.shape == Z.shape and dH.dtype == Z.dtype and dH.size:
        from gcntrain.kernels.elementwise import relu_backward as kernel

        dH, Z = np.ascontiguousarray(dH), np.ascontiguousarray(Z)
        if not _fits(out, dH):
            out = np.empty_like(dH)
        return kernel(dH, Z, out)
    return np.where(Z > 0, dH, 0).astype(dH.dtype, copy=False)


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _fits(out: np.ndarray | None, like: np.ndarray) -> bool:
    """Whether `out` can hold a kernel's result shaped like `like` (C-contiguous)."""
    return (
        out is not None
        and out.shape == like.shape
        and out.dtype == like.dtype
        and out.flags.c_contiguous
        and out.flags.writeable
    )


def _dropout_dense(
    H: np.ndarray, rows: np.ndarray, seed: int, stream: int, p: float, col0: int, out
) -> np.ndarray:
    """The dense case of `dropout_forward` and `dropout_backward` (``p > 0``): `H` made
    C-contiguous, into `out` where it fits, else into a new array."""
    H = np.ascontiguousarray(H)
    if not _fits(out, H):
        out = np.empty_like(H)
    return dropout_apply_rows(H, rows, seed, stream, p, out, col0)


def dropout_forward(
    H: np.ndarray | sp.csr_matrix,
    rows: np.ndarray,
    seed: int,
    stream: int,
    p: float,
    col0: int = 0,
    out: np.ndarray | None = None,
) -> np.ndarray | sp.csr_matrix:
    """Inverted dropout of a block (global rows `rows`, global columns from `col0`) with the
    counter-based mask of (seed, stream).

    A CSR block is dropped on its stored entries only (same mask, zeros stay zero).
    ``p == 0`` returns `H` itself.  `out`: where to write the result (a dense block's shape,
    or a CSR block's ``nnz`` values; a workspace buffer, `gcntrain.model.workspace`); a new
    array when None or when it does not fit.  It must not be `H` (nor overlap it).
    """
    if p <= 0.0:
        return H
    if sp.issparse(H):
        H = sp.csr_matrix(H)
        if not _fits(out, H.data):
            out = np.empty_like(H.data)
        dropout_apply_csr_rows(H.indptr, H.indices, H.data, rows, seed, stream, p, out, col0)
        return sp.csr_matrix((out, H.indices, H.indptr), shape=H.shape)
    return _dropout_dense(H, rows, seed, stream, p, col0, out)


def dropout_backward(
    dHd: np.ndarray,
    rows: np.ndarray,
    seed: int,
    stream: int,
    p: float,
    col0: int = 0,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Gradient through `dropout_forward`: the same mask and scale (recomputed, not stored);
    `out` as there (here it may be `dHd` itself: the kernel reads each element before it
    writes it)."""
    if p <= 0.0:
        return dHd
    return _dropout_dense(dHd, rows, seed, stream, p, col0, out)


def glorot_uniform(
    rng: np.random.Generator, fan_in: int, fan_out: int, dtype: np.dtype | type = np.float64
) -> np.ndarray:
    """Glorot/Xavier uniform init: U(-r, r), r = sqrt(6 / (fan_in + fan_out)).

    Drawn in float64 from `rng` and cast, so float32 and float64 runs start from the same
    values (up to rounding).
    """
    r = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-r, r, size=(fan_in, fan_out)).astype(dtype)


#: rows per block of the dense row normalisation: its float64 temporaries are one block's,
#: not the whole matrix's (a multiple of NumPy's 8192-element buffer, so every row is summed
#: exactly as in one pass over the whole block)
NORM_BLOCK_ROWS = 1 << 16


def _row_blocks(m: int):
    return ((a, min(a + NORM_BLOCK_ROWS, m)) for a in range(0, m, NORM_BLOCK_ROWS))


def row_l1_norms(X: np.ndarray | sp.spmatrix) -> np.ndarray:
    """L1 norm of every row of a dense or CSR block, accumulated in float64."""
    if sp.issparse(X):
        return np.asarray(abs(sp.csr_matrix(X)).sum(axis=1, dtype=np.float64)).ravel()
    out = np.empty(X.shape[0], dtype=np.float64)
    for a, b in _row_blocks(X.shape[0]):
        out[a:b] = np.abs(X[a:b]).sum(axis=1, dtype=np.float64)
    return out


def row_normalize(
    X: np.ndarray | sp.spmatrix, norms: np.ndarray | None = None
) -> np.ndarray | sp.csr_matrix:
    """Divide every row by its L1 norm; rows with norm 0 stay 0 (reference preprocessing).

    `norms` (float64, one per row) are the full rows' norms when X holds only some of the
    columns (default: ``row_l1_norms(X)``).  The result keeps X's dtype (and CSR-ness); each
    entry is the float64 product rounded once to that dtype, computed block by block of rows.
    """
    if norms is None:
        norms = row_l1_norms(X)
    inv = np.zeros_like(norms)
    inv[norms > 0] = 1.0 / norms[norms > 0]
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        out = sp.csr_matrix(X, copy=True)
        out.data = (out.data * np.repeat(inv, np.diff(out.indptr))).astype(X.dtype)
        return out
    out = np.empty(X.shape, dtype=X.dtype)
    for a, b in _row_blocks(X.shape[0]):
        out[a:b] = X[a:b] * inv[a:b, None]
    return out
