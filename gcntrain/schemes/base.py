"""Pieces shared by the row-layout schemes (1D, 1.5D, p2p): the Ops over a communicator,
the setup exchanges (global degrees, transposed rows, symmetry check) and their descriptions,
and the pricing of the calls that do not depend on how S is multiplied.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from gcntrain.comm.exchange import Allgatherv, Allreduce, BcastStages, Groups, Uniform
from gcntrain.comm.node import ranks_on_node
from gcntrain.comm.shared import SharedRows
from gcntrain.data import setup_phases
from gcntrain.kernels import transpose_merge as tm
from gcntrain.kernels.csr import csr_values_close
from gcntrain.kernels.spmm import spmm_csr_dense, spmm_csr_dense_add
from gcntrain.kernels.transpose_blocks import csr_transpose_blocked
from gcntrain.model.normalize import degrees, support_rows
from gcntrain.model.ops import Ops
from gcntrain.model.phase import Phase, phase_key
from gcntrain.schemes.entries import RangedPairs
from gcntrain.schemes.layout import owner_of
from gcntrain.schemes.protocol import (
    REORDER_OPTION,
    LoadRequest,
    Numbering,
    PlanContext,
    Scheme,
)
from gcntrain.schemes.typed_blocks import TypedBlocks, as_dtype  # noqa: F401  (re-exported)

#: broadcasts a rank of a `BroadcastRowScheme` may be receiving at once (one kept buffer each)
BCAST_DEPTH = 2

#: one int64 count, one (row, col) int64 pair, one float64 value
COUNT_BYTES, PAIR_BYTES, VALUE_BYTES = 8, 16, 8


@dataclass(frozen=True)
class RowLayout:
    """Row blocks of a numbering, each replicated on `c` ranks of a (B x c) grid (c = 1: one
    rank per block).  Rank r holds block ``r // c``; ranks with ``r % c == 0`` own the rows
    for outputs."""

    numbering: Numbering
    c: int = 1

    @property
    def offsets(self) -> np.ndarray:
        return self.numbering.offsets

    @property
    def blocks(self) -> int:
        return self.numbering.parts

    @property
    def size(self) -> int:
        return self.blocks * self.c

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    def block_of(self, rank: int) -> int:
        return int(rank) // self.c

    def block_of_ranks(self) -> np.ndarray:
        return np.arange(self.size, dtype=np.int64) // self.c

    def request(self, rank: int) -> LoadRequest:
        b = self.block_of(rank)
        return LoadRequest((int(self.offsets[b]), int(self.offsets[b + 1])))

    def owned(self, rank: int) -> bool:
        return int(rank) % self.c == 0

    def block_groups(self) -> Groups:
        """One rank per block, for every copy: the process columns of the (B x c) grid."""
        return Groups.axis((self.blocks, self.c), 0)


class RowOps(Ops):
    """Ops whose node-wise matrices are row blocks; weights replicated.

    Parameters
    ----------
    world : Comm
        All ranks (stop decisions are taken by its rank 0).
    reduce_comm : Comm
        Ranks holding one copy of every row block (the world for 1D and p2p, a process column
        for 1.5D): sums over nodes and of weight gradients run over it.
    rows : int64 array
        ORIGINAL global ids of the local rows (dropout masks and outputs use them).
    n_global : int
    """

    def __init__(self, world, reduce_comm, rows: np.ndarray, n_global: int):
        self.world = world
        self.scratch = Scratch()
        self.reduce_comm = reduce_comm
        self.rows = np.asarray(rows, dtype=np.int64)
        self.n_global = int(n_global)
        self.rank = world.rank
        self.size = world.size

    def _sum_nodes(self, a, phase: Phase):
        return self.reduce_comm.allreduce(np.ascontiguousarray(a), phase_key(phase))

    def _sum_params(self, a, phase: Phase):
        return self.reduce_comm.allreduce(np.ascontiguousarray(a), phase_key(phase))

    def _decide(self, flag: bool, phase: Phase) -> bool:
        return self.world.bcast_flag(bool(flag), 0, phase_key(phase))

    def _product(self, which: str, X: np.ndarray, phase: str) -> np.ndarray:
        """Local rows of ``S @ X`` ("f") or ``S^T @ X`` ("t"); each scheme implements it."""
        raise NotImplementedError

    def close(self, *, phase) -> None:
        """Free the node windows of the products (this Ops' and its broadcasts')."""
        for owner in (self, getattr(self, "broadcasts", None)):
            window = getattr(owner, "shared", None)
            if window is not None:
                window.free()
                owner.shared = None

    # the operand contiguous where it lives: NumPy on the host, the device's module there
    def aggregate(self, X, *, phase):
        return self._product("f", self.compute.xp.ascontiguousarray(X), phase_key(phase))

    def aggregate_t(self, X, *, phase):
        return self._product("t", self.compute.xp.ascontiguousarray(X), phase_key(phase))


class Scratch:
    """Communication buffers kept across calls (no allocation in the epoch loop): one array
    per (key, shape, dtype), made on its first request.  A buffer is the caller's until the
    next request of the same (key, shape, dtype): message buffers live for one exchange.
    The layers' widths are few, so a handful of buffers per key."""

    def __init__(self) -> None:
        self._bufs: dict = {}

    def get(self, key, shape: tuple, dtype) -> np.ndarray:
        shape, dtype = tuple(int(n) for n in shape), np.dtype(dtype)
        full = (key, shape, dtype.str)
        buf = self._bufs.get(full)
        if buf is None:
            buf = self._bufs[full] = np.empty(shape, dtype=dtype)
        return buf


