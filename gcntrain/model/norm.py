"""LayerNorm over the feature columns of every node row, forward and backward by hand
(SuperGCN section 6.1 (2): normalising the embeddings before each layer keeps outliers out
of the quantization range).

``Y = (X - mean) * rstd * gamma + beta`` with the row mean and ``rstd = 1 / sqrt(var + eps)``
over the row's `width` columns (biased variance, as PyTorch).  Written for row blocks whose
columns may be split over ranks: the row statistics come from per-block partial sums
(`row_sums`) that a layout adds over its column group before `row_stats`, and the backward
pass likewise needs two per-row sums (`backward_sums`) over the whole width before
`backward_finish`.  One process: the block is the whole row and the sums are local.

Every function takes the array module `xp` of its operands (NumPy, the default: the CPU
path's calls exactly as before; ``compute.xp`` on a device, where the same operations run on
device arrays, bit for bit like the CPU path on the host emulation; on a GPU the row sums
are CuPy reductions, which add in another order: equal to rounding only).

Backward, with ``G = dY * gamma`` and ``X_hat = (X - mean) * rstd``::

    dX     = rstd * (G - mean_j(G) - X_hat * mean_j(G * X_hat))
    dgamma = sum_i dY * X_hat        dbeta = sum_i dY      (sums over nodes)
"""

from __future__ import annotations

import numpy as np

#: added to the variance (PyTorch's default)
EPS = 1e-5


def as_array(a, xp=np):
    """`a` as an array of `xp`: ``np.asarray`` on the host; a device array as it is (a
    host conversion of a device array is a transfer, never made here)."""
    return np.asarray(a) if xp is np else a


def _f64(a, xp=np):
    """`a` in float64 (itself where it already is)."""
    return np.asarray(a, dtype=np.float64) if xp is np else a.astype(xp.float64, copy=False)


def row_sums(X: np.ndarray, xp=np) -> np.ndarray:
    """(m, 2) per-row sum and sum of squares of a block's columns (float64)."""
    X = _f64(X, xp)
    return xp.stack([X.sum(axis=1), xp.square(X).sum(axis=1)], axis=1)


def row_stats(
    sums: np.ndarray, width: int, eps: float = EPS, xp=np
) -> tuple[np.ndarray, np.ndarray]:
    """(mean, rstd) per row from the `row_sums` of the whole row (summed over its blocks)."""
    mean = sums[:, 0] / width
    var = xp.maximum(sums[:, 1] / width - mean * mean, 0.0)
    return mean, 1.0 / xp.sqrt(var + eps)


def forward(X, mean, rstd, gamma, beta, xp=np) -> tuple[np.ndarray, np.ndarray]:
    """(Y, X_hat) of a block; `gamma`, `beta` are the block's columns of the parameters."""
    x_hat = (_f64(X, xp) - mean[:, None]) * rstd[:, None]
    Y = x_hat * gamma + beta
    return Y.astype(X.dtype, copy=False), x_hat.astype(X.dtype, copy=False)


def backward_sums(dY, x_hat, gamma, xp=np) -> np.ndarray:
    """(m, 2) per-row sums of ``G = dY * gamma`` and of ``G * X_hat`` over a block's columns."""
    G = _f64(dY, xp) * gamma
    return xp.stack([G.sum(axis=1), (G * x_hat).sum(axis=1)], axis=1)


def backward_finish(dY, x_hat, rstd, gamma, sums: np.ndarray, width: int, xp=np) -> np.ndarray:
    """dX of a block from the whole rows' `backward_sums`."""
    G = _f64(dY, xp) * gamma
    dX = rstd[:, None] * (G - sums[:, 0:1] / width - x_hat * (sums[:, 1:2] / width))
    return dX.astype(as_array(dY, xp).dtype, copy=False)


def param_grads(dY, x_hat) -> tuple[np.ndarray, np.ndarray]:
    """(dgamma, dbeta) of a block summed over its rows (still to be summed over nodes)."""
    dY = np.asarray(dY, dtype=np.float64)
    return (dY * x_hat).sum(axis=0), dY.sum(axis=0)
