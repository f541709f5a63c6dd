"""CAGNET 1.5D block-row scheme (Algorithm 2 of the CAGNET paper), general P and c.

Ranks form a (P/c) x c grid, rank r at (i, j) = (r // c, r % c).  There are B = P/c block rows;
every rank of process row i holds block row i of S (and S^T) and of H (replication c).  The B
column blocks are dealt to the c process columns in consecutive chunks as evenly as possible;
when c does not divide B the extra stages go to the last columns ("more stages on the last
process column").  ``S @ X`` on rank (i, j): for each block k of chunk j, rank (k, j)
broadcasts X_k down process column j and every rank adds ``S_ik @ X_k``; the partial sums are
then Allreduced along process row i.  Weight gradients and metrics are summed over a process
column (one copy of every block row).  c = 1 is the 1D algorithm on B = P blocks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gcntrain.comm import volume as V
from gcntrain.comm.counters import Tally
from gcntrain.comm.grid import check_grid, coords
from gcntrain.errors import InputError
from gcntrain.schemes.base import RowOps, TypedBlocks, broadcast_stages
from gcntrain.schemes.one_d import aggregate_volume
from gcntrain.schemes.schedule import AGGREGATIONS, Call, plan_calls, reduction_volume


def check_replication(P: int, c: int) -> int:
    """Validate c for P ranks; return the number of block rows B = P / c."""
    if c < 1:
        raise InputError(f"--replication must be >= 1, got {c}")
    if P % c:
        raise InputError(f"--replication {c} does not divide the number of ranks {P}")
    check_grid(P, (P // c, c), "1.5D grid")
    return P // c


def stage_blocks(B: int, c: int, j: int) -> range:
    """Block columns handled by process column j.

    The B blocks are dealt in consecutive chunks as evenly as possible; when c does not divide
    B the extra stages go to the last process columns (the paper's "more stages on the last
    process column"), and when c > B the first c - B columns have none.
    """
    counts = V.chunk_sizes(B, c)[::-1]
    start = int(counts[:j].sum())
    return range(start, start + int(counts[j]))


@dataclass
class Layout15D:
    offsets: np.ndarray  # B+1 block-row boundaries
    c: int
    symmetric: bool

    @property
    def blocks(self) -> int:
        return self.offsets.shape[0] - 1

    @property
    def size(self) -> int:
        return self.blocks * self.c

    def coords(self, rank: int) -> tuple[int, int]:
        return coords(rank, (self.blocks, self.c))


def call_volume(layout: Layout15D, rank: int, call: Call) -> np.ndarray:
    B, c = layout.blocks, layout.c
    i, j = layout.coords(rank)
    sizes = np.diff(layout.offsets)
    if call.op in AGGREGATIONS:
        vol = aggregate_volume(layout.offsets, i, call.width, call.itemsize, stage_blocks(B, c, j))
        return vol + V.allreduce(int(sizes[i]) * call.width, call.itemsize, j, c)
    return reduction_volume(call, i, B, rank, layout.size)


def plan(layout: Layout15D, rank: int, calls: list[Call]) -> Tally:
    return plan_calls(calls, lambda c: call_volume(layout, rank, c))


class OneFiveDOps(RowOps):
    """Runtime of the 1.5D scheme for one rank (see module docstring).

    Parameters
    ----------
    world : Comm
    grid : Grid2D with pr = B, pc = c (row = process row, col = process column).
    offsets : B+1 block-row boundaries.
    fwd, bwd : local rows of S and S^T (bwd None when symmetric).
    rows : original ids of the local rows.
    """

    def __init__(self, world, grid, offsets, fwd, bwd, rows):
        super().__init__(world, grid.col, rows, int(offsets[-1]))
        self.grid = grid
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.stages = stage_blocks(grid.pr, grid.pc, grid.j)
        self.blocks = TypedBlocks(self.offsets, fwd, bwd)

    def _product(self, which: str, X: np.ndarray, phase: str) -> np.ndarray:
        X = np.ascontiguousarray(X)
        partial = broadcast_stages(
            self.grid.col,
            self.blocks.get(which, X.dtype),
            np.diff(self.offsets),
            self.stages,
            self.grid.i,
            X,
            phase,
        )
        return self.grid.row.allreduce(partial, phase)
