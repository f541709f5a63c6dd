"""An Ops proxy that times aggregation and dense products (per-epoch time split)."""

from __future__ import annotations

from time import perf_counter

import numpy as np

from gcntrain.model.ops import Ops


class TimedOps:
    """Delegates to `ops`; accumulates seconds in aggregate/aggregate_t and in matmuls.

    Attributes
    ----------
    t_aggregation : seconds inside ``aggregate`` and ``aggregate_t`` since the last `reset`.
    t_dense : seconds inside ``matmul`` and ``matmul_grads`` since the last `reset`.
    Every other attribute (``rows``, ``allreduce_sum``, ...) is the wrapped object's.
    """

    def __init__(self, ops: Ops):
        self.ops = ops
        self.t_aggregation = 0.0
        self.t_dense = 0.0

    def reset(self) -> None:
        self.t_aggregation = 0.0
        self.t_dense = 0.0

    def __getattr__(self, name: str):
        return getattr(self.ops, name)

    def aggregate(self, X: np.ndarray, phase: str = "") -> np.ndarray:
        t = perf_counter()
        out = self.ops.aggregate(X, phase)
        self.t_aggregation += perf_counter() - t
        return out

    def aggregate_t(self, X: np.ndarray, phase: str = "") -> np.ndarray:
        t = perf_counter()
        out = self.ops.aggregate_t(X, phase)
        self.t_aggregation += perf_counter() - t
        return out

    def matmul(self, H, W: np.ndarray) -> np.ndarray:
        t = perf_counter()
        out = self.ops.matmul(H, W)
        self.t_dense += perf_counter() - t
        return out

    def matmul_grads(self, H, W: np.ndarray, dZ: np.ndarray, need_input_grad: bool = True):
        t = perf_counter()
        out = self.ops.matmul_grads(H, W, dZ, need_input_grad)
        self.t_dense += perf_counter() - t
        return out
