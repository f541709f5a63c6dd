"""Fused row-wise softmax cross-entropy (forward and gradient) over masked rows.

For logits ``Z`` (n x C), integer labels ``y`` and a row mask ``m``::

    P[i, :]   = softmax(Z[i, :])                       (every row)
    loss_sum  = sum_{i: m[i] and y[i] >= 0} -log P[i, y[i]]
    dZ[i, :]  = scale * (P[i, :] - onehot(y[i]))      (counted rows; 0 elsewhere)

with ``scale = 1 / (number of counted rows over all ranks)`` for a mean loss.  Rows are
independent, so a rank holding any subset of the rows computes its part and the caller sums
``loss_sum`` (and the row count) over ranks.

Numerically stable: the row maximum is subtracted before ``exp`` and the log-probability is
``Z[i, y] - max - log(sum exp(Z[i, :] - max))``, accumulated in float64.
"""

from __future__ import annotations

import math

from numba import njit, prange


@njit(parallel=True, nogil=True, cache=True)
def softmax_xent_rows(logits, labels, mask, probs_out):  # pragma: no cover - jitted
    """Softmax of every row into `probs_out`; return the summed cross-entropy of counted rows.

    Parameters
    ----------
    logits : numpy.ndarray
        n x C float32/float64, C-contiguous, C >= 1.
    labels : numpy.ndarray
        n integer labels; rows with a negative label are never counted.  Labels of counted
        rows must be < C (not checked here: validate labels when loading the graph).
    mask : numpy.ndarray
        n booleans: which rows count towards the loss (e.g. the training rows).
    probs_out : numpy.ndarray
        Preallocated n x C array of logits' dtype (may be ``logits`` itself).

    Returns
    -------
    float
        Sum over counted rows of ``-log softmax(logits[i])[labels[i]]`` (float64).
    """
    n = logits.shape[0]
    c = logits.shape[1]
    total = 0.0
    for i in prange(n):
        lab = labels[i]
        counted = mask[i] and lab >= 0
        # read the label's logit first: probs_out may alias logits
        z_lab = logits[i, lab] if counted else 0.0
        mx = -math.inf
        for j in range(c):
            if logits[i, j] > mx:
                mx = logits[i, j]
        s = 0.0
        for j in range(c):
            e = math.exp(logits[i, j] - mx)
            probs_out[i, j] = e
            s += e
        inv = 1.0 / s
        for j in range(c):
            probs_out[i, j] = probs_out[i, j] * inv
        if counted:
            total += math.log(s) - (z_lab - mx)
    return total


@njit(parallel=True, nogil=True, cache=True)
def softmax_xent_grad(probs, labels, mask, scale, out):  # pragma: no cover - jitted
    """Gradient of ``scale * loss_sum`` w.r.t. the logits, from `softmax_xent_rows`' probs.

    Parameters
    ----------
    probs : numpy.ndarray
        n x C softmax probabilities (``probs_out`` of `softmax_xent_rows`).
    labels, mask : numpy.ndarray
        As for `softmax_xent_rows`.
    scale : float
        Usually ``1 / global number of counted rows`` (mean loss).
    out : numpy.ndarray
        Preallocated n x C array of probs' dtype (may be ``probs`` itself); rows that are not
        counted are set to 0.

    Returns
    -------
    numpy.ndarray
        ``out``.
    """
    n = probs.shape[0]
    c = probs.shape[1]
    for i in prange(n):
        lab = labels[i]
        if mask[i] and lab >= 0:
            p_lab = probs[i, lab]  # read first: out may alias probs
            for j in range(c):
                out[i, j] = scale * probs[i, j]
            out[i, lab] = scale * (p_lab - 1.0)
        else:
            for j in range(c):
                out[i, j] = 0
    return out
