"""CAGNET 2D (section IV-C, Algorithm 3 of the CAGNET paper): block-2D SUMMA on any Pr x Pc.

Ranks form a Pr x Pc grid, rank r at (i, j) = (r // Pc, r % Pc).  The numbering's Pr row parts
split the rows of S and of every node-wise matrix; Pc column parts of the same numbering split
the columns of S; a node-wise matrix of width f has its columns split in Pc near-equal chunks.
Rank (i, j) holds S_ij, H_ij (rows of part i, columns of chunk j), the whole W (replicated,
as in the paper) and chunk j of each bias.  n need not be divisible by the grid.

* ``S @ X`` (SUMMA): the inner dimension is cut at every row-part and column-part boundary
  (at most Pr + Pc - 1 stages; the general rectangular case of Algorithm 3).  At stage
  [a, b) the owner of those columns of S broadcasts its piece of S_i along process row i
  (sparse: 4-byte row and column ids plus the value per entry), the owner of those rows of X
  broadcasts its piece along process column j, and every rank adds the product.  ``S^T @ X``
  does the same with the blocks of S^T (built once by an Alltoallv of entries; dropped when S
  is symmetric).
* ``H @ W`` ("partial SUMMA"): with f_in <= f_out (dense H) process row i Allgathers the
  column chunks of H_i and each rank multiplies by its columns of W; otherwise (or for a CSR
  H) each rank multiplies its chunk by its rows of W and the partial products are
  Reduce-scattered along the process row, so the wider operand never moves.
* Backward: ``dZ_i`` is Allgathered along the process row once per product; ``dH_ij =
  dZ_i W[chunk j]^T`` and the slab ``dW[chunk j] = H_ij^T dZ_i`` are local; the slabs are
  summed down each process column (Allreduce) and Allgathered along the rows (W stays
  replicated).  Bias gradients: an Allreduce down the column of the chunk's column sums.
* Softmax cross-entropy, accuracy and argmax need whole rows of the logits: an Allgather along
  the process row (the paper's All-Gather for log-softmax); sums over nodes run down a
  process column (one copy of every row); row normalisation of the features Allreduces the
  partial L1 norms along the row.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from gcntrain.comm.exchange import (
    Allgatherv,
    Allreduce,
    BcastStages,
    Groups,
    Pairs,
    ReduceScatterv,
    Uniform,
)
from gcntrain.comm.grid import factorizations, grid_2d, parse_dims
from gcntrain.kernels import dense
from gcntrain.kernels.coo import indptr_from_sorted_rows
from gcntrain.model.functional import row_l1_norms, row_normalize
from gcntrain.model.loss import local_xent
from gcntrain.model.normalize import DEGREE_OFFSET, degrees, support_rows
from gcntrain.model.ops import Ops, ParamSpec
from gcntrain.model.phase import phase_key
from gcntrain.partition.basic import block_bounds
from gcntrain.partition.csr import concat_ranges, keep_entries, sorted_unique
from gcntrain.schemes.base import csr_apply, spmm_work
from gcntrain.schemes.layout import owner_of
from gcntrain.schemes.protocol import (
    REORDER_OPTION,
    LoadRequest,
    Numbering,
    Scheme,
    SchemeOption,
    reorder_config,
)

#: bytes of one broadcast entry of S besides its value: int32 row and int32 column
ENTRY_ID_BYTES = 8


#: the process-grid option of the block schemes (one declaration, shared)
GRID_OPTION = SchemeOption(
    "grid",
    ("--grid",),
    None,
    "Process grid of the block schemes: RxC for 2d, XxYxZ for 3d "
    "[default: the most nearly square / cubic].",
    str,
    "RxC|XxYxZ",
)


def chunk_offsets(width: int, parts: int) -> np.ndarray:
    """Offsets (parts + 1) of the near-equal column chunks of a width-`width` matrix (the
    `block_bounds` convention: the first ``width % parts`` chunks one column wider)."""
    return block_bounds(int(width), int(parts))


def use_gather(sparse_input: bool, f_in: int, f_out: int) -> bool:
    """Matmul route: gather the input's chunks (dense, f_in <= f_out) or Reduce-scatter the
    partial products (otherwise); the runtime and the plan both ask this function."""
    return not sparse_input and f_in <= f_out


def layer_offsets(offsets: np.ndarray, pz: int) -> np.ndarray:
    """Offsets (len(offsets) - 1) * pz + 1 of the layer slices: each block of `offsets`
    split in `pz` near-equal contiguous pieces (the first ones one row longer)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    if pz == 1:
        return offsets
    base, extra = np.divmod(np.diff(offsets), pz)
    sizes = base[:, None] + (np.arange(pz)[None, :] < extra[:, None])
    out = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes.reshape(-1), out=out[1:])
    return out


