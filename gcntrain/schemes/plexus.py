"""Plexus 3D tensor parallelism (Plexus paper, sections 3, 5.1-5.3, Algorithm 1, Figure 4).

Ranks form an X x Y x Z grid, rank r at coordinates ``np.unravel_index(r, (X, Y, Z))``
(axes 0, 1, 2).  Every node-wise matrix has a *placement* `Place` (row axis, column axis,
numbering): its rows are cut in near-equal chunks along the row axis, its columns along the
column axis, and it is replicated along the third axis; the numbering says which ordering of
the nodes the row chunks cut (two with ``--permute``, one otherwise).

* Aggregation ``S @ X`` with X at (r, c): the shard of S whose rows are chunk ``q`` (the
  third axis) and whose columns are chunk ``r`` (replicated along c, the paper's "sharded
  across the ZX plane and replicated across Y" in layer 0) times the local block gives a
  partial sum; an Allreduce over the r-axis group completes it (Algorithm 1 line 4).  The
  output sits at (q, c), in the other numbering.  ``S^T`` uses the same shard transposed and
  an Allreduce over the q-axis group, back to (r, c).  ``--block-rows B`` cuts the output in
  blocks of B rows, one SpMM and one Allreduce each (section 5.2).
* Product ``H @ W`` with H at (r, c): W is sharded in blocks (rows: chunk c of f_in,
  columns: chunk q of f_out) and each block further in near-equal element chunks over the
  r-axis group (its optimizer state with it), Allgathered before use (line 6); the partial
  product is Allreduced over the c-axis group (line 8); the output sits at (r, q).
* Backward: ``dW = H^T dZ`` is Reduce-scattered into the element chunks over the r-axis
  group (line 16); ``dH = dZ W^T`` (W Allgathered again, line 18) is Allreduced over the
  q-axis group (line 20); aggregation backward as above.  The partial ``dW`` is computed as
  ``(dZ^T H)^T`` (section 5.3: no transposed left operand in the GEMM).
* Layer to layer (Figure 4): aggregation maps (r, c) -> (q, c) and the product (r, c) ->
  (r, q), so a layer's output is the next layer's input with the roles of the axes rotated;
  the shards of S a run needs are one per distinct (rows, columns) axis pair (at most three
  for a model of either order; six with two numberings).  Layer 0's input is at (X, Y).
* GraphSAGE's self term ``H W_self`` must land where the neighbour term does: its input (or
  its output, for the product-first order) is moved from (r, c) to (q, c) by an Allgatherv
  over the r-axis group (each member contributes the rows it holds of the target chunk).
* Rows: softmax cross-entropy, accuracy and argmax gather the column chunks of the logits
  (Allgatherv over the column axis); sums over nodes run over the logits' row axis; row
  normalisation Allreduces the partial L1 norms over the input's column axis.
* ``--permute double`` (section 5.1): two independent random orderings P_c (numbering 0, the
  input's) and P_r (numbering 1); aggregation alternates ``P_r S P_c^T`` and ``P_c S P_r^T``
  (each layer's output is in the other numbering), so the shards hold both.  ``--permute
  stratified`` draws the two orderings degree-stratified.  Outputs refer to original ids.

Input features are not trained here, so they are held in their XY-plane shard (not further
cut along Z and Allgathered as in line 2 of Algorithm 1, which the paper does for their
optimizer state), and no input gradient is formed (lines 22-23 for layer 0).

Setup (section 5.4): each rank reads one block of an R x C load grid (``--load-grid``;
default P x 1, a contiguous block of whole rows; a 2D store is read block by block), so no
rank reads the whole graph; partial degrees are Allreduced along block rows, ids and degrees
Allgathered, and an Alltoallv sends every entry to the ranks whose shards hold it, and the
feature rows and labels to the ranks whose input and output blocks hold them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from gcntrain.comm.exchange import Allgatherv, Allreduce, Groups, Pairs, ReduceScatterv, Uniform
from gcntrain.comm.grid import check_grid, factorizations, parse_dims
from gcntrain.errors import InputError
from gcntrain.kernels import dense
from gcntrain.kernels.spmm import spmm_csr_dense
from gcntrain.model.functional import dropout_backward, dropout_forward, row_l1_norms
from gcntrain.model.functional import row_normalize as normalize_rows
from gcntrain.model.loss import local_xent
from gcntrain.model.normalize import DEGREE_OFFSET, degrees, support_rows
from gcntrain.model.ops import Ops, ParamSpec
from gcntrain.model.phase import phase_key
from gcntrain.partition.basic import block_bounds
from gcntrain.partition.permute import (
    double_permutation,
    inverse_permutation,
)
from gcntrain.schemes.base import spmm_work
from gcntrain.schemes.layout import owner_of
from gcntrain.schemes.protocol import LoadRequest, Numbering, Scheme, SchemeOption
from gcntrain.schemes.two_d import GRID_OPTION, gather_columns

PERMUTES = ("none", "double")
#: wire bytes of one routed adjacency entry: int64 shard, row, column and the float64 value
ENTRY_BYTES = 32
#: wire bytes of one routed label row: int64 original id, label, mask bits, spare
LABEL_BYTES = 32


@dataclass(frozen=True)
class Place:
    """Placement of a node-wise matrix: rows cut along grid axis `row`, columns along `col`,
    rows in numbering `num`; replicated along the third axis `rep`."""

    row: int
    col: int
    num: int

    @property
    def rep(self) -> int:
        return 3 - self.row - self.col


def agg_out(p: Place) -> Place:
    """Placement of ``S @ X`` (and of the self-term move) for X at `p`."""
    return Place(p.rep, p.col, 1 - p.num)


def mm_out(p: Place) -> Place:
    """Placement of ``X @ W`` for X at `p`."""
    return Place(p.row, p.rep, p.num)


@dataclass(frozen=True)
class LayerPlan:
    """Placements of one layer: its input, the aggregation's input, the (neighbour) product's
    input, its output, and for GraphSAGE whether the self term is moved before its product
    (aggregation first) or after it (product first); None without a self term."""

    inp: Place
    agg: Place
    mm: Place
    out: Place
    self_first: bool | None


INPUT = Place(0, 1, 0)


def layer_plans(model) -> tuple[LayerPlan, ...]:
    """The placements of every layer of `model` (`Network.describe` rows), layer 0's input at
    (X, Y) in numbering 0."""
    plans, p = [], INPUT
    for layer in model:
        if layer["order"] == "mm_first":
            mm, agg = p, mm_out(p)
            out = agg_out(agg)
        else:
            agg, mm = p, agg_out(p)
            out = mm_out(mm)
        self_first = None if layer["kind"] != "sage-mean" else layer["order"] != "mm_first"
        plans.append(LayerPlan(p, agg, mm, out, self_first))
        p = out
    return tuple(plans)


@dataclass(frozen=True)
class PlexusLayout:
    """Pure layout of a Plexus run (see the module docstring).  `numbering` is the loading
    numbering (one contiguous row block per rank); `orders` the orderings of numberings 0 and
    1 (position -> original id), None for the graph's own order."""

    numbering: Numbering
    dims: tuple[int, int, int]
    num_features: int
    model: tuple
    orders: tuple[np.ndarray, np.ndarray] | None = None
    block_rows: int = 0
    #: column offsets of the loading blocks (an R x C load grid: rank r reads block
    #: (r // C, r % C); C = 1: whole rows)
    load_cols: np.ndarray | None = None

    @property
    def load_grid(self) -> tuple[int, int]:
        c = 1 if self.load_cols is None else int(self.load_cols.shape[0] - 1)
        return int(self.numbering.parts), c

    def load_block(self, rank: int) -> tuple[int, int]:
        return divmod(int(rank), self.load_grid[1])

    @property
    def n(self) -> int:
        return int(self.numbering.offsets[-1])

    @property
    def size(self) -> int:
        return int(np.prod(self.dims))

    @cached_property
    def plans(self) -> tuple[LayerPlan, ...]:
        return layer_plans(self.model)

    @property
    def output(self) -> Place:
        return self.plans[-1].out if self.plans else INPUT

    @cached_property
    def coords_all(self) -> np.ndarray:
        """(P, 3) grid coordinates of every rank."""
        P = self.size
        return np.stack(np.unravel_index(np.arange(P), self.dims), axis=1).astype(np.int64)

    def coords(self, rank: int) -> tuple[int, int, int]:
        return tuple(int(v) for v in self.coords_all[int(rank)])

    def rank_of(self, coords: np.ndarray) -> np.ndarray:
        """World ranks of (.., 3) coordinates."""
        c = np.asarray(coords, dtype=np.int64)
        return (c[..., 0] * self.dims[1] + c[..., 1]) * self.dims[2] + c[..., 2]

    def groups(self, axis: int) -> Groups:
        """The ranks that differ only in coordinate `axis` (position = that coordinate)."""
        return Groups.axis(self.dims, axis)

    def bounds(self, axis: int) -> np.ndarray:
        """Row-chunk offsets along `axis`."""
        return block_bounds(self.n, self.dims[axis])

    def fbounds(self, width: int, axis: int) -> np.ndarray:
        """Column-chunk offsets of a width-`width` matrix along `axis`."""
        return block_bounds(int(width), self.dims[axis])

    def row_counts(self, place: Place) -> np.ndarray:
        """(P,) local rows of a matrix at `place`."""
        return np.diff(self.bounds(place.row))[self.coords_all[:, place.row]]

    def col_counts(self, place: Place, width: int) -> np.ndarray:
        """(P,) local columns of a width-`width` matrix at `place`."""
        return np.diff(self.fbounds(width, place.col))[self.coords_all[:, place.col]]

    # -- numberings ------------------------------------------------------------------------
    def num(self, u: int) -> int:
        """The stored numbering `u` stands for (0 when both are the graph's order)."""
        return 0 if self.orders is None else int(u)

    def original(self, u: int, positions: np.ndarray) -> np.ndarray:
        """Original ids of `positions` in numbering `u`."""
        positions = np.asarray(positions, dtype=np.int64)
        return positions if self.orders is None else self.orders[u][positions]

    @cached_property
    def _positions(self) -> tuple[np.ndarray, np.ndarray] | None:
        if self.orders is None:
            return None
        return inverse_permutation(self.orders[0]), inverse_permutation(self.orders[1])

    def position(self, u: int, original: np.ndarray) -> np.ndarray:
        """Positions in numbering `u` of `original` ids."""
        original = np.asarray(original, dtype=np.int64)
        return original if self._positions is None else self._positions[u][original]

    # -- adjacency shards ------------------------------------------------------------------
    @cached_property
    def shard_keys(self) -> tuple[tuple[int, int, int], ...]:
        """(u, q, r) of every shard the model uses: rows chunked along q in numbering 1 - u,
        columns along r in numbering u (u = 0 without permutation)."""
        keys = []
        for pl in self.plans:
            k = self.shard_key(pl.agg)
            if k not in keys:
                keys.append(k)
        return tuple(keys)

    def shard_key(self, p: Place) -> tuple[int, int, int]:
        return (self.num(p.num), p.rep, p.row)

    def shard_coords(self, key, orig_rows: np.ndarray, orig_cols: np.ndarray):
        """(q coordinate, r coordinate, local row, local column) of entries (original ids) in
        the shard `key`; the shard is held by every rank along the third axis."""
        u, q, r = key
        rp = self.position(1 - u if self.orders is not None else 0, orig_rows)
        cp = self.position(u, orig_cols)
        bq, br = self.bounds(q), self.bounds(r)
        qi, ri = owner_of(rp, bq), owner_of(cp, br)
        return qi, ri, rp - bq[qi], cp - br[ri]

    def shard_ranks(self, key, qi: np.ndarray, ri: np.ndarray) -> np.ndarray:
        """(len, G_third) ranks holding entries at shard coordinates (qi, ri)."""
        _, q, r = key
        t = 3 - q - r
        c = np.zeros((qi.shape[0], self.dims[t], 3), dtype=np.int64)
        c[:, :, q] = qi[:, None]
        c[:, :, r] = ri[:, None]
        c[:, :, t] = np.arange(self.dims[t])[None, :]
        return self.rank_of(c)

    # -- node data ---------------------------------------------------------------------------
    def row_chunk(self, place: Place, orig: np.ndarray) -> np.ndarray:
        """Row chunk (coordinate along ``place.row``) of original ids `orig` at `place`."""
        pos = self.position(self.num(place.num), orig)
        return owner_of(pos, self.bounds(place.row))

    def chunk_holders(self, place: Place, chunks: np.ndarray) -> np.ndarray:
        """(len, G_col * G_rep) ranks holding row chunks `chunks` of a matrix at `place`."""
        chunks = np.asarray(chunks, dtype=np.int64)
        gc, gt = self.dims[place.col], self.dims[place.rep]
        c = np.zeros((chunks.shape[0], gc, gt, 3), dtype=np.int64)
        c[..., place.row] = chunks[:, None, None]
        c[..., place.col] = np.arange(gc)[None, :, None]
        c[..., place.rep] = np.arange(gt)[None, None, :]
        return self.rank_of(c).reshape(chunks.shape[0], gc * gt)

    def holders(self, place: Place, orig: np.ndarray) -> np.ndarray:
        """(len, G_col * G_rep) ranks holding the rows of original ids `orig` at `place`."""
        return self.chunk_holders(place, self.row_chunk(place, orig))

    def rows_of(self, place: Place, rank: int) -> np.ndarray:
        """Original ids of the local rows of a matrix at `place` on `rank`."""
        b = self.bounds(place.row)
        i = int(self.coords_all[rank, place.row])
        return self.original(self.num(place.num), np.arange(b[i], b[i + 1], dtype=np.int64))

    def move_counts(self, p: Place) -> np.ndarray:
        """(G_q, G_r) rows of target chunk q (at ``agg_out(p)``) held by source chunk r (at
        `p`): the Allgatherv blocks of the self-term move."""
        tgt = agg_out(p)
        pos_t = np.arange(self.n, dtype=np.int64)
        orig = self.original(self.num(tgt.num), pos_t)
        src = self.position(self.num(p.num), orig)
        qi = owner_of(pos_t, self.bounds(tgt.row))
        ri = owner_of(src, self.bounds(p.row))
        gq, gr = self.dims[tgt.row], self.dims[p.row]
        return np.bincount(qi * gr + ri, minlength=gq * gr).reshape(gq, gr).astype(np.int64)

    # -- parameters ----------------------------------------------------------------------------
    def weight_shape(self, layer: int) -> tuple[int, int]:
        """(f_in, f_out) of layer `layer`'s weights."""
        m = self.model[int(layer)]
        return int(m["f_in"]), int(m["f_out"])

    def weight_block(self, shape, p: Place, coords) -> tuple[int, int, int, int]:
        """Rows [r0, r1) (chunk c of f_in) and columns [c0, c1) (chunk q of f_out) of the W
        block held, in element chunks, by the r-axis group of the rank at `coords`."""
        fr, fc = self.fbounds(shape[0], p.col), self.fbounds(shape[1], p.rep)
        i, j = int(coords[p.col]), int(coords[p.rep])
        return int(fr[i]), int(fr[i + 1]), int(fc[j]), int(fc[j + 1])

    def weight_chunks(self, spec_shape: tuple[int, int], p: Place) -> np.ndarray:
        """(P,) elements of each rank's chunk of W (product input at `p`): the block (rows:
        chunk c of f_in, columns: chunk q of f_out) cut in near-equal chunks over the r axis."""
        f_in, f_out = spec_shape
        c = self.coords_all
        rows = np.diff(self.fbounds(f_in, p.col))[c[:, p.col]]
        cols = np.diff(self.fbounds(f_out, p.rep))[c[:, p.rep]]
        block = rows * cols
        g = self.dims[p.row]
        return block // g + (c[:, p.row] < block % g)

    # -- loading -------------------------------------------------------------------------------
    def request(self, rank: int) -> LoadRequest:
        off = self.numbering.offsets
        i, j = self.load_block(rank)
        rows = (int(off[i]), int(off[i + 1]))
        if self.load_cols is None:
            return LoadRequest(rows)
        return LoadRequest(rows, (int(self.load_cols[j]), int(self.load_cols[j + 1])))

    def owned(self, rank: int) -> bool:
        out = self.output
        c = self.coords_all[rank]
        return bool(c[out.col] == 0 and c[out.rep] == 0)


