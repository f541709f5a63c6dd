"""Graph layers with hand-written backward passes, written against the Ops protocol only.

Every node-wise matrix is a local block (rows ``ops.rows``, columns ``ops.col_range(f)``);
the graph is reached through ``ops.aggregate`` (S @ X) and ``ops.aggregate_t`` (S^T @ X),
dense products through ``ops.matmul`` / ``ops.matmul_grads``, dropout through ``ops.dropout``
(mask keyed by global row and column), and gradients are reduced by
``ops.reduce_weight_grad`` / ``ops.bias_grad`` inside `backward`, so the gradients a layer
returns are those of its (local shards of the) parameters.  Parameters are initialised whole
from the run's generator and sharded by ``ops.shard_param``, so every layout starts from the
weights of a single process.

Layers
------
`GCNLayer`
    ``Z = S · drop(H) · W (+ b)``.  The product is evaluated in the cheaper order: the sparse
    aggregation runs at width ``min(f_in, f_out)``, i.e. ``S (H W)`` when ``f_out < f_in`` and
    ``(S H) W`` otherwise.  Also the GraphSAGE 'gcn' aggregator (with that model's support).
`SAGEMeanLayer`
    ``Z = drop(H) W_self + (S drop(H)) W_neigh (+ b)`` (GraphSAGE mean aggregator, sum form).

Dropout is inverted dropout on the layer input with the counter-based mask of
``(seed, stream = epoch * 1024 + layer index, global row, global column)``; the backward pass
recomputes the mask instead of storing it.  Every call carries a `Phase` derived from the
pass context `ctx` (training flag, epoch): ``L<i>.fwd.agg``, ``L<i>.bwd.mm``, ``L<i>.wgrad``...
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from gcntrain.model import batchnorm as bn
from gcntrain.model import norm as ln
from gcntrain.model.functional import glorot_uniform
from gcntrain.model.ops import DropKey, Ops, ParamSpec
from gcntrain.model.phase import Phase

ORDERS = ("auto", "mm_first", "agg_first")

#: the context of a training pass outside any epoch (tests, gradient checks)
TRAIN = Phase("epoch")


def choose_order(f_in: int, f_out: int, order: str = "auto") -> str:
    """Evaluation order of S·H·W: "mm_first" = S(HW) when f_out < f_in, else "agg_first"."""
    if order not in ORDERS:
        raise ValueError(f"unknown order {order!r}; expected one of {', '.join(ORDERS)}")
    if order != "auto":
        return order
    return "mm_first" if f_out < f_in else "agg_first"


def _serve(ops: Ops, phase: Phase) -> None:
    """Ask the run's workspace (if any: `fit` sets ``ops.workspace``) for the buffer of the
    result of the call at `phase` (`gcntrain.model.workspace.Workspace.serve`)."""
    ws = getattr(ops, "workspace", None)
    if ws is not None:
        ws.serve(phase.key)


def _dense(H: np.ndarray | sp.spmatrix) -> np.ndarray:
    """H as a dense array (sparse features: scipy on the host, a resident CSR matrix on a
    device; both have ``toarray``)."""
    return H.toarray() if hasattr(H, "toarray") else H


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
        #: normalisation of the layer's input (`set_norm`): "" none, "layer" LayerNorm
        #: (parameters ``ln_g``, ``ln_b``), "batch" BatchNorm (``bn_g``, ``bn_b``)
        self.norm = ""
        self._ln: dict = {}
        #: classes of a label embedding added to the input (parameter ``E``; 0 = none)
        self.embed_rows = 0

    def set_norm(self, kind: str | bool) -> None:
        """Normalise the layer's input before dropout: `kind` "layer" (LayerNorm of every
        row; True says the same), "batch" (BatchNorm of every column over all nodes), or
        "none" / "" / False."""
        kind = {True: "layer", False: "", "none": ""}.get(kind, kind)
        if kind not in ("", "layer", "batch"):
            raise ValueError(f"unknown norm {kind!r}; expected none, layer or batch")
        self.norm = kind

    def norm_params(self) -> tuple[str, str]:
        """Names of the normalisation's scale and shift (empty without one)."""
        return {"layer": ("ln_g", "ln_b"), "batch": ("bn_g", "bn_b")}.get(self.norm, ())

    def param_names(self) -> list[str]:
        """Parameter names in initialisation order."""
        raise NotImplementedError

    def spec(self, name: str) -> ParamSpec:
        """The whole shape of parameter `name` (bias: (f_out,), weights: (f_in, f_out))."""
        if name in ("ln_g", "ln_b", "bn_g", "bn_b"):
            return ParamSpec(self.index, name, (self.f_in,))
        if name == "E":
            return ParamSpec(self.index, name, (self.embed_rows, self.f_in))
        shape = (self.f_out,) if name == "b" else (self.f_in, self.f_out)
        return ParamSpec(self.index, name, shape)

    def init_params(self, ops: Ops, rng: np.random.Generator, dtype: np.dtype | type) -> None:
        """Glorot-uniform weights (in `param_names` order) and zero bias, drawn whole from
        `rng` and sharded by `ops`."""
        phase = Phase("param", self.index)
        for name in self.param_names():
            if name == "b":
                full = np.zeros(self.f_out, dtype=dtype)
            else:
                full = glorot_uniform(rng, self.f_in, self.f_out, dtype)
            self.params[name] = ops.shard_param(full, self.spec(name), phase=phase)
        # not drawn: the weights stay those of a run without the normalisation
        for name, fill in zip(self.norm_params(), (1.0, 0.0)):
            full = np.full(self.f_in, fill, dtype=dtype)
            self.params[name] = ops.shard_param(full, self.spec(name), phase=phase)

    # normalisation of the input -----------------------------------------------------------
    def normalize_input(self, ops: Ops, H, ctx: Phase = TRAIN) -> np.ndarray:
        """The layer's input normalised (H itself without `norm`), on the run's array module
        (``ops.compute.xp``; device arrays stay there).  LayerNorm (`gcntrain.model.norm`)
        needs whole rows (the schemes that split feature columns refuse --norm layer);
        BatchNorm (`gcntrain.model.batchnorm`) sums its columns over all nodes with one
        ``ops.column_sum`` (phase ``L<i>.fwd.norm``), in training and evaluation passes."""
        if not self.norm:
            return H
        xp = ops.compute.xp
        X = _dense(H)
        if self.norm == "batch":
            part = bn.column_partials(X, ops.counted, xp)
            ph = ctx.at("norm", self.index, "fwd")
            tot = ops.column_sum(part, width=self.f_in, phase=ph)
            mean, rstd = bn.column_stats(tot, ops.n_global, xp=xp)
            g, b = self.params["bn_g"], self.params["bn_b"]
            Y, x_hat = bn.forward(X, mean, rstd, g, b, xp, keep=ctx.training)
            self._ln = {"x_hat": x_hat, "rstd": rstd} if ctx.training else {}
            return xp.ascontiguousarray(Y)
        mean, rstd = ln.row_stats(ln.row_sums(X, xp), self.f_in, xp=xp)
        Y, x_hat = ln.forward(X, mean, rstd, self.params["ln_g"], self.params["ln_b"], xp)
        self._ln = {"x_hat": x_hat, "rstd": rstd}
        return xp.ascontiguousarray(Y)

    def normalize_backward(
        self, ops: Ops, dY: np.ndarray, ctx: Phase, grads: dict, need_input_grad: bool = True
    ) -> np.ndarray | None:
        """dX of the normalisation (None unless `need_input_grad`); adds the reduced
        gradients of its scale and shift to `grads`.  LayerNorm: two ``ops.bias_grad``;
        BatchNorm: one ``ops.column_sum`` (phase ``L<i>.bwd.norm``) gives both, and dX
        needs them too."""
        xp = ops.compute.xp
        x_hat, rstd = self._ln["x_hat"], self._ln["rstd"]
        self._ln = {}
        if self.norm == "batch":
            g = self.params["bn_g"]
            part = bn.backward_partials(dY, x_hat, xp)
            ph = ctx.at("norm", self.index, "bwd")
            tot = ops.column_sum(part, width=self.f_in, phase=ph)
            grads["bn_g"] = tot[1].astype(g.dtype)
            grads["bn_b"] = tot[0].astype(g.dtype)
            if not need_input_grad:
                return None
            return bn.backward_finish(dY, x_hat, rstd, g, tot, ops.n_global, ops.counted, xp)
        g = self.params["ln_g"]
        dX = None
        if need_input_grad:
            sums = ln.backward_sums(dY, x_hat, g, xp)
            dX = ln.backward_finish(dY, x_hat, rstd, g, sums, self.f_in, xp)
        ph = ctx.at("wgrad", self.index)
        dY = ln.as_array(dY, xp)
        grads["ln_g"] = ops.bias_grad(dY * x_hat, self.spec("ln_g"), phase=ph)
        grads["ln_b"] = ops.bias_grad(dY, self.spec("ln_b"), phase=ph)
        return dX

    # helpers ----------------------------------------------------------------------------
    #: whether the layer keeps its dropped input for the backward pass (then its buffer
    #: comes from the run's workspace: held through the epoch's peak anyway)
    def keeps_dropped_input(self) -> bool:
        return True

    def _drop(self, ops: Ops, H, key: DropKey, ctx: Phase):
        phase = ctx.at("dropout", self.index, "fwd")
        if self.keeps_dropped_input():
            _serve(ops, phase)
        return ops.dropout(H, key, self.dropout, width=self.f_in, phase=phase)

    def _undrop(self, ops: Ops, dHd: np.ndarray, key: DropKey, ctx: Phase) -> np.ndarray:
        phase = ctx.at("dropout", self.index, "bwd")
        return ops.dropout_backward(dHd, key, self.dropout, width=self.f_in, phase=phase)

    def _bias_grad(self, ops: Ops, dZ: np.ndarray, ctx: Phase) -> np.ndarray:
        return ops.bias_grad(dZ, self.spec("b"), phase=ctx.at("wgrad", self.index))

    def _weight_grad(self, ops: Ops, name: str, dW, ctx: Phase) -> np.ndarray:
        return ops.reduce_weight_grad(dW, self.spec(name), phase=ctx.at("wgrad", self.index))

    def forward(self, ops: Ops, H, key: DropKey = None, ctx: Phase = TRAIN) -> np.ndarray:
        raise NotImplementedError

    def forward_aggregated(self, ops: Ops, H, A, ctx: Phase) -> np.ndarray:
        """Z of an evaluation pass (no dropout) from ``A = S @ H`` given
        (`gcntrain.model.evalcache`); nothing is cached for a backward pass."""
        raise NotImplementedError

    def backward(
        self, ops: Ops, dZ: np.ndarray, need_input_grad: bool = True, ctx: Phase = TRAIN
    ) -> tuple[np.ndarray | None, dict[str, np.ndarray]]:
        raise NotImplementedError


