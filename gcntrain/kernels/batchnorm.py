"""BatchNorm's passes over a block (`gcntrain.model.batchnorm` on the host): each a single
pass without the NumPy formulas' float64 temporaries, bit for bit the formulas' results.

* Column sums run down the rows in order (what NumPy's ``X.sum(axis=0)`` of a C-ordered
  block with more than one column does: no pairwise summation across rows), row by row on
  one thread: the inner loop over a row's columns vectorises and runs at about the speed
  of a copy, which splitting the columns over threads did not reach on a loaded 2-core
  machine (a thread per block of columns strides across rows).
* The element-wise passes compute in float64 with the formulas' operations in their order
  (no fused multiply-add: Numba contracts none without fastmath), parallel over rows.

Arrays are C-contiguous 2-D float32/float64 blocks; the per-column vectors float64 except
`gamma` and `beta`, which are in the parameters' dtype (read as float64).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(nogil=True, cache=True)
def column_sums(X, k, out):  # pragma: no cover - jitted
    """``out[0] = sum_i X[i]``, ``out[1] = sum_i X[i]**2`` over the rows i < k, in float64,
    row by row (out: (2, f) float64).  Returns out."""
    f = X.shape[1]
    s = np.zeros(f)
    q = np.zeros(f)
    for i in range(k):
        row = X[i]
        for j in range(f):
            v = np.float64(row[j])
            s[j] += v
            q[j] += v * v
    out[0] = s
    out[1] = q
    return out


@njit(nogil=True, cache=True)
def grad_sums(dY, xh, out):  # pragma: no cover - jitted
    """``out[0] = sum_i dY[i]``, ``out[1] = sum_i dY[i] * xh[i]`` over every row, in float64,
    row by row.  Returns out."""
    f = dY.shape[1]
    s = np.zeros(f)
    q = np.zeros(f)
    for i in range(dY.shape[0]):
        d_row = dY[i]
        x_row = xh[i]
        for j in range(f):
            d = np.float64(d_row[j])
            s[j] += d
            q[j] += d * np.float64(x_row[j])
    out[0] = s
    out[1] = q
    return out


@njit(parallel=True, nogil=True, cache=True)
def normalize(X, mean, rstd, gamma, beta, Y, xh, keep):  # pragma: no cover - jitted
    """``xh = (X - mean) * rstd``, ``Y = xh * gamma + beta`` (float64, stored in Y's and
    xh's dtype); xh is written only with `keep`.  Returns Y."""
    m = X.shape[0]
    f = X.shape[1]
    for i in prange(m):
        for j in range(f):
            x = (np.float64(X[i, j]) - mean[j]) * rstd[j]
            Y[i, j] = x * np.float64(gamma[j]) + np.float64(beta[j])
            if keep:
                xh[i, j] = x
    return Y


@njit(parallel=True, nogil=True, cache=True)
def input_grad(dY, xh, scale, t0, t1, scale_n, k, out):  # pragma: no cover - jitted
    """``out = dY * scale``, less ``(t0 + xh * t1) * scale_n`` on the rows i < k (float64,
    stored in out's dtype).  Returns out."""
    m = dY.shape[0]
    f = dY.shape[1]
    for i in prange(m):
        for j in range(f):
            d = np.float64(dY[i, j]) * scale[j]
            if i < k:
                d = d - (t0[j] + np.float64(xh[i, j]) * t1[j]) * scale_n[j]
            out[i, j] = d
    return out
