"""The Ops protocol: every operation the model performs that depends on the layout.

The model never touches MPI or the layout.  Node-wise matrices are *local blocks*: the rows
``ops.rows`` (original global ids, int64) and, for a node-wise matrix of global width ``f``,
the columns ``ops.col_range(f)``.  Parameters are created whole (same seed, same values as a
single process) and handed to ``shard_param``; the model then only sees the local shards.
Every protocol method takes a keyword-only ``phase`` (`gcntrain.model.phase.Phase`).

`PROTOCOL` declares the methods once; the timing, recording and fault-injection proxies are
generated from it (`gcntrain.model.wrappers`), and a test fails if an Ops class has a public
method outside it.  docs/architecture.md explains each method.

`Ops` is the *row layout* default (full columns, one copy of every local row, replicated
parameters).  All of its communication goes through three hooks, ``_sum_nodes`` (a sum over
nodes, each node counted once), ``_sum_params`` (a sum of partial parameter gradients) and
``_decide`` (rank 0's decision); `SerialOps` leaves them as identities.  A scheme maps them to
collectives and overrides whatever else its layout changes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from gcntrain.kernels.spmm import spmm_csr_dense
from gcntrain.kernels.transpose_blocks import csr_transpose_blocked
from gcntrain.model.compute import HOST, compute_for
from gcntrain.model.functional import row_l1_norms, row_normalize
from gcntrain.model.phase import Phase

#: method -> category.  graph: S or S^T products; dense: products with W; reduce: sums over
#: ranks; rowwise: need whole rows; local: no communication in row layouts; control:
#: decisions; hook: epoch boundaries.
PROTOCOL: dict[str, str] = {
    "shard_param": "local",
    "gather_param": "reduce",
    "param_sum_sq": "reduce",
    "row_normalize": "rowwise",
    "dropout": "local",
    "dropout_backward": "local",
    "aggregate": "graph",
    "aggregate_t": "graph",
    "matmul": "dense",
    "matmul_grads": "dense",
    "reduce_weight_grad": "reduce",
    "bias_grad": "reduce",
    "xent": "rowwise",
    "predict": "rowwise",
    "node_sum": "reduce",
    "element_sum": "reduce",
    "column_sum": "reduce",
    "agree": "control",
    "begin_epoch": "hook",
    "end_epoch": "hook",
    "state_dict": "hook",
    "load_state": "hook",
    "close": "hook",
}

#: dropout key: (seed, stream) of the counter-based mask, or None for no dropout
DropKey = tuple[int, int] | None


#: names of the parameters indexed by the columns of a layer's INPUT (the normalisations'
#: scale and shift); every other vector parameter (a bias) is indexed by its output's columns
INPUT_COLUMN_PARAMS = frozenset({"ln_g", "ln_b", "bn_g", "bn_b"})


def on_input_columns(name: str) -> bool:
    """Whether the vector parameter `name` runs along the layer input's columns (a layout
    whose input and output columns sit differently, Plexus, shards it by the input's)."""
    return name in INPUT_COLUMN_PARAMS


@dataclass(frozen=True)
class ParamSpec:
    """A model parameter: its layer, name and whole (global) shape."""

    layer: int
    name: str
    shape: tuple[int, ...]

    @property
    def is_bias(self) -> bool:
        """A vector: a bias, or a normalisation's scale or shift (`on_input`)."""
        return len(self.shape) == 1

    @property
    def on_input(self) -> bool:
        """A vector along the layer input's columns (`on_input_columns`)."""
        return on_input_columns(self.name)


