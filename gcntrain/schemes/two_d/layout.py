"""The 2D / split-3D block layout and the exchanges it implies: the grid of blocks
(`Layout2D`), the column chunks of node-wise matrices, the SUMMA broadcast stages of a
product with S, the fibers' Reduce-scatter, and which rank holds each entry of S (one
definition each, shared by the runtime and the plan)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from gcntrain.comm.exchange import BcastStages, Groups, ReduceScatterv
from gcntrain.partition.basic import block_bounds
from gcntrain.partition.csr import concat_ranges
from gcntrain.schemes.layout import owner_of
from gcntrain.schemes.protocol import LoadRequest, Numbering

#: bytes of one broadcast entry of S besides its value: int32 row and int32 column
ENTRY_ID_BYTES = 8


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
