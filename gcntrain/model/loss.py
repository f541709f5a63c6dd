"""Masked softmax cross-entropy, accuracy and weight decay (pure math on local blocks).

Local functions return SUMS over the local masked rows; the caller divides by the GLOBAL number
of masked nodes, which the Ops reduce (``ops.node_sum``, ``ops.xent``), so the model never
uses the global n.  Nodes with label -1 never count, even inside a mask.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def effective_mask(labels: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """``mask & (labels >= 0)`` (all False when mask is None)."""
    if mask is None:
        return np.zeros(labels.shape[0], dtype=bool)
    return np.asarray(mask, dtype=bool) & (labels >= 0)


def softmax_xent_sums(
    logits: np.ndarray, labels: np.ndarray, mask: np.ndarray, need_grad: bool = True
) -> tuple[float, int, np.ndarray | None]:
    """Sum of softmax cross-entropy and of correct argmax predictions over masked rows.

    Parameters
    ----------
    logits : (m, C) array of whole rows.
    labels : int64 (m,), class ids (-1 = unlabeled).
    mask : bool (m,), rows that count (already combined with labels >= 0).
    need_grad : also return d(sum of losses)/d logits.

    Returns
    -------
    (loss_sum, correct, grad)
        loss_sum (float, accumulated in float64), correct (int), grad (m, C) in logits' dtype
        with zero rows outside the mask, or None.
    """
    idx = np.flatnonzero(mask)
    y = labels[idx]
    z = logits[idx].astype(np.float64)
    zmax = z.max(axis=1, keepdims=True) if idx.size else np.zeros((0, 1))
    e = np.exp(z - zmax)
    s = e.sum(axis=1)
    ar = np.arange(idx.size)
    loss_sum = float(np.sum(np.log(s) - (z[ar, y] - zmax[:, 0])))
    correct = int(np.count_nonzero(np.argmax(logits[idx], axis=1) == y)) if idx.size else 0
    if not need_grad:
        return loss_sum, correct, None
    g = e / s[:, None]
    g[ar, y] -= 1.0
    grad = np.zeros_like(logits)
    grad[idx] = g
    return loss_sum, correct, grad


def local_xent(
    logits: np.ndarray,
    labels: np.ndarray,
    masks: list[np.ndarray],
    grad_index: int | None,
    grad_divisor: float,
) -> tuple[np.ndarray, np.ndarray | None]:
    """(loss sum, correct) of each mask over whole local rows, and the gradient of one mask's
    loss sum divided by `grad_divisor` (None when `grad_index` is None).

    One pass of `gcntrain.kernels.softmax.softmax_xent_masked` over the rows of any mask
    (loss, hit and gradient of a row together), then one sum per mask in row order: the
    values of `softmax_xent_sums` per mask, without its temporaries.  Without a gradient
    (an evaluation), float32 logits go through `softmax_xent_eval32` (``exp`` in float32:
    the losses within about 1e-7 relative of the float64 ones, the hits the same).
    """
    from gcntrain.kernels.softmax import softmax_xent_eval32, softmax_xent_masked

    logits = np.ascontiguousarray(logits)
    labels = np.asarray(labels, dtype=np.int64)
    n, c = logits.shape
    masks = [effective_mask(labels, m) for m in masks]
    active = np.zeros(n, dtype=bool)
    for m in masks:
        active |= m
    if c == 0:
        active[:] = False
    need = grad_index is not None
    grad_rows = masks[grad_index] if need else active
    grad = np.empty((n if need else 0, c), dtype=logits.dtype)
    loss_rows = np.zeros(n, dtype=np.float64)
    hits = np.zeros(n, dtype=bool)
    if n and not need and logits.dtype == np.float32:
        softmax_xent_eval32(logits, labels, active, loss_rows, hits)
    elif n:
        divisor = float(max(grad_divisor, 1))
        softmax_xent_masked(logits, labels, active, grad_rows, divisor, loss_rows, hits, grad)
    sums: list[float] = []
    for m in masks:
        idx = np.flatnonzero(m)
        sums += [float(np.sum(loss_rows[idx])), int(np.count_nonzero(hits[idx]))]
    return np.array(sums, dtype=np.float64), grad if need else None


def masked_counts(ops, labels: np.ndarray, masks: dict[str, np.ndarray | None], phase) -> dict:
    """Global number of counted nodes per mask name (one ``ops.node_sum``)."""
    names = list(masks)
    local = np.array([effective_mask(labels, masks[k]).sum() for k in names], dtype=np.float64)
    total = ops.node_sum(local, phase=phase)
    return {k: int(round(float(v))) for k, v in zip(names, total)}


def mean_xent(
    ops,
    logits: np.ndarray,
    labels: np.ndarray,
    mask: np.ndarray,
    count: int,
    *,
    width: int,
    phase,
) -> tuple[float, float, np.ndarray]:
    """Mean cross-entropy, accuracy and d(mean)/d logits over a mask (global `count`;
    `width` = number of classes).  One ``ops.xent`` in `phase`."""
    tot, grad = ops.xent(
        logits, labels, [mask], width=width, grad_index=0, grad_divisor=count, phase=phase
    )
    denom = max(count, 1)
    return float(tot[0]) / denom, float(tot[1]) / denom, grad


def l2_loss(W: np.ndarray) -> float:
    """``sum(W ** 2) / 2`` (TensorFlow's l2_loss), accumulated in float64."""
    return 0.5 * float(np.sum(np.square(W, dtype=np.float64)))


def decayed(layer_index: int, name: str, all_layers: bool) -> bool:
    """Whether a parameter gets weight decay: weight matrices of the first layer (or all)."""
    return name.startswith("W") and (all_layers or layer_index == 0)


def weight_decay_value(
    weights: list[dict[str, np.ndarray]],
    decay: float,
    all_layers: bool = False,
    sum_sq: Callable[[int, str, np.ndarray], float] | None = None,
) -> float:
    """``decay * sum(l2_loss(W))`` over the decayed weights.

    `sum_sq(layer, name, W)` gives ``sum(W ** 2)`` of the whole parameter whose local shard is
    W (``ops.param_sum_sq``); default: W is whole.
    """
    if decay == 0.0:
        return 0.0
    sq = sum_sq or (lambda i, k, W: 2.0 * l2_loss(W))
    return decay * sum(
        0.5 * sq(i, k, W)
        for i, lw in enumerate(weights)
        for k, W in lw.items()
        if decayed(i, k, all_layers)
    )


def add_weight_decay_grads(
    grads: list[dict[str, np.ndarray]],
    weights: list[dict[str, np.ndarray]],
    decay: float,
    all_layers: bool = False,
) -> None:
    """In place: ``grads += decay * W`` for the decayed weights (shard by shard, after the
    reduction, so the decay is counted once)."""
    if decay == 0.0:
        return
    for i, (lg, lw) in enumerate(zip(grads, weights)):
        for k in lg:
            if decayed(i, k, all_layers):
                lg[k] = lg[k] + lw[k].dtype.type(decay) * lw[k]