class Ops:
    """Row-layout defaults of the protocol (see the module docstring)."""

    #: original global ids of the local rows, int64
    rows: np.ndarray
    #: number of nodes in the whole graph
    n_global: int
    #: original ids of the local rows of the first layer's input (the features), where they
    #: differ from `rows` (a scheme that shards the input and the logits over different axes)
    input_rows: np.ndarray | None = None
    #: local rows counted in sums over nodes (losses, accuracies, mask counts, feature
    #: density, BatchNorm's statistics): the first `counted` rows; the rest are replicas of
    #: rows another rank counts (vertex-cut clones).  None: every local row.  In a backward
    #: pass the replicas hold partial gradients (a node's gradient is the sum over its
    #: copies, as the parameter gradients' sums over all local rows assume), so a term added
    #: alike to every node's gradient (BatchNorm's) goes on the counted rows only
    counted: int | None = None
    #: per-epoch scheme measurements, a sequence of dicts of floats (one per epoch) merged
    #: into the epoch records by the runner; empty for schemes without any
    epoch_stats: tuple = ()
    #: rank and size, for logging only (the model must not branch on them)
    rank: int = 0
    size: int = 1
    #: the array-module dispatch, chosen once (`gcntrain.model.compute`): `HOST` (the Numba
    #: kernels, NumPy) unless a scheme's setup chose a device
    compute = HOST
    #: the training run's buffers (`gcntrain.model.workspace.Workspace`), set by `fit` for
    #: the run and None outside it: the dropout of the row layout writes into them on the
    #: host (`_out`); an Ops that overrides `dropout` allocates unless it asks `_out` too
    workspace = None
    #: whether ``aggregate`` of the first layer's input may be computed once and reused by
    #: every evaluation (``TrainConfig.eval_cache``, `gcntrain.model.evalcache`): a pure
    #: product at any width, its traffic and plan the same whenever it runs
    fixed_products = False

    # -- layout ----------------------------------------------------------------------------
    def col_range(self, width: int) -> tuple[int, int]:
        """Global columns [lo, hi) of the local block of a node-wise matrix of width `width`."""
        return 0, int(width)

    # -- communication hooks (identities: one process) ------------------------------------
    def _sum_nodes(self, a: np.ndarray, phase: Phase) -> np.ndarray:
        return a

    def _sum_params(self, a: np.ndarray, phase: Phase) -> np.ndarray:
        return a

    def _sum_elements(self, a: np.ndarray, phase: Phase) -> np.ndarray:
        return self._sum_nodes(a, phase)

    def _decide(self, flag: bool, phase: Phase) -> bool:
        return bool(flag)

    # -- parameters ------------------------------------------------------------------------
    def shard_param(self, full: np.ndarray, spec: ParamSpec, *, phase: Phase) -> np.ndarray:
        """This rank's part of a parameter initialised whole (replicated: the whole, on the
        compute device)."""
        return self.compute.param(full)

    def gather_param(self, local: np.ndarray, spec: ParamSpec, *, phase: Phase) -> np.ndarray:
        """The whole parameter from the local shards."""
        return local

    def param_sum_sq(self, local: np.ndarray, spec: ParamSpec, *, phase: Phase) -> float:
        """``sum(W ** 2)`` of the whole parameter (float64), each entry counted once."""
        return self.compute.sum_sq(local)

    # -- features and dropout --------------------------------------------------------------
    def row_normalize(self, X, *, width: int, phase: Phase):
        """L1 row normalisation of the local block of a width-`width` feature matrix."""
        return row_normalize(X, row_l1_norms(X))

    def dropout(self, H, key: DropKey, rate: float, *, width: int, phase: Phase):
        """Inverted dropout with the mask of (seed, stream, global row, global column), into
        the workspace's buffer of `phase` during `fit` (a new array outside it)."""
        if key is None or rate <= 0.0:
            return H
        col0 = self.col_range(width)[0]
        out = self._out(H.data if hasattr(H, "tocsr") else H, phase)
        return self.compute.dropout_forward(H, self.rows, key[0], key[1], rate, col0, out=out)

    def dropout_backward(self, dH, key: DropKey, rate: float, *, width: int, phase: Phase):
        """Gradient through `dropout` (same mask, recomputed), into the workspace's buffer
        of `phase` during `fit`."""
        if key is None or rate <= 0.0:
            return dH
        col0 = self.col_range(width)[0]
        out = self._out(dH, phase)
        return self.compute.dropout_backward(dH, self.rows, key[0], key[1], rate, col0, out=out)

    def _out(self, like, phase: Phase):
        """The workspace buffer for the result of the call at `phase` shaped like `like`
        (host runs in `fit`, where a layer asked for it: `Workspace.serve`; None:
        allocate)."""
        ws = self.workspace
        if ws is None or self.compute.device or not isinstance(like, np.ndarray):
            return None
        return ws.take(phase.key, like.shape, like.dtype) if ws.serves(phase.key) else None

    # -- graph -----------------------------------------------------------------------------
    def aggregate(self, X: np.ndarray, *, phase: Phase) -> np.ndarray:
        """Local block of ``S @ X``."""
        raise NotImplementedError

    def aggregate_t(self, X: np.ndarray, *, phase: Phase) -> np.ndarray:
        """Local block of ``S.T @ X``."""
        raise NotImplementedError

    # -- dense -----------------------------------------------------------------------------
    def matmul(self, H, W: np.ndarray, *, phase: Phase) -> np.ndarray:
        """Local block of ``H @ W`` (H dense or CSR)."""
        return self.compute.matmul(H, W)

    def matmul_grads(
        self, H, W: np.ndarray, dZ: np.ndarray, *, need_input_grad: bool, phase: Phase
    ) -> tuple[np.ndarray | None, np.ndarray]:
        """(dH or None, partial dW) for Z = H @ W; dW still needs `reduce_weight_grad`."""
        dW = self.compute.matmul_tn(H, dZ)
        dH = self.compute.matmul(dZ, W.T) if need_input_grad else None
        return dH, dW

    def reduce_weight_grad(self, dW, spec: ParamSpec, *, phase: Phase) -> np.ndarray:
        """The parameter's gradient shard from the partial `dW` of `matmul_grads`."""
        return self._sum_params(self.compute.xp.ascontiguousarray(dW), phase)

    def bias_grad(self, dZ: np.ndarray, spec: ParamSpec, *, phase: Phase) -> np.ndarray:
        """Gradient shard of a bias added to Z: the sum of dZ over all nodes."""
        return self._sum_params(self.compute.xp.ascontiguousarray(dZ.sum(axis=0)), phase)

    # -- row-wise --------------------------------------------------------------------------
    def xent(
        self,
        logits: np.ndarray,
        labels: np.ndarray,
        masks: list[np.ndarray],
        *,
        width: int,
        grad_index: int | None = None,
        grad_divisor: float = 1.0,
        phase: Phase,
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Global (loss sum, correct count) of every mask (float64, ``2 * len(masks)``), and
        d(loss sum of ``masks[grad_index]``) / d logits divided by `grad_divisor`."""
        sums, grad = self.compute.local_xent(logits, labels, masks, grad_index, grad_divisor)
        return self.node_sum(sums, phase=phase), grad

    def predict(self, logits: np.ndarray, *, width: int, phase: Phase) -> np.ndarray:
        """int64 argmax of every local row."""
        if not logits.size:
            return np.zeros(logits.shape[0], dtype=np.int64)
        return np.argmax(logits, axis=1).astype(np.int64)

    # -- sums and decisions ----------------------------------------------------------------
    def node_sum(self, a, *, phase: Phase):
        """Sum over ranks of per-node quantities summed locally (each node once)."""
        return self._shaped(self._sum_nodes, a, phase)

    def element_sum(self, a, *, phase: Phase):
        """Sum over ranks of quantities summed over the local block's elements."""
        return self._shaped(self._sum_elements, a, phase)

    def column_sum(self, a, *, width: int, phase: Phase):
        """Per-column sums over every node of the graph (BatchNorm's statistics and their
        gradients): `a` is (k, local columns of a width-`width` node-wise matrix), k sums
        over the local rows this rank counts, float64; returns the totals of those columns,
        each node once, summed over the ranks holding the same columns (here: the sums over
        nodes, `_sum_nodes`, whose ranks hold every column).  Where it lives: a device
        array stays on the device."""
        return self._sum_nodes(self.compute.xp.ascontiguousarray(a), phase)

    @staticmethod
    def _shaped(fn, a, phase):
        arr = np.ascontiguousarray(np.atleast_1d(np.asarray(a)))
        out = fn(arr, phase)
        return out.reshape(np.shape(a)) if np.ndim(a) else out[0]

    def agree(self, flag: bool, *, phase: Phase) -> bool:
        """One decision for every rank (rank 0's)."""
        return self._decide(bool(flag), phase)

    def begin_epoch(self, *, phase: Phase) -> None:
        """Called before each epoch's training step (``phase.epoch``)."""

    def end_epoch(self, *, phase: Phase) -> None:
        """Called after each epoch (after evaluation)."""

    def state_dict(self, *, phase: Phase) -> dict[str, np.ndarray]:
        """The scheme's own training state at an epoch boundary that a checkpoint must keep
        for a bit-identical resume (arrays by name; nothing for stateless schemes)."""
        return {}

    def load_state(self, state: dict[str, np.ndarray], *, phase: Phase) -> None:
        """Restore what `state_dict` returned (on the same rank of the same layout)."""
        if state:
            raise ValueError(f"{type(self).__name__} keeps no state, got {sorted(state)}")

    def close(self, *, phase: Phase) -> None:
        """Release what the Ops hold for communication (node windows, `gcntrain.comm.shared`).
        Collective: every rank calls it once, after its last call; none may follow."""


def csr_product(M: sp.csr_matrix, X: np.ndarray) -> np.ndarray:
    """``M @ X`` with the Numba kernel, in X's dtype."""
    X = np.ascontiguousarray(X)
    out = np.empty((M.shape[0], X.shape[1]), dtype=X.dtype)
    data = M.data if M.data.dtype == X.dtype else M.data.astype(X.dtype)
    return spmm_csr_dense(M.indptr, M.indices, data, X, out)


def _same_arrays(csr: tuple, M: sp.csr_matrix) -> bool:
    """Whether the CSR arrays `csr` (indptr, indices, data) equal `M`'s bit for bit (the
    values compared as raw bytes: a NaN equals itself, 0.0 differs from -0.0)."""
    ip, ix, dv = csr
    return (
        np.array_equal(ip, M.indptr)
        and np.array_equal(ix, M.indices)
        and dv.dtype == M.data.dtype
        and np.array_equal(dv.view(np.uint8), M.data.view(np.uint8))
    )


class SerialOps(Ops):
    """Single-process Ops over one support matrix (and its explicit transpose).

    Its products are pure functions of their operands at any width, so an evaluation may
    reuse ``S @ X`` (`fixed_products`).

    `backend` (None: the host) is the run's device backend (`gcntrain.device.backend`):
    with a device one, S and S^T are made resident on the device once per dtype and the
    products go through the backend's sparse product; everything else through
    ``self.compute`` (`gcntrain.model.compute.compute_for`).
    """

    fixed_products = True

    def __init__(self, support: sp.csr_matrix, backend=None):
        S = sp.csr_matrix(support)
        S.sort_indices()
        self.S = S
        # S^T by a stable counting sort (in parallel, cache-blocked: the arrays of the
        # serial `csr_transpose`): its rows come out sorted (= ``S.T.tocsr()`` sorted)
        ip, ix, dv = csr_transpose_blocked(S.indptr, S.indices, S.data, S.shape[1])
        ip = ip.astype(S.indptr.dtype, copy=False)
        if S.shape[0] == S.shape[1] and _same_arrays((ip, ix, dv), S):
            # a symmetric S (bit for bit): S^T's products are S's, so S is held once
            del ip, ix, dv
            self.T = S
        else:
            self.T = sp.csr_matrix((dv, ix, ip), shape=S.shape[::-1])
        self.n_global = S.shape[0]
        self.rows = np.arange(self.n_global, dtype=np.int64)
        self._typed: dict = {}
        self.compute = compute_for(backend)
        #: ``M @ X`` of a matrix of `_matrix`: the Numba kernel, or the device's product
        self._product = self.compute.backend.spmm if self.compute.device else csr_product

    def _matrix(self, which: str, dtype) -> sp.csr_matrix:
        """S or S^T with values in `dtype` (cast once per dtype)."""
        if self.T is self.S:  # symmetric: one matrix, cast once
            which = "f"
        key = (which, np.dtype(dtype).str)
        if key not in self._typed:
            M = self.S if which == "f" else self.T
            if M.dtype != dtype:  # the values cast, the structure shared
                M = sp.csr_matrix((M.data.astype(dtype), M.indices, M.indptr), shape=M.shape)
            if self.compute.device:  # resident on the device, built once
                M = self.compute.backend.csr(M.indptr, M.indices, M.data, M.shape)
            self._typed[key] = M
        return self._typed[key]

    def aggregate(self, X: np.ndarray, *, phase: Phase) -> np.ndarray:
        return self._product(self._matrix("f", X.dtype), X)

    def aggregate_t(self, X: np.ndarray, *, phase: Phase) -> np.ndarray:
        return self._product(self._matrix("t", X.dtype), X)