@dataclass(frozen=True)
class Layout2D:
    """Pr x Pc blocks of one numbering (row parts: the numbering's; column parts: the store's
    or near-equal blocks), each row part cut in Pz layer slices (Pz = 1: CAGNET 2D; Pz > 1:
    split-3D, see `gcntrain.schemes.three_d`).

    Rank r sits at virtual row I = r // Pc (row part i = I // Pz, layer k = I % Pz) and
    column j = r % Pc.  It holds S[row part i, columns of part j in layer k] (whole row
    parts: the rows of S's blocks) and the node-wise rows of slice I (`node_offsets`), columns
    chunk j.  Layer k owns the inner-dimension indices of slices (., k)."""

    numbering: Numbering
    pr: int
    pc: int
    col_offsets: np.ndarray
    num_features: int
    pz: int = 1

    @property
    def offsets(self) -> np.ndarray:
        """Row parts (the rows of S's blocks)."""
        return self.numbering.offsets

    @cached_property
    def node_offsets(self) -> np.ndarray:
        """Layer slices of the row parts, slice I = i * Pz + k (the node-wise rows)."""
        return layer_offsets(self.offsets, self.pz)

    @property
    def vr(self) -> int:
        """Virtual rows (row parts x layers)."""
        return self.pr * self.pz

    @property
    def size(self) -> int:
        return self.pr * self.pc * self.pz

    @property
    def row_sizes(self) -> np.ndarray:
        """(Pr,) rows of each row part."""
        return np.diff(self.offsets)

    @property
    def node_sizes(self) -> np.ndarray:
        """(Pr * Pz,) node-wise rows of each slice."""
        return np.diff(self.node_offsets)

    def coords(self, rank: int) -> tuple[int, int]:
        """(virtual row I, column j)."""
        return int(rank) // self.pc, int(rank) % self.pc

    def request(self, rank: int) -> LoadRequest:
        I, j = self.coords(rank)
        i = I // self.pz
        f = chunk_offsets(self.num_features, self.pc)
        return LoadRequest(
            (int(self.offsets[i]), int(self.offsets[i + 1])),
            (int(self.col_offsets[j]), int(self.col_offsets[j + 1])),
            (int(f[j]), int(f[j + 1])),
            node_rows=(int(self.node_offsets[I]), int(self.node_offsets[I + 1])),
        )

    def owned(self, rank: int) -> bool:
        return self.coords(rank)[1] == 0

    @cached_property
    def rows(self) -> Groups:
        """Process rows: the Pc ranks of one slice (position = column index)."""
        return Groups.axis((self.vr, self.pc), 1)

    @cached_property
    def cols(self) -> Groups:
        """Process columns: all Pr * Pz slices of one column (position = I)."""
        return Groups.axis((self.vr, self.pc), 0)

    @cached_property
    def layer_cols(self) -> Groups:
        """Process columns of one layer: Pr ranks (position = row part); group k * Pc + j."""
        return Groups.axis((self.pr, self.pz, self.pc), 0)

    @cached_property
    def fibers(self) -> Groups:
        """The Pz ranks of one (row part, column) (position = layer)."""
        return Groups.axis((self.pr, self.pz, self.pc), 1)

    @cached_property
    def stages(self) -> tuple[np.ndarray, ...]:
        """(start, stop, row part, column part, layer) of every SUMMA stage, in order: the
        inner dimension cut at every slice and column-part boundary."""
        cuts = np.union1d(self.node_offsets, self.col_offsets)
        a, b = cuts[:-1], cuts[1:]
        keep = b > a
        a, b = a[keep], b[keep]
        own = owner_of(a, self.node_offsets)
        return a, b, own // self.pz, owner_of(a, self.col_offsets), own % self.pz

    @cached_property
    def layer_stages(self) -> tuple[np.ndarray, np.ndarray]:
        """(stage ids sorted by layer, then in order; (Pz + 1,) pointers per layer)."""
        layer = self.stages[4]
        order = np.argsort(layer, kind="stable").astype(np.int64)
        ptr = np.zeros(self.pz + 1, dtype=np.int64)
        np.cumsum(np.bincount(layer, minlength=self.pz), out=ptr[1:])
        return order, ptr

    def stages_of_layer(self, k: int) -> np.ndarray:
        order, ptr = self.layer_stages
        return order[ptr[k] : ptr[k + 1]]

    def ranks_I(self) -> np.ndarray:
        return np.arange(self.size, dtype=np.int64) // self.pc

    def ranks_i(self) -> np.ndarray:
        return self.ranks_I() // self.pz

    def ranks_j(self) -> np.ndarray:
        return np.arange(self.size, dtype=np.int64) % self.pc


