"""BatchNorm of a layer's input over every node of the graph, forward and backward by hand
(``--norm batch``; issue 53 part 2; docs/model.md says why these choices).

Per feature column j, over all n nodes of the graph (every row is in the full-batch pass;
the normalisation applies to all of them)::

    mean_j = sum_i X_ij / n        var_j = sum_i X_ij^2 / n - mean_j^2   (biased, as PyTorch)
    Y = (X - mean) * rstd * gamma + beta,      rstd = 1 / sqrt(var + eps),  eps = 1e-5

Training and evaluation passes both use the statistics of their own pass (no running
averages: a full-batch evaluation sees the whole population, so its statistics are exact,
not an estimate, and the model's state is its parameters alone).

The statistics are column sums over rows that different ranks hold: each rank sums its
counted rows (``ops.counted``: a vertex cut's clones are left out) into a (2, f_local)
float64 block (`column_partials`) and ``ops.column_sum`` adds the blocks over the ranks
holding the same columns, each node once; `column_stats` turns the totals into the mean and
rstd.  The backward pass likewise needs two column sums over all nodes,
``dbeta = sum_i dY`` and ``dgamma = sum_i dY * X_hat`` (`backward_partials`, one more
``column_sum``), which are also the parameters' gradients::

    dX = rstd * gamma * (dY - (dbeta + X_hat * dgamma) / n)

The term ``(dbeta + X_hat * dgamma) / n`` is the same function of a node on every copy of
it; where copies hold partial gradients that add up to the node's (a vertex cut's clones in
a backward pass) it goes on the counted rows only (`backward_finish`), as the backward
sums take every local row.

Sums accumulate in float64 (one process: numpy's column sums; several: per-rank column
sums then an Allreduce in float64), so a distributed run differs from serial by the
rounding of the sum order only: about 1e-16 relative in the statistics, far inside the
1e-5 (float64) and 1e-4 (float32) the scheme tests hold weights to.  The one-pass variance
loses digits only where a column's mean exceeds its spread by about 1e6 (clamped at 0).

Every function takes the array module `xp` of its operands (NumPy by default; a device's
on a GPU, whose sums add in another order: equal to rounding only).  Plain NumPy blocks go
through the host kernels (`gcntrain.kernels.batchnorm`: one pass each, no float64
temporaries, the same bits as the formulas here, which a device's arrays, the host
emulation's included, go through).
"""

from __future__ import annotations

import numpy as np

from gcntrain.kernels import batchnorm as kern
from gcntrain.model.norm import EPS, _f64, as_array

__all__ = [
    "EPS",
    "backward_finish",
    "backward_partials",
    "column_partials",
    "column_stats",
    "forward",
]


def _host(*arrays) -> bool:
    """Whether every array is a plain C-ordered NumPy block (the host kernels take it)."""
    return all(type(a) is np.ndarray and a.flags.c_contiguous for a in arrays)


def column_partials(X, counted: int | None = None, xp=np) -> np.ndarray:
    """(2, f) float64 column sums of X and of X**2 over its first `counted` rows (None:
    all of them)."""
    if _host(X):
        k = X.shape[0] if counted is None else int(counted)
        return kern.column_sums(X, k, np.empty((2, X.shape[1])))
    X = _f64(X if counted is None else X[:counted], xp)
    return xp.stack([X.sum(axis=0), xp.square(X).sum(axis=0)])


def column_stats(totals, n: int, eps: float = EPS, xp=np) -> tuple[np.ndarray, np.ndarray]:
    """(mean, rstd) per column (float64) from the `column_partials` of all `n` nodes."""
    n = max(int(n), 1)
    mean = totals[0] / n
    var = xp.maximum(totals[1] / n - mean * mean, 0.0)
    return mean, 1.0 / xp.sqrt(var + eps)


def forward(X, mean, rstd, gamma, beta, xp=np, keep: bool = True):
    """(Y, X_hat) of a block in X's dtype; `gamma`, `beta`, `mean`, `rstd` are the block's
    columns; X_hat None unless `keep` (a pass without a backward one)."""
    if _host(X, gamma, beta):
        Y = np.empty_like(X)
        x_hat = np.empty_like(X) if keep else np.empty((0, 0), X.dtype)
        kern.normalize(X, mean, rstd, gamma, beta, Y, x_hat, keep)
        return Y, (x_hat if keep else None)
    x_hat = (_f64(X, xp) - mean) * rstd
    Y = x_hat * gamma + beta
    return Y.astype(X.dtype, copy=False), (x_hat.astype(X.dtype, copy=False) if keep else None)


def backward_partials(dY, x_hat, xp=np) -> np.ndarray:
    """(2, f) float64 column sums of dY and of ``dY * X_hat`` over every local row (their
    totals are ``dbeta`` and ``dgamma``)."""
    if _host(dY, x_hat):
        return kern.grad_sums(dY, x_hat, np.empty((2, dY.shape[1])))
    dY = _f64(dY, xp)
    return xp.stack([dY.sum(axis=0), (dY * x_hat).sum(axis=0)])


def backward_finish(
    dY, x_hat, rstd, gamma, totals, n: int, counted: int | None = None, xp=np
) -> np.ndarray:
    """dX of a block (dY's dtype) from the `backward_partials` totals of all `n` nodes; the
    term shared by a node's copies on the first `counted` rows only (None: every row)."""
    scale = rstd * gamma
    k = dY.shape[0] if counted is None else int(counted)
    n = max(int(n), 1)
    if _host(dY, x_hat):
        out = np.empty_like(dY)
        return kern.input_grad(dY, x_hat, scale, totals[0], totals[1], scale / n, k, out)
    dX = _f64(dY, xp) * scale
    dX[:k] -= (totals[0] + x_hat[:k] * totals[1]) * (scale / n)
    return dX.astype(as_array(dY, xp).dtype, copy=False)
