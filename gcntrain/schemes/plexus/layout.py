"""Pure layout of a Plexus run (no MPI): grid coordinates, row and column chunks, the
numberings, the adjacency shards, the node data and parameter blocks each rank holds, and
who sends what in setup (one definition for the runtime and the plan)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from gcntrain.comm.exchange import Groups
from gcntrain.partition.basic import block_bounds
from gcntrain.partition.permute import inverse_permutation
from gcntrain.partition.unique import unique_ints
from gcntrain.schemes.layout import owner_of
from gcntrain.schemes.plexus.placement import INPUT, LayerPlan, Place, agg_out, layer_plans
from gcntrain.schemes.protocol import LoadRequest, Numbering


@dataclass(frozen=True)
class PlexusLayout:
    """Pure layout of a Plexus run (see `gcntrain.schemes.plexus`).  `numbering` is the loading
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
    code, cnt = unique_ints(load * g + layout.row_chunk(place, orig), return_counts=True)
    src, chunk = np.divmod(code, g)
    dst = layout.chunk_holders(place, chunk)
    k = dst.shape[1]
    return np.repeat(src, k), dst.reshape(-1), np.repeat(cnt.astype(np.int64), k)
