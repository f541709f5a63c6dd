"""Row-parallel elementwise kernels that beat NumPy or avoid its temporaries.

All take C-contiguous 2-D float32/float64 arrays and write in place or into a caller-given
``out`` (which may be the same array as an input).  Measured against the NumPy formulas in
docs/kernels.md.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(parallel=True, nogil=True, cache=True)
def relu_inplace(X):  # pragma: no cover - jitted
    """X = max(X, 0) in place, bit for bit as ``np.maximum(X, 0)``: NaN stays NaN and both
    zeros come out +0.0 (NumPy's max gives its second operand for equal zeros); returns X."""
    n = X.shape[0]
    f = X.shape[1]
    for i in prange(n):
        for j in range(f):
            x = X[i, j]
            if x <= 0:
                X[i, j] = 0
    return X


@njit(parallel=True, nogil=True, cache=True)
def relu_backward(dH, Z, out):  # pragma: no cover - jitted
    """out = dH where Z > 0, else 0 (gradient of ReLU); one pass, no boolean temporary.

    ``Z`` may be the pre-activation or the activation ``relu(Z)`` itself (both are > 0 at the
    same places), so a caller may keep only ``H = relu_inplace(Z)``.  ``out`` may be ``dH``.
    Returns ``out``.
    """
    n = dH.shape[0]
    f = dH.shape[1]
    for i in prange(n):
        for j in range(f):
            out[i, j] = dH[i, j] if Z[i, j] > 0 else 0
    return out


@njit(parallel=True, nogil=True, cache=True)
def row_normalize_inplace(X):  # pragma: no cover - jitted
    """Divide every row by its L1 norm ``sum_j |X[i, j]|`` in place; all-zero rows stay 0.

    The norm is accumulated in float64.  For non-negative features (bag of words) this is the
    usual "rows sum to 1" feature normalisation.  Returns X.
    """
    n = X.shape[0]
    f = X.shape[1]
    for i in prange(n):
        s = 0.0
        for j in range(f):
            s += abs(X[i, j])
        if s > 0:
            inv = 1.0 / s
            for j in range(f):
                X[i, j] = X[i, j] * inv
    return X


@njit(nogil=True, cache=True)
def adam_update_2d(W, G, M, V, beta1, c1, beta2, c2, lr_t, eps, decay):  # pragma: no cover
    """One Adam (AdamW when ``decay > 0``) step over 2-D arrays of one shape (any strides),
    in place, in one pass: ``M = beta1 M + c1 G``, ``V = beta2 V + c2 G^2``, ``W -= decay W``
    (when ``decay``), ``W -= lr_t M / (sqrt(V) + eps)``, with ``c1 = 1 - beta1`` and
    ``c2 = 1 - beta2`` computed by the caller.  The scalars come in W's dtype, so float32
    stays float32, and every element sees the NumPy formula's operations in its order,
    without its temporaries."""
    for i in range(W.shape[0]):
        for j in range(W.shape[1]):
            g = G[i, j]
            m = M[i, j] * beta1
            m += c1 * g
            v = V[i, j] * beta2
            v += c2 * (g * g)
            M[i, j] = m
            V[i, j] = v
            w = W[i, j]
            if decay:
                w -= decay * w
            W[i, j] = w - lr_t * m / (np.sqrt(v) + eps)