def csr_apply(
    M, X: np.ndarray, out: np.ndarray | None = None, accumulate: bool = False
) -> np.ndarray:
    """``M @ X`` with the Numba kernel (``out += M @ X`` when `accumulate`); `M` is anything
    with CSR ``indptr``, ``indices``, ``data`` and ``shape`` (a scipy matrix, a 2D piece)."""
    X = np.ascontiguousarray(X)
    data = M.data if M.data.dtype == X.dtype else M.data.astype(X.dtype)
    if accumulate:
        return spmm_csr_dense_add(M.indptr, M.indices, data, X, out)
    if out is None:
        out = np.empty((M.shape[0], X.shape[1]), dtype=X.dtype)
    return spmm_csr_dense(M.indptr, M.indices, data, X, out)


def transpose_rows(
    comm,
    offsets: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    phase: str = "setup",
):
    """Rows of the transpose owned by this block, from every block's rows (one Alltoall of
    counts, two Alltoallv).

    Block p holds rows offsets[p]:offsets[p+1] of S with global column ids; afterwards it
    holds the same rows of S^T.  Entry (i, j, v) travels to the owner of j as (j, i, v) (as
    many as the plan's `block_pair_counts`), by ascending j, then i; the block's own entries
    stay.  Each row's runs join in block order (`merge_transposed_rows`): sorted, no sort.
    """
    me = comm.rank
    lo, hi = int(offsets[me]), int(offsets[me + 1])
    # the block's transpose (in parallel): each owner's rows j one run, i ascending in each
    rows = tm.rows32(hi - lo)  # the block's row ids i as int32 when they fit
    ip_t, ix_t, dv_t = csr_transpose_blocked(indptr, indices, data, int(offsets[-1]), 0, rows)
    send_counts = np.diff(ip_t[offsets])
    pairs, vals = tm.pack_remote_pairs(ip_t, ix_t, dv_t, lo, hi, lo)  # (j, global i), v
    with setup_phases.phase("exchange"):
        recv_counts = comm.alltoall_counts(send_counts, phase)
        send_counts[me] = recv_counts[me] = 0  # the own run moves no bytes
        got = comm.alltoallv(pairs, send_counts, recv_counts, phase)
        del pairs
        gvals = comm.alltoallv(vals, send_counts, recv_counts, phase)
        del vals
    seg = np.concatenate(([0], np.cumsum(recv_counts))).astype(np.int64)
    merged = tm.merge_transposed_rows(ip_t, ix_t, dv_t, lo, hi, lo, me, got, gvals, seg)
    return tm.distinct_rows(*merged)


