"""`gcntrain shard GRAPH.h5 -o DIR`: write a sharded store (1D row blocks, 2D blocks, or
vertex-cut shards of a Libra edge partition with ``-m libra``)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import click
import numpy as np

from gcntrain.cli.display import emit
from gcntrain.cli.options import json_option, seed_option
from gcntrain.errors import FormatError, InputError


def block_partition(n: int, num_parts: int) -> np.ndarray:
    """Contiguous ranges of original ids: ``part[u] = floor(u P / n)``."""
    return (np.arange(n, dtype=np.int64) * num_parts) // max(n, 1)


def random_partition(n: int, num_parts: int, rng: np.random.Generator) -> np.ndarray:
    """Balanced random assignment: part sizes differ by at most one."""
    part = np.empty(n, dtype=np.int64)
    part[rng.permutation(n)] = block_partition(n, num_parts)
    return part


def parse_grid(text: str) -> tuple[int, int]:
    """``"RxC"`` -> (R, C), both >= 1."""
    match = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text)
    if not match or min(int(match[1]), int(match[2])) < 1:
        raise click.BadParameter(
            f"'{text}' is not RxC with R, C >= 1 (e.g. 2x4)", param_hint="--grid"
        )
    return int(match[1]), int(match[2])


def read_partition_file(
    path: str, graph_hash: str, n: int, num_parts: int | None
) -> tuple[np.ndarray, int]:
    """Read dataset `part` and attribute `graph_content_hash` of a partition file.

    Returns
    -------
    (part, P) with P from `num_parts`, else the file's `num_parts` attribute, else max + 1.
    """
    from gcntrain.data.store import int_attr, open_h5, read_dataset, str_attr
    from gcntrain.data.validate import validate_partition

    with open_h5(path, "partition file") as f:
        ghash = str_attr(f.attrs, "graph_content_hash", path)
        file_parts = int_attr(f.attrs, "num_parts", path, default=-1)
        declared = getattr(f.get("part"), "shape", None)
        if declared is not None and declared != (n,):  # checked before reading it
            raise FormatError(f"dataset 'part' has shape {declared}, the graph has {n} nodes", path)
        part = read_dataset(f, "part", path)
    if ghash != graph_hash:
        raise FormatError(
            f"partition was computed for a different graph (hash {ghash[:12]}..., "
            f"this graph has {graph_hash[:12]}...)",
            path,
        )
    if num_parts is not None and file_parts >= 0 and file_parts != num_parts:
        raise FormatError(f"partition has {file_parts} parts but --parts is {num_parts}", path)
    if num_parts is None:
        if file_parts >= 0:
            num_parts = file_parts
        else:
            num_parts = int(part.max()) + 1 if part.size and part.dtype.kind in "iu" else 1
    validate_partition(part, n, num_parts, path)
    return part.astype(np.int64), num_parts


def libra_cut(graph, parts: int | None, partition: str | None, seed: int):
    """(edge_part, root, P) of a Libra vertex cut: computed (`--parts P`), or read from a
    partition file written by `gcntrain partition -m libra` (checked against the graph)."""
    if partition is None:
        from gcntrain.partition.libra import libra_partition

        vc = libra_partition(
            graph.indptr.astype(np.int64), graph.indices.astype(np.int64), parts, seed=seed
        )
        return vc.edge_part, vc.root, parts
    from gcntrain.data.partition_file import read_vertex_cut

    return read_vertex_cut(partition, graph.content_hash(), graph.nnz, parts, n=graph.n)


def _check_libra_options(
    parts: int | None, partition: str | None, grid: str | None, permute: str | None
) -> None:
    """The options `-m libra` accepts: --parts P and/or --partition PART.h5."""
    if grid is not None or permute is not None:
        raise click.UsageError("--grid/--permute do not apply to -m libra (vertex-cut shards)")
    if partition in ("block", "random"):
        raise click.UsageError(
            "-m libra takes --parts P or a vertex-cut file --partition PART.h5, "
            f"not --partition {partition}"
        )
    if parts is None and partition is None:
        raise click.UsageError("give --parts P or --partition PART.h5 with -m libra")


@click.command("shard")
@click.argument("graph", metavar="GRAPH.h5")
@click.option(
    "-o",
    "--out",
    "out",
    required=True,
    metavar="OUT_DIR",
    help="Output directory (written under a temporary name, then renamed).",
)
@click.option(
    "-m",
    "--method",
    type=click.Choice(["rows", "libra"]),
    default="rows",
    show_default=True,
    help="rows: 1D row blocks (--parts) or 2D blocks (--grid); libra: vertex-cut shards "
    "of a Libra edge partition (--parts P, or --partition PART.h5 from "
    "`gcntrain partition -m libra`).",
)
@click.option(
    "--parts", type=int, default=None, help="1D row blocks or vertex-cut shards: parts P."
)
@click.option(
    "--partition",
    default=None,
    metavar="block|random|PART.h5",
    help="How nodes are assigned to the P parts (default: block).",
)
@click.option("--grid", default=None, metavar="RxC", help="2D blocks: an R x C grid.")
@click.option(
    "--permute",
    type=click.Choice(["none", "random", "double"]),
    default=None,
    help="2D: none, one random permutation of rows and columns, or independent "
    "row and column permutations (default: none).",
)
@click.option("--overwrite", is_flag=True, help="Replace an existing shard store at OUT_DIR.")
@seed_option
@json_option
def shard(
    graph: str,
    out: str,
    method: str,
    parts: int | None,
    partition: str | None,
    grid: str | None,
    permute: str | None,
    overwrite: bool,
    seed: int,
    as_json: bool,
) -> None:
    """Write GRAPH.h5 as a sharded store in OUT_DIR (format: docs/format.md).

    Either --parts P (1D row blocks; --partition block, random or a partition file PART.h5)
    or --grid RxC (2D blocks; --permute none, random or double); with -m libra, vertex-cut
    shards of a Libra edge partition of P parts (--parts P and/or --partition PART.h5).
    """
    from gcntrain.data.shards import write_block_shards, write_edge_shards, write_row_shards
    from gcntrain.data.store import read_graph

    part_file = partition not in (None, "block", "random")
    if method == "libra":
        _check_libra_options(parts, partition, grid, permute)
    if grid is not None and (parts is not None or partition is not None):
        raise click.UsageError("--grid cannot be combined with --parts/--partition")
    if grid is None and parts is None and not part_file:
        raise click.UsageError("give --parts P (1D row blocks) or --grid RxC (2D blocks)")
    if grid is None and permute is not None:
        raise click.UsageError("--permute applies to --grid only")
    if parts is not None and parts < 1:
        raise click.BadParameter("must be >= 1", param_hint="--parts")
    rc = parse_grid(grid) if grid is not None else None
    if part_file and not Path(partition).exists():
        raise InputError("no such partition file (expected block, random or PART.h5)", partition)

    t0 = time.perf_counter()
    # a block partition of a graph file: written a shard at a time, the graph never whole
    streamed = method != "libra" and rc is None and partition in (None, "block")
    g = None if streamed else read_graph(graph)
    t_read = time.perf_counter() - t0
    rng = np.random.default_rng(seed)
    t1 = time.perf_counter()
    info: dict = {"graph": graph, "out": out}
    if method == "libra":
        edge_part, root, parts = libra_cut(g, parts, partition, seed)
        manifest = write_edge_shards(g, edge_part, root, out, num_parts=parts, overwrite=overwrite)
        info.update(kind="edges", parts=parts, partition=partition or "libra")
    elif rc is None:
        if part_file:
            part, parts = read_partition_file(partition, g.content_hash(), g.n, parts)
        elif partition == "random":
            part = random_partition(g.n, parts, rng)
        else:
            part = None
        if part is None:  # the block partition (`block_partition`), streamed
            from gcntrain.data.shard_stream import write_block_row_store

            manifest = write_block_row_store(graph, parts, out, overwrite=overwrite)
        else:
            manifest = write_row_shards(g, part, out, num_parts=parts, overwrite=overwrite)
        info.update(kind="rows", parts=parts, partition=partition or "block")
    else:
        mode = permute or "none"
        row_perm = col_perm = None
        if mode == "random":
            row_perm = col_perm = rng.permutation(g.n)
        elif mode == "double":
            row_perm, col_perm = rng.permutation(g.n), rng.permutation(g.n)
        manifest = write_block_shards(g, rc[0], rc[1], out, row_perm, col_perm, overwrite=overwrite)
        info.update(kind="blocks2d", grid=list(rc), permute=mode)

    from gcntrain.cli.inspect_cmd import human_summary, store_summary
    from gcntrain.data.shards import open_manifest

    m = open_manifest(manifest)
    info.update(seed=seed, manifest=str(manifest), num_nodes=m.n, nnz=m.nnz)
    info.update({k: v for k, v in store_summary(m).items() if k not in info})
    info["seconds_read"] = round(t_read, 4)
    info["seconds_write"] = round(time.perf_counter() - t1, 4)
    emit(info, as_json, human_summary)
