"""The Plexus scheme: its options, configuration, grids and layout; setup and pricing come
from the `PlexusSetup` and `PlexusCost` mixins (see `gcntrain.schemes.plexus`)."""

from __future__ import annotations

import numpy as np

from gcntrain.comm.grid import check_grid, factorizations, parse_dims
from gcntrain.errors import InputError
from gcntrain.partition.basic import block_bounds
from gcntrain.partition.permute import double_permutation
from gcntrain.schemes.plexus.cost import PlexusCost
from gcntrain.schemes.plexus.layout import PlexusLayout
from gcntrain.schemes.plexus.placement import PERMUTES
from gcntrain.schemes.plexus.setup import PlexusSetup
from gcntrain.schemes.protocol import Scheme, SchemeOption
from gcntrain.schemes.two_d import GRID_OPTION

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


class Plexus(PlexusCost, PlexusSetup, Scheme):
    name = "plexus"
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
    #: columns split over the grid: every communicating method is priced
    silent = frozenset()

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
        grids = self.grid_candidates(size)
        return [{**self.with_grid({}, g), "permute": p} for g in grids for p in PERMUTES]

    def test_configurations(self, size: int) -> list[tuple[dict, str | None]]:
        """The first grid without and the last with the double permutation (the full
        matrix of grids is tests/test_mpi_schemes.py's)."""
        grids = self.grid_candidates(size)
        first = {**self.with_grid({}, grids[0]), "permute": PERMUTES[0]}
        return [(first, None), ({**self.with_grid({}, grids[-1]), "permute": PERMUTES[-1]}, None)]

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
