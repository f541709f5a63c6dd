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


def relu_backward(dH: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """Gradient through ReLU: dH where Z > 0, else 0 (subgradient 0 at Z = 0), in a new array
    of dH's dtype (one pass of `gcntrain.kernels.elementwise.relu_backward` for 2-D arrays of
    one dtype, without NumPy's boolean temporary)."""
    if dH.ndim == 2 and dH.shape == Z.shape and dH.dtype == Z.dtype and dH.size:
        from gcntrain.kernels.elementwise import relu_backward as kernel

        dH, Z = np.ascontiguousarray(dH), np.ascontiguousarray(Z)
        return kernel(dH, Z, np.empty_like(dH))
    return np.where(Z > 0, dH, 0).astype(dH.dtype, copy=False)


def dropout_forward(
    H: np.ndarray | sp.csr_matrix,
    rows: np.ndarray,
    seed: int,
    stream: int,
    p: float,
    col0: int = 0,
) -> np.ndarray | sp.csr_matrix:
    """Inverted dropout of a block (global rows `rows`, global columns from `col0`) with the
    counter-based mask of (seed, stream).

    A CSR block is dropped on its stored entries only (same mask, zeros stay zero).
    ``p == 0`` returns `H` itself.
    """
    if p <= 0.0:
        return H
    if sp.issparse(H):
        H = sp.csr_matrix(H)
        out = np.empty_like(H.data)
        dropout_apply_csr_rows(H.indptr, H.indices, H.data, rows, seed, stream, p, out, col0)
        return sp.csr_matrix((out, H.indices, H.indptr), shape=H.shape)
    H = np.ascontiguousarray(H)
    return dropout_apply_rows(H, rows, seed, stream, p, np.empty_like(H), col0)


def dropout_backward(
    dHd: np.ndarray, rows: np.ndarray, seed: int, stream: int, p: float, col0: int = 0
) -> np.ndarray:
    """Gradient through `dropout_forward`: the same mask and scale (recomputed, not stored)."""
    if p <= 0.0:
        return dHd
    dHd = np.ascontiguousarray(dHd)
    return dropout_apply_rows(dHd, rows, seed, stream, p, np.empty_like(dHd), col0)


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
