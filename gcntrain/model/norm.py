"""LayerNorm over the feature columns of every node row, forward and backward by hand
(SuperGCN section 6.1 (2): normalising the embeddings before each layer keeps outliers out
of the quantization range).

``Y = (X - mean) * rstd * gamma + beta`` with the row mean and ``rstd = 1 / sqrt(var + eps)``
over the row's `width` columns (biased variance, as PyTorch).  Written for row blocks whose
columns may be split over ranks: the row statistics come from per-block partial sums
(`row_sums`) that a layout adds over its column group before `row_stats`, and the backward
pass likewise needs two per-row sums (`backward_sums`) over the whole width before
`backward_finish`.  One process: the block is the whole row and the sums are local.

Backward, with ``G = dY * gamma`` and ``X_hat = (X - mean) * rstd``::

    dX     = rstd * (G - mean_j(G) - X_hat * mean_j(G * X_hat))
    dgamma = sum_i dY * X_hat        dbeta = sum_i dY      (sums over nodes)
"""

from __future__ import annotations

import numpy as np

#: added to the variance (PyTorch's default)
EPS = 1e-5


def row_sums(X: np.ndarray) -> np.ndarray:
    """(m, 2) per-row sum and sum of squares of a block's columns (float64)."""
    X = np.asarray(X, dtype=np.float64)
    return np.stack([X.sum(axis=1), np.square(X).sum(axis=1)], axis=1)


def row_stats(sums: np.ndarray, width: int, eps: float = EPS) -> tuple[np.ndarray, np.ndarray]:
    """(mean, rstd) per row from the `row_sums` of the whole row (summed over its blocks)."""
    mean = sums[:, 0] / width
    var = np.maximum(sums[:, 1] / width - mean * mean, 0.0)
    return mean, 1.0 / np.sqrt(var + eps)


def forward(X, mean, rstd, gamma, beta) -> tuple[np.ndarray, np.ndarray]:
    """(Y, X_hat) of a block; `gamma`, `beta` are the block's columns of the parameters."""
    x_hat = (np.asarray(X, dtype=np.float64) - mean[:, None]) * rstd[:, None]
    Y = x_hat * gamma + beta
    return Y.astype(X.dtype, copy=False), x_hat.astype(X.dtype, copy=False)


def backward_sums(dY, x_hat, gamma) -> np.ndarray:
    """(m, 2) per-row sums of ``G = dY * gamma`` and of ``G * X_hat`` over a block's columns."""
    G = np.asarray(dY, dtype=np.float64) * gamma
    return np.stack([G.sum(axis=1), (G * x_hat).sum(axis=1)], axis=1)


def backward_finish(dY, x_hat, rstd, gamma, sums: np.ndarray, width: int) -> np.ndarray:
    """dX of a block from the whole rows' `backward_sums`."""
    G = np.asarray(dY, dtype=np.float64) * gamma
    dX = rstd[:, None] * (G - sums[:, 0:1] / width - x_hat * (sums[:, 1:2] / width))
    return dX.astype(np.asarray(dY).dtype, copy=False)


def param_grads(dY, x_hat) -> tuple[np.ndarray, np.ndarray]:
    """(dgamma, dbeta) of a block summed over its rows (still to be summed over nodes)."""
    dY = np.asarray(dY, dtype=np.float64)
    return (dY * x_hat).sum(axis=0), dY.sum(axis=0)
