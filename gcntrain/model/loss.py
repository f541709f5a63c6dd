"""Masked softmax cross-entropy, accuracy and weight decay.

Local functions return SUMS over the local masked rows; the caller divides by the GLOBAL number
of masked nodes, reduced with ``ops.allreduce_sum``, so the model never uses the global n.
Nodes with label -1 never count, even inside a mask.
"""

from __future__ import annotations

import numpy as np

from gcntrain.model.ops import Ops


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
    logits : (m, C) array of local rows.
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


def masked_counts(
    ops: Ops, labels: np.ndarray, masks: dict[str, np.ndarray | None]
) -> dict[str, int]:
    """Global number of counted nodes per mask name (one ``allreduce_sum``)."""
    names = list(masks)
    local = np.array([effective_mask(labels, masks[k]).sum() for k in names], dtype=np.float64)
    total = ops.allreduce_sum(local, "metrics")
    return {k: int(round(float(v))) for k, v in zip(names, total)}


def mean_xent(
    ops: Ops, logits: np.ndarray, labels: np.ndarray, mask: np.ndarray, count: int
) -> tuple[float, float, np.ndarray]:
    """Mean cross-entropy, accuracy and d(mean)/d logits over a mask (global count).

    One ``allreduce_sum`` of (loss_sum, correct) in phase "metrics".
    """
    loss_sum, correct, grad = softmax_xent_sums(logits, labels, mask, need_grad=True)
    tot = ops.allreduce_sum(np.array([loss_sum, correct], dtype=np.float64), "metrics")
    denom = max(count, 1)
    grad /= grad.dtype.type(denom)
    return float(tot[0]) / denom, float(tot[1]) / denom, grad


def l2_loss(W: np.ndarray) -> float:
    """``sum(W ** 2) / 2`` (TensorFlow's l2_loss), accumulated in float64."""
    return 0.5 * float(np.sum(np.square(W, dtype=np.float64)))


def decayed(layer_index: int, name: str, all_layers: bool) -> bool:
    """Whether a parameter gets weight decay: weight matrices of the first layer (or all)."""
    return name.startswith("W") and (all_layers or layer_index == 0)


def weight_decay_value(
    weights: list[dict[str, np.ndarray]], decay: float, all_layers: bool = False
) -> float:
    """``decay * sum(l2_loss(W))`` over the decayed weights (replicated: no communication)."""
    if decay == 0.0:
        return 0.0
    return decay * sum(
        l2_loss(W)
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
    """In place: ``grads += decay * W`` for the decayed weights (after the reduction)."""
    if decay == 0.0:
        return
    for i, (lg, lw) in enumerate(zip(grads, weights)):
        for k in lg:
            if decayed(i, k, all_layers):
                lg[k] = lg[k] + lw[k].dtype.type(decay) * lw[k]