# -- who sends what in setup (one definition for the runtime and the plan) --------------------
def entry_destinations(layout: PlexusLayout, orig_rows, orig_cols):
    """For every shard key: (key index, entry index, destination rank, local row, local
    column) of every copy of the entries (original ids) routed to the shards' holders."""
    out = []
    for s, key in enumerate(layout.shard_keys):
        qi, ri, lr, lc = layout.shard_coords(key, orig_rows, orig_cols)
        dst = layout.shard_ranks(key, qi, ri)
        g = dst.shape[1]
        idx = np.repeat(np.arange(qi.shape[0], dtype=np.int64), g)
        out.append((s, idx, dst.reshape(-1), np.repeat(lr, g), np.repeat(lc, g)))
    return out


def _sources(layout: PlexusLayout) -> np.ndarray:
    """(n,) the rank that sends the node data of every position of the loading numbering:
    the first rank of its block row of the load grid."""
    off = layout.numbering.offsets
    return owner_of(np.arange(layout.n, dtype=np.int64), off) * layout.load_grid[1]


def _first_in_block_row(layout: PlexusLayout) -> np.ndarray:
    """(P,) rows of its load block row that each rank contributes to the Allgathers of
    ids and degrees (the first rank of each block row; the others none)."""
    R, C = layout.load_grid
    rows = np.zeros(layout.size, dtype=np.int64)
    rows[np.arange(R) * C] = np.diff(layout.numbering.offsets)
    return rows