class GCNLayer(Layer):
    """Graph convolution ``Z = S · drop(H) · W (+ b)`` (Kipf & Welling; no bias by default)."""

    kind = "gcn"

    def keeps_dropped_input(self) -> bool:
        """mm_first keeps drop(H) for dW; agg_first keeps S drop(H) and frees drop(H)."""
        return self.order == "mm_first"

    def param_names(self) -> list[str]:
        return ["W", "b"] if self.bias else ["W"]

    def forward(self, ops: Ops, H, key: DropKey = None, ctx: Phase = TRAIN) -> np.ndarray:
        """Return Z (local block) and cache what the backward pass needs."""
        W = self.params["W"]
        agg, mm = ctx.at("aggregate", self.index, "fwd"), ctx.at("matmul", self.index, "fwd")
        Hd = self._drop(ops, H, key, ctx)
        if self.order == "mm_first":
            Z = ops.aggregate(ops.matmul(Hd, W, phase=mm), phase=agg)
            self._cache = {"X": Hd, "key": key}
        else:
            A = ops.aggregate(ops.compute.xp.ascontiguousarray(_dense(Hd)), phase=agg)
            del Hd  # not held through the product (the serial peak is a sum of such blocks)
            Z = ops.matmul(A, W, phase=mm)
            self._cache = {"X": A, "key": key}
        if self.bias:
            Z = Z + self.params["b"]
        return Z

    def forward_aggregated(self, ops: Ops, H, A, ctx: Phase) -> np.ndarray:
        """``Z = A W (+ b)``: an aggregation-first layer's evaluation as it is, a
        multiplication-first one's summed in the other order."""
        Z = ops.matmul(A, self.params["W"], phase=ctx.at("matmul", self.index, "fwd"))
        self._cache = {}
        return Z + self.params["b"] if self.bias else Z

    def backward(
        self, ops: Ops, dZ: np.ndarray, need_input_grad: bool = True, ctx: Phase = TRAIN
    ) -> tuple[np.ndarray | None, dict[str, np.ndarray]]:
        """Return (dH or None, reduced gradients {name: local shard})."""
        W = self.params["W"]
        X, key = self._cache["X"], self._cache["key"]
        agg, mm = ctx.at("aggregate", self.index, "bwd"), ctx.at("matmul", self.index, "bwd")
        dZ = ops.compute.xp.ascontiguousarray(dZ)
        dH = None
        # each block is let go of as soon as the pass is done with it (the cached input once
        # the weight gradient is formed): the serial peak is in this pass
        if self.order == "mm_first":
            dP = ops.aggregate_t(dZ, phase=agg)
            dXd, dW = ops.matmul_grads(X, W, dP, need_input_grad=need_input_grad, phase=mm)
            del dP, X
            self._cache = {}
            if need_input_grad:
                dH = self._undrop(ops, dXd, key, ctx)
        else:
            dA, dW = ops.matmul_grads(X, W, dZ, need_input_grad=need_input_grad, phase=mm)
            del X
            self._cache = {}
            if need_input_grad:
                dHd = ops.aggregate_t(ops.compute.xp.ascontiguousarray(dA), phase=agg)
                del dA
                dH = self._undrop(ops, dHd, key, ctx)
        grads = {"W": self._weight_grad(ops, "W", dW, ctx)}
        if self.bias:
            grads["b"] = self._bias_grad(ops, dZ, ctx)
        return dH, grads


