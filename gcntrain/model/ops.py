"""The small set of operations the model calls; a distribution scheme implements them.

The model never touches MPI or the layout.  It holds the rows `ops.rows` (global ids) of every
node-wise matrix and calls:

* ``aggregate(X, phase)``   -> rows of ``S @ X``      (S: the layer's support matrix, n x n)
* ``aggregate_t(X, phase)`` -> rows of ``S.T @ X``    (backward of aggregate)
* ``matmul(H, W)`` / ``matmul_grads(H, W, dZ)``       (dense layer, weights replicated in 1D)
* ``reduce_weight_grad(dW, phase)``                   (sum of partial weight gradients)
* ``allreduce_sum(a, phase)``                         (metrics, loss terms; same on all ranks)
* ``agree(flag)``                                     (one decision for all ranks, e.g. stopping)

`SerialOps` is the single-process reference: no communication, so "distributed equals serial"
is a property of each scheme's Ops, testable op by op.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from gcntrain.kernels.spmm import spmm_csr_dense


class Ops:
    """Base class: local dense parts shared by every 1D-family scheme."""

    #: global node ids of the local rows, int64
    rows: np.ndarray
    #: number of nodes in the whole graph
    n_global: int
    #: rank and size, for logging only (the model must not branch on them)
    rank: int = 0
    size: int = 1

    def aggregate(self, X: np.ndarray, phase: str = "") -> np.ndarray:
        raise NotImplementedError

    def aggregate_t(self, X: np.ndarray, phase: str = "") -> np.ndarray:
        raise NotImplementedError

    def matmul(self, H: np.ndarray, W: np.ndarray) -> np.ndarray:
        return H @ W

    def matmul_grads(
        self, H: np.ndarray, W: np.ndarray, dZ: np.ndarray, need_input_grad: bool = True
    ) -> tuple[np.ndarray | None, np.ndarray]:
        """Return (dH, dW_partial) for Z = H @ W; dW still needs `reduce_weight_grad`."""
        dW = H.T @ dZ
        dH = dZ @ W.T if need_input_grad else None
        return dH, dW

    def reduce_weight_grad(self, dW: np.ndarray, phase: str = "") -> np.ndarray:
        return dW

    def allreduce_sum(self, a: np.ndarray, phase: str = "metrics") -> np.ndarray:
        return a

    def agree(self, flag: bool) -> bool:
        return bool(flag)


class SerialOps(Ops):
    """Single-process Ops over one support matrix (and its explicit transpose)."""

    def __init__(self, support: sp.csr_matrix):
        S = sp.csr_matrix(support)
        S.sort_indices()
        self.S = S
        T = S.T.tocsr()
        T.sort_indices()
        self.T = T
        self.n_global = S.shape[0]
        self.rows = np.arange(self.n_global, dtype=np.int64)

    @staticmethod
    def _apply(M: sp.csr_matrix, X: np.ndarray) -> np.ndarray:
        X = np.ascontiguousarray(X)
        out = np.empty((M.shape[0], X.shape[1]), dtype=X.dtype)
        data = M.data if M.data.dtype == X.dtype else M.data.astype(X.dtype)
        return spmm_csr_dense(M.indptr, M.indices, data, X, out)

    def aggregate(self, X: np.ndarray, phase: str = "") -> np.ndarray:
        return self._apply(self.S, X)

    def aggregate_t(self, X: np.ndarray, phase: str = "") -> np.ndarray:
        return self._apply(self.T, X)