def _copies_to_holders(layout: PlexusLayout, place: Place, orig: np.ndarray):
    """(destination, row) of every copy of the node rows `orig` (original ids) sent to the
    holders of their rows at `place`."""
    hold = layout.holders(place, orig)
    row = np.repeat(np.arange(orig.shape[0], dtype=np.int64), hold.shape[1])
    return hold.reshape(-1), row


def holder_pairs(layout: PlexusLayout, place: Place, orig: np.ndarray, load: np.ndarray):
    """(source, destination, rows) of the node rows (original ids `orig`, read by ranks
    `load`) sent to the holders of their rows at `place`: nodes of one (source, row chunk)
    share their destinations, so the pairs are counted per chunk before expanding."""
    g = layout.dims[place.row]
    code, cnt = np.unique(load * g + layout.row_chunk(place, orig), return_counts=True)
    src, chunk = np.divmod(code, g)
    dst = layout.chunk_holders(place, chunk)
    k = dst.shape[1]
    return np.repeat(src, k), dst.reshape(-1), np.repeat(cnt.astype(np.int64), k)


class PlexusOps(Ops):
    """Runtime of Plexus for one rank (see the module docstring)."""

    def __init__(self, world, layout: PlexusLayout, axis_comms: dict, shards: dict):
        self.world = world
        self.layout = layout
        self.axis = axis_comms  # grid axis -> Comm over the ranks differing only there
        self.c = layout.coords(world.rank)
        self.shards = shards  # key -> CSR (float64), rows chunk q, columns chunk r
        self._typed: dict = {}
        self._moves: dict = {}
        self.rank, self.size = world.rank, world.size
        self.n_global = layout.n
        self.rows = layout.rows_of(layout.output, world.rank)
        self.input_rows = layout.rows_of(INPUT, world.rank)

    # -- helpers -------------------------------------------------------------------------------
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

    def _spmm(self, X, p: Place, transpose: bool, key: str) -> np.ndarray:
        """``S @ X`` (X at p, output at ``agg_out(p)``) or, with `transpose`, ``S^T @ X``
        (X at ``agg_out(p)``, output at p); blocked by ``layout.block_rows`` (a block is a
        window of the row pointer, nothing is copied)."""
        X = np.ascontiguousarray(X)
        M = self._matrix(self.layout.shard_key(p), transpose, X.dtype)
        comm = self.axis[p.rep if transpose else p.row]
        out = np.empty((M.shape[0], X.shape[1]), dtype=X.dtype)
        for lo, hi in row_blocks(M.shape[0], self.layout.block_rows):
            part = np.empty((hi - lo, X.shape[1]), dtype=X.dtype)
            spmm_csr_dense(M.indptr[lo : hi + 1], M.indices, M.data, X, part)
            out[lo:hi] = comm.allreduce(part, key)
        return out

    def _move(self, X, p: Place, width: int, key: str) -> np.ndarray:
        """X at p (r, c) to ``agg_out(p)`` (q, c): Allgatherv over the r-axis group."""
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
        local, order, counts = self._moves[p]
        X = np.ascontiguousarray(X.toarray() if sp.issparse(X) else X)
        w = X.shape[1]
        got = self.axis[p.row].allgatherv(np.ascontiguousarray(X[local]), counts, key)
        out = np.empty((order.shape[0], w), dtype=X.dtype)
        out[order] = got
        return out

    def _weight(self, W, spec_shape, p: Place, key: str) -> np.ndarray:
        """The block of W (rows chunk c of f_in, columns chunk q of f_out) from the element
        chunks of the r-axis group."""
        r0, r1, c0, c1 = self.layout.weight_block(spec_shape, p, self.c)
        counts = block_bounds((r1 - r0) * (c1 - c0), self.layout.dims[p.row])
        flat = self.axis[p.row].allgatherv(np.ascontiguousarray(W), np.diff(counts), key)
        return flat.reshape(r1 - r0, c1 - c0)

    def _gather_cols(self, X, p: Place, width: int, key: str) -> np.ndarray:
        """Whole rows of X at p (Allgatherv of the column chunks over the column axis)."""
        return gather_columns(self.axis[p.col], X, np.diff(self.layout.fbounds(width, p.col)), key)

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

    def shard_param(self, full, spec: ParamSpec, *, phase):
        pl = self.layout.plans[spec.layer]
        if spec.is_bias:
            lo, hi = self._cols(pl.out, spec.shape[0])
            return full[lo:hi].copy()
        p = pl.mm
        r0, r1, c0, c1 = self.layout.weight_block(spec.shape, p, self.c)
        block = np.ascontiguousarray(full[r0:r1, c0:c1]).reshape(-1)
        b = block_bounds(block.size, self.layout.dims[p.row])
        i = self.c[p.row]
        return block[b[i] : b[i + 1]].copy()

    def gather_param(self, local, spec: ParamSpec, *, phase):
        lay, key = self.layout, phase_key(phase)
        pl = lay.plans[spec.layer]
        if spec.is_bias:
            w = np.diff(lay.fbounds(spec.shape[0], pl.out.col))
            return self.axis[pl.out.col].allgatherv(np.ascontiguousarray(local), w, key)
        counts = lay.weight_chunks(spec.shape, pl.mm)
        flat = self.world.allgatherv(np.ascontiguousarray(local), counts, key)
        return assemble_weight(lay, spec.shape, pl.mm, flat, local.dtype)

    def param_sum_sq(self, local, spec: ParamSpec, *, phase) -> float:
        mine = float(np.sum(np.square(local, dtype=np.float64)))
        if spec.is_bias:
            out = self.layout.plans[spec.layer].out
            if self.c[out.row] != 0 or self.c[out.rep] != 0:
                mine = 0.0
        return float(self.world.allreduce(np.array([mine]), phase_key(phase))[0])

    def row_normalize(self, X, *, width, phase):
        norms = self.axis[INPUT.col].allreduce(row_l1_norms(X), phase_key(phase))
        return normalize_rows(X, norms)

    def _dropout_args(self, phase, width):
        p = self._plan(phase).inp
        return self.layout.rows_of(p, self.rank), self._cols(p, width)[0]

    def dropout(self, H, key, rate, *, width, phase):
        if key is None or rate <= 0.0:
            return H
        rows, lo = self._dropout_args(phase, width)
        return dropout_forward(H, rows, key[0], key[1], rate, lo)

    def dropout_backward(self, dH, key, rate, *, width, phase):
        if key is None or rate <= 0.0:
            return dH
        rows, lo = self._dropout_args(phase, width)
        return dropout_backward(dH, rows, key[0], key[1], rate, lo)

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
        Z = self.axis[pl.mm.col].allreduce(np.asarray(dense.matmul(H, Wb)), key)
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
        dZ = np.ascontiguousarray(dZ)
        dW = np.ascontiguousarray(np.asarray(dense.matmul_tn(H, dZ)))
        dH = None
        if need_input_grad:
            Wb = self._weight(W, spec_shape, pl.mm, key)
            dH = self.axis[pl.mm.rep].allreduce(np.ascontiguousarray(dense.matmul(dZ, Wb.T)), key)
            if selfterm and pl.self_first:
                dH = self._move(dH, pl.mm, spec_shape[0], key)
        return dH, dW

    def reduce_weight_grad(self, dW, spec: ParamSpec, *, phase):
        p = self.layout.plans[spec.layer].mm
        counts = np.diff(block_bounds(int(dW.size), self.layout.dims[p.row]))
        send = np.ascontiguousarray(dW).reshape(-1)
        return self.axis[p.row].reduce_scatterv(send, counts, phase_key(phase))

    def bias_grad(self, dZ, spec: ParamSpec, *, phase):
        out = self.layout.plans[spec.layer].out
        part = np.ascontiguousarray(dZ.sum(axis=0))
        return self.axis[out.row].allreduce(part, phase_key(phase))

    def xent(self, logits, labels, masks, *, width, grad_index=None, grad_divisor=1.0, phase):
        out = self.layout.output
        full = self._gather_cols(logits, out, width, phase_key(phase))
        sums, grad = local_xent(full, labels, masks, grad_index, grad_divisor)
        if grad is not None:
            lo, hi = self._cols(out, width)
            grad = np.ascontiguousarray(grad[:, lo:hi])
        return self.node_sum(sums, phase=phase), grad

    def predict(self, logits, *, width, phase):
        full = self._gather_cols(logits, self.layout.output, width, phase_key(phase))
        return super().predict(full, width=width, phase=phase)


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


