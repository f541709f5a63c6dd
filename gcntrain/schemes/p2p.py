"""1D sparse point-to-point scheme (Algorithms 1 and 2 of the hypergraph-partitioning paper).

Rows of S and H follow any partition vector (renumbered part by part; ragged parts).  Before
training every rank learns, for each other rank, which of its rows that rank needs (the
distinct columns of the other rank's rows that it owns) through one Alltoall of counts and one
Alltoallv of row ids.  ``S @ X`` then posts an Irecv per source, packs and Isends each row once
per destination that needs it, multiplies the local diagonal block while the messages are in
flight, and adds each source's contribution as its message arrives (Waitany).  The rows sent
per aggregation equal the connectivity-1 metric of the column-net hypergraph of the partition.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from gcntrain.comm import volume as V
from gcntrain.comm.counters import Tally
from gcntrain.schemes.base import RowOps, as_dtype, csr_apply
from gcntrain.schemes.layout import halo_needs, owner_of
from gcntrain.schemes.schedule import Call, plan_calls, reduction_volume

TAG = 7


@dataclass
class LayoutP2P:
    """halo_fwd[q, p] = rows q sends p per forward aggregation (sparse, P x P); halo_bwd for
    S^T (None when S is symmetric)."""

    offsets: np.ndarray
    halo_fwd: sp.csr_matrix
    halo_bwd: sp.csr_matrix | None

    @property
    def size(self) -> int:
        return self.offsets.shape[0] - 1


def exchange_volume(halo: sp.csr_matrix, rank: int, row_bytes: int) -> np.ndarray:
    """Isend/Irecv tally of one aggregation for `rank` given the halo matrix."""
    H = sp.csr_matrix(halo)
    sends = H.getrow(rank)
    recvs = H.T.tocsr().getrow(rank)
    vol = V.zero()
    for cnt in sends.data:
        vol += V.send(int(cnt) * row_bytes)
    for cnt in recvs.data:
        vol += V.recv(int(cnt) * row_bytes)
    return vol


def call_volume(layout: LayoutP2P, rank: int, call: Call) -> np.ndarray:
    if call.op == "aggregate":
        return exchange_volume(layout.halo_fwd, rank, call.width * call.itemsize)
    if call.op == "aggregate_t":
        halo = layout.halo_fwd if layout.halo_bwd is None else layout.halo_bwd
        return exchange_volume(halo, rank, call.width * call.itemsize)
    return reduction_volume(call, rank, layout.size, rank, layout.size)


def plan(layout: LayoutP2P, rank: int, calls: list[Call]) -> Tally:
    return plan_calls(calls, lambda c: call_volume(layout, rank, c))


class _Exchange:
    """Send/receive lists and split matrices of one product (S or S^T) on one rank."""

    def __init__(self, comm, offsets, indptr, indices, data, phase="setup"):
        me, P = comm.rank, comm.size
        lo, hi = int(offsets[me]), int(offsets[me + 1])
        m = hi - lo
        need = halo_needs(indices, offsets, me)
        counts = np.array([a.size for a in need], dtype=np.int64)
        send_counts = comm.alltoall_counts(counts, phase)  # what each q needs from me
        req = np.ascontiguousarray(np.concatenate(need)) if counts.sum() else np.zeros(0, np.int64)
        got = comm.alltoallv(req, counts, send_counts, phase)
        bounds = np.concatenate(([0], np.cumsum(send_counts)))
        self.send = [
            (q, got[bounds[q] : bounds[q + 1]] - lo) for q in range(P) if send_counts[q] > 0
        ]
        self.recv = [(q, int(counts[q])) for q in range(P) if counts[q] > 0]
        cols = np.asarray(indices, dtype=np.int64)
        own = owner_of(cols, offsets)
        row = np.repeat(np.arange(m, dtype=np.int64), np.diff(indptr))
        vals = np.asarray(data, dtype=np.float64)
        loc = own == me
        self.local = sp.csr_matrix((vals[loc], (row[loc], cols[loc] - lo)), shape=(m, m))
        self.local.sort_indices()
        self.remote = {}
        for q, cnt in self.recv:
            sel = own == q
            pos = np.searchsorted(need[q], cols[sel])
            M = sp.csr_matrix((vals[sel], (row[sel], pos)), shape=(m, cnt))
            M.sort_indices()
            self.remote[q] = M
        self._typed: dict = {}

    def typed(self, dtype):
        key = np.dtype(dtype).str
        if key not in self._typed:
            qs = list(self.remote)
            typed = as_dtype([self.local, *(self.remote[q] for q in qs)], dtype)
            self._typed[key] = (typed[0], dict(zip(qs, typed[1:])))
        return self._typed[key]


class P2POps(RowOps):
    """Runtime of the point-to-point scheme for one rank."""

    def __init__(self, world, offsets, fwd, bwd, rows):
        super().__init__(world, world, rows, int(offsets[-1]))
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self._ex = {"f": _Exchange(world, self.offsets, *fwd)}
        self._ex["t"] = self._ex["f"] if bwd is None else _Exchange(world, self.offsets, *bwd)

    def _product(self, which: str, X: np.ndarray, phase: str) -> np.ndarray:
        X = np.ascontiguousarray(X)
        ex = self._ex[which]
        local, remote = ex.typed(X.dtype)
        comm = self.world
        f = X.shape[1]
        bufs = [np.empty((cnt, f), dtype=X.dtype) for _, cnt in ex.recv]
        rreqs = [comm.irecv(b, q, TAG, phase) for (q, _), b in zip(ex.recv, bufs)]
        sbufs = [np.ascontiguousarray(X[idx]) for _, idx in ex.send]
        sreqs = [comm.isend(b, q, TAG, phase) for (q, _), b in zip(ex.send, sbufs)]
        out = csr_apply(local, X)
        for _ in range(len(rreqs)):
            k = comm.waitany(rreqs, phase)
            q = ex.recv[k][0]
            csr_apply(remote[q], bufs[k], out, accumulate=True)
        comm.waitall(sreqs, phase)
        return out


def halo_matrix(indptr: np.ndarray, indices: np.ndarray, offsets: np.ndarray) -> sp.csr_matrix:
    """Global P x P matrix [q, p] = distinct rows of block q needed by block p (pure).

    `indptr`, `indices`: the whole support matrix in the new numbering.  The pair volumes come
    from `gcntrain.partition.metrics.comm_volume`, the same code that reports a partition's
    communication volume, so reports, plans and the simulator share one definition.
    """
    from gcntrain.partition.metrics import comm_volume

    P = offsets.shape[0] - 1
    n = indptr.shape[0] - 1
    part = owner_of(np.arange(n, dtype=np.int64), offsets)
    v = comm_volume(indptr, indices, part, P, symmetric=False)
    return sp.csr_matrix((v["pair_volume"], (v["pair_src"], v["pair_dst"])), shape=(P, P))
