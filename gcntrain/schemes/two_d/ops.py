"""Runtime of the 2D / split-3D scheme for one rank (`TwoDOps`), the stage pieces of S it
broadcasts (`StagePieces`), and the setup helpers that build its blocks of S and S^T."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from gcntrain.kernels.coo import indptr_from_sorted_rows
from gcntrain.model.functional import row_l1_norms, row_normalize
from gcntrain.model.ops import Ops, ParamSpec
from gcntrain.model.phase import phase_key
from gcntrain.partition.csr import keep_entries
from gcntrain.schemes.base import csr_apply
from gcntrain.schemes.layout import owner_of
from gcntrain.schemes.two_d.layout import (
    ENTRY_ID_BYTES,
    Layout2D,
    chunk_offsets,
    summa_stages,
    transpose_pairs,
    use_gather,
)


def gather_columns(comm, X, widths: np.ndarray, key: str, xp=np) -> np.ndarray:
    """Whole rows from column chunks: member k of `comm` holds ``widths[k]`` columns of the
    same rows (one Allgatherv of the flattened chunks); `xp` is the array module of `X`
    (a device's: `comm` a staged communicator, the rows joined on the device)."""
    X = xp.ascontiguousarray(X)
    m = X.shape[0]
    flat = comm.allgatherv(X.reshape(-1), widths * m, key)
    parts = xp.split(flat, np.cumsum(widths * m)[:-1].tolist())
    return xp.ascontiguousarray(xp.hstack([a.reshape(m, int(k)) for a, k in zip(parts, widths)]))


def _is_sparse(H) -> bool:
    """Whether `H` is CSR: a SciPy matrix, or features resident on a device (which have
    ``with_data``, `gcntrain.model.compute.ArrayCompute.features`)."""
    return sp.issparse(H) or hasattr(H, "with_data")


class CSRPiece(NamedTuple):
    """A CSR matrix as its arrays (what `csr_apply` reads), without scipy's checks and
    conversions: a received SUMMA piece is multiplied once and dropped."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    shape: tuple[int, int]


class StagePieces:
    """The pieces of this rank's block of S (or S^T) that it broadcasts, one per stage in its
    column part, as CSR (for its own products) and packed (int32 rows, int32 columns, values)
    for the wire; typed once per dtype."""

    def __init__(self, layout: Layout2D, i: int, j: int, k: int, indptr, indices, data):
        a, b, _, c_own, layer = layout.stages
        m = int(layout.row_sizes[i])
        M = sp.csr_matrix((data, indices, indptr), shape=(m, int(layout.offsets[-1])))
        self.own = {}
        for s in np.flatnonzero((c_own == j) & (layer == k)):
            P = M[:, int(a[s]) : int(b[s])].tocsr()
            P.sort_indices()
            self.own[int(s)] = P
        self.m = m
        self._typed: dict = {}

    def nnz(self) -> np.ndarray:
        """Entries of the owned stages, in stage order."""
        return np.array([self.own[s].nnz for s in sorted(self.own)], dtype=np.int64)

    def get(self, s: int, dtype) -> tuple[sp.csr_matrix, np.ndarray]:
        key = (s, np.dtype(dtype).str)
        if key not in self._typed:
            P = self.own[s]
            typed = sp.csr_matrix((P.data.astype(dtype), P.indices, P.indptr), shape=P.shape)
            rows = np.repeat(np.arange(P.shape[0], dtype=np.int32), np.diff(P.indptr))
            wire = np.concatenate(
                [
                    rows.view(np.uint8),
                    P.indices.astype(np.int32).view(np.uint8),
                    P.data.astype(dtype).view(np.uint8),
                ]
            )
            self._typed[key] = (typed, wire)
        return self._typed[key]

    @staticmethod
    def unpack(buf: np.ndarray, nnz: int, m: int, width: int, dtype) -> CSRPiece:
        """The CSR piece (m x width) of a received wire buffer: views of its columns and
        values, row pointers from its row ids (in CSR order) in one pass."""
        rows = buf[: 4 * nnz].view(np.int32)
        cols = buf[4 * nnz : 8 * nnz].view(np.int32)
        vals = buf[8 * nnz :].view(dtype)
        indptr = np.empty(m + 1, dtype=np.int64)
        if indptr_from_sorted_rows(rows, indptr) != nnz:
            raise RuntimeError("2D: a received piece's row ids are out of order or range")
        return CSRPiece(indptr, cols, vals, (m, width))


class TwoDOps(Ops):
    """Runtime of the 2D scheme for one rank (see `gcntrain.schemes.two_d`)."""

    def __init__(self, world, grid, layout: Layout2D, pieces: dict, nnz: dict, rows, lcol, fiber):
        self.world = world
        self.grid = grid  # process rows and (all-layer) columns of the virtual grid
        self.lcol, self.fiber = lcol, fiber  # this layer's process column, the fiber
        self.layout = layout
        self.I, self.j = grid.i, grid.j
        self.i, self.k = divmod(self.I, layout.pz)
        self.rows = np.asarray(rows, dtype=np.int64)
        self.n_global = int(layout.offsets[-1])
        self.rank, self.size = world.rank, world.size
        self.pieces = pieces  # "f"/"t" -> StagePieces
        self.nnz = nnz  # "f"/"t" -> entries of S_i (or S^T_i) per stage of this layer
        self.m = int(layout.node_sizes[self.I])  # node-wise rows (slice I)
        self.ma = int(layout.row_sizes[self.i])  # rows of S's block (row part i)
        self._stage_cache: dict = {}  # (which, width) -> `summa_stages` of this rank

    # -- layout ---------------------------------------------------------------------------
    def col_range(self, width: int) -> tuple[int, int]:
        f = chunk_offsets(width, self.layout.pc)
        return int(f[self.j]), int(f[self.j + 1])

    def _contig(self, a):
        """`a` C-ordered (the device Ops keep a device array on the device)."""
        return np.ascontiguousarray(a)

    def _dense(self, a):
        """A product's result as an array (the device Ops' products are arrays already)."""
        return np.asarray(a)

    # -- hooks: sums over nodes run down a process column (one copy of every row) ----------
    def _sum_nodes(self, a, phase):
        return self.grid.col.allreduce(self._contig(a), phase_key(phase))

    def _sum_params(self, a, phase):
        return self.grid.col.allreduce(self._contig(a), phase_key(phase))

    def _sum_elements(self, a, phase):
        return self.world.allreduce(self._contig(a), phase_key(phase))

    def _decide(self, flag, phase) -> bool:
        return self.world.bcast_flag(bool(flag), 0, phase_key(phase))

    # -- rows whose columns are split --------------------------------------------------------
    def _row_gather(self, X, width: int, key: str) -> np.ndarray:
        """Whole rows (m x width) from the column chunks of process row i."""
        w = np.diff(chunk_offsets(width, self.layout.pc))
        return gather_columns(self.grid.row, X, w, key, self.compute.xp)

    def _row_reduce_scatter(self, part: np.ndarray, width: int, key: str) -> np.ndarray:
        """Chunk j of the sum over process row i of the whole-width partial products."""
        f = chunk_offsets(width, self.layout.pc)
        xp = self.compute.xp
        send = xp.concatenate([part[:, f[c] : f[c + 1]].reshape(-1) for c in range(len(f) - 1)])
        got = self.grid.row.reduce_scatterv(send, np.diff(f) * self.m, key)
        return got.reshape(self.m, int(f[self.j + 1] - f[self.j]))

    # BatchNorm's column sums (`Ops.column_sum`): `_sum_nodes`, down the process column of
    # the chunk, is the sum over the ranks holding those columns (split-3D: every slice)

    # -- parameters: W replicated, vectors (biases, normalisations) chunked like the columns -
    def shard_param(self, full, spec: ParamSpec, *, phase):
        if not spec.is_bias:
            return self.compute.param(full)
        lo, hi = self.col_range(spec.shape[0])
        return self.compute.param(full[lo:hi].copy())

    def gather_param(self, local, spec: ParamSpec, *, phase):
        if not spec.is_bias:
            return local
        w = np.diff(chunk_offsets(spec.shape[0], self.layout.pc))
        return self.grid.row.allgatherv(self._contig(local), w, phase_key(phase))

    def param_sum_sq(self, local, spec: ParamSpec, *, phase) -> float:
        s = self.compute.sum_sq(local)
        if not spec.is_bias:
            return s
        return float(self.grid.row.allreduce(np.array([s]), phase_key(phase))[0])

    # -- features --------------------------------------------------------------------------
    def row_normalize(self, X, *, width, phase):
        norms = self.grid.row.allreduce(row_l1_norms(X), phase_key(phase))
        return row_normalize(X, norms)

    # -- products with S: SUMMA ------------------------------------------------------------
    def _stages(self, which: str, w: int) -> tuple:
        """This rank's view of the product's broadcast stages (`summa_stages` in entries and
        rows, so roots and empty stages only), built once per product kind and width: on
        Cora building them took 0.4 of a 4.5 ms epoch."""
        key = (which, w)
        got = self._stage_cache.get(key)
        if got is None:
            lay = self.layout
            table = np.zeros((lay.pr, lay.stages[0].shape[0]), dtype=np.int64)
            table[self.i, lay.stages_of_layer(self.k)] = self.nnz[which]
            got = summa_stages(lay, table, 1, np.full(lay.pc, w, dtype=np.int64), 1)
            self._stage_cache[key] = got
        return got

    def _summa(self, which: str, X: np.ndarray, key: str) -> np.ndarray:
        lay = self.layout
        X = np.ascontiguousarray(X)
        w, dt = X.shape[1], X.dtype
        a, b = lay.stages[0], lay.stages[1]
        mine = lay.stages_of_layer(self.k)
        A, Xs = self._stages(which, w)
        pieces = self.pieces[which]
        out = np.zeros((self.ma, w), dtype=dt)
        xbuf = np.empty((int((b - a).max(initial=0)), w), dtype=dt)
        item = dt.itemsize
        group_x = self.k * lay.pc + self.j
        for s, ka, kx in zip(mine, A.stages_of(self.I), Xs.stages_of(group_x)):
            lo, hi = int(a[s]), int(b[s])
            r, c = int(Xs.root[kx]), int(A.root[ka])
            if self.i == r:
                base = int(lay.node_offsets[self.I])
                xp = X[lo - base : hi - base]
            else:
                xp = xbuf[: hi - lo]
            if Xs.nbytes[kx] > 0:
                self.lcol.bcast(xp, r, key)
            k = int(A.nbytes[ka])
            if k == 0:
                continue
            if self.j == c:
                M, wire = pieces.get(int(s), dt)
                self.grid.row.bcast(wire, c, key)
            else:
                wire = np.empty(k * (ENTRY_ID_BYTES + item), dtype=np.uint8)
                self.grid.row.bcast(wire, c, key)
                M = StagePieces.unpack(wire, k, self.ma, hi - lo, dt)
            if w:
                csr_apply(M, xp, out, accumulate=True)
        if self.fiber is None:
            return out
        pz = lay.pz
        counts = lay.node_sizes[self.i * pz : (self.i + 1) * pz] * w
        got = self.fiber.reduce_scatterv(out.reshape(-1), counts, key)
        return got.reshape(self.m, w)

    def aggregate(self, X, *, phase):
        return self._summa("f", X, phase_key(phase))

    def aggregate_t(self, X, *, phase):
        return self._summa("t" if "t" in self.pieces else "f", X, phase_key(phase))

    # -- products with W ---------------------------------------------------------------------
    def matmul(self, H, W, *, phase):
        f_in, f_out = W.shape
        key = phase_key(phase)
        mm = self.compute.matmul
        if use_gather(_is_sparse(H), f_in, f_out):
            lo, hi = self.col_range(f_out)
            return mm(self._row_gather(H, f_in, key), W[:, lo:hi])
        lo, hi = self.col_range(f_in)
        return self._row_reduce_scatter(self._dense(mm(H, W[lo:hi, :])), f_out, key)

    def matmul_grads(self, H, W, dZ, *, need_input_grad, phase):
        f_in, f_out = W.shape
        dZi = self._row_gather(dZ, f_out, phase_key(phase))
        lo, hi = self.col_range(f_in)
        dW = self._dense(self.compute.matmul_tn(H, dZi))
        dH = self.compute.matmul(dZi, W[lo:hi, :].T) if need_input_grad else None
        return dH, dW

    def reduce_weight_grad(self, dW, spec: ParamSpec, *, phase):
        key = phase_key(phase)
        slab = self.grid.col.allreduce(self._contig(dW), key)
        w = np.diff(chunk_offsets(spec.shape[0], self.layout.pc))
        return self.grid.row.allgatherv(slab, w, key)

    def bias_grad(self, dZ, spec: ParamSpec, *, phase):
        return self.grid.col.allreduce(self._contig(dZ.sum(axis=0)), phase_key(phase))

    # -- whole rows --------------------------------------------------------------------------
    def xent(self, logits, labels, masks, *, width, grad_index=None, grad_divisor=1.0, phase):
        full = self._row_gather(logits, width, phase_key(phase))
        sums, grad = self.compute.local_xent(full, labels, masks, grad_index, grad_divisor)
        if grad is not None:
            lo, hi = self.col_range(width)
            grad = self._contig(grad[:, lo:hi])
        return self.node_sum(sums, phase=phase), grad

    def predict(self, logits, *, width, phase):
        full = self._row_gather(logits, width, phase_key(phase))
        return super().predict(full, width=width, phase=phase)


def layer_columns(csr: tuple, layout: Layout2D, k: int) -> tuple:
    """Keep the entries whose column lies in a slice of layer `k` (all of them in 2D)."""
    if layout.pz == 1:
        return csr
    indptr, indices, data = csr
    layer = owner_of(np.asarray(indices, dtype=np.int64), layout.node_offsets) % layout.pz
    return keep_entries(indptr, indices, data, layer == k)


def _transpose_block(world, layout: Layout2D, i: int, fwd):
    """This rank's block of S^T from every block of S (an Alltoall of counts and two
    Alltoallv over the world, entries routed by `transpose_pairs`)."""
    indptr, indices, data = fwd
    m = indptr.shape[0] - 1
    rows = np.repeat(np.arange(m, dtype=np.int64) + layout.offsets[i], np.diff(indptr))
    cols = np.asarray(indices, dtype=np.int64)
    _, dst = transpose_pairs(layout, rows, cols)
    (got, vals), _, _, _ = world.route(dst, [np.stack([cols, rows], axis=1), data], "setup")
    T = sp.csr_matrix(
        (vals, (got[:, 0] - layout.offsets[i], got[:, 1])), shape=(m, int(layout.offsets[-1]))
    )
    T.sum_duplicates()
    T.sort_indices()
    return T.indptr.astype(np.int64), T.indices.astype(np.int64), T.data.astype(np.float64)
