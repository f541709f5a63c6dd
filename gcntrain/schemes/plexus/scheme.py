"""The Plexus scheme: its options, configuration, grids and layout; setup and pricing come
from the `PlexusSetup` and `PlexusCost` mixins (see `gcntrain.schemes.plexus`)."""

from __future__ import annotations

import numpy as np

from gcntrain.comm.grid import check_grid, factorizations
from gcntrain.errors import InputError
from gcntrain.partition.basic import block_bounds
from gcntrain.partition.permute import double_permutation
from gcntrain.schemes.config import format_grid, parse_choice
from gcntrain.schemes.plexus.cost import PlexusCost
from gcntrain.schemes.plexus.layout import PlexusLayout
from gcntrain.schemes.plexus.placement import PERMUTES
from gcntrain.schemes.plexus.setup import PlexusSetup
from gcntrain.schemes.protocol import Scheme, SchemeOption
from gcntrain.schemes.two_d import GRID_OPTION


def parse_permute(value, size: int = 0, scheme=None) -> str:
    """``--permute`` (None: none), one of `PERMUTES`."""
    return parse_choice(value, "--permute", PERMUTES, "none")


def parse_seed(value, size: int = 0, scheme=None) -> int:
    """``--permute-seed`` (None: 0)."""
    return 0 if value is None else int(value)


def parse_block_rows(value, size: int = 0, scheme=None) -> int:
    """``--block-rows`` (None: 0, one block), at least 0."""
    block = 0 if value is None else int(value)
    if block < 0:
        raise InputError(f"--block-rows must be >= 0, got {block}")
    return block


def parse_load_grid(value, size: int, scheme=None) -> tuple[int, int]:
    """``--load-grid RxC`` on `size` ranks as (R, C) (None: (P, 1), one row block per
    rank), checked against the ranks."""
    if value is None:
        return (int(size), 1)
    try:
        r, c = (int(v) for v in str(value).lower().split("x"))
    except ValueError:
        raise InputError(f"--load-grid must look like RxC (e.g. 4x2), got {value!r}") from None
    check_grid(size, (r, c), "load grid")
    return (r, c)


PERMUTE_OPTION = SchemeOption(
    "permute",
    ("--permute",),
    "none",
    "Plexus: node orderings of the shards: none (the graph's order) or double (independent "
    "random row and column orderings, alternating layer by layer; section 5.1).",
    str,
    "none|double",
    cli=False,
    parse=parse_permute,
)
PERMUTE_SEED_OPTION = SchemeOption(
    "permute_seed",
    ("--permute-seed",),
    0,
    "Plexus: seed of --permute double.",
    int,
    "INT",
    parse=parse_seed,
)
LOAD_GRID_OPTION = SchemeOption(
    "load_grid",
    ("--load-grid",),
    None,
    "Plexus: read the graph as R x C blocks, rank r block (r // C, r % C) (a 2D store "
    "written with `gcntrain shard --grid RxC`) [default: P x 1, one row block per rank].",
    str,
    "RxC",
    parse=parse_load_grid,
    show=format_grid,
)
BLOCK_ROWS_OPTION = SchemeOption(
    "block_rows",
    ("--block-rows",),
    0,
    "Plexus: blocked aggregation, one SpMM and one Allreduce per block of this many output "
    "rows (section 5.2); 0 = one block.",
    int,
    "ROWS",
    parse=parse_block_rows,
)


#: bytes of Plexus' loading routes per pair of ranks they may list, with the passes that
#: build them (measured: R-MAT 19 and 20 at P = 8192, grid 16x16x32: 13 to 17, whatever the
#: graph)
PAIR_ROUTE_BYTES = 18


class Plexus(PlexusCost, PlexusSetup, Scheme):
    name = "plexus"
    plan_cost = 0.8  # measured: 17 ms bounded, 26 ms priced
    grid_option = "grid"
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
    #: grid dimensions (``--grid XxYxZ``)
    ndim = 3
    #: columns split over the grid: every communicating method is priced
    silent = frozenset()

    def plan_table_bytes(self, P: int, n: int, nnz: int) -> tuple[int, str]:
        """The loading routes and the passes that build them: `PAIR_ROUTE_BYTES` per pair of
        ranks they may list (at most three per entry of S and rank)."""
        pairs = min(P * P, 3 * (nnz + n) * P)
        return PAIR_ROUTE_BYTES * pairs, f"Plexus' loading routes among {P:,} ranks"

    def grid_candidates(self, size: int) -> list[str]:
        return [format_grid(f) for f in factorizations(size, self.ndim)]

    def sweep_options(self, size: int) -> list[dict]:
        """Every grid, with and without the double permutation (section 5.1)."""
        grids = self.grid_candidates(size)
        return [{**self.with_grid({}, g), "permute": p} for g in grids for p in PERMUTES]

    def test_configurations(self, size: int) -> list[tuple[dict, str | None]]:
        """The first grid without and the last with the double permutation (the full
        matrix of grids is tests/test_mpi_schemes.py's)."""
        grids = self.grid_candidates(size)
        first = {**self.with_grid({}, grids[0]), "permute": PERMUTES[0]}
        return [(first, None), ({**self.with_grid({}, grids[-1]), "permute": PERMUTES[-1]}, None)]

    def device_unsupported(self, config) -> list[str]:
        """What of `config` does not run on a device (`gcntrain.job.device_run`): nothing;
        every grid, ``--permute``, ``--block-rows`` and ``--load-grid`` does
        (`gcntrain.schemes.plexus.device`)."""
        return []

    def row_parts(self, size: int, config) -> int:
        return config.load_grid[0]

    def col_parts(self, size: int, config) -> int | None:
        c = config.load_grid[1]
        return None if c == 1 else c

    def layout(self, numbering, meta, size, config, model=None) -> PlexusLayout:
        if model is None:
            raise InputError(
                "--scheme plexus lays out every layer of the model: the graph needs labels "
                "(or give --classes to simulate)"
            )
        n = int(numbering.offsets[-1])
        orders = None
        if config.permute == "double":
            row_perm, col_perm = double_permutation(n, config.permute_seed)
            orders = (col_perm, row_perm)
        load_cols = None
        c = config.load_grid[1]
        if c > 1:
            cols = numbering.col_offsets
            load_cols = np.asarray(block_bounds(n, c) if cols is None else cols, dtype=np.int64)
        return PlexusLayout(
            numbering,
            config.grid,
            int(meta.num_features),
            tuple(dict(m) for m in model),
            orders,
            config.block_rows,
            load_cols,
        )
