"""Graph layers with hand-written backward passes, written against `Ops` only.

Every node-wise matrix is the block of local rows ``ops.rows``; the graph is reached through
``ops.aggregate`` (rows of S @ X) and ``ops.aggregate_t`` (rows of S^T @ X); dense products go
through ``ops.matmul`` / ``ops.matmul_grads`` and weight gradients are summed over ranks with
``ops.reduce_weight_grad`` inside `backward`, so the gradients a layer returns are global.

Layers
------
`GCNLayer`
    ``Z = S · drop(H) · W (+ b)``.  The product is evaluated in the cheaper order: the sparse
    aggregation runs at width ``min(f_in, f_out)``, i.e. ``S (H W)`` when ``f_out < f_in`` and
    ``(S H) W`` otherwise.  Also the GraphSAGE 'gcn' aggregator (with that model's support).
`SAGEMeanLayer`
    ``Z = drop(H) W_self + (S drop(H)) W_neigh (+ b)`` (GraphSAGE mean aggregator, sum form).

Dropout is inverted dropout on the layer input with the counter-based mask of
``(seed, stream = epoch * 1024 + layer index, global row, column)``; the backward pass
recomputes the mask instead of storing it.  Phase names: ``L<i>.fwd``, ``L<i>.bwd``,
``L<i>.wgrad``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from gcntrain.model.functional import dropout_backward, dropout_forward, glorot_uniform
from gcntrain.model.ops import Ops

#: dropout key: (seed, stream) of the counter-based mask, or None for no dropout
DropKey = tuple[int, int] | None

ORDERS = ("auto", "mm_first", "agg_first")


def choose_order(f_in: int, f_out: int, order: str = "auto") -> str:
    """Evaluation order of S·H·W: "mm_first" = S(HW) when f_out < f_in, else "agg_first"."""
    if order not in ORDERS:
        raise ValueError(f"unknown order {order!r}; expected one of {', '.join(ORDERS)}")
    if order != "auto":
        return order
    return "mm_first" if f_out < f_in else "agg_first"


def _dense(H: np.ndarray | sp.spmatrix) -> np.ndarray:
    return H.toarray() if sp.issparse(H) else H


class Layer:
    """Common state: sizes, dropout rate, parameters and the forward cache."""

    kind = "layer"

    def __init__(
        self,
        index: int,
        f_in: int,
        f_out: int,
        dropout: float = 0.0,
        bias: bool = False,
        order: str = "auto",
    ):
        self.index = int(index)
        self.f_in = int(f_in)
        self.f_out = int(f_out)
        self.dropout = float(dropout)
        self.bias = bool(bias)
        self.order = choose_order(self.f_in, self.f_out, order)
        self.params: dict[str, np.ndarray] = {}
        self._cache: dict = {}

    # parameters -------------------------------------------------------------------------
    def param_names(self) -> list[str]:
        """Parameter names in initialisation order."""
        raise NotImplementedError

    def init_params(self, rng: np.random.Generator, dtype: np.dtype | type) -> None:
        """Glorot-uniform weights (in `param_names` order) and zero bias."""
        for name in self.param_names():
            if name == "b":
                self.params[name] = np.zeros(self.f_out, dtype=dtype)
            else:
                self.params[name] = glorot_uniform(rng, self.f_in, self.f_out, dtype)

    # helpers ----------------------------------------------------------------------------
    def _phase(self, what: str) -> str:
        return f"L{self.index}.{what}"

    def _drop(self, ops: Ops, H, key: DropKey):
        if key is None or self.dropout <= 0.0:
            return H
        return dropout_forward(H, ops.rows, key[0], key[1], self.dropout)

    def _undrop(self, ops: Ops, dHd: np.ndarray, key: DropKey) -> np.ndarray:
        if key is None or self.dropout <= 0.0:
            return dHd
        return dropout_backward(dHd, ops.rows, key[0], key[1], self.dropout)

    def _reduce(self, ops: Ops, grads: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        phase = self._phase("wgrad")
        return {k: ops.reduce_weight_grad(g, phase) for k, g in grads.items()}

    def forward(self, ops: Ops, H, key: DropKey = None) -> np.ndarray:
        raise NotImplementedError

    def backward(
        self, ops: Ops, dZ: np.ndarray, need_input_grad: bool = True
    ) -> tuple[np.ndarray | None, dict[str, np.ndarray]]:
        raise NotImplementedError


class GCNLayer(Layer):
    """Graph convolution ``Z = S · drop(H) · W (+ b)`` (Kipf & Welling; no bias by default)."""

    kind = "gcn"

    def param_names(self) -> list[str]:
        return ["W", "b"] if self.bias else ["W"]

    def forward(self, ops: Ops, H, key: DropKey = None) -> np.ndarray:
        """Return Z (local rows) and cache what the backward pass needs."""
        W = self.params["W"]
        Hd = self._drop(ops, H, key)
        if self.order == "mm_first":
            Z = ops.aggregate(ops.matmul(Hd, W), self._phase("fwd"))
            self._cache = {"X": Hd, "key": key}
        else:
            A = ops.aggregate(np.ascontiguousarray(_dense(Hd)), self._phase("fwd"))
            Z = ops.matmul(A, W)
            self._cache = {"X": A, "key": key}
        if self.bias:
            Z = Z + self.params["b"]
        return Z

    def backward(
        self, ops: Ops, dZ: np.ndarray, need_input_grad: bool = True
    ) -> tuple[np.ndarray | None, dict[str, np.ndarray]]:
        """Return (dH or None, reduced gradients {name: array})."""
        W = self.params["W"]
        X, key = self._cache["X"], self._cache["key"]
        dZ = np.ascontiguousarray(dZ)
        grads: dict[str, np.ndarray] = {}
        dH = None
        if self.order == "mm_first":
            dP = ops.aggregate_t(dZ, self._phase("bwd"))
            dXd, grads["W"] = ops.matmul_grads(X, W, dP, need_input_grad)
            if need_input_grad:
                dH = self._undrop(ops, dXd, key)
        else:
            dA, grads["W"] = ops.matmul_grads(X, W, dZ, need_input_grad)
            if need_input_grad:
                dHd = ops.aggregate_t(np.ascontiguousarray(dA), self._phase("bwd"))
                dH = self._undrop(ops, dHd, key)
        if self.bias:
            grads["b"] = dZ.sum(axis=0)
        self._cache = {}
        return dH, self._reduce(ops, grads)


class SAGEMeanLayer(Layer):
    """GraphSAGE mean aggregator ``Z = drop(H) W_self + (S drop(H)) W_neigh (+ b)``."""

    kind = "sage-mean"

    def param_names(self) -> list[str]:
        names = ["W_self", "W_neigh"]
        return names + ["b"] if self.bias else names

    def forward(self, ops: Ops, H, key: DropKey = None) -> np.ndarray:
        """Return Z (local rows) and cache what the backward pass needs."""
        Ws, Wn = self.params["W_self"], self.params["W_neigh"]
        Hd = self._drop(ops, H, key)
        Z = ops.matmul(Hd, Ws)
        if self.order == "mm_first":
            Z = Z + ops.aggregate(ops.matmul(Hd, Wn), self._phase("fwd"))
            A = None
        else:
            A = ops.aggregate(np.ascontiguousarray(_dense(Hd)), self._phase("fwd"))
            Z = Z + ops.matmul(A, Wn)
        if self.bias:
            Z = Z + self.params["b"]
        self._cache = {"Hd": Hd, "A": A, "key": key}
        return Z

    def backward(
        self, ops: Ops, dZ: np.ndarray, need_input_grad: bool = True
    ) -> tuple[np.ndarray | None, dict[str, np.ndarray]]:
        """Return (dH or None, reduced gradients {name: array})."""
        Ws, Wn = self.params["W_self"], self.params["W_neigh"]
        Hd, A, key = self._cache["Hd"], self._cache["A"], self._cache["key"]
        dZ = np.ascontiguousarray(dZ)
        grads: dict[str, np.ndarray] = {}
        dHd, grads["W_self"] = ops.matmul_grads(Hd, Ws, dZ, need_input_grad)
        if self.order == "mm_first":
            dP = ops.aggregate_t(dZ, self._phase("bwd"))
            dHn, grads["W_neigh"] = ops.matmul_grads(Hd, Wn, dP, need_input_grad)
        else:
            dA, grads["W_neigh"] = ops.matmul_grads(A, Wn, dZ, need_input_grad)
            dHn = (
                ops.aggregate_t(np.ascontiguousarray(dA), self._phase("bwd"))
                if need_input_grad
                else None
            )
        if self.bias:
            grads["b"] = dZ.sum(axis=0)
        dH = self._undrop(ops, dHd + dHn, key) if need_input_grad else None
        self._cache = {}
        return dH, self._reduce(ops, grads)
