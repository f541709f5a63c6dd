"""Runtime of Plexus for one rank: the protocol calls over the grid's axis communicators
(see `gcntrain.schemes.plexus`).

`PlexusOps` is written once for the host and the device: its products, the loss, dropout
and the parameters' sums of squares go through ``self.compute`` (`HOST` on the CPU binds
the very functions the CPU path calls: the Numba kernels, the row-chunked GEMM), its
arrays are made C-ordered by `_contiguous` and allocated by ``self.compute.xp``, so the CPU
path's arithmetic is that of the functions it called before, bit for bit.  What differs
on a device (the staged communicators, the resident blocks of S and their product, the
index arrays of the moves copied once) is `gcntrain.schemes.plexus.device`'s."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from gcntrain.kernels.spmm import spmm_csr_dense
from gcntrain.model.functional import row_l1_norms
from gcntrain.model.functional import row_normalize as normalize_rows
from gcntrain.model.ops import Ops, ParamSpec
from gcntrain.model.phase import phase_key
from gcntrain.partition.basic import block_bounds
from gcntrain.schemes.layout import owner_of
from gcntrain.schemes.plexus.layout import PlexusLayout
from gcntrain.schemes.plexus.placement import INPUT, Place, agg_out
from gcntrain.schemes.two_d import gather_columns


class PlexusOps(Ops):
    """Runtime of Plexus for one rank (see `gcntrain.schemes.plexus`)."""

    def __init__(self, world, layout: PlexusLayout, axis_comms: dict, shards: dict):
        self.world = world
        self.layout = layout
        self.axis = axis_comms  # grid axis -> Comm over the ranks differing only there
        self.c = layout.coords(world.rank)
        self.shards = shards  # key -> CSR (float64), rows chunk q, columns chunk r
        self._typed: dict = {}
        self._moves: dict = {}
        #: placement -> original ids of its local rows (one array each: the dropout masks
        #: of a device copy them to the device once)
        self._place_rows: dict = {}
        self.rank, self.size = world.rank, world.size
        self.n_global = layout.n
        self.rows = layout.rows_of(layout.output, world.rank)
        self.input_rows = layout.rows_of(INPUT, world.rank)

    # -- helpers -------------------------------------------------------------------------------
    def _contiguous(self, a):
        """`a` C-ordered, on the compute's array module (a device array stays there)."""
        return self.compute.xp.ascontiguousarray(a)

    def _plan(self, phase):
        return self.layout.plans[int(phase.layer)]

    def _cols(self, p: Place, width: int) -> tuple[int, int]:
        f = self.layout.fbounds(width, p.col)
        i = self.c[p.col]
        return int(f[i]), int(f[i + 1])

    def _matrix(self, key, transpose: bool, dtype) -> sp.csr_matrix:
        """The shard (or its transpose) with values in `dtype`, built once."""
        k = (key, transpose, np.dtype(dtype).str)
        if k not in self._typed:
            M = self.shards[key]
            if transpose:
                M = M.T.tocsr()
                M.sort_indices()
            self._typed[k] = M.astype(dtype) if M.dtype != dtype else M
        return self._typed[k]

    def _blocks(self, p: Place, transpose: bool, dtype) -> list:
        """[(lo, hi, block)]: the blocks of ``layout.block_rows`` rows of the shard at p (or
        of its transpose) in `dtype`, as `_block_product` takes them; on the host a block
        is a window of the row pointer (nothing is copied)."""
        M = self._matrix(self.layout.shard_key(p), transpose, dtype)
        blocks = row_blocks(M.shape[0], self.layout.block_rows)
        return [(lo, hi, (M.indptr[lo : hi + 1], M.indices, M.data)) for lo, hi in blocks]

    def _block_product(self, block, X):
        """A block of `_blocks` times X (the Numba kernel over the window's rows)."""
        indptr, indices, data = block
        out = np.empty((indptr.shape[0] - 1, X.shape[1]), dtype=X.dtype)
        return spmm_csr_dense(indptr, indices, data, X, out)

    def _spmm(self, X, p: Place, transpose: bool, key: str) -> np.ndarray:
        """``S @ X`` (X at p, output at ``agg_out(p)``) or, with `transpose`, ``S^T @ X``
        (X at ``agg_out(p)``, output at p): per block of `_blocks`, its product Allreduced
        into its rows of the output."""
        X = self._contiguous(X)
        blocks = self._blocks(p, transpose, X.dtype)
        comm = self.axis[p.rep if transpose else p.row]
        out = self.compute.xp.empty((blocks[-1][1], X.shape[1]), dtype=X.dtype)
        for lo, hi, M in blocks:
            comm.allreduce(self._block_product(M, X), key, out=out[lo:hi])
        return out

    def _move_plan(self, p: Place) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(local rows this rank sends, where the received rows go, rows per member) of the
        move from p to ``agg_out(p)``, computed once per placement."""
        lay = self.layout
        if p not in self._moves:
            tgt = agg_out(p)
            bt, bs = lay.bounds(tgt.row), lay.bounds(p.row)
            i = self.c[tgt.row]
            pos_t = np.arange(bt[i], bt[i + 1], dtype=np.int64)
            src = lay.position(lay.num(p.num), lay.original(lay.num(tgt.num), pos_t))
            owner = owner_of(src, bs)
            mine = np.flatnonzero(owner == self.c[p.row])
            order = np.argsort(owner, kind="stable")
            counts = np.bincount(owner, minlength=lay.dims[p.row]).astype(np.int64)
            self._moves[p] = (src[mine] - bs[self.c[p.row]], order, counts)
        return self._moves[p]

    def _move_index(self, p: Place) -> tuple:
        """`_move_plan` with its two index arrays where the rows are (the host's here)."""
        return self._move_plan(p)

    def _move(self, X, p: Place, width: int, key: str) -> np.ndarray:
        """X at p (r, c) to ``agg_out(p)`` (q, c): Allgatherv over the r-axis group."""
        local, order, counts = self._move_index(p)
        X = self._contiguous(X.toarray() if hasattr(X, "toarray") else X)
        got = self.axis[p.row].allgatherv(self._contiguous(X[local]), counts, key)
        out = self.compute.xp.empty((order.shape[0], X.shape[1]), dtype=X.dtype)
        out[order] = got
        return out

    def _weight(self, W, spec_shape, p: Place, key: str) -> np.ndarray:
        """The block of W (rows chunk c of f_in, columns chunk q of f_out) from the element
        chunks of the r-axis group."""
        r0, r1, c0, c1 = self.layout.weight_block(spec_shape, p, self.c)
        counts = block_bounds((r1 - r0) * (c1 - c0), self.layout.dims[p.row])
        flat = self.axis[p.row].allgatherv(self._contiguous(W), np.diff(counts), key)
        return flat.reshape(r1 - r0, c1 - c0)

    def _gather_cols(self, X, p: Place, width: int, key: str) -> np.ndarray:
        """Whole rows of X at p (Allgatherv of the column chunks over the column axis, the
        rows joined by the compute's array module)."""
        widths = np.diff(self.layout.fbounds(width, p.col))
        return gather_columns(self.axis[p.col], X, widths, key, self.compute.xp)

    def _rows_at(self, p: Place) -> np.ndarray:
        """Original ids of the local rows at p (one array per placement)."""
        if p not in self._place_rows:
            self._place_rows[p] = self.layout.rows_of(p, self.rank)
        return self._place_rows[p]

    # -- protocol ------------------------------------------------------------------------------
    def col_range(self, width: int) -> tuple[int, int]:
        """Columns of the logits' local block (the output placement)."""
        return self._cols(self.layout.output, width)

    def _sum_nodes(self, a, phase):
        return self.axis[self.layout.output.row].allreduce(a, phase_key(phase))

    def _sum_elements(self, a, phase):
        send = a if self.c[INPUT.rep] == 0 else np.zeros_like(a)
        return self.world.allreduce(send, phase_key(phase))

    def _decide(self, flag, phase) -> bool:
        return self.world.bcast_flag(bool(flag), 0, phase_key(phase))

    def _vector_place(self, spec: ParamSpec) -> Place:
        """Where a vector parameter's columns sit: a bias on its layer's output's, a
        normalisation's scale and shift on its layer's input's (`ParamSpec.on_input`)."""
        pl = self.layout.plans[spec.layer]
        return pl.inp if spec.on_input else pl.out

    def column_sum(self, a, *, width, phase):
        """BatchNorm's column sums of the layer's input (at ``plan.inp``): an Allreduce over
        its row axis (the ranks holding its columns, one copy of every row; each replica
        along the third axis sums alike)."""
        p = self._plan(phase).inp
        return self.axis[p.row].allreduce(self._contiguous(a), phase_key(phase))

    def shard_param(self, full, spec: ParamSpec, *, phase):
        pl = self.layout.plans[spec.layer]
        if spec.is_bias:
            lo, hi = self._cols(self._vector_place(spec), spec.shape[0])
            return self.compute.param(full[lo:hi].copy())
        p = pl.mm
        r0, r1, c0, c1 = self.layout.weight_block(spec.shape, p, self.c)
        block = np.ascontiguousarray(full[r0:r1, c0:c1]).reshape(-1)
        b = block_bounds(block.size, self.layout.dims[p.row])
        i = self.c[p.row]
        return self.compute.param(block[b[i] : b[i + 1]].copy())

    def gather_param(self, local, spec: ParamSpec, *, phase):
        lay, key = self.layout, phase_key(phase)
        pl = lay.plans[spec.layer]
        if spec.is_bias:
            col = self._vector_place(spec).col
            w = np.diff(lay.fbounds(spec.shape[0], col))
            return self.axis[col].allgatherv(self._contiguous(local), w, key)
        counts = lay.weight_chunks(spec.shape, pl.mm)
        flat = self.world.allgatherv(self._contiguous(local), counts, key)
        return assemble_weight(lay, spec.shape, pl.mm, self.compute.to_host(flat), local.dtype)

    def param_sum_sq(self, local, spec: ParamSpec, *, phase) -> float:
        """``sum(W ** 2)`` of the whole parameter: a bias is counted on one rank of its
        replicas only, the others send 0 without reading theirs."""
        mine = 0.0
        out = self._vector_place(spec)
        if not spec.is_bias or (self.c[out.row] == 0 and self.c[out.rep] == 0):
            mine = self.compute.sum_sq(local)
        return float(self.world.allreduce(np.array([mine]), phase_key(phase))[0])

    def row_normalize(self, X, *, width, phase):
        norms = self.axis[INPUT.col].allreduce(row_l1_norms(X), phase_key(phase))
        return normalize_rows(X, norms)

    def _dropout_args(self, phase, width):
        p = self._plan(phase).inp
        return self._rows_at(p), self._cols(p, width)[0]

    def dropout(self, H, key, rate, *, width, phase):
        if key is None or rate <= 0.0:
            return H
        rows, lo = self._dropout_args(phase, width)
        return self.compute.dropout_forward(H, rows, key[0], key[1], rate, lo)

    def dropout_backward(self, dH, key, rate, *, width, phase):
        if key is None or rate <= 0.0:
            return dH
        rows, lo = self._dropout_args(phase, width)
        return self.compute.dropout_backward(dH, rows, key[0], key[1], rate, lo)

    def aggregate(self, X, *, phase):
        return self._spmm(X, self._plan(phase).agg, False, phase_key(phase))

    def aggregate_t(self, X, *, phase):
        return self._spmm(X, self._plan(phase).agg, True, phase_key(phase))

    def matmul(self, H, W, *, phase):
        pl, key = self._plan(phase), phase_key(phase)
        spec_shape = self.layout.weight_shape(phase.layer)
        selfterm = phase.term == "self"
        if selfterm and pl.self_first:
            H = self._move(H, pl.inp, spec_shape[0], key)
        Wb = self._weight(W, spec_shape, pl.mm, key)
        Z = self.axis[pl.mm.col].allreduce(self._contiguous(self.compute.matmul(H, Wb)), key)
        if selfterm and not pl.self_first:
            Z = self._move(Z, pl.agg, spec_shape[1], key)
        return Z

    def matmul_grads(self, H, W, dZ, *, need_input_grad, phase):
        pl, key = self._plan(phase), phase_key(phase)
        spec_shape = self.layout.weight_shape(phase.layer)
        selfterm = phase.term == "self"
        if selfterm and pl.self_first:
            H = self._move(H, pl.inp, spec_shape[0], key)
        if selfterm and not pl.self_first:
            dZ = self._move(dZ, pl.out, spec_shape[1], key)
        c = self.compute
        dZ = self._contiguous(dZ)
        dW = self._contiguous(c.matmul_tn(H, dZ))
        dH = None
        if need_input_grad:
            Wb = self._weight(W, spec_shape, pl.mm, key)
            dH = self.axis[pl.mm.rep].allreduce(self._contiguous(c.matmul(dZ, Wb.T)), key)
            if selfterm and pl.self_first:
                dH = self._move(dH, pl.mm, spec_shape[0], key)
        return dH, dW

    def reduce_weight_grad(self, dW, spec: ParamSpec, *, phase):
        p = self.layout.plans[spec.layer].mm
        counts = np.diff(block_bounds(int(dW.size), self.layout.dims[p.row]))
        send = self._contiguous(dW).reshape(-1)
        return self.axis[p.row].reduce_scatterv(send, counts, phase_key(phase))

    def bias_grad(self, dZ, spec: ParamSpec, *, phase):
        out = self.layout.plans[spec.layer].out
        part = self._contiguous(dZ.sum(axis=0))
        return self.axis[out.row].allreduce(part, phase_key(phase))

    def xent(self, logits, labels, masks, *, width, grad_index=None, grad_divisor=1.0, phase):
        out = self.layout.output
        full = self._gather_cols(logits, out, width, phase_key(phase))
        sums, grad = self.compute.local_xent(full, labels, masks, grad_index, grad_divisor)
        if grad is not None:
            lo, hi = self._cols(out, width)
            grad = self._contiguous(grad[:, lo:hi])
        return self.node_sum(sums, phase=phase), grad

    def predict(self, logits, *, width, phase):
        """int64 argmax of the whole rows (on the compute's array module)."""
        full = self._gather_cols(logits, self.layout.output, width, phase_key(phase))
        if not full.size:
            return np.zeros(full.shape[0], dtype=np.int64)
        xp = self.compute.xp
        return xp.argmax(full, axis=1).astype(xp.int64)


def row_blocks(m: int, block: int) -> list[tuple[int, int]]:
    """[lo, hi) blocks of `block` rows covering m rows (one block when `block` <= 0)."""
    if block <= 0 or m <= block:
        return [(0, m)]
    starts = np.arange(0, m, block)
    return [(int(s), int(min(s + block, m))) for s in starts]


def assemble_weight(layout: PlexusLayout, shape, p: Place, flat: np.ndarray, dtype):
    """The whole W from every rank's element chunk (concatenated in rank order)."""
    full = np.zeros(tuple(shape), dtype=dtype)
    counts = layout.weight_chunks(shape, p)
    starts = np.concatenate(([0], np.cumsum(counts)))
    for rank in range(layout.size):
        c = layout.coords_all[rank]
        if c[p.row] != 0:
            continue
        a, b, lo, hi = layout.weight_block(shape, p, c)
        members = layout.rank_of(
            np.array([[*c[: p.row], k, *c[p.row + 1 :]] for k in range(layout.dims[p.row])])
        )
        block = np.concatenate([flat[starts[m] : starts[m + 1]] for m in members])
        full[a:b, lo:hi] = block.reshape(b - a, hi - lo)
    return full