PERMUTE_OPTION = SchemeOption(
    "permute",
    ("--permute",),
    "none",
    "Plexus: node orderings of the shards: none (the graph's order) or double (independent "
    "random row and column orderings, alternating layer by layer; section 5.1).",
    str,
    "none|double",
    cli=False,
)
PERMUTE_SEED_OPTION = SchemeOption(
    "permute_seed", ("--permute-seed",), 0, "Plexus: seed of --permute double.", int, "INT"
)
LOAD_GRID_OPTION = SchemeOption(
    "load_grid",
    ("--load-grid",),
    None,
    "Plexus: read the graph as R x C blocks, rank r block (r // C, r % C) (a 2D store "
    "written with `gcntrain shard --grid RxC`) [default: P x 1, one row block per rank].",
    str,
    "RxC",
)
BLOCK_ROWS_OPTION = SchemeOption(
    "block_rows",
    ("--block-rows",),
    0,
    "Plexus: blocked aggregation, one SpMM and one Allreduce per block of this many output "
    "rows (section 5.2); 0 = one block.",
    int,
    "ROWS",
)


def _entries(ctx):
    """(original row, original column, loading rank) of every entry of the support."""
    lay: PlexusLayout = ctx.layout
    S = ctx.support
    new_rows = np.repeat(np.arange(S.shape[0], dtype=np.int64), np.diff(S.indptr))
    orig = _load_orig(lay)
    cols = S.indices.astype(np.int64)
    src = owner_of(new_rows, lay.numbering.offsets) * lay.load_grid[1]
    if lay.load_cols is not None:
        src = src + owner_of(cols, lay.load_cols)
    return orig[new_rows], orig[cols], src


