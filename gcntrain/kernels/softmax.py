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

The evaluation's loss of float32 logits (no gradient: `softmax_xent_eval32`) takes the
``exp`` in float32 (libm's ``expf``, about twice the rate of ``exp`` here) and sums it in
float64: each term is within a unit in the last place of float32 of the float64 one, so a
row's loss is within about 1e-7 relative of the float64 formula's and a mask's mean closer
still (tests/test_epoch_eval_cache.py holds it to 1e-6).  The training loss and its
gradient keep the float64 ``exp``: the weights and training losses do not change.
"""

from __future__ import annotations

import math

import numpy as np
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


@njit(nogil=True, cache=True)
def _row_max(logits, i):  # pragma: no cover - jitted
    """``(max_j z_ij, the first j holding it)`` of row `i` of `logits` (C >= 1), the
    maximum in the logits' dtype."""
    mx = logits[i, 0]
    arg = 0
    for j in range(1, logits.shape[1]):
        if logits[i, j] > mx:
            mx = logits[i, j]
            arg = j
    return mx, arg


@njit(parallel=True, nogil=True, cache=True)
def softmax_xent_masked(
    logits, labels, active, grad_rows, divisor, loss_out, hit_out, grad_out
):  # pragma: no cover - jitted
    """Per-row cross-entropy and hits of the `active` rows and, in the same pass, the
    gradient of the `grad_rows` rows: what the model's loss needs from one read of the logits.

    For an active row i (label ``y = labels[i] >= 0``)::

        loss_out[i] = log(sum_j exp(z_ij - max_i)) - (z_iy - max_i)      (float64)
        hit_out[i]  = argmax_j z_ij == y                                  (first maximum)

    and, when ``grad_out`` has rows (``grad_out.shape[0] == n``)::

        grad_out[i, j] = T(T(p_ij - [j == y]) / T(divisor))   for grad_rows[i], else 0

    where ``p = softmax`` in float64 and ``T`` is the logits' dtype (the rounding of the
    NumPy formula it replaces, step by step).  Inactive rows of `loss_out` / `hit_out` are
    left as they are; the caller sums the rows of each mask (in row order).

    Parameters
    ----------
    logits : n x C float32/float64, C-contiguous.
    labels : n integers (rows with a negative label must not be active).
    active : n booleans: rows whose loss and hit are computed.
    grad_rows : n booleans (a subset of `active`): rows with a gradient.
    divisor : the gradient's divisor (the global number of counted rows).
    loss_out : n float64.
    hit_out : n bool.
    grad_out : n x C of logits' dtype, or a 0 x C array for no gradient.
    """
    n = logits.shape[0]
    c = logits.shape[1]
    want_grad = grad_out.shape[0] == n
    div = logits.dtype.type(divisor)
    chunks = max(1, min(256, n // 64))
    for q in prange(chunks):
        e = np.empty(c, dtype=np.float64)  # exp(z - max) of the row, computed once
        for i in range(n * q // chunks, n * (q + 1) // chunks):
            if not active[i]:
                if want_grad:
                    for j in range(c):
                        grad_out[i, j] = 0
                continue
            lab = labels[i]
            mx, arg = _row_max(logits, i)
            m64 = np.float64(mx)
            s = 0.0
            for j in range(c):
                e[j] = math.exp(np.float64(logits[i, j]) - m64)
                s += e[j]
            loss_out[i] = math.log(s) - (np.float64(logits[i, lab]) - m64)
            hit_out[i] = arg == lab
            if want_grad:
                if grad_rows[i]:
                    for j in range(c):
                        p = e[j] / s
                        if j == lab:
                            p -= 1.0
                        grad_out[i, j] = logits.dtype.type(p) / div
                else:
                    for j in range(c):
                        grad_out[i, j] = 0
    return loss_out


@njit(parallel=True, nogil=True, cache=True)
def softmax_xent_eval32(logits, labels, active, loss_out, hit_out):  # pragma: no cover - jitted
    """Per-row cross-entropy and hits of the `active` rows of float32 `logits`, without a
    gradient (an evaluation pass), with ``exp`` in float32::

        loss_out[i] = log(sum_j f64(expf(z_ij - max_i))) - (z_iy - max_i)   (float64)
        hit_out[i]  = argmax_j z_ij == y                                   (first maximum)

    ``z_ij - max_i`` is rounded to float32 (exact where the two are within a factor 2; a
    term it rounds is below e^-1 of the row's largest); the sum and the log are float64, in
    column order.  Inactive rows are left as they are.

    Parameters
    ----------
    logits : n x C float32, C-contiguous, C >= 1.
    labels : n integers (rows with a negative label must not be active).
    active : n booleans: rows whose loss and hit are computed.
    loss_out : n float64.
    hit_out : n bool.
    """
    n = logits.shape[0]
    c = logits.shape[1]
    chunks = max(1, min(256, n // 64))
    for q in prange(chunks):
        for i in range(n * q // chunks, n * (q + 1) // chunks):
            if not active[i]:
                continue
            lab = labels[i]
            mx, arg = _row_max(logits, i)
            s = 0.0
            for j in range(c):
                s += np.float64(math.exp(logits[i, j] - mx))
            loss_out[i] = math.log(s) - (np.float64(logits[i, lab]) - np.float64(mx))
            hit_out[i] = arg == lab
    return loss_out
