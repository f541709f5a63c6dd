"""Adam (as TensorFlow 1 implements it) and AdamW, as pure in-place array updates.

TF1 Adam folds the bias corrections into the step size::

    lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)
    m    = beta1 * m + (1 - beta1) * g
    v    = beta2 * v + (1 - beta2) * g^2
    w   -= lr_t * m / (sqrt(v) + eps)

AdamW adds decoupled decay applied to the pre-update weights: ``w -= lr * decay * w``.
Weights are replicated, so every rank applies the same update to the same reduced gradient.
"""

from __future__ import annotations

import math

import numpy as np


def adam_step_size(lr: float, t: int, beta1: float = 0.9, beta2: float = 0.999) -> float:
    """TF1's bias-corrected step size at step t (t >= 1)."""
    return lr * math.sqrt(1.0 - beta2**t) / (1.0 - beta1**t)


def adam_update(
    w: np.ndarray,
    g: np.ndarray,
    m: np.ndarray,
    v: np.ndarray,
    t: int,
    lr: float,
    beta1: float = 0.9,
    beta2: float = 0.999,
    eps: float = 1e-8,
    decoupled_decay: float = 0.0,
) -> None:
    """One Adam (or AdamW when ``decoupled_decay > 0``) step, updating w, m, v in place
    (one fused pass, `gcntrain.kernels.elementwise.adam_update_2d`).

    Parameters
    ----------
    w, g, m, v : arrays of one shape (weights, gradient, first and second moments).
    t : step number, starting at 1.
    lr, beta1, beta2, eps : Adam hyperparameters.
    decoupled_decay : AdamW's decay rate (0 = plain Adam).
    """
    from gcntrain.kernels.elementwise import adam_update_2d

    dt = w.dtype.type
    lr_t = adam_step_size(lr, t, beta1, beta2)
    if not (w.shape == g.shape == m.shape == v.shape) or w.ndim > 2:
        raise ValueError(f"Adam: shapes {w.shape}, {g.shape}, {m.shape}, {v.shape} differ")
    flat = [
        a if a.ndim == 2 else a[None, :] if a.ndim == 1 else a.reshape(1, 1) for a in (w, g, m, v)
    ]
    adam_update_2d(
        *flat,
        dt(beta1),
        dt(1.0 - beta1),
        dt(beta2),
        dt(1.0 - beta2),
        dt(lr_t),
        dt(eps),
        dt(lr * decoupled_decay),
    )


class Adam:
    """Adam/AdamW state (moments and step count) for a list of per-layer parameter dicts.

    Parameters
    ----------
    params : list of {name: array}; updated in place by `step`.
    lr, beta1, beta2, eps : Adam hyperparameters (TF1 defaults).
    decoupled_decay : AdamW decay (0 = Adam).
    update : the update function (default `adam_update`; on a device, the Ops' compute's
        ``adam_update``, `gcntrain.model.compute`).
    """

    def __init__(
        self,
        params: list[dict[str, np.ndarray]],
        lr: float = 0.01,
        beta1: float = 0.9,
        beta2: float = 0.999,
        eps: float = 1e-8,
        decoupled_decay: float = 0.0,
        update=adam_update,
    ):
        self.params = params
        self.update = update
        self.lr, self.beta1, self.beta2, self.eps = lr, beta1, beta2, eps
        self.decoupled_decay = decoupled_decay
        self.t = 0
        self.m = [{k: np.zeros_like(w) for k, w in lp.items()} for lp in params]
        self.v = [{k: np.zeros_like(w) for k, w in lp.items()} for lp in params]

    def step(self, grads: list[dict[str, np.ndarray]]) -> None:
        """Apply one update with the (reduced) gradients, same structure as `params`."""
        self.t += 1
        for lp, lg, lm, lv in zip(self.params, grads, self.m, self.v):
            for k, w in lp.items():
                self.update(
                    w,
                    lg[k].astype(w.dtype, copy=False),
                    lm[k],
                    lv[k],
                    self.t,
                    self.lr,
                    self.beta1,
                    self.beta2,
                    self.eps,
                    self.decoupled_decay,
                )
