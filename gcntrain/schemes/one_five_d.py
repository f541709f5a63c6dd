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

import numpy as np

from gcntrain.comm import volume as V
from gcntrain.comm.exchange import Allreduce, BcastStages, Groups
from gcntrain.comm.grid import check_grid, grid_2d
from gcntrain.errors import InputError
from gcntrain.model.compute import compute_for
from gcntrain.schemes.base import (
    BlockBroadcasts,
    BroadcastRowScheme,
    RowLayout,
    RowOps,
    TypedBlocks,
    broadcasts_ahead,
    row_setup,
)
from gcntrain.schemes.device_rows import DeviceBlockProducts, DeviceSums
from gcntrain.schemes.entries import entry_pair_counts
from gcntrain.schemes.protocol import REORDER_OPTION, SchemeOption


def check_replication(P: int, c: int) -> int:
    """Validate c for P ranks; return the number of block rows B = P / c."""
    if c < 1:
        raise InputError(f"--replication must be >= 1, got {c}")
    if P % c:
        raise InputError(f"--replication {c} does not divide the number of ranks {P}")
    check_grid(P, (P // c, c), "1.5D grid")
    return P // c


def parse_replication(value, size: int, scheme=None) -> int:
    """``--replication`` on `size` ranks (None: 1), checked (`check_replication`)."""
    try:
        c = int(1 if value is None else value)
    except (TypeError, ValueError):
        raise InputError(f"--replication must be an integer, got {value!r}") from None
    check_replication(size, c)
    return c


def stage_blocks(B: int, c: int, j: int) -> range:
    """Block columns handled by process column j.

    The B blocks are dealt in consecutive chunks as evenly as possible; when c does not divide
    B the extra stages go to the last process columns (the paper's "more stages on the last
    process column"), and when c > B the first c - B columns have none.
    """
    counts = V.chunk_sizes(B, c)[::-1]
    start = int(counts[:j].sum())
    return range(start, start + int(counts[j]))


def broadcast_stages(layout: RowLayout, unit_bytes: int) -> BcastStages:
    """Process column j broadcasts the blocks of its chunk down the column, in order."""
    B, c = layout.blocks, layout.c
    grp, root = [], []
    for j in range(c):
        ks = list(stage_blocks(B, c, j))
        grp += [j] * len(ks)
        root += ks
    root_a = np.array(root, dtype=np.int64)
    return BcastStages(
        layout.block_groups(),
        np.array(grp, dtype=np.int64),
        root_a,
        layout.sizes[root_a] * unit_bytes,
        window=True,
    )


def partial_sum_step(layout: RowLayout, width: int, itemsize: int) -> Allreduce:
    """Partial sums of block row i Allreduced along process row i."""
    rows = Groups.axis((layout.blocks, layout.c), 1)
    return Allreduce(rows, layout.sizes * width, itemsize)


class OneFiveDOps(RowOps):
    """Runtime of the 1.5D scheme for one rank (see module docstring).

    Parameters
    ----------
    world : Comm
    grid : Grid2D with pr = B, pc = c (row = process row, col = process column).
    layout : RowLayout with c copies.
    fwd, bwd : local rows of S and S^T (bwd None when symmetric).
    rows : original ids of the local rows.
    """

    def __init__(self, world, grid, layout: RowLayout, fwd, bwd, rows):
        super().__init__(world, grid.col, rows, int(layout.offsets[-1]))
        self.grid = grid
        self.layout = layout
        self.broadcasts = BlockBroadcasts(
            grid.col,
            broadcast_stages(layout, 1),
            grid.j,
            grid.i,
            TypedBlocks(layout.offsets, fwd, bwd),
            layout.sizes,
            self.scratch,
            broadcasts_ahead(grid.col),
        )

    def _product(self, which: str, X, phase: str):
        partial = self.broadcasts.product(which, X, phase)
        return self.grid.row.allreduce(partial, phase)


class OneFiveDDeviceOps(DeviceSums, RowOps):
    """The 1.5D scheme on a device (docs/gpu.md): every array of the loop stays on the
    device.  The column broadcasts of a product go into one device operand and one device
    SpMM (`DeviceBlockProducts`), the partial sums are Allreduced along the process row,
    and the sums over nodes and parameters over the process column, all through the
    backend's staged communicators (`backend.staged`: the counters see a host run's
    messages, so measured bytes equal the plan).  Parameters as `OneFiveDOps`, plus the
    run's device `backend`."""

    def __init__(self, world, grid, layout: RowLayout, fwd, bwd, rows, backend):
        super().__init__(
            backend.staged(world), backend.staged(grid.col), rows, int(layout.offsets[-1])
        )
        self.compute = compute_for(backend)
        self.backend = backend
        self.grid = grid
        self.layout = layout
        self.row = backend.staged(grid.row)
        self.products = DeviceBlockProducts(
            self.reduce_comm,
            broadcast_stages(layout, 1),
            grid.j,
            grid.i,
            TypedBlocks(layout.offsets, fwd, bwd),
            layout.sizes,
            backend,
            self.compute.xp,
        )

    def _product(self, which: str, X, phase: str):
        partial = self.products.product(which, X, phase)
        return self.row.allreduce(partial, phase)


class OneFiveD(BroadcastRowScheme):
    name = "1.5d"
    plan_cost = 0.7  # measured: 21 ms (its bound forms the replicas' blocks)
    summary = "CAGNET 1.5D: block rows replicated c times on a (P/c) x c grid (Algorithm 2)"
    options = (
        SchemeOption(
            "replication",
            ("--replication", "-c"),
            1,
            "1.5d: replication factor c (a P/c x c grid).",
            int,
            parse=parse_replication,
        ),
        REORDER_OPTION,
    )

    def row_parts(self, size: int, config) -> int:
        return size // config.replication

    def sweep_options(self, size: int) -> list[dict]:
        """Every replication factor c >= 2 dividing P with c^2 <= max(P, 4) (CAGNET's range:
        beyond sqrt(P) the replicas cost more memory than the broadcasts they save); c = 1 is
        the 1d scheme."""
        cs = [c for c in range(2, size + 1) if size % c == 0 and c * c <= max(size, 4)]
        return [{"replication": c} for c in cs] or [{"replication": 1}]

    def layout(self, numbering, meta, size, config, model=None) -> RowLayout:
        return RowLayout(numbering, config.replication)

    def setup(self, world, layout: RowLayout, local, kind: str, backend=None):
        """The row setup, then `OneFiveDOps` on the host (`backend` None or the host's) or
        `OneFiveDDeviceOps` on the device of `backend` (`gcntrain.device.backend`)."""
        grid = grid_2d(world, layout.blocks, layout.c)
        fwd, bwd = row_setup(world, grid.col, layout, local, kind)
        if backend is None or getattr(backend, "name", "cpu") == "cpu":
            return OneFiveDOps(world, grid, layout, fwd, bwd, local.orig_ids)
        return OneFiveDDeviceOps(world, grid, layout, fwd, bwd, local.orig_ids, backend)

    def broadcast_stages(self, layout: RowLayout) -> BcastStages:
        return broadcast_stages(layout, 1)

    def steps_aggregate(self, ctx, call) -> list:
        w, isz = call.shape(0)[1], call.itemsize(0)
        lay = ctx.layout
        return [broadcast_stages(lay, w * isz), partial_sum_step(lay, w, isz)]

    steps_aggregate_t = steps_aggregate

    def block_nnz(self, ctx, which: str) -> np.ndarray:
        """Rank (i, j) multiplies the entries of block row i whose column block is in chunk j."""
        lay: RowLayout = ctx.layout
        B, c = lay.blocks, lay.c

        def make():
            M = ctx.support if which == "f" else ctx.transpose()
            src, dst, cnt = entry_pair_counts(M, lay.offsets)
            chunk = np.zeros(B, dtype=np.int64)
            for j in range(c):
                chunk[list(stage_blocks(B, c, j))] = j
            per = np.zeros((B, c), dtype=np.int64)
            np.add.at(per, (src, chunk[dst]), cnt)
            r = np.arange(lay.size)
            return per[r // c, r % c]

        return ctx.cached(f"block_nnz_{which}", make)

    def buffer_rows(self, ctx) -> np.ndarray:
        """The partial sums of the rank's block (the broadcast buffer is kept)."""
        lay: RowLayout = ctx.layout
        return lay.sizes[lay.block_of_ranks()].astype(np.int64)
