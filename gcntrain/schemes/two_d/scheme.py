"""The CAGNET 2D scheme (`TwoD`): its grid option, configuration, layout and MPI setup;
its pricing is the `TwoDCost` mixin (see `gcntrain.schemes.two_d`)."""

from __future__ import annotations

import numpy as np

from gcntrain.comm.grid import factorizations, grid_2d, parse_dims
from gcntrain.model.normalize import DEGREE_OFFSET, degrees, support_rows
from gcntrain.partition.basic import block_bounds
from gcntrain.schemes.config import format_grid
from gcntrain.schemes.protocol import REORDER_OPTION, Scheme, SchemeOption
from gcntrain.schemes.two_d.cost import TwoDCost
from gcntrain.schemes.two_d.device import TwoDDeviceOps
from gcntrain.schemes.two_d.layout import Layout2D, stage_counts
from gcntrain.schemes.two_d.ops import StagePieces, TwoDOps, _transpose_block, layer_columns


def parse_grid(value, size: int, scheme) -> tuple[int, ...]:
    """``--grid`` of a block scheme on `size` ranks: its `scheme.ndim` dimensions (None:
    the most nearly square or cubic grid), checked against the ranks."""
    return parse_dims(value, size, scheme.ndim, scheme.name)


#: the process-grid option of the block schemes (one declaration, shared): configured as a
#: tuple of ints, printed as ``RxC`` / ``XxYxZ``
GRID_OPTION = SchemeOption(
    "grid",
    ("--grid",),
    None,
    "Process grid of the block schemes: RxC for 2d, XxYxZ for 3d "
    "[default: the most nearly square / cubic].",
    str,
    "RxC|XxYxZ",
    parse=parse_grid,
    show=format_grid,
)


class TwoD(TwoDCost, Scheme):
    name = "2d"
    plan_cost = 0.6  # measured: 12 ms bounded, 20 ms priced (3D alike)
    grid_option = "grid"
    whole_rows = False  # feature columns split over the grid
    sweep_partitions = ("block", "random")  # SUMMA's volume ignores locality; random balances
    summary = "CAGNET 2D: SUMMA on a Pr x Pc grid, W replicated (Algorithm 3)"
    options = (GRID_OPTION, REORDER_OPTION)
    #: grid dimensions: Pr x Pc (2D) or X x Y x Z (split-3D, Z layers)
    ndim = 2
    #: columns split over the grid: every communicating method is priced
    silent = frozenset()

    def grid_candidates(self, size: int) -> list[str]:
        return [format_grid(f) for f in factorizations(size, self.ndim)]

    def row_parts(self, size: int, config) -> int:
        return config.grid[0]

    def col_parts(self, size: int, config) -> int:
        return config.grid[1]

    def layout(self, numbering, meta, size, config, model=None) -> Layout2D:
        pr, pc, *layers = config.grid
        cols = numbering.col_offsets
        if cols is None:
            cols = block_bounds(int(numbering.offsets[-1]), pc)
        cols = np.asarray(cols, dtype=np.int64)
        return Layout2D(numbering, pr, pc, cols, meta.num_features, *layers)

    def setup(self, world, layout: Layout2D, local, kind: str, backend=None) -> TwoDOps:
        """The blocks of S and S^T, their stage pieces and the stage tables, then `TwoDOps`
        on the host (`backend` None or the host's) or `TwoDDeviceOps` on the device of
        `backend` (`gcntrain.device.backend`; split-3D too)."""
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
        args = (world, grid, layout, pieces, nnz, local.orig_ids, lcol, fiber)
        if backend is None or getattr(backend, "name", "cpu") == "cpu":
            return TwoDOps(*args)
        return TwoDDeviceOps(*args, backend)