def row_setup(world, bcomm, layout: RowLayout, local, kind: str):
    """Support rows of S (and S^T, None when S is symmetric) of this rank's block.

    Phase "setup": the block's degrees are Allgathered over `bcomm` (one rank per block),
    S^T's rows come from `transpose_rows`, and one Allreduce over the world decides whether
    S^T equals S everywhere.
    """
    sizes = layout.sizes
    with setup_phases.phase("normalise"):
        deg = degrees(local.indptr, local.indices, local.data, kind, rows=local.new_ids)
    with setup_phases.phase("exchange"):
        deg_all = bcomm.allgatherv(deg.astype(np.float64), sizes, "setup")
    with setup_phases.phase("normalise"):
        fwd = support_rows(local.indptr, local.indices, local.data, local.new_ids, deg_all, kind)
    with setup_phases.phase("transpose"):
        bwd = transpose_rows(bcomm, layout.offsets, *fwd)
        same = (
            bwd[0].shape == fwd[0].shape
            and np.array_equal(bwd[0], fwd[0])
            and np.array_equal(bwd[1], fwd[1])
            and bool(csr_values_close(bwd[2], fwd[2], 1e-12))  # np.allclose, atol 0
        )
    with setup_phases.phase("exchange"):
        flag = world.allreduce(np.array([0 if same else 1], dtype=np.int64), "setup", op="max")
    return fwd, (None if flag[0] == 0 else bwd)


def entry_blocks(S: sp.csr_matrix, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row block of every entry, column of every entry) of a whole matrix."""
    rows = np.repeat(np.arange(S.shape[0], dtype=np.int64), np.diff(S.indptr))
    return owner_of(rows, offsets), S.indices.astype(np.int64)


def row_setup_steps(ctx: PlanContext) -> list[tuple[str, object]]:
    """Description of `row_setup` for every rank: in each block group (the ranks holding one
    copy of every block), the degree Allgatherv, the Alltoall of counts and the two Alltoallv
    of the transposition; then the world's symmetry Allreduce."""
    lay: RowLayout = ctx.layout
    bg = lay.block_groups()
    blk = lay.block_of_ranks()
    copies = np.arange(lay.c, dtype=np.int64)

    def rank_pairs(src_b, dst_b, cnt):  # block pairs -> rank pairs inside every copy's group
        src = bg.rank_at(copies[:, None], src_b[None, :]).ravel()
        dst = bg.rank_at(copies[:, None], dst_b[None, :]).ravel()
        return src, dst, np.tile(cnt, lay.c)

    units = (PAIR_BYTES, VALUE_BYTES)  # the transposition's two Alltoallv, range by range
    return [
        ("setup", Allgatherv(bg, lay.sizes[blk] * VALUE_BYTES)),
        ("setup", Uniform(bg, COUNT_BYTES)),
        ("setup", RangedPairs(lay.size, ctx.support, lay.offsets, rank_pairs, units)),
        ("setup", Allreduce(Groups.world(lay.size), np.array([1]), COUNT_BYTES)),
    ]