# -- exchange description (one definition for the runtime and the plan) ---------------------
def summa_stages(
    layout: Layout2D, nnz: np.ndarray, entry_bytes: int, widths: np.ndarray, itemsize: int
) -> tuple[BcastStages, BcastStages]:
    """The two broadcast families of one SUMMA product (each layer its own SUMMA over the
    stages of its slices).

    `nnz` (Pr, S): entries of S_i in stage s; `widths` (Pc,): the local width of X on each
    process column.  Returns (pieces of S along the process rows: ``nnz * entry_bytes``
    bytes from the stage's column part; pieces of X down the layer's process columns: stage
    rows x width x itemsize bytes from the stage's row part), stages of every group in the
    order of `Layout2D.stages_of_layer`.
    """
    a, b, r_own, c_own, _ = layout.stages
    order, ptr = layout.layer_stages
    lens = np.diff(ptr)
    # process rows: virtual row I runs the stages of layer I % Pz
    I = np.arange(layout.vr, dtype=np.int64)
    k = I % layout.pz
    sa = order[concat_ranges(ptr[k], lens[k])]
    A = BcastStages(
        layout.rows,
        np.repeat(I, lens[k]),
        c_own[sa],
        np.asarray(nnz, dtype=np.int64)[np.repeat(I // layout.pz, lens[k]), sa] * entry_bytes,
    )
    # layer columns: group g = k * Pc + j runs the stages of layer k
    g = np.arange(layout.pz * layout.pc, dtype=np.int64)
    kg, jg = g // layout.pc, g % layout.pc
    sx = order[concat_ranges(ptr[kg], lens[kg])]
    X = BcastStages(
        layout.layer_cols,
        np.repeat(g, lens[kg]),
        r_own[sx],
        np.repeat(np.asarray(widths, dtype=np.int64)[jg], lens[kg]) * (b - a)[sx] * itemsize,
    )
    return A, X


def fiber_step(layout: Layout2D, width_bytes: np.ndarray) -> list:
    """The Reduce-scatter along the fibers that ends a split-3D SpMM: rank r keeps its slice
    of the row part (``node_sizes[I] x width_bytes[j]`` bytes); none in 2D."""
    if layout.pz == 1:
        return []
    I, j = layout.ranks_I(), layout.ranks_j()
    return [ReduceScatterv(layout.fibers, layout.node_sizes[I] * np.asarray(width_bytes)[j])]


def stage_counts(layout: Layout2D) -> np.ndarray:
    """(Pz, Pc) stages of each layer whose columns lie in each column part."""
    _, _, _, c_own, layer = layout.stages
    idx = layer * layout.pc + c_own
    return np.bincount(idx, minlength=layout.pz * layout.pc).reshape(layout.pz, layout.pc)


def block_of(layout: Layout2D, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Rank holding entry (row, col) of S: row part of the row, column part and layer of
    the column."""
    layer = owner_of(cols, layout.node_offsets) % layout.pz
    I = owner_of(rows, layout.offsets) * layout.pz + layer
    return I * layout.pc + owner_of(cols, layout.col_offsets)


def transpose_pairs(layout: Layout2D, rows: np.ndarray, cols: np.ndarray):
    """(source rank, destination rank) of every entry (row, col) of S on its way to the
    block of S^T that holds (col, row)."""
    return block_of(layout, rows, cols), block_of(layout, cols, rows)


def gather_columns(comm, X, widths: np.ndarray, key: str) -> np.ndarray:
    """Whole rows from column chunks: member k of `comm` holds ``widths[k]`` columns of the
    same rows (one Allgatherv of the flattened chunks)."""
    X = np.ascontiguousarray(X)
    m = X.shape[0]
    flat = comm.allgatherv(X.reshape(-1), widths * m, key)
    parts = np.split(flat, np.cumsum(widths * m)[:-1])
    return np.ascontiguousarray(np.hstack([a.reshape(m, int(k)) for a, k in zip(parts, widths)]))


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
    """Runtime of the 2D scheme for one rank (see the module docstring)."""

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

    # -- hooks: sums over nodes run down a process column (one copy of every row) ----------
    def _sum_nodes(self, a, phase):
        return self.grid.col.allreduce(np.ascontiguousarray(a), phase_key(phase))

    def _sum_params(self, a, phase):
        return self.grid.col.allreduce(np.ascontiguousarray(a), phase_key(phase))

    def _sum_elements(self, a, phase):
        return self.world.allreduce(np.ascontiguousarray(a), phase_key(phase))

    def _decide(self, flag, phase) -> bool:
        return self.world.bcast_flag(bool(flag), 0, phase_key(phase))

    # -- rows whose columns are split --------------------------------------------------------
    def _row_gather(self, X, width: int, key: str) -> np.ndarray:
        """Whole rows (m x width) from the column chunks of process row i."""
        return gather_columns(self.grid.row, X, np.diff(chunk_offsets(width, self.layout.pc)), key)

    def _row_reduce_scatter(self, part: np.ndarray, width: int, key: str) -> np.ndarray:
        """Chunk j of the sum over process row i of the whole-width partial products."""
        f = chunk_offsets(width, self.layout.pc)
        send = np.concatenate([part[:, f[c] : f[c + 1]].reshape(-1) for c in range(len(f) - 1)])
        got = self.grid.row.reduce_scatterv(send, np.diff(f) * self.m, key)
        return got.reshape(self.m, int(f[self.j + 1] - f[self.j]))

    # -- parameters: W replicated, biases chunked like the columns of Z ----------------------
    def shard_param(self, full, spec: ParamSpec, *, phase):
        if not spec.is_bias:
            return full
        lo, hi = self.col_range(spec.shape[0])
        return full[lo:hi].copy()

    def gather_param(self, local, spec: ParamSpec, *, phase):
        if not spec.is_bias:
            return local
        w = np.diff(chunk_offsets(spec.shape[0], self.layout.pc))
        return self.grid.row.allgatherv(np.ascontiguousarray(local), w, phase_key(phase))

    def param_sum_sq(self, local, spec: ParamSpec, *, phase) -> float:
        s = float(np.sum(np.square(local, dtype=np.float64)))
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
        if use_gather(sp.issparse(H), f_in, f_out):
            lo, hi = self.col_range(f_out)
            return dense.matmul(self._row_gather(H, f_in, key), W[:, lo:hi])
        lo, hi = self.col_range(f_in)
        return self._row_reduce_scatter(np.asarray(dense.matmul(H, W[lo:hi, :])), f_out, key)

    def matmul_grads(self, H, W, dZ, *, need_input_grad, phase):
        f_in, f_out = W.shape
        dZi = self._row_gather(dZ, f_out, phase_key(phase))
        lo, hi = self.col_range(f_in)
        dW = np.asarray(dense.matmul_tn(H, dZi))
        dH = dense.matmul(dZi, W[lo:hi, :].T) if need_input_grad else None
        return dH, dW

    def reduce_weight_grad(self, dW, spec: ParamSpec, *, phase):
        key = phase_key(phase)
        slab = self.grid.col.allreduce(np.ascontiguousarray(dW), key)
        w = np.diff(chunk_offsets(spec.shape[0], self.layout.pc))
        return self.grid.row.allgatherv(slab, w, key)

    def bias_grad(self, dZ, spec: ParamSpec, *, phase):
        return self.grid.col.allreduce(np.ascontiguousarray(dZ.sum(axis=0)), phase_key(phase))

    # -- whole rows --------------------------------------------------------------------------
    def xent(self, logits, labels, masks, *, width, grad_index=None, grad_divisor=1.0, phase):
        full = self._row_gather(logits, width, phase_key(phase))
        sums, grad = local_xent(full, labels, masks, grad_index, grad_divisor)
        if grad is not None:
            lo, hi = self.col_range(width)
            grad = np.ascontiguousarray(grad[:, lo:hi])
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


class TwoD(Scheme):
    name = "2d"
    whole_rows = False  # feature columns split over the grid
    sweep_partitions = ("block", "random")  # SUMMA's volume ignores locality; random balances
    summary = "CAGNET 2D: SUMMA on a Pr x Pc grid, W replicated (Algorithm 3)"
    options = (GRID_OPTION, REORDER_OPTION)
    #: grid dimensions: Pr x Pc (2D) or X x Y x Z (split-3D, Z layers)
    ndim = 2

    def configure(self, size: int, values: dict) -> dict:
        dims = parse_dims(values.get("grid"), size, self.ndim, self.name)
        return {"grid": "x".join(map(str, dims)), **reorder_config(values)}

    @staticmethod
    def dims(config: dict) -> tuple[int, ...]:
        return tuple(int(d) for d in config["grid"].split("x"))

    def grid_candidates(self, size: int) -> list[str]:
        return ["x".join(map(str, f)) for f in factorizations(size, self.ndim)]

    def row_parts(self, size: int, config: dict) -> int:
        return self.dims(config)[0]

    def col_parts(self, size: int, config: dict) -> int:
        return self.dims(config)[1]

    def layout(self, numbering, meta, size, config, model=None) -> Layout2D:
        pr, pc, *layers = self.dims(config)
        cols = numbering.col_offsets
        if cols is None:
            cols = block_bounds(int(numbering.offsets[-1]), pc)
        cols = np.asarray(cols, dtype=np.int64)
        return Layout2D(numbering, pr, pc, cols, meta.num_features, *layers)

    def setup(self, world, layout: Layout2D, local, kind: str) -> TwoDOps:
        pz, pc = layout.pz, layout.pc
        grid = grid_2d(world, layout.vr, pc)
        I, j = grid.i, grid.j
        i, k = divmod(I, pz)
        lcol = grid.col if pz == 1 else world.split(color=k * pc + j, key=i)
        fiber = None if pz == 1 else world.split(color=i * pc + j, key=k)
        ids = local.new_ids
        cols = (int(layout.col_offsets[j]), int(layout.col_offsets[j + 1]))
        part = degrees(local.indptr, local.indices, local.data, kind, rows=ids, partial=True)
        deg_i = grid.row.allreduce(part, "setup") + DEGREE_OFFSET[kind]
        deg_all = lcol.allgatherv(deg_i, layout.row_sizes, "setup")
        fwd = layer_columns(
            support_rows(local.indptr, local.indices, local.data, ids, deg_all, kind, cols),
            layout,
            k,
        )
        bwd = _transpose_block(world, layout, i, fwd)
        same = (
            bwd[0].shape == fwd[0].shape
            and np.array_equal(bwd[0], fwd[0])
            and np.array_equal(bwd[1], fwd[1])
            and np.allclose(bwd[2], fwd[2], rtol=1e-12, atol=0)
        )
        flag = world.allreduce(np.array([0 if same else 1], dtype=np.int64), "setup", op="max")
        mats = {"f": fwd} if flag[0] == 0 else {"f": fwd, "t": bwd}
        pieces, nnz = {}, {}
        counts = stage_counts(layout)[k]
        for which, arrays in mats.items():
            pieces[which] = StagePieces(layout, i, j, k, *arrays)
            nnz[which] = grid.row.allgatherv(pieces[which].nnz(), counts, "setup")
        return TwoDOps(world, grid, layout, pieces, nnz, local.orig_ids, lcol, fiber)

    # -- exchange description ----------------------------------------------------------------
    def _entries(self, ctx, which: str):
        """(rows, cols) of every entry of S ("f") or S^T ("t")."""
        M = ctx.support if which == "f" else ctx.transpose()
        rows = np.repeat(np.arange(M.shape[0], dtype=np.int64), np.diff(M.indptr))
        return rows, M.indices.astype(np.int64)

    def stage_nnz(self, ctx, which: str) -> np.ndarray:
        """(Pr, S) entries of S_i (or S^T_i) in each stage."""
        lay: Layout2D = ctx.layout
        key = "stage_nnz_f" if which == "f" or ctx.symmetric else "stage_nnz_t"

        def make():
            rows, cols = self._entries(ctx, which)
            a = lay.stages[0]
            S = a.shape[0]
            idx = owner_of(rows, lay.offsets) * S + (np.searchsorted(a, cols, side="right") - 1)
            return np.bincount(idx, minlength=lay.pr * S).reshape(lay.pr, S).astype(np.int64)

        return ctx.cached(key, make)

    def _summa_steps(self, ctx, call) -> list:
        lay: Layout2D = ctx.layout
        which = "f" if call.method == "aggregate" else "t"
        f, isz = call.shape(0)[1], call.itemsize(0)
        widths = np.diff(chunk_offsets(f, lay.pc))
        A, X = summa_stages(lay, self.stage_nnz(ctx, which), ENTRY_ID_BYTES + isz, widths, isz)
        return [A, X, *fiber_step(lay, widths * isz)]

    steps_aggregate = _summa_steps
    steps_aggregate_t = _summa_steps

    def _row_chunks(self, lay: Layout2D, width: int, itemsize: int) -> np.ndarray:
        """(P,) bytes of each rank's chunk of its rows of a width-`width` matrix."""
        w = np.diff(chunk_offsets(width, lay.pc))
        return lay.node_sizes[lay.ranks_I()] * w[lay.ranks_j()] * itemsize

    def steps_matmul(self, ctx, call) -> list:
        lay: Layout2D = ctx.layout
        f_in, f_out = call.shape(1)
        isz = call.itemsize(1)
        if use_gather(call.sparse(0), f_in, f_out):
            return [Allgatherv(lay.rows, self._row_chunks(lay, f_in, isz))]
        return [ReduceScatterv(lay.rows, self._row_chunks(lay, f_out, isz))]

    def steps_matmul_grads(self, ctx, call) -> list:
        lay: Layout2D = ctx.layout
        f_out = call.shape(2)[1]
        return [Allgatherv(lay.rows, self._row_chunks(lay, f_out, call.itemsize(2)))]

    def steps_reduce_weight_grad(self, ctx, call) -> list:
        lay: Layout2D = ctx.layout
        f_in, f_out = call.args[1][2]
        isz = call.itemsize(0)
        w = np.diff(chunk_offsets(f_in, lay.pc))
        return [
            Allreduce(lay.cols, w * f_out, isz),
            Allgatherv(lay.rows, w[lay.ranks_j()] * f_out * isz),
        ]

    def steps_bias_grad(self, ctx, call) -> list:
        lay: Layout2D = ctx.layout
        w = np.diff(chunk_offsets(call.shape(0)[1], lay.pc))
        return [Allreduce(lay.cols, w, call.itemsize(0))]

    def steps_node_sum(self, ctx, call) -> list:
        lay: Layout2D = ctx.layout
        m = int(np.prod(call.shape(0)))
        return [Allreduce(lay.cols, np.full(lay.pc, m), call.itemsize(0))]

    def steps_element_sum(self, ctx, call) -> list:
        return [Allreduce(Groups.world(ctx.P), np.array([int(np.prod(call.shape(0)))]), 8)]

    def steps_row_normalize(self, ctx, call) -> list:
        lay: Layout2D = ctx.layout
        return [Allreduce(lay.rows, lay.node_sizes, 8)]

    def steps_predict(self, ctx, call) -> list:
        lay: Layout2D = ctx.layout
        C = call.kw("width")
        return [Allgatherv(lay.rows, self._row_chunks(lay, C, call.itemsize(0)))]

    def steps_xent(self, ctx, call) -> list:
        lay: Layout2D = ctx.layout
        k = call.args[2][1]
        return self.steps_predict(ctx, call) + [Allreduce(lay.cols, np.full(lay.pc, 2 * k), 8)]

    def steps_gather_param(self, ctx, call) -> list:
        lay: Layout2D = ctx.layout
        shape = call.args[1][2]
        if len(shape) != 1:
            return []
        w = np.diff(chunk_offsets(shape[0], lay.pc))
        return [Allgatherv(lay.rows, w[lay.ranks_j()] * call.itemsize(0))]

    def steps_param_sum_sq(self, ctx, call) -> list:
        lay: Layout2D = ctx.layout
        if len(call.args[1][2]) != 1:
            return []
        return [Allreduce(lay.rows, np.ones(lay.vr, dtype=np.int64), 8)]

    def setup_steps(self, ctx) -> list:
        """Degrees (row Allreduce, column Allgatherv), the transposition (Alltoall of counts,
        Alltoallv of (row, col) pairs and of values), the symmetry Allreduce, and each
        product's per-stage entry counts (row Allgatherv)."""
        lay: Layout2D = ctx.layout
        P = lay.size
        rows, cols = self._entries(ctx, "f")
        src, dst = transpose_pairs(lay, rows, cols)
        key, cnt = sorted_unique(src * P + dst, return_counts=True)
        ps, pd = key // P, key % P
        counts = stage_counts(lay)[lay.ranks_I() % lay.pz, lay.ranks_j()] * 8
        out = [
            ("setup", Allreduce(lay.rows, lay.row_sizes[np.arange(lay.vr) // lay.pz], 8)),
            ("setup", Allgatherv(lay.layer_cols, lay.row_sizes[lay.ranks_i()] * 8)),
            ("setup", Uniform(Groups.world(P), 8)),
            ("setup", Pairs(P, ps, pd, cnt * 16)),
            ("setup", Pairs(P, ps, pd, cnt * 8)),
            ("setup", Allreduce(Groups.world(P), np.array([1]), 8)),
            ("setup", Allgatherv(lay.rows, counts)),
        ]
        if not ctx.symmetric:
            out.append(("setup", Allgatherv(lay.rows, counts)))
        return out

    # -- compute and memory ------------------------------------------------------------------
    def work_aggregate(self, ctx, call) -> np.ndarray:
        lay: Layout2D = ctx.layout
        which = "f" if call.method == "aggregate" else "t"
        layer = lay.stages[4]
        tab = self.stage_nnz(ctx, which)  # (Pr, S)
        per_layer = np.stack([tab[:, layer == k].sum(axis=1) for k in range(lay.pz)], axis=1)
        mine = per_layer.reshape(-1)[lay.ranks_I()]  # entries of row part i in layer k
        w = np.diff(chunk_offsets(call.shape(0)[1], lay.pc))
        out = spmm_work(mine, 1)
        out[:, 1] = 2 * mine * w[lay.ranks_j()]
        return out

    work_aggregate_t = work_aggregate

    def stream_bytes(self, ctx, call) -> np.ndarray:
        """A SUMMA product's passes over memory besides its SpMMs: each stage with entries
        adds its partial product into the rank's output block in place, reading back the rows
        it accumulates into (rows x width chunk, an upper bound: the kernel skips rows without
        entries; the write is inside the calibrated SpMM rate), and a piece received from
        another process column is unpacked (its row ids read, its row pointers written;
        columns and values are used in place)."""
        lay: Layout2D = ctx.layout
        if call.method in ("matmul", "matmul_grads"):
            return self._whole_row_bytes(ctx, call)
        if call.method not in ("aggregate", "aggregate_t"):
            return super().stream_bytes(ctx, call)
        which = "f" if call.method == "aggregate" else "t"
        tab = self.stage_nnz(ctx, which)  # (Pr, S)
        _, _, _, c_own, layer = lay.stages
        I, j = lay.ranks_I(), lay.ranks_j()
        i, k = I // lay.pz, I % lay.pz
        mine = layer[None, :] == k[:, None]  # (P, S): the stages of the rank's layer
        nnz = tab[i] * mine
        remote = c_own[None, :] != j[:, None]  # (P, S): pieces broadcast by another column
        active = (nnz > 0).sum(axis=1)
        received = (nnz * remote).sum(axis=1)
        pieces = ((nnz > 0) & remote).sum(axis=1)
        isz = call.itemsize(0)
        ma = lay.row_sizes[i].astype(np.int64)
        w = np.diff(chunk_offsets(call.shape(0)[1], lay.pc))[j]
        acc = active * ma * w * isz
        unpack = received * (ENTRY_ID_BYTES // 2) + pieces * (ma + 1) * 8
        return (acc + unpack).astype(np.int64)

    def _whole_row_bytes(self, ctx, call) -> np.ndarray:
        """Products with W on split columns copy whole rows once (read and write): the
        gathered chunks stacked side by side (``H`` forward, ``dZ`` backward), or the
        partial product's chunks laid out for the Reduce-scatter."""
        lay: Layout2D = ctx.layout
        if lay.pc == 1:
            return np.zeros(lay.size, dtype=np.int64)
        f_in, f_out = call.shape(1)
        rows = lay.node_sizes[lay.ranks_I()].astype(np.int64)
        if call.method == "matmul":
            gather = use_gather(call.sparse(0), f_in, f_out)
            width = f_in if gather else f_out
        else:
            width = f_out
        return 2 * rows * width * call.itemsize(0)

    def work_matmul(self, ctx, call) -> np.ndarray:
        """``H @ W``: whole rows times W's chunk (gather) or the chunk times W's rows
        (Reduce-scatter); backward: the slab ``H_ij^T dZ_i`` and ``dZ_i W[chunk]^T``.  A CSR
        H's products are sparse: SpMM work over its stored nonzeros (the row part's, or
        their share in the column chunk)."""
        lay: Layout2D = ctx.layout
        f_in, f_out = call.shape(1)
        i, j = lay.ranks_I(), lay.ranks_j()
        rows = lay.node_sizes[i]
        fin_j = np.diff(chunk_offsets(f_in, lay.pc))[j]
        fout_j = np.diff(chunk_offsets(f_out, lay.pc))[j]
        out = np.zeros((lay.size, 4), dtype=np.int64)
        sparse = call.sparse(0) and ctx.feature_nnz is not None
        if sparse:
            csum = np.concatenate(([0], np.cumsum(ctx.feature_nnz)))
            nnz_i = (csum[lay.node_offsets[1:]] - csum[lay.node_offsets[:-1]])[i]
            nnz_ij = nnz_i * fin_j // max(f_in, 1)
        if call.method == "matmul":
            gather = use_gather(call.sparse(0), f_in, f_out)
            if sparse:
                nnz, width = (nnz_i, fout_j) if gather else (nnz_ij, f_out)
                out[:, 0], out[:, 1] = nnz, 2 * nnz * width
            else:
                out[:, 2] = 2 * rows * f_in * fout_j if gather else 2 * rows * fin_j * f_out
                out[:, 3] = rows
        else:
            grad = call.kw("need_input_grad")
            dense = 2 * rows * f_out * fin_j if grad else 0
            if sparse:
                out[:, 0], out[:, 1] = nnz_ij, 2 * nnz_ij * f_out
                out[:, 2] = dense
                out[:, 3] = rows if grad else 0
            else:
                out[:, 2] = 2 * rows * fin_j * f_out + dense
                out[:, 3] = rows * (2 if grad else 1)
        return out

    work_matmul_grads = work_matmul

    def held_estimate(self, ctx, itemsize: int) -> np.ndarray:
        """Per rank: the owned stage pieces of S (and S^T) as float64 CSR (int32 indices),
        their copies in the run's dtype and packed for the wire (ids + value), the stage
        entry counts, the node data of its slice (features chunk, int64 labels and ids, bool
        masks) and the layout's arrays."""
        lay: Layout2D = ctx.layout
        from gcntrain.schemes.held import layout_bytes

        I, i, j = lay.ranks_I(), lay.ranks_i(), lay.ranks_j()
        k = I % lay.pz
        _, _, _, c_own, layer = lay.stages
        owned = (c_own[None, :] == j[:, None]) & (layer[None, :] == k[:, None])  # (P, S)
        ma = lay.row_sizes[i]
        total = np.zeros(lay.size, dtype=np.int64)
        for which in ("f",) if ctx.symmetric else ("f", "t"):
            nnz = self.stage_nnz(ctx, which)[i]  # (P, S)
            mine = np.where(owned, nnz, 0).sum(axis=1)
            stages = owned.sum(axis=1)
            total += mine * (8 + 4) + stages * (ma + 1) * 4  # pieces (float64, int32)
            total += mine * itemsize + mine * (ENTRY_ID_BYTES + itemsize)  # typed + wire
            total += (layer[None, :] == k[:, None]).sum(axis=1) * 8  # entry counts
        m = lay.node_sizes[I]
        fcols = np.diff(chunk_offsets(lay.num_features, lay.pc))[j]
        total += m * fcols * ctx.feature_itemsize + m * (8 + 8 + ctx.masks)
        return total + layout_bytes(ctx)

    def footprint(self, ctx) -> dict:
        lay: Layout2D = ctx.layout
        rows = lay.node_sizes[lay.ranks_I()]
        r, c = self._entries(ctx, "f")
        adj = np.bincount(block_of(lay, r, c), minlength=lay.size).astype(np.int64)
        if not ctx.symmetric:
            adj = 2 * adj
        a, b = lay.stages[0], lay.stages[1]
        f = max(lay.num_features, 1)
        frac = np.diff(chunk_offsets(f, lay.pc))[lay.ranks_j()] / f
        return {
            "rows": rows,
            "adjacency": adj + self.stage_nnz(ctx, "f").max(axis=1)[lay.ranks_i()],
            "buffer_rows": int((b - a).max(initial=0)) + lay.row_sizes[lay.ranks_i()],
            "col_fraction": frac,
        }
