"""1D sparse point-to-point scheme (Algorithms 1 and 2 of the hypergraph-partitioning paper).

Rows of S and H follow any partition vector (renumbered part by part; ragged parts).  Before
training every rank learns, for each other rank, which of its rows that rank needs (the
distinct columns of the other rank's rows that it owns) through one Alltoall of counts and one
Alltoallv of row ids.  ``S @ X`` then posts an Irecv per source, packs and Isends each row once
per destination that needs it, multiplies the local diagonal block while the messages are in
flight, and adds each source's contribution as its message arrives (Waitany).  When every
rank shares one node, the same messages land in one operand beside a copy of the local rows
and one product runs over it (`P2POps._one_pass`).  The rows sent per aggregation equal the
connectivity-1 metric of the column-net hypergraph of the partition.

``S^T @ G`` (the backward product) moves, between each pair of ranks p and q, either

* the *fetch* exchange: the rows of G that the rows of S^T need (S^T's own pattern, a second
  request exchange at setup), or
* the *reverse* exchange (the paper's Algorithm 2): p multiplies the transposed columns of its
  rows of S that q owns by its rows of G and sends those partial sums back along the forward
  pattern reversed (what p received from q in the forward product it now sends to q), where
  they are added to the owner's rows,

whichever moves fewer rows between the two ranks (both directions together; a tie keeps the
fetch exchange).  Both ranks of a pair know the four row counts without communicating, so no
collective decides.  On a symmetric pattern the two exchanges move the same rows on every pair:
the backward product is then exactly today's fetch (on a symmetric S, the forward exchange).

Who needs which rows is `gcntrain.schemes.layout.needed_pairs`, evaluated on a rank's own rows
at run time and on all rows by the plan; the backward choice is `backward_exchange`, applied to
a rank's own pairs at run time and to all pairs by the plan.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from gcntrain.comm.exchange import Groups, Pairs, Uniform
from gcntrain.comm.node import ranks_on_node
from gcntrain.comm.shared import SharedRows
from gcntrain.kernels.rows import gather_rows, scatter_add_rows
from gcntrain.partition.unique import unique_ints
from gcntrain.schemes.base import (
    COUNT_BYTES,
    RowLayout,
    RowOps,
    RowScheme,
    as_dtype,
    csr_apply,
    row_setup,
    spmm_work,
)
from gcntrain.schemes.entries import entry_pair_counts, halo_needed_pairs
from gcntrain.schemes.halosums import HaloSums, SummedPairs
from gcntrain.schemes.layout import needed_pairs, owner_of
from gcntrain.schemes.p2p_device import P2pDeviceOps
from gcntrain.schemes.protocol import OVERLAP_CALL

#: `plan_notes` values of the backward product
FETCH, REVERSE, MIXED = "fetch", "reverse", "mixed"


def halo_pairs(ctx, which: str):
    """(src, dst, rows) of the rows each rank receives per product with S ("f") or S^T
    ("t"), for all ranks (cached on the plan context)."""

    def make():
        M = ctx.support if which == "f" else ctx.transpose()
        return halo_needed_pairs(M, ctx.layout.offsets, ids=False)

    key = "halo_f" if which == "f" or ctx.symmetric else "halo_t"
    return ctx.cached(key, make)


def halo_sums(ctx) -> HaloSums:
    """Per-rank sums of the forward product's halo pairs (`HaloSums`: S walked a range of
    row blocks at a time, the pairs never held; cached on the plan context)."""
    return ctx.cached("halo_f_sums", lambda: HaloSums.of(ctx.support, ctx.layout.offsets, ctx.P))


def forward_step(ctx, unit: int, reverse: bool = False, **kw) -> SummedPairs:
    """The forward halo pairs as one step moving ``rows * unit`` bytes per pair (`reverse`:
    each pair turned round), priced from `halo_sums`."""
    return SummedPairs(ctx.P, halo_sums(ctx), lambda: halo_pairs(ctx, "f"), unit, reverse, **kw)


def unordered_pairs(src, dst, P: int, keep, block: int = 1 << 22) -> int:
    """How many distinct rank pairs {src, dst} the pairs `keep` selects: one byte per
    possible pair marked a block of pairs at a time where that takes less memory than
    sorting their keys (a plan at P = 8192: 64 MiB, not 8 bytes and a sort per pair)."""
    n = int(np.asarray(src).shape[0])
    if P * P > 16 * max(n, 1):
        s, d = src[keep], dst[keep]
        return int(unique_ints(np.minimum(s, d) * P + np.maximum(s, d), overwrite=True).size)
    seen = np.zeros(P * P, dtype=bool)
    for a in range(0, n, block):
        k = keep[a : a + block]
        s, d = src[a : a + block][k], dst[a : a + block][k]
        seen[np.minimum(s, d) * P + np.maximum(s, d)] = True
    return int(np.count_nonzero(seen))


def backward_exchange(P: int, fwd, fetch):
    """The pairs of the backward product ``S^T @ G``: per pair of ranks, the reverse exchange
    or the fetch exchange, whichever moves fewer rows between the two.

    Parameters
    ----------
    P : ranks
    fwd : (src, dst, rows) of the forward exchange (rows `src` sends `dst` for ``S @ X``)
    fetch : (src, dst, rows) of the fetch exchange (rows `src` sends `dst` for ``S^T @ G``
        with S^T's own pattern)

    Both hold, for every pair of ranks they mention, both directions: a rank's own pairs (the
    ones it sends or receives) at run time, all pairs in a plan, so both give the same choice.

    Returns
    -------
    (src, dst, rows, reverse)
        The ordered pairs of the backward product sorted by (dst, src), the rows each moves,
        and whether it carries partial sums (reverse: the forward pair dst -> src turned
        round) or rows of G (fetch).  Rank pair {p, q} uses the reverse exchange when its
        forward rows p -> q and q -> p sum to fewer than its fetch rows p -> q and q -> p.
    """
    fs, fd, fr = (np.asarray(a, dtype=np.int64) for a in fwd)
    ts, td, tr = (np.asarray(a, dtype=np.int64) for a in fetch)

    def pair_key(s, d):
        return np.minimum(s, d) * P + np.maximum(s, d)

    kf, kt = pair_key(fs, fd), pair_key(ts, td)
    keys = unique_ints(np.concatenate([kf, kt]), overwrite=True)
    jf, jt = np.searchsorted(keys, kf), np.searchsorted(keys, kt)
    fsum = np.bincount(jf, weights=fr, minlength=keys.size)
    tsum = np.bincount(jt, weights=tr, minlength=keys.size)
    rev = fsum < tsum
    rf, keep_t = rev[jf], ~rev[jt]
    src = np.concatenate([fd[rf], ts[keep_t]])
    dst = np.concatenate([fs[rf], td[keep_t]])
    rows = np.concatenate([fr[rf], tr[keep_t]])
    reverse = np.concatenate([np.ones(int(rf.sum()), bool), np.zeros(int(keep_t.sum()), bool)])
    order = np.lexsort((src, dst))
    return src[order], dst[order], rows[order], reverse[order]


class _Exchange:
    """Send/receive lists and split matrices of one product (S or S^T) on one rank.

    ``sources``: the ranks whose rows this rank requests (None: every rank it needs rows
    from); the entries in other ranks' columns are left out (the reverse exchange brings
    their contributions)."""

    def __init__(self, comm, offsets, indptr, indices, data, phase="setup", sources=None):
        me, P = comm.rank, comm.size
        lo, hi = int(offsets[me]), int(offsets[me + 1])
        m = hi - lo
        cols = np.asarray(indices, dtype=np.int64)
        own = owner_of(cols, offsets)
        row = np.repeat(np.arange(m, dtype=np.int64), np.diff(indptr))
        vals = np.asarray(data, dtype=np.float64)
        if sources is not None:
            use = (own == me) | np.isin(own, np.asarray(sorted(sources), dtype=np.int64))
            cols, own, row, vals = cols[use], own[use], row[use], vals[use]
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
        # where each received message lands in the one-node operand [local rows; received]
        pr = self.pairs
        recv_k = np.flatnonzero((pr.dst == me) & (pr.src != me) & (pr.nbytes > 0))
        ends = m + np.cumsum(pr.nbytes[recv_k])
        self.operand_rows = {
            int(k): (int(e - n), int(e)) for k, e, n in zip(recv_k, ends, pr.nbytes[recv_k])
        }
        loc = own == me
        self.local = sp.csr_matrix((vals[loc], (row[loc], cols[loc] - lo)), shape=(m, m))
        self.local.sort_indices()
        self.remote = {}
        #: global ids of the columns of `combined`: the local rows, then each source's
        glob = [np.arange(lo, hi, dtype=np.int64)]
        for k, q in enumerate(recvs):
            ids = need[ptr[k] : ptr[k + 1]]
            glob.append(np.asarray(ids, dtype=np.int64))
            sel = own == q
            pos = np.searchsorted(ids, cols[sel])
            M = sp.csr_matrix((vals[sel], (row[sel], pos)), shape=(m, ids.size))
            M.sort_indices()
            self.remote[q] = M
        self.columns = np.concatenate(glob)
        self.n_global = int(offsets[-1])
        self._typed: dict = {}

    def typed(self, dtype):
        key = np.dtype(dtype).str
        if key not in self._typed:
            qs = list(self.remote)
            typed = as_dtype([self.local, *(self.remote[q] for q in qs)], dtype)
            self._typed[key] = (typed[0], dict(zip(qs, typed[1:])))
        return self._typed[key]

    def windowed(self, dtype) -> sp.csr_matrix:
        """`combined` over all rows in the global (renumbered) order, a node window's
        layout: the same entries in the same order in every row, so the same sums."""
        key = ("window", np.dtype(dtype).str)
        if key not in self._typed:
            C = self.combined(dtype)
            M = sp.csr_matrix(
                (C.data, self.columns[C.indices], C.indptr), (C.shape[0], self.n_global)
            )
            if M.indices.dtype != C.indices.dtype:
                M.indices = M.indices.astype(C.indices.dtype)
            self._typed[key] = M
        return self._typed[key]

    def combined(self, dtype) -> sp.csr_matrix:
        """The local rows of S as one matrix over [local rows; the rows received from each
        source, in source order] (`P2POps` on one node): a row's entries in the order the
        split products add them, so both give the same sums."""
        key = ("combined", np.dtype(dtype).str)
        if key not in self._typed:
            M = sp.hstack([self.local, *self.remote.values()], format="csr")
            M.sort_indices()
            self._typed[key] = as_dtype([M], dtype)[0]
        return self._typed[key]


def fetch_sends(me: int, offsets: np.ndarray, indptr, indices) -> tuple:
    """(src, dst, rows) of the fetch exchange this rank would send: for every other rank q,
    its rows with an entry in a column q owns (the rows of G that q's rows of S^T need),
    from its own rows of S (`needed_pairs` with the roles of rows and columns swapped)."""
    cols = np.asarray(indices, dtype=np.int64)
    m = int(offsets[me + 1] - offsets[me])
    rows = np.repeat(np.arange(m, dtype=np.int64) + int(offsets[me]), np.diff(indptr))
    src, dst, ptr, _ = needed_pairs(owner_of(cols, offsets), rows, offsets)
    return src, dst, np.diff(ptr)


class _Backward:
    """The backward product of one rank when S is not symmetric (`backward_exchange` on its
    own pairs): the fetch exchange's lists (`_Exchange` of S^T's rows, requesting from the
    fetch sources only) and, for the reverse destinations, the transposed columns of its rows
    of S that each owns."""

    def __init__(self, comm, offsets, fwd_ex: _Exchange, fwd, bwd):
        me, P = comm.rank, comm.size
        fp = fwd_ex.pairs
        # the fetch exchange's pairs of this rank: what its rows of S^T need from each
        # rank, and what each rank's rows of S^T need from it
        rs, rd, rptr, _ = needed_pairs(me, np.asarray(bwd[1], dtype=np.int64), offsets)
        ss, sd, srows = fetch_sends(me, offsets, fwd[0], fwd[1])
        fetch = (
            np.concatenate([rs, ss]),
            np.concatenate([rd, sd]),
            np.concatenate([np.diff(rptr), srows]),
        )
        src, dst, rows, rev = backward_exchange(P, (fp.src, fp.dst, fp.nbytes), fetch)
        self.pairs = Pairs(P, src, dst, rows, kind="p2p")
        self.reverse = rev
        sources = {int(q) for q, d, r in zip(src, dst, rev) if d == me and not r}
        self.fetch = _Exchange(comm, offsets, *bwd, sources=sources)
        self.forward = fwd_ex
        self.partial = {}
        for q, d, r in zip(src, dst, rev):
            if r and q == me:
                T = fwd_ex.remote[int(d)].T.tocsr()
                T.sort_indices()
                self.partial[int(d)] = T
        self._typed: dict = {}

    def typed_partial(self, dtype) -> dict:
        key = np.dtype(dtype).str
        if key not in self._typed:
            qs = list(self.partial)
            self._typed[key] = dict(zip(qs, as_dtype([self.partial[q] for q in qs], dtype)))
        return self._typed[key]


class P2POps(RowOps):
    """Runtime of the point-to-point scheme for one rank."""

    def __init__(self, world, layout: RowLayout, fwd, bwd, rows):
        super().__init__(world, world, rows, int(layout.offsets[-1]))
        self.layout = layout
        self._ex = {"f": _Exchange(world, layout.offsets, *fwd)}
        self._ex["t"] = self._ex["f"]
        #: the backward product's exchange; None: S is symmetric (the forward exchange)
        self._bwd = None
        if bwd is not None:
            self._bwd = _Backward(world, layout.offsets, self._ex["f"], fwd, bwd)
            self._ex["t"] = self._bwd.fetch
        #: all ranks on one node: products over the received rows in one pass (`_one_pass`)
        self.one_pass = world.size > 1 and ranks_on_node(world) == world.size
        #: ... and through a node window rather than messages (`_in_window`; tests set None)
        self.shared = SharedRows.open(world, layout.sizes) if self.one_pass else None

    def _product(self, which: str, X: np.ndarray, phase: str) -> np.ndarray:
        if which == "t" and self._bwd is not None:
            return self._backward(X, phase)
        ex = self._ex[which]
        if self.shared is not None:
            out = self._in_window(ex, X, phase)
            if out is not None:
                return out
        if self.one_pass:
            return self._one_pass(ex, X, phase)
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
            send_buf=lambda k: self._pack(X, ex.send[int(pairs.dst[k])], ("send", k)),
            recv_buf=lambda k: self.scratch.get(("recv", k), (pairs.nbytes[k], f), X.dtype),
            local_work=work,
            consume=consume,
            phase=phase,
        )
        return result["out"]

    def _one_pass(self, ex: _Exchange, X: np.ndarray, phase: str) -> np.ndarray:
        """``S @ X`` (and ``S^T @ X`` on a symmetric S, the same exchange) when every rank
        shares this node: the same messages, received into one operand after a copy of the
        local rows, then one product over it (`_Exchange.combined`), run before the rank
        waits for its own sends.  Within a node a message is a copy the receiver makes when
        it waits, so multiplying the local rows meanwhile hides little, while adding each
        source's rows in a pass of their own re-reads every output row."""
        M = ex.combined(X.dtype)
        pairs = ex.pairs
        me, m, f = self.world.rank, X.shape[0], X.shape[1]
        operand = self.scratch.get("operand", (M.shape[1], f), X.dtype)

        def recv_buf(k: int) -> np.ndarray:
            lo, hi = ex.operand_rows[k]
            return operand[lo:hi]

        result: list = []

        pairs.run_p2p(
            self.world,
            me,
            send_buf=lambda k: self._pack(X, ex.send[int(pairs.dst[k])], ("send", k)),
            recv_buf=recv_buf,
            local_work=lambda: np.copyto(operand[:m], X),
            consume=lambda k, buf: None,
            phase=phase,
            finish=lambda: result.append(csr_apply(M, operand)),
        )
        return result[0]

    def _in_window(self, ex: _Exchange, X: np.ndarray, phase: str) -> np.ndarray | None:
        """``S @ X`` (and ``S^T @ X`` on a symmetric S) through the node window: the local
        rows written into this rank's segment, one fence, one product reading every rank's
        rows in place (`_Exchange.windowed`); the counters record the messages it stands
        for (`Pairs.count_shared`).  None (and messages from now on, on every rank) where
        the window cannot be made."""
        operand = self.shared.share(X, phase)
        if operand is None:
            self.shared = None
            return None
        ex.pairs.count_shared(self.world, self.world.rank, X.shape[1] * X.dtype.itemsize, phase)
        return csr_apply(ex.windowed(X.dtype), operand)

    def _pack(self, X: np.ndarray, rows: np.ndarray, key) -> np.ndarray:
        """The rows `rows` of `X` gathered into the message buffer `key` (kept across calls)."""
        return gather_rows(X, rows, self.scratch.get(key, (rows.shape[0], X.shape[1]), X.dtype))

    def _backward(self, G: np.ndarray, phase: str) -> np.ndarray:
        """Local rows of ``S^T @ G``: per pair, partial sums sent to (and added at) the
        owner of their rows, or rows of G fetched for S^T's rows; contributions are added in
        pair order."""
        bw = self._bwd
        pairs, rev = bw.pairs, bw.reverse
        local, remote = bw.fetch.typed(G.dtype)
        partial = bw.typed_partial(G.dtype)
        f = G.shape[1]
        result = {}

        def send_buf(k: int) -> np.ndarray:
            q = int(pairs.dst[k])
            if rev[k]:
                M = partial[q]
                out = self.scratch.get(("bsend", k), (M.shape[0], f), G.dtype)
                return csr_apply(M, G, out)
            return self._pack(G, bw.fetch.send[q], ("bsend", k))

        def work() -> None:
            result["out"] = csr_apply(local, G)

        def consume(k: int, buf: np.ndarray) -> None:
            p = int(pairs.src[k])
            if rev[k]:
                scatter_add_rows(buf, bw.forward.send[p], result["out"])
            else:
                csr_apply(remote[p], buf, result["out"], accumulate=True)

        pairs.run_p2p(
            self.world,
            self.world.rank,
            send_buf=send_buf,
            recv_buf=lambda k: self.scratch.get(("brecv", k), (pairs.nbytes[k], f), G.dtype),
            local_work=work,
            consume=consume,
            phase=phase,
        )
        return result["out"]