class RowScheme(Scheme):
    """What the row-layout schemes share: one rank per block (`layout`), the row setup
    followed by the scheme's Ops class (`setup`), and the pricing: every sum over nodes or
    weight gradients is an Allreduce over the block groups (one copy of every row); only the
    products with S differ (``steps_aggregate`` / ``steps_aggregate_t`` of each scheme)."""

    options = (REORDER_OPTION,)

    #: the scheme's Ops: ``ops_class(world, layout, fwd, bwd, rows)``
    ops_class: type | None = None

    def layout(self, numbering, meta, size, config, model=None) -> RowLayout:
        return RowLayout(numbering, 1)

    def setup(self, world, layout: RowLayout, local, kind: str):
        fwd, bwd = row_setup(world, world, layout, local, kind)
        return self.ops_class(world, layout, fwd, bwd, local.orig_ids)

    def reduce_steps(self, ctx: PlanContext, nelems: int, itemsize: int) -> list:
        bg = ctx.layout.block_groups()
        return [Allreduce(bg, np.full(bg.sizes.shape[0], nelems), itemsize)]

    def _array_sum(self, ctx: PlanContext, call) -> list:
        shape = call.shape(0)
        return self.reduce_steps(ctx, int(np.prod(shape)), call.itemsize(0))

    steps_node_sum = _array_sum
    steps_element_sum = _array_sum
    steps_reduce_weight_grad = _array_sum
    #: BatchNorm's column sums: (2, f) float64 over the block groups, each row once
    steps_column_sum = _array_sum

    def steps_bias_grad(self, ctx: PlanContext, call) -> list:
        return self.reduce_steps(ctx, call.shape(0)[1], call.itemsize(0))

    def steps_xent(self, ctx: PlanContext, call) -> list:
        return self.reduce_steps(ctx, 2 * call.args[2][1], 8)

    def setup_steps(self, ctx: PlanContext) -> list:
        return row_setup_steps(ctx)

    # -- compute and memory ----------------------------------------------------------------
    def block_nnz(self, ctx: PlanContext, which: str) -> np.ndarray:
        """(P,) stored entries each rank multiplies per product with S ("f") or S^T ("t"):
        its block's rows (1D, p2p)."""
        lay: RowLayout = ctx.layout

        def make():
            M = ctx.support if which == "f" else ctx.transpose()
            per_block = M.indptr[lay.offsets[1:]] - M.indptr[lay.offsets[:-1]]
            return per_block[lay.block_of_ranks()].astype(np.int64)

        return ctx.cached(f"block_nnz_{which}", make)

    def work_aggregate(self, ctx: PlanContext, call) -> np.ndarray:
        return spmm_work(self.block_nnz(ctx, "f"), call.shape(0)[1])

    def work_aggregate_t(self, ctx: PlanContext, call) -> np.ndarray:
        return spmm_work(self.block_nnz(ctx, "t"), call.shape(0)[1])

    def _feature_rows(self, ctx: PlanContext):
        if ctx.feature_nnz is None:
            return None
        lay: RowLayout = ctx.layout
        csum = np.concatenate(([0], np.cumsum(ctx.feature_nnz)))
        per_block = csum[lay.offsets[1:]] - csum[lay.offsets[:-1]]
        return per_block[lay.block_of_ranks()]

    def work_matmul(self, ctx: PlanContext, call) -> np.ndarray:
        lay: RowLayout = ctx.layout
        return dense_rows_work(lay.sizes[lay.block_of_ranks()], call, self._feature_rows(ctx))

    work_matmul_grads = work_matmul

    def output_rows(self, ctx: PlanContext) -> np.ndarray:
        """Each rank's block's rows."""
        lay: RowLayout = ctx.layout
        return lay.sizes[lay.block_of_ranks()]

    def footprint(self, ctx: PlanContext) -> dict:
        lay: RowLayout = ctx.layout
        rows = self.output_rows(ctx)
        blk = lay.block_of_ranks()
        adj = np.zeros(lay.size, dtype=np.int64)
        for M in [ctx.support] + ([] if ctx.symmetric else [ctx.transpose()]):
            adj += (M.indptr[lay.offsets[1:]] - M.indptr[lay.offsets[:-1]])[blk]
        return {
            "rows": rows,
            "adjacency": adj,
            "buffer_rows": self.buffer_rows(ctx),
            "kept_buffer_rows": self.kept_buffer_rows(ctx),
            "col_fraction": np.ones(lay.size),
        }

    def buffer_rows(self, ctx: PlanContext) -> np.ndarray:
        """(P,) rows of other blocks a rank holds at once during a product in buffers made
        per call."""
        lay: RowLayout = ctx.layout
        return np.full(lay.size, int(lay.sizes.max(initial=0)), dtype=np.int64)

    def kept_buffer_rows(self, ctx: PlanContext) -> np.ndarray:
        """(P,) rows of the message buffers kept across calls (`Scratch`, one set per layer
        width); none by default."""
        return np.zeros(ctx.layout.size, dtype=np.int64)


class BroadcastRowScheme(RowScheme):
    """A row scheme whose products broadcast blocks (`BlockBroadcasts`): up to
    `BCAST_DEPTH` receive buffers of the largest block are kept across calls."""

    def broadcast_stages(self, layout: RowLayout) -> BcastStages:
        """The broadcasts of one product, row counts as sizes."""
        raise NotImplementedError

    def buffer_rows(self, ctx: PlanContext) -> np.ndarray:
        return np.zeros(ctx.layout.size, dtype=np.int64)

    def kept_buffer_rows(self, ctx: PlanContext) -> np.ndarray:
        """One buffer of the largest block per broadcast a rank may have in flight (the
        blocks it receives in one product, at most `BCAST_DEPTH`), plus one for its own
        block when they all fit (the one-pass operand of `BlockBroadcasts`); at least two
        for a rank that broadcasts (its segments of the two node-window slots).  The
        plan does not know the placement (across nodes one buffer is used) nor whether the
        own block is in the rank's chunk (1.5D): an upper bound."""
        lay: RowLayout = ctx.layout
        vol = self.broadcast_stages(lay).volumes()
        receives = vol[:, 3]
        held = np.minimum(receives, BCAST_DEPTH) + ((receives > 0) & (receives <= BCAST_DEPTH))
        held = np.maximum(held, 2 * (vol[:, 2] > 0))
        return held * int(lay.sizes.max(initial=0))