class SAGEMeanLayer(Layer):
    """GraphSAGE mean aggregator ``Z = drop(H) W_self + (S drop(H)) W_neigh (+ b)``."""

    kind = "sage-mean"

    def param_names(self) -> list[str]:
        names = ["W_self", "W_neigh"]
        return names + ["b"] if self.bias else names

    def forward(self, ops: Ops, H, key: DropKey = None, ctx: Phase = TRAIN) -> np.ndarray:
        """Return Z (local block) and cache what the backward pass needs."""
        Ws, Wn = self.params["W_self"], self.params["W_neigh"]
        agg, mm = ctx.at("aggregate", self.index, "fwd"), ctx.at("matmul", self.index, "fwd")
        Hd = self._drop(ops, H, key, ctx)
        Z = ops.matmul(Hd, Ws, phase=ctx.at("matmul", self.index, "fwd", term="self"))
        if self.order == "mm_first":
            Z = Z + ops.aggregate(ops.matmul(Hd, Wn, phase=mm), phase=agg)
            A = None
        else:
            A = ops.aggregate(ops.compute.xp.ascontiguousarray(_dense(Hd)), phase=agg)
            Z = Z + ops.matmul(A, Wn, phase=mm)
        if self.bias:
            Z = Z + self.params["b"]
        self._cache = {"Hd": Hd, "A": A, "key": key}
        return Z

    def forward_aggregated(self, ops: Ops, H, A, ctx: Phase) -> np.ndarray:
        """``Z = H W_self + A W_neigh (+ b)`` (the aggregation-first evaluation)."""
        Ws, Wn = self.params["W_self"], self.params["W_neigh"]
        mm = ctx.at("matmul", self.index, "fwd")
        Z = ops.matmul(H, Ws, phase=ctx.at("matmul", self.index, "fwd", term="self"))
        Z = Z + ops.matmul(A, Wn, phase=mm)
        self._cache = {}
        return Z + self.params["b"] if self.bias else Z

    def backward(
        self, ops: Ops, dZ: np.ndarray, need_input_grad: bool = True, ctx: Phase = TRAIN
    ) -> tuple[np.ndarray | None, dict[str, np.ndarray]]:
        """Return (dH or None, reduced gradients {name: local shard})."""
        Ws, Wn = self.params["W_self"], self.params["W_neigh"]
        Hd, A, key = self._cache["Hd"], self._cache["A"], self._cache["key"]
        agg, mm = ctx.at("aggregate", self.index, "bwd"), ctx.at("matmul", self.index, "bwd")
        need = need_input_grad
        dZ = ops.compute.xp.ascontiguousarray(dZ)
        mm_self = ctx.at("matmul", self.index, "bwd", term="self")
        dHd, dWs = ops.matmul_grads(Hd, Ws, dZ, need_input_grad=need, phase=mm_self)
        if self.order == "mm_first":
            dP = ops.aggregate_t(dZ, phase=agg)
            dHn, dWn = ops.matmul_grads(Hd, Wn, dP, need_input_grad=need, phase=mm)
        else:
            dA, dWn = ops.matmul_grads(A, Wn, dZ, need_input_grad=need, phase=mm)
            dHn = ops.aggregate_t(ops.compute.xp.ascontiguousarray(dA), phase=agg) if need else None
        grads = {
            "W_self": self._weight_grad(ops, "W_self", dWs, ctx),
            "W_neigh": self._weight_grad(ops, "W_neigh", dWn, ctx),
        }
        if self.bias:
            grads["b"] = self._bias_grad(ops, dZ, ctx)
        dH = self._undrop(ops, dHd + dHn, key, ctx) if need else None
        self._cache = {}
        return dH, grads