class P2P(RowScheme):
    name = "p2p"
    plan_cost = 1.2  # measured: 35 ms (its price forms the halo lists)
    summary = "1D sparse point-to-point: each needed row sent once per destination"

    ops_class = P2POps

    def setup(self, world, layout: RowLayout, local, kind: str, backend=None):
        """The row setup, then `P2POps` on the host (`backend` None or the host's) or
        `P2pDeviceOps` (`gcntrain.schemes.p2p_device`) on the device of `backend`."""
        if backend is None or getattr(backend, "name", "cpu") == "cpu":
            return super().setup(world, layout, local, kind)
        fwd, bwd = row_setup(world, world, layout, local, kind)
        ex = _Exchange(world, layout.offsets, *fwd)
        bw = None if bwd is None else _Backward(world, layout.offsets, ex, fwd, bwd)
        return P2pDeviceOps(world, layout, ex, bw, local.orig_ids, backend)

    def device_unsupported(self, config) -> list[str]:
        """Nothing: every option value (``--reorder``) and partition runs on the device,
        where the products go by messages only (no node windows)."""
        return []

    def plan_table_bytes(self, P: int, n: int, nnz: int) -> tuple[int, str]:
        """A bit per pair of ranks and the per-rank sums (`HaloSums`)."""
        return P * P // 8 + 64 * P, f"p2p's rank pairs among {P:,} ranks"

    def overlaps(self, ctx, call) -> str:
        """Local rows are multiplied while the messages travel (`Pairs.run_p2p`).  On one
        node the exchanges marked `window` run through a node window and overlap nothing
        (the time model prices their fence, docs/simulator.md); with
        ``GCNTRAIN_NODE_WINDOWS=0`` the runtime multiplies once after the messages
        (`P2POps._one_pass`) and the model keeps the overlap, whose messages there cost a
        copy."""
        return OVERLAP_CALL

    def backward_pairs(self, ctx):
        """(src, dst, rows, reverse) of the backward product for all ranks
        (`backward_exchange`; on a symmetric S the forward pairs, all fetch)."""

        def make():
            if ctx.symmetric:
                src, dst, rows = halo_pairs(ctx, "f")
                return src, dst, rows, np.zeros(src.shape[0], dtype=bool)
            return backward_exchange(ctx.P, halo_pairs(ctx, "f"), halo_pairs(ctx, "t"))

        return ctx.cached("p2p_backward", make)

    def steps_aggregate(self, ctx, call) -> list:
        return [forward_step(ctx, self._row_bytes(call), kind="p2p", window=True)]

    def steps_aggregate_t(self, ctx, call) -> list:
        """The backward pairs; through the node window on a symmetric S (the forward
        exchange), by messages otherwise (`P2POps._backward`)."""
        if ctx.symmetric:
            return [forward_step(ctx, self._row_bytes(call), kind="p2p", window=True)]
        src, dst, rows, _ = self.backward_pairs(ctx)
        nbytes = rows * self._row_bytes(call)
        return [Pairs(ctx.P, src, dst, nbytes, kind="p2p", window=bool(ctx.symmetric))]

    @staticmethod
    def _row_bytes(call) -> int:
        return call.shape(0)[1] * call.itemsize(0)

    def setup_steps(self, ctx) -> list:
        """Row setup, then the request exchanges (an Alltoall of counts and an Alltoallv of
        the needed row ids, needing rank -> owner): S's, and when S is not symmetric S^T's,
        from the fetch sources of the backward product only."""
        out = super().setup_steps(ctx)
        out.append(("setup", Uniform(Groups.world(ctx.P), COUNT_BYTES)))
        out.append(("setup", forward_step(ctx, COUNT_BYTES, reverse=True)))
        if not ctx.symmetric:
            src, dst, rows, rev = self.backward_pairs(ctx)
            fetch = ~rev
            out.append(("setup", Uniform(Groups.world(ctx.P), COUNT_BYTES)))
            out.append(("setup", Pairs(ctx.P, dst[fetch], src[fetch], rows[fetch] * COUNT_BYTES)))
        return out

    def plan_notes(self, ctx) -> dict:
        """How the backward product moves its rows (`simulate --json` ``plan_notes``):
        ``backward`` is ``fetch`` (S^T's rows fetched; on a symmetric S the forward
        exchange), ``reverse`` (partial sums sent back along the forward pattern) or
        ``mixed`` (per pair of ranks), with the rows per product of each way."""
        if ctx.symmetric:  # the forward pairs both ways, from their sums
            sums = halo_sums(ctx)
            return {
                "backward": FETCH,
                "backward_rows": sums.rows,
                "forward_rows": sums.rows,
                "fetch_rows": sums.rows,
                "rank_pairs": sums.rank_pairs,
                "reverse_rank_pairs": 0,
            }
        src, dst, rows, rev = self.backward_pairs(ctx)
        pairs = unordered_pairs(src, dst, ctx.P, src != dst)
        rpairs = unordered_pairs(src, dst, ctx.P, rev)
        mode = FETCH if rpairs == 0 else REVERSE if rpairs == pairs else MIXED
        return {
            "backward": mode,
            "backward_rows": int(rows.sum()),
            "forward_rows": int(halo_pairs(ctx, "f")[2].sum()),
            "fetch_rows": int(halo_pairs(ctx, "t")[2].sum()),
            "rank_pairs": pairs,
            "reverse_rank_pairs": rpairs,
        }

    # -- compute and memory ----------------------------------------------------------------
    def backward_nnz(self, ctx) -> np.ndarray:
        """(P,) stored entries each rank multiplies per backward product: its diagonal block,
        the blocks of its rows in the columns of its reverse destinations (partial sums) and
        the blocks of its fetch sources' rows in its columns (S^T's rows)."""

        def make():
            if ctx.symmetric:
                return self.block_nnz(ctx, "f")
            offsets = ctx.layout.offsets
            bs, bd, cnt = ctx.cached(
                "entry_pairs",
                lambda: entry_pair_counts(ctx.support, offsets),
            )
            P = ctx.P
            diag = bs == bd
            out = np.bincount(bs[diag], weights=cnt[diag], minlength=P)
            src, dst, _, rev = self.backward_pairs(ctx)
            # every pair of the backward product is a nonempty block (src's rows, dst's
            # columns); block_pair_counts lists the blocks sorted by bs * P + bd
            nnz = cnt[np.searchsorted(bs * P + bd, src * P + dst)]
            out += np.bincount(np.where(rev, src, dst), weights=nnz, minlength=P)
            return out.astype(np.int64)

        return ctx.cached("p2p_backward_nnz", make)

    def work_aggregate_t(self, ctx, call) -> np.ndarray:
        return spmm_work(self.backward_nnz(ctx), call.shape(0)[1])

    def footprint(self, ctx) -> dict:
        out = super().footprint(ctx)
        if not ctx.symmetric:
            out["adjacency"] = self.block_nnz(ctx, "f") + self.backward_nnz(ctx)
        return out

    def buffer_rows(self, ctx) -> np.ndarray:
        """None made per call: the message buffers are kept (`kept_buffer_rows`)."""
        return np.zeros(ctx.P, dtype=np.int64)

    def kept_buffer_rows(self, ctx) -> np.ndarray:
        """Every row a rank receives and every row it packs for others in one product (all
        receives are posted, all sends packed at once), forward and, when S is not
        symmetric, backward: the message buffers it keeps across calls; plus twice its own
        rows: the one-node product's copy of them beside the received ones
        (`P2POps._one_pass`), or its segments of the two node-window slots
        (`P2POps._in_window`), which keep no message buffers (the plan does not know the
        placement, so it counts them everywhere: an upper bound)."""
        out = 2.0 * ctx.layout.sizes if ctx.P > 1 else np.zeros(1)
        sums = halo_sums(ctx)
        out = out + sums.rows_recv + sums.rows_sent
        if not ctx.symmetric:
            src, dst, rows, _ = self.backward_pairs(ctx)
            out += np.bincount(dst, weights=rows, minlength=ctx.P)
            out += np.bincount(src, weights=rows, minlength=ctx.P)
        return out.astype(np.int64)
