"""Pieces shared by the 1D-family schemes: the Ops base over a communicator, and setup
exchanges (global degrees, transposed rows) done once before training (phase ``"setup"``)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from gcntrain.kernels.spmm import spmm_csr_dense
from gcntrain.model.ops import Ops
from gcntrain.schemes.layout import column_blocks, owner_of


class RowOps(Ops):
    """Ops whose node-wise matrices are row blocks; weights replicated.

    Parameters
    ----------
    world : Comm
        All ranks (stop decisions are taken by its rank 0).
    reduce_comm : Comm
        Ranks holding one copy of every row block (the world for 1D and p2p, a process column
        for 1.5D): sums of weight gradients and metrics run over it.
    rows : int64 array
        ORIGINAL global ids of the local rows (dropout masks and outputs use them).
    n_global : int
    """

    def __init__(self, world, reduce_comm, rows: np.ndarray, n_global: int):
        self.world = world
        self.reduce_comm = reduce_comm
        self.rows = np.asarray(rows, dtype=np.int64)
        self.n_global = int(n_global)
        self.rank = world.rank
        self.size = world.size

    def reduce_weight_grad(self, dW: np.ndarray, phase: str = "") -> np.ndarray:
        return self.reduce_comm.allreduce(np.ascontiguousarray(dW), phase)

    def allreduce_sum(self, a, phase: str = "metrics"):
        arr = np.ascontiguousarray(np.atleast_1d(np.asarray(a)))
        out = self.reduce_comm.allreduce(arr, phase)
        return out.reshape(np.shape(a)) if np.ndim(a) else out[0]

    def _product(self, which: str, X: np.ndarray, phase: str) -> np.ndarray:
        """Local rows of ``S @ X`` ("f") or ``S^T @ X`` ("t"); each scheme implements it."""
        raise NotImplementedError

    def aggregate(self, X, phase=""):
        return self._product("f", X, phase)

    def aggregate_t(self, X, phase=""):
        return self._product("t", X, phase)

    def agree(self, flag: bool) -> bool:
        return self.world.bcast_flag(bool(flag), 0)


class TypedBlocks:
    """Column blocks of the local rows of S ("f") and S^T ("t"), cast to each dtype once."""

    def __init__(self, offsets: np.ndarray, fwd, bwd):
        f = column_blocks(*fwd, offsets)
        self._blocks = {"f": f, "t": f if bwd is None else column_blocks(*bwd, offsets)}
        self._typed: dict = {}

    def get(self, which: str, dtype) -> list[sp.csr_matrix]:
        key = (which, np.dtype(dtype).str)
        if key not in self._typed:
            self._typed[key] = as_dtype(self._blocks[which], dtype)
        return self._typed[key]


def broadcast_stages(
    comm, blocks: list, sizes: np.ndarray, stages, me: int, X: np.ndarray, phase: str
) -> np.ndarray:
    """Sum of ``blocks[k] @ X_k`` over `stages`, block k broadcast by rank k of `comm`.

    `me` is this rank's block (its X is X_me); empty blocks are skipped (CAGNET's stages).
    """
    out = np.zeros((int(sizes[me]), X.shape[1]), dtype=X.dtype)
    buf = np.empty((int(sizes.max()), X.shape[1]), dtype=X.dtype)
    for k in stages:
        nk = int(sizes[k])
        if nk == 0:
            continue
        Xk = X if k == me else buf[:nk]
        comm.bcast(Xk, k, phase)
        if blocks[k].nnz:
            csr_apply(blocks[k], Xk, out, accumulate=True)
    return out


def csr_apply(
    M: sp.csr_matrix, X: np.ndarray, out: np.ndarray | None = None, accumulate: bool = False
) -> np.ndarray:
    """``M @ X`` with the Numba kernel (``out += M @ X`` when `accumulate`)."""
    X = np.ascontiguousarray(X)
    data = M.data if M.data.dtype == X.dtype else M.data.astype(X.dtype)
    if accumulate:
        tmp = np.empty((M.shape[0], X.shape[1]), dtype=X.dtype)
        spmm_csr_dense(M.indptr, M.indices, data, X, tmp)
        out += tmp
        return out
    if out is None:
        out = np.empty((M.shape[0], X.shape[1]), dtype=X.dtype)
    return spmm_csr_dense(M.indptr, M.indices, data, X, out)


def as_dtype(mats: list[sp.csr_matrix], dtype) -> list[sp.csr_matrix]:
    out = []
    for M in mats:
        M2 = sp.csr_matrix(
            (M.data.astype(dtype), M.indices.astype(np.int64), M.indptr), shape=M.shape
        )
        out.append(M2)
    return out


def transpose_rows(
    comm,
    offsets: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    phase: str = "setup",
):
    """Rows of the transpose owned by this block, from every block's rows (one Alltoallv).

    Block p holds rows offsets[p]:offsets[p+1] of S with global column ids; afterwards it
    holds the same rows of S^T.  Entry (i, j, v) travels to the owner of j as (j, i, v).
    """
    me = comm.rank
    nparts = offsets.shape[0] - 1
    m = indptr.shape[0] - 1
    rows = np.repeat(np.arange(m, dtype=np.int64) + offsets[me], np.diff(indptr))
    cols = np.asarray(indices, dtype=np.int64)
    dest = owner_of(cols, offsets)
    order = np.argsort(dest, kind="stable")
    send_counts = np.bincount(dest, minlength=nparts).astype(np.int64)
    recv_counts = comm.alltoall_counts(send_counts, phase)
    pairs = np.ascontiguousarray(np.stack([cols[order], rows[order]], axis=1))
    got = comm.alltoallv(pairs, send_counts, recv_counts, phase)
    vals = comm.alltoallv(
        np.ascontiguousarray(np.asarray(data, np.float64)[order]), send_counts, recv_counts, phase
    )
    mine = int(offsets[me + 1] - offsets[me])
    T = sp.csr_matrix((vals, (got[:, 0] - offsets[me], got[:, 1])), shape=(mine, int(offsets[-1])))
    T.sum_duplicates()
    T.sort_indices()
    return T.indptr.astype(np.int64), T.indices.astype(np.int64), T.data.astype(np.float64)