def broadcasts_ahead(comm) -> bool:
    """Whether the block broadcasts over `comm` are posted ahead as point-to-point messages:
    when it has two members (a broadcast is then one message whatever the algorithm) or
    all of them share a node (the receivers copy from the root's memory themselves).
    Across nodes MPI's broadcast trees move fewer bytes through the root's link."""
    return comm.size <= 2 or ranks_on_node(comm) == comm.size


@dataclass
class BlockBroadcasts:
    """One rank's products by block broadcasts (1D, 1.5D): the sum over the stages of
    `group` of ``S_q @ X_q`` (S_q: column block q of `blocks`), block q broadcast by member
    q of `comm` (`me` is this rank's block; its X is X_me).  `stages` is the scheme's
    `BcastStages` description (row counts as sizes): it decides which blocks travel and
    skips empty ones, as CAGNET's stages do.

    When the members of `comm` share one node and the group has stages, the blocks go
    through a node window instead of messages (`shared`, a `SharedRows` over `comm` with a
    segment for each block of the group, opened here unless ``GCNTRAIN_NODE_WINDOWS=0``):
    each member writes its block into its segment, one fence, and one product over the
    group's blocks joined in block order, which is stage order (the sums of the in-turn
    stages, bit for bit).  The counters record the broadcasts the window stands for
    (`BcastStages.count_shared`).  Where the window cannot be made the product falls back
    to the messages below, on every member; tests set `shared` to None to run them.

    With `ahead` (see `broadcasts_ahead`; tests turn it off to run the in-turn broadcasts
    on one node) the broadcasts are posted ahead as point-to-point messages
    (`BcastStages.run_ahead`).  When every block the rank receives fits the `BCAST_DEPTH`
    window at once, the group's blocks are gathered into one operand (X_me copied in when
    its block is one of them) and multiplied in one pass (`TypedBlocks.joined`; the rows of
    the output are not re-read once per block); otherwise the rank multiplies its own block
    while the others travel, then theirs in stage order.  Without `ahead` each stage is an
    MPI broadcast, in turn.  Within a node the messages rely on the MPI library's
    single-copy transfers (a receiver copies from the root's memory while the root
    computes, as MPICH does here); without them a message moves at the root's next MPI
    call.  The buffers come from `scratch` (kept across calls); the first product writes
    the output, the others add to it."""

    comm: object
    stages: BcastStages
    group: int
    me: int
    blocks: TypedBlocks
    sizes: np.ndarray
    scratch: Scratch
    ahead: bool
    shared: SharedRows | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        st = self.stages
        #: the group's non-empty stages, in order, and their blocks
        self.live = [int(s) for s in st.stages_of(self.group) if st.nbytes[s] > 0]
        self.qs = tuple(int(st.root[s]) for s in self.live)
        own = [s for s, q in zip(self.live, self.qs) if q == self.me]
        #: this rank's own stage (consumed first when ahead), if it has one
        self.first = own[0] if own else None
        self.receives = len(self.live) - len(own)
        #: the one-pass operand: row offsets of each live stage's block in it
        self.start = np.concatenate(([0], np.cumsum(self.sizes[list(self.qs)]))).astype(np.int64)
        self.index = {s: i for i, s in enumerate(self.live)}
        # a window over the group's blocks in block order, which must be stage order
        if self.ahead and self.live and list(self.qs) == sorted(set(self.qs)):
            counts = np.zeros(len(self.sizes), dtype=np.int64)
            counts[list(self.qs)] = np.asarray(self.sizes)[list(self.qs)]
            self.shared = SharedRows.open(self.comm, counts)

    def product(self, which: str, X: np.ndarray, phase) -> np.ndarray:
        if self.ahead and self.shared is not None:
            out = self._in_window(which, X, phase)
            if out is not None:
                return out
        if self.ahead and 0 < self.receives <= BCAST_DEPTH:
            return self._one_pass(which, X, phase)
        st, me, sizes = self.stages, self.me, self.sizes
        mats = self.blocks.get(which, X.dtype)
        out = np.empty((int(sizes[me]), X.shape[1]), dtype=X.dtype)
        shape = (int(sizes.max(initial=0)), X.shape[1])
        written = False

        def provide(s: int, slot: int) -> np.ndarray:
            q = int(st.root[s])
            if q == me:
                return X
            return self.scratch.get(("bcast", slot), shape, X.dtype)[: int(sizes[q])]

        def consume(s: int, Xq: np.ndarray) -> None:
            nonlocal written
            q = int(st.root[s])
            if not written:
                csr_apply(mats[q], Xq, out)
                written = True
            elif mats[q].nnz:
                csr_apply(mats[q], Xq, out, accumulate=True)

        if self.ahead:
            st.run_ahead(self.comm, self.group, provide, consume, phase, self.first, BCAST_DEPTH)
        else:
            st.run(self.comm, self.group, lambda s: provide(s, 0), consume, phase)
        if not written:
            out[...] = 0
        return out

    def _in_window(self, which: str, X: np.ndarray, phase) -> np.ndarray | None:
        """`product` through the node window: this member's block written into its segment
        (when its block is one of the group's), one fence, one product over the group's
        blocks; None (and no window from now on, on every member) where the window cannot
        be made."""
        operand = self.shared.share(X, phase, mine=self.first is not None)
        if operand is None:
            self.shared = None
            return None
        self.stages.count_shared(self.comm, self.group, X.shape[1] * X.dtype.itemsize, phase)
        return csr_apply(self.blocks.joined(which, X.dtype, self.qs), operand)

    def _one_pass(self, which: str, X: np.ndarray, phase) -> np.ndarray:
        """`product` when the blocks the rank receives fit the window: every block of the
        group lands in its slice of one operand (X_me copied into its own), then one product
        with the blocks joined in stage order (the order the in-turn stages add them)."""
        M = self.blocks.joined(which, X.dtype, self.qs)
        start = self.start
        operand = self.scratch.get("operand", (int(start[-1]), X.shape[1]), X.dtype)

        def block(s: int) -> np.ndarray:
            i = self.index[s]
            return operand[start[i] : start[i + 1]]

        def own(s: int) -> bool:
            return self.qs[self.index[s]] == self.me

        def provide(s: int, slot: int) -> np.ndarray:
            return X if own(s) else block(s)

        def consume(s: int, Xq: np.ndarray) -> None:
            if own(s):
                np.copyto(block(s), X)

        result: list = []
        self.stages.run_ahead(
            self.comm,
            self.group,
            provide,
            consume,
            phase,
            self.first,
            BCAST_DEPTH,
            finish=lambda: result.append(csr_apply(M, operand)),
        )
        return result[0]


