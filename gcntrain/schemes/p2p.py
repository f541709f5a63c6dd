"""1D sparse point-to-point scheme (Algorithms 1 and 2 of the hypergraph-partitioning paper).

Rows of S and H follow any partition vector (renumbered part by part; ragged parts).  Before
training every rank learns, for each other rank, which of its rows that rank needs (the
distinct columns of the other rank's rows that it owns) through one Alltoall of counts and one
Alltoallv of row ids.  ``S @ X`` then posts an Irecv per source, packs and Isends each row once
per destination that needs it, multiplies the local diagonal block while the messages are in
flight, and adds each source's contribution as its message arrives (Waitany).  The rows sent
per aggregation equal the connectivity-1 metric of the column-net hypergraph of the partition.

Who needs which rows is `gcntrain.schemes.layout.needed_pairs`, evaluated on a rank's own rows
at run time and on all rows by the plan.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from gcntrain.comm.exchange import Groups, Pairs, Uniform
from gcntrain.schemes.base import (
    COUNT_BYTES,
    RowLayout,
    RowOps,
    RowScheme,
    as_dtype,
    csr_apply,
    entry_blocks,
)
from gcntrain.schemes.layout import needed_pairs, owner_of


def halo_pairs(ctx, which: str):
    """(src, dst, rows) of the rows each rank receives per product with S ("f") or S^T
    ("t"), for all ranks (cached on the plan context)."""

    def make():
        M = ctx.support if which == "f" else ctx.transpose()
        src, dst, ptr, _ = needed_pairs(*entry_blocks(M, ctx.layout.offsets), ctx.layout.offsets)
        return src, dst, np.diff(ptr)

    key = "halo_f" if which == "f" or ctx.symmetric else "halo_t"
    return ctx.cached(key, make)


class _Exchange:
    """Send/receive lists and split matrices of one product (S or S^T) on one rank."""

    def __init__(self, comm, offsets, indptr, indices, data, phase="setup"):
        me, P = comm.rank, comm.size
        lo, hi = int(offsets[me]), int(offsets[me + 1])
        m = hi - lo
        cols = np.asarray(indices, dtype=np.int64)
        src, _, ptr, need = needed_pairs(me, cols, offsets)
        counts = np.zeros(P, dtype=np.int64)
        counts[src] = np.diff(ptr)
        send_counts = comm.alltoall_counts(counts, phase)  # what each q needs from me
        got = comm.alltoallv(np.ascontiguousarray(need), counts, send_counts, phase)
        bounds = np.concatenate(([0], np.cumsum(send_counts)))
        sends = [q for q in range(P) if send_counts[q] > 0]
        self.send = {q: got[bounds[q] : bounds[q + 1]] - lo for q in sends}
        recvs = [int(q) for q in src]
        # this rank's part of the description: what it receives from and sends to whom
        self.pairs = Pairs(
            P,
            np.array(recvs + [me] * len(sends), dtype=np.int64),
            np.array([me] * len(recvs) + sends, dtype=np.int64),
            np.concatenate([np.diff(ptr), send_counts[sends]]).astype(np.int64),
            kind="p2p",
        )
        own = owner_of(cols, offsets)
        row = np.repeat(np.arange(m, dtype=np.int64), np.diff(indptr))
        vals = np.asarray(data, dtype=np.float64)
        loc = own == me
        self.local = sp.csr_matrix((vals[loc], (row[loc], cols[loc] - lo)), shape=(m, m))
        self.local.sort_indices()
        self.remote = {}
        for k, q in enumerate(recvs):
            ids = need[ptr[k] : ptr[k + 1]]
            sel = own == q
            pos = np.searchsorted(ids, cols[sel])
            M = sp.csr_matrix((vals[sel], (row[sel], pos)), shape=(m, ids.size))
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

    def __init__(self, world, layout: RowLayout, fwd, bwd, rows):
        super().__init__(world, world, rows, int(layout.offsets[-1]))
        self.layout = layout
        self._ex = {"f": _Exchange(world, layout.offsets, *fwd)}
        self._ex["t"] = self._ex["f"] if bwd is None else _Exchange(world, layout.offsets, *bwd)

    def _product(self, which: str, X: np.ndarray, phase: str) -> np.ndarray:
        ex = self._ex[which]
        local, remote = ex.typed(X.dtype)
        pairs = ex.pairs
        f = X.shape[1]
        result = {}

        def work() -> None:
            result["out"] = csr_apply(local, X)

        def consume(k: int, buf: np.ndarray) -> None:
            csr_apply(remote[int(pairs.src[k])], buf, result["out"], accumulate=True)

        pairs.run_p2p(
            self.world,
            self.world.rank,
            send_buf=lambda k: np.ascontiguousarray(X[ex.send[int(pairs.dst[k])]]),
            recv_buf=lambda k: np.empty((int(pairs.nbytes[k]), f), dtype=X.dtype),
            local_work=work,
            consume=consume,
            phase=phase,
        )
        return result["out"]


class P2P(RowScheme):
    name = "p2p"
    summary = "1D sparse point-to-point: each needed row sent once per destination"

    ops_class = P2POps

    def overlaps(self, ctx) -> bool:
        """Local rows are multiplied while the messages travel (`Pairs.run_p2p`)."""
        return True

    def _product_steps(self, ctx, call, which: str) -> list:
        src, dst, rows = halo_pairs(ctx, which)
        row_bytes = call.shape(0)[1] * call.itemsize(0)
        return [Pairs(ctx.P, src, dst, rows * row_bytes, kind="p2p")]

    def steps_aggregate(self, ctx, call) -> list:
        return self._product_steps(ctx, call, "f")

    def steps_aggregate_t(self, ctx, call) -> list:
        return self._product_steps(ctx, call, "t")

    def setup_steps(self, ctx) -> list:
        """Row setup, then per product (S, and S^T when it differs) the request exchange:
        an Alltoall of counts and an Alltoallv of the needed row ids (needing rank -> owner)."""
        out = super().setup_steps(ctx)
        for which in ("f",) if ctx.symmetric else ("f", "t"):
            src, dst, rows = halo_pairs(ctx, which)
            out.append(("setup", Uniform(Groups.world(ctx.P), COUNT_BYTES)))
            out.append(("setup", Pairs(ctx.P, dst, src, rows * COUNT_BYTES)))
        return out

    def buffer_rows(self, ctx) -> np.ndarray:
        """Every row received from other ranks in one product (all receives are posted)."""
        src, dst, rows = halo_pairs(ctx, "f")
        out = np.bincount(dst, weights=rows, minlength=ctx.P).astype(np.int64)
        if not ctx.symmetric:
            src, dst, rows = halo_pairs(ctx, "t")
            out = np.maximum(out, np.bincount(dst, weights=rows, minlength=ctx.P))
        return out.astype(np.int64)