def _load_orig(lay: PlexusLayout) -> np.ndarray:
    """(n,) original id of every position of the loading numbering."""
    perm = lay.numbering.perm
    return np.arange(lay.n, dtype=np.int64) if perm is None else np.asarray(perm, np.int64)


def _group_elems(lay: PlexusLayout, axis: int, per_rank: np.ndarray) -> np.ndarray:
    """(groups,) elements of an Allreduce whose members all reduce `per_rank[member]`."""
    G = lay.groups(axis)
    out = np.zeros(int(G.gid.max(initial=-1)) + 1, dtype=np.int64)
    out[G.gid] = per_rank
    return out


def _allreduce(lay: PlexusLayout, axis: int, per_rank: np.ndarray, itemsize: int) -> Allreduce:
    return Allreduce(lay.groups(axis), _group_elems(lay, axis, per_rank), itemsize)


def move_step(lay: PlexusLayout, p: Place, width: int, itemsize: int) -> Allgatherv:
    """The self-term move of a width-`width` matrix from p to ``agg_out(p)``."""
    tgt = agg_out(p)
    c = lay.coords_all
    rows = lay.move_counts(p)[c[:, tgt.row], c[:, p.row]]
    return Allgatherv(lay.groups(p.row), rows * lay.col_counts(p, width) * itemsize)


def weight_step(lay: PlexusLayout, shape, p: Place, itemsize: int) -> Allgatherv:
    return Allgatherv(lay.groups(p.row), lay.weight_chunks(shape, p) * itemsize)