def dense_rows_work(rows: np.ndarray, call, nnz_rows: np.ndarray | None) -> np.ndarray:
    """(P, 4) work of `matmul` / `matmul_grads` with local blocks of `rows` rows of H
    (f_in columns) and W (f_in x f_out): 2 flops per multiply-add; dense rows: `rows` per
    dense product.  ``H @ W`` (or ``H^T dZ``) with a CSR H is a sparse product over its
    stored nonzeros (`nnz_rows`), `f_out` wide: counted as SpMM work (nonzeros and flops),
    as it runs at a sparse product's rate; ``dZ W^T`` is dense."""
    f_in, f_out = call.shape(1)
    rows = np.asarray(rows, dtype=np.int64)
    out = np.zeros((rows.shape[0], 4), dtype=np.int64)
    dense_products = 0
    if call.sparse(0) and nnz_rows is not None:
        nnz = np.asarray(nnz_rows, dtype=np.int64)
        out[:, 0] = nnz
        out[:, 1] = 2 * nnz * f_out
    else:
        out[:, 2] = 2 * rows * f_in * f_out
        dense_products = 1
    if call.method == "matmul_grads" and call.kw("need_input_grad"):
        out[:, 2] += 2 * rows * f_in * f_out
        dense_products += 1
    out[:, 3] = rows * dense_products
    return out


def spmm_work(nnz: np.ndarray, width: int) -> np.ndarray:
    """(P, 4) work of SpMMs multiplying `nnz` stored entries by `width` columns."""
    nnz = np.asarray(nnz, dtype=np.int64)
    out = np.zeros((nnz.shape[0], 4), dtype=np.int64)
    out[:, 0] = nnz
    out[:, 1] = 2 * nnz * int(width)
    return out