def spmm_steps(lay: PlexusLayout, p: Place, transpose: bool, width: int, itemsize: int) -> list:
    """The Allreduce of every row block of ``S @ X`` (X at p) or ``S^T @ X``."""
    out = p if transpose else agg_out(p)
    rows = lay.row_counts(out)
    cols = lay.col_counts(p, width)
    axis = p.rep if transpose else p.row
    B = lay.block_rows
    if B <= 0:
        return [_allreduce(lay, axis, rows * cols, itemsize)]
    nb = max(int(-(-rows.max(initial=0) // B)), 1)
    return [_allreduce(lay, axis, np.clip(rows - b * B, 0, B) * cols, itemsize) for b in range(nb)]


class Plexus(Scheme):
    name = "plexus"
    whole_rows = False  # feature columns split over the grid
    sweep_partitions = ("block",)  # its load balance is --permute double
    summary = "Plexus 3D tensor parallelism: rotating X x Y x Z shards, Allreduce per product"
    options = (
        GRID_OPTION,
        PERMUTE_OPTION,
        PERMUTE_SEED_OPTION,
        BLOCK_ROWS_OPTION,
        LOAD_GRID_OPTION,
    )

    def configure(self, size: int, values: dict) -> dict:
        dims = parse_dims(values.get("grid"), size, 3, self.name)
        permute = values.get("permute") or "none"
        if permute not in PERMUTES:
            raise InputError(f"--permute must be none or double, got {permute!r}")
        block = values.get("block_rows")
        block = 0 if block is None else int(block)
        if block < 0:
            raise InputError(f"--block-rows must be >= 0, got {block}")
        seed = values.get("permute_seed")
        load = values.get("load_grid")
        if load is not None:
            try:
                r, c = (int(v) for v in str(load).lower().split("x"))
            except ValueError:
                raise InputError(
                    f"--load-grid must look like RxC (e.g. 4x2), got {load!r}"
                ) from None
            check_grid(size, (r, c), "load grid")
            load = f"{r}x{c}"
        return {
            "grid": "x".join(map(str, dims)),
            "permute": permute,
            "permute_seed": 0 if seed is None else int(seed),
            "block_rows": block,
            "load_grid": load or f"{size}x1",
        }

    @staticmethod
    def dims(config: dict) -> tuple[int, int, int]:
        x, y, z = (int(d) for d in config["grid"].split("x"))
        return x, y, z

    def grid_candidates(self, size: int) -> list[str]:
        return ["x".join(map(str, f)) for f in factorizations(size, 3)]

    def sweep_options(self, size: int) -> list[dict]:
        """Every grid, with and without the double permutation (section 5.1)."""
        return [{"grid": g, "permute": p} for g in self.grid_candidates(size) for p in PERMUTES]

    @staticmethod
    def _load(size: int, config: dict) -> tuple[int, int]:
        r, c = (int(v) for v in config.get("load_grid", f"{size}x1").split("x"))
        return r, c

    def row_parts(self, size: int, config: dict) -> int:
        return self._load(size, config)[0]

    def col_parts(self, size: int, config: dict) -> int | None:
        c = self._load(size, config)[1]
        return None if c == 1 else c

    def layout(self, numbering, meta, size, config, model=None) -> PlexusLayout:
        if model is None:
            raise InputError(
                "--scheme plexus lays out every layer of the model: the graph needs labels "
                "(or give --classes to simulate)"
            )
        n = int(numbering.offsets[-1])
        orders = None
        if config.get("permute", "none") == "double":
            row_perm, col_perm = double_permutation(n, int(config.get("permute_seed", 0)))
            orders = (col_perm, row_perm)
        load_cols = None
        c = self._load(size, config)[1]
        if c > 1:
            cols = numbering.col_offsets
            load_cols = np.asarray(block_bounds(n, c) if cols is None else cols, dtype=np.int64)
        return PlexusLayout(
            numbering,
            self.dims(config),
            int(meta.num_features),
            tuple(dict(m) for m in model),
            orders,
            int(config.get("block_rows", 0)),
            load_cols,
        )

    # -- setup ---------------------------------------------------------------------------------
    def setup(self, world, layout: PlexusLayout, local, kind: str) -> PlexusOps:
        rank = world.rank
        comms = {}
        for ax in range(3):
            G = layout.groups(ax)
            comms[ax] = world.split(color=int(G.gid[rank]), key=int(G.pos[rank]))
        # ids and whole degrees of every node, in the loading numbering: the first rank of
        # each block row of the load grid contributes its block row
        bi, bj = layout.load_block(rank)
        lead = _first_in_block_row(layout)
        ids = local.new_ids
        orig_local = np.ascontiguousarray(local.orig_ids, dtype=np.int64)
        mine = slice(None) if bj == 0 else slice(0, 0)
        load_orig = world.allgatherv(orig_local[mine], lead, "setup")
        deg = degrees(local.indptr, local.indices, local.data, kind, rows=ids, partial=True)
        row = world.split(color=bi, key=bj)
        deg = row.allreduce(np.ascontiguousarray(deg), "setup") + DEGREE_OFFSET[kind]
        deg_all = world.allgatherv(np.ascontiguousarray(deg[mine]), lead, "setup")
        cols = (
            None
            if layout.load_cols is None
            else tuple(int(v) for v in layout.load_cols[bj : bj + 2])
        )
        ip, ix, dv = support_rows(local.indptr, local.indices, local.data, ids, deg_all, kind, cols)
        orow = np.repeat(orig_local, np.diff(ip))
        ocol = load_orig[np.asarray(ix, dtype=np.int64)]
        shards = self._route_entries(world, layout, orow, ocol, np.asarray(dv, np.float64))
        ops = PlexusOps(world, layout, comms, shards)
        self._route_node_data(world, layout, local, ops)
        return ops

    @staticmethod
    def _route_entries(world, layout: PlexusLayout, orow, ocol, vals) -> dict:
        parts = entry_destinations(layout, orow, ocol)
        dst = np.concatenate([d for _, _, d, _, _ in parts]) if parts else np.zeros(0, np.int64)
        rec = (
            np.concatenate(
                [
                    np.stack(
                        [np.full(idx.shape[0], s), lr, lc, vals[idx].view(np.int64)], axis=1
                    ).astype(np.int64)
                    for s, idx, _, lr, lc in parts
                ]
            )
            if parts
            else np.zeros((0, 4), np.int64)
        )
        (got,), _, _, _ = world.route(dst, [rec], "setup")
        c = layout.coords(world.rank)
        shards = {}
        for s, key in enumerate(layout.shard_keys):
            _, q, r = key
            bq, br = layout.bounds(q), layout.bounds(r)
            shape = (int(bq[c[q] + 1] - bq[c[q]]), int(br[c[r] + 1] - br[c[r]]))
            sel = got[got[:, 0] == s]
            M = sp.csr_matrix(
                (sel[:, 3].copy().view(np.float64), (sel[:, 1], sel[:, 2])), shape=shape
            )
            M.sum_duplicates()
            M.sort_indices()
            shards[key] = M
        return shards

    @staticmethod
    def _route_node_data(world, layout: PlexusLayout, local, ops: PlexusOps) -> None:
        """Send the feature rows (their column chunks) to the holders of the input block and
        the labels and masks to the holders of the output block; `local` then describes the
        rank's node data (features: `ops.input_rows`; labels, masks, ids: `ops.rows`)."""
        P = world.size
        c = layout.coords(world.rank)
        # the first rank of each load block row sends its block row's node data
        keep = slice(None) if layout.load_block(world.rank)[1] == 0 else slice(0, 0)
        orig = np.asarray(local.orig_ids, dtype=np.int64)[keep]
        X = local.features
        X = (X.toarray() if sp.issparse(X) else np.asarray(X))[keep]
        f = layout.num_features
        # features: ids, then the column chunk of each destination
        dst, row = _copies_to_holders(layout, INPUT, orig)
        (got_ids,), order, send, recv = world.route(dst, [orig[row]], "setup")
        row = row[order]
        fb = layout.fbounds(f, INPUT.col)
        ycol = layout.coords_all[:, INPUT.col]
        ptr = np.concatenate(([0], np.cumsum(send)))
        pieces, elems = [], np.zeros(P, dtype=np.int64)
        for d in np.flatnonzero(send):
            lo, hi = int(fb[ycol[d]]), int(fb[ycol[d] + 1])
            blk = X[row[ptr[d] : ptr[d + 1]], lo:hi]
            pieces.append(blk.reshape(-1))
            elems[d] = blk.size
        flat = np.concatenate(pieces) if pieces else np.zeros(0, dtype=X.dtype)
        lo, hi = int(fb[c[INPUT.col]]), int(fb[c[INPUT.col] + 1])
        got = world.alltoallv(
            np.ascontiguousarray(flat, dtype=X.dtype), elems, recv * (hi - lo), "setup"
        )
        b = layout.bounds(INPUT.row)
        at = layout.position(layout.num(INPUT.num), got_ids) - b[c[INPUT.row]]
        Xin = np.zeros((int(b[c[INPUT.row] + 1] - b[c[INPUT.row]]), hi - lo), dtype=X.dtype)
        Xin[at] = got.reshape(at.shape[0], hi - lo)
        # labels and masks
        out = layout.output
        names = [m for m in ("train", "val", "test") if local.masks.get(m) is not None]
        bits = np.zeros(orig.shape[0], dtype=np.int64)
        for i, m in enumerate(names):
            bits |= np.asarray(local.masks[m], dtype=np.int64)[keep] << i
        rec = np.stack(
            [orig, np.asarray(local.labels, np.int64)[keep], bits, np.zeros_like(orig)], axis=1
        )
        dst, row = _copies_to_holders(layout, out, orig)
        (got,), _, _, _ = world.route(dst, [rec[row]], "setup")
        b = layout.bounds(out.row)
        at = layout.position(layout.num(out.num), got[:, 0]) - b[c[out.row]]
        m = int(b[c[out.row] + 1] - b[c[out.row]])
        labels = np.full(m, -1, dtype=np.int64)
        labels[at] = got[:, 1]
        masks = {}
        for name in ("train", "val", "test"):
            if name in names:
                mk = np.zeros(m, dtype=bool)
                mk[at] = (got[:, 2] >> names.index(name)) & 1 == 1
                masks[name] = mk
            else:
                masks[name] = None
        local.features = Xin
        local.labels = labels
        local.masks = masks
        local.orig_ids = ops.rows
        local.node_rows = None

    # -- exchange description ------------------------------------------------------------------
    def setup_steps(self, ctx) -> list:
        lay: PlexusLayout = ctx.layout
        P = lay.size
        world = Groups.world(P)
        lead = _first_in_block_row(lay)
        R, C = lay.load_grid
        block_rows = np.diff(lay.numbering.offsets)
        orow, ocol, src = _entries(ctx)
        out = [
            ("setup", Allgatherv(world, lead * 8)),
            ("setup", Allreduce(Groups.axis((R, C), 1), block_rows, 8)),
            ("setup", Allgatherv(world, lead * 8)),
            ("setup", Uniform(world, 8)),
        ]
        srcs, dsts, cnts = [], [], []
        for key in lay.shard_keys:
            qi, ri, _, _ = lay.shard_coords(key, orow, ocol)
            _, q, r = key
            code, cnt = np.unique((src * lay.dims[q] + qi) * lay.dims[r] + ri, return_counts=True)
            s_, rest = np.divmod(code, lay.dims[q] * lay.dims[r])
            qq, rr = np.divmod(rest, lay.dims[r])
            d = lay.shard_ranks(key, qq, rr)
            srcs.append(np.repeat(s_, d.shape[1]))
            dsts.append(d.reshape(-1))
            cnts.append(np.repeat(cnt, d.shape[1]))
        ps, pd, pc = _pair_sum(P, np.concatenate(srcs), np.concatenate(dsts), np.concatenate(cnts))
        out.append(("setup", Pairs(P, ps, pd, pc * ENTRY_BYTES)))
        # node data: ids and feature chunks to the input holders, labels to the output holders
        orig = _load_orig(lay)
        load = _sources(lay)
        ps, pd, pc = holder_pairs(lay, INPUT, orig, load)
        width = lay.col_counts(INPUT, lay.num_features)
        out += [
            ("setup", Uniform(world, 8)),
            ("setup", Pairs(P, ps, pd, pc * 8)),
            ("setup", Pairs(P, ps, pd, pc * width[pd] * ctx.feature_itemsize)),
        ]
        ps, pd, pc = holder_pairs(lay, lay.output, orig, load)
        out += [("setup", Uniform(world, 8)), ("setup", Pairs(P, ps, pd, pc * LABEL_BYTES))]
        return out

    def _plan_of(self, ctx, call) -> LayerPlan:
        return ctx.layout.plans[int(call.phase.layer)]

    def steps_aggregate(self, ctx, call) -> list:
        p = self._plan_of(ctx, call).agg
        return spmm_steps(ctx.layout, p, False, call.shape(0)[1], call.itemsize(0))

    def steps_aggregate_t(self, ctx, call) -> list:
        p = self._plan_of(ctx, call).agg
        return spmm_steps(ctx.layout, p, True, call.shape(0)[1], call.itemsize(0))

    def steps_matmul(self, ctx, call) -> list:
        lay: PlexusLayout = ctx.layout
        pl = self._plan_of(ctx, call)
        f_in, f_out = ctx.layout.weight_shape(call.phase.layer)
        isz, wsz = call.itemsize(0), call.itemsize(1)
        selfterm = call.phase.term == "self"
        out = []
        if selfterm and pl.self_first:
            out.append(move_step(lay, pl.inp, f_in, isz))
        out.append(weight_step(lay, (f_in, f_out), pl.mm, wsz))
        rows = lay.row_counts(pl.mm)
        out.append(_allreduce(lay, pl.mm.col, rows * lay.col_counts(mm_out(pl.mm), f_out), isz))
        if selfterm and not pl.self_first:
            out.append(move_step(lay, pl.agg, f_out, isz))
        return out

    def steps_matmul_grads(self, ctx, call) -> list:
        lay: PlexusLayout = ctx.layout
        pl = self._plan_of(ctx, call)
        f_in, f_out = ctx.layout.weight_shape(call.phase.layer)
        isz, wsz, gsz = call.itemsize(0), call.itemsize(1), call.itemsize(2)
        selfterm = call.phase.term == "self"
        out = []
        if selfterm and pl.self_first:
            out.append(move_step(lay, pl.inp, f_in, isz))
        if selfterm and not pl.self_first:
            out.append(move_step(lay, pl.out, f_out, gsz))
        if call.kw("need_input_grad"):
            out.append(weight_step(lay, (f_in, f_out), pl.mm, wsz))
            rows = lay.row_counts(pl.mm)
            out.append(_allreduce(lay, pl.mm.rep, rows * lay.col_counts(pl.mm, f_in), gsz))
            if selfterm and pl.self_first:
                out.append(move_step(lay, pl.mm, f_in, gsz))
        return out

    def steps_reduce_weight_grad(self, ctx, call) -> list:
        lay: PlexusLayout = ctx.layout
        shape = call.args[1][2]
        p = self._plan_of(ctx, call).mm
        return [ReduceScatterv(lay.groups(p.row), lay.weight_chunks(shape, p) * call.itemsize(0))]

    def steps_bias_grad(self, ctx, call) -> list:
        lay: PlexusLayout = ctx.layout
        out = self._plan_of(ctx, call).out
        width = call.args[1][2][0]
        return [_allreduce(lay, out.row, lay.col_counts(out, width), call.itemsize(0))]

    def steps_node_sum(self, ctx, call) -> list:
        lay: PlexusLayout = ctx.layout
        m = int(np.prod(call.shape(0)))
        return [_allreduce(lay, lay.output.row, np.full(lay.size, m), call.itemsize(0))]

    def steps_element_sum(self, ctx, call) -> list:
        return [Allreduce(Groups.world(ctx.P), np.array([int(np.prod(call.shape(0)))]), 8)]

    def steps_row_normalize(self, ctx, call) -> list:
        lay: PlexusLayout = ctx.layout
        return [_allreduce(lay, INPUT.col, lay.row_counts(INPUT), 8)]

    def steps_predict(self, ctx, call) -> list:
        lay: PlexusLayout = ctx.layout
        out, C = lay.output, call.kw("width")
        nbytes = lay.row_counts(out) * lay.col_counts(out, C) * call.itemsize(0)
        return [Allgatherv(lay.groups(out.col), nbytes)]

    def steps_xent(self, ctx, call) -> list:
        lay: PlexusLayout = ctx.layout
        k = call.args[2][1]
        return self.steps_predict(ctx, call) + [
            _allreduce(lay, lay.output.row, np.full(lay.size, 2 * k), 8)
        ]

    def steps_gather_param(self, ctx, call) -> list:
        lay: PlexusLayout = ctx.layout
        shape = call.args[1][2]
        pl = self._plan_of(ctx, call)
        if len(shape) == 1:
            nbytes = lay.col_counts(pl.out, shape[0]) * call.itemsize(0)
            return [Allgatherv(lay.groups(pl.out.col), nbytes)]
        return [
            Allgatherv(Groups.world(lay.size), lay.weight_chunks(shape, pl.mm) * call.itemsize(0))
        ]

    def steps_param_sum_sq(self, ctx, call) -> list:
        return [Allreduce(Groups.world(ctx.P), np.array([1]), 8)]

    # -- compute and memory --------------------------------------------------------------------
    def shard_nnz(self, ctx) -> np.ndarray:
        """(keys, P) stored entries of every shard on every rank."""
        lay: PlexusLayout = ctx.layout

        def make():
            orow, ocol, _ = _entries(ctx)
            out = np.zeros((len(lay.shard_keys), lay.size), dtype=np.int64)
            for s, key in enumerate(lay.shard_keys):
                _, q, r = key
                qi, ri, _, _ = lay.shard_coords(key, orow, ocol)
                tab = np.bincount(qi * lay.dims[r] + ri, minlength=lay.dims[q] * lay.dims[r])
                c = lay.coords_all
                out[s] = tab[c[:, q] * lay.dims[r] + c[:, r]]
            return out

        return ctx.cached("plexus_shard_nnz", make)

    def work_aggregate(self, ctx, call) -> np.ndarray:
        lay: PlexusLayout = ctx.layout
        p = self._plan_of(ctx, call).agg
        nnz = self.shard_nnz(ctx)[lay.shard_keys.index(lay.shard_key(p))]
        out = spmm_work(nnz, 1)
        out[:, 1] = 2 * nnz * lay.col_counts(p, call.shape(0)[1])
        return out

    work_aggregate_t = work_aggregate

    def work_matmul(self, ctx, call) -> np.ndarray:
        lay: PlexusLayout = ctx.layout
        pl = self._plan_of(ctx, call)
        f_in, f_out = ctx.layout.weight_shape(call.phase.layer)
        rows = lay.row_counts(pl.mm)
        fin = lay.col_counts(pl.mm, f_in)
        fout = lay.col_counts(mm_out(pl.mm), f_out)
        out = np.zeros((lay.size, 4), dtype=np.int64)
        one = 2 * rows * fin * fout
        products = 1 if call.method == "matmul" or not call.kw("need_input_grad") else 2
        if call.sparse(0) and ctx.feature_nnz is not None:
            # the trainer hands a sparse input over as CSR: its product with W (or dW's
            # H^T dZ) is sparse, over the block's expected stored entries
            nnz = np.round(rows * fin * ctx.feature_density(f_in)).astype(np.int64)
            out[:, 0], out[:, 1] = nnz, 2 * nnz * fout
            products -= 1
        out[:, 2] = one * products
        out[:, 3] = rows * products
        return out

    work_matmul_grads = work_matmul

    def held_estimate(self, ctx, itemsize: int) -> np.ndarray:
        """Per rank: every shard (float64 CSR, int32 indices), its copy in the run's dtype
        and its transposed copy where a layer multiplies by S^T, the self-term move maps, the
        node data (input block of features; int64 labels, ids; bool masks) and the layout."""
        from gcntrain.schemes.held import layout_bytes

        lay: PlexusLayout = ctx.layout
        c = lay.coords_all
        nnz = self.shard_nnz(ctx)
        total = np.zeros(lay.size, dtype=np.int64)
        transposed = set()
        for layer, (pl, m) in enumerate(zip(lay.plans, lay.model)):
            if m["order"] == "mm_first" or layer > 0:
                transposed.add(lay.shard_key(pl.agg))
        for s, key in enumerate(lay.shard_keys):
            _, q, r = key
            mq = np.diff(lay.bounds(q))[c[:, q]]
            mr = np.diff(lay.bounds(r))[c[:, r]]
            total += nnz[s] * (8 + 4) + (mq + 1) * 4
            if itemsize != 8:
                total += nnz[s] * (itemsize + 4) + (mq + 1) * 4
            if key in transposed:
                total += nnz[s] * (itemsize + 4) + (mr + 1) * 4
        moves = set()
        for layer, pl in enumerate(lay.plans):
            if pl.self_first is None:
                continue
            used = (pl.inp, pl.mm) if pl.self_first else (pl.agg, pl.out)
            moves.update(used if layer > 0 or not pl.self_first else used[:1])
        for p in moves:
            tgt = agg_out(p)
            mine = lay.move_counts(p)[c[:, tgt.row], c[:, p.row]]
            total += 8 * (mine + lay.row_counts(tgt) + lay.dims[p.row])
        m_in, m_out = lay.row_counts(INPUT), lay.row_counts(lay.output)
        f_in = lay.col_counts(INPUT, lay.num_features)
        total += m_in * f_in * ctx.feature_itemsize + 8 * m_in
        total += m_out * (8 + 8 + ctx.masks)
        return total + layout_bytes(ctx)

    def footprint(self, ctx) -> dict:
        lay: PlexusLayout = ctx.layout
        f = max(lay.num_features, 1)
        adj = self.shard_nnz(ctx).sum(axis=0)
        if not ctx.symmetric:
            adj = 2 * adj
        return {
            "rows": lay.row_counts(INPUT),
            "adjacency": adj,
            "buffer_rows": np.zeros(lay.size, dtype=np.int64),
            "col_fraction": lay.col_counts(INPUT, f) / f,
        }


def _pair_sum(P: int, src, dst, cnt):
    key = src * P + dst
    u, inv = np.unique(key, return_inverse=True)
    tot = np.bincount(inv, weights=cnt, minlength=u.shape[0]).astype(np.int64)
    return u // P, u % P, tot
