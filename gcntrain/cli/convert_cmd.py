"""`gcntrain convert`: Planetoid/SNAP/MTX/npz/CSV -> HDF5 graph store."""

from __future__ import annotations

import time

import click

from gcntrain.cli.display import emit
from gcntrain.cli.options import json_option, out_option
from gcntrain.data.graph import Graph


def graph_summary(g: Graph) -> dict:
    """Counts printed by `convert` and `generate` (one flat dict)."""

    def size(m):
        return None if m is None else int(m.sum())

    return {
        "name": g.name,
        "nodes": g.n,
        "nnz": g.nnz,
        "undirected_edges": g.num_undirected_edges(),
        "self_loops": g.self_loop_count(),
        "directed": bool(g.directed),
        "weighted": g.data is not None,
        "features": g.num_features,
        "classes": g.num_classes,
        "train": size(g.train_mask),
        "val": size(g.val_mask),
        "test": size(g.test_mask),
    }


def write_and_report(g: Graph, out: str, as_json: bool, summary: dict, t_build: float) -> None:
    """Write `g` with the graph store and print the summary plus timings."""
    from gcntrain.data.store import write_graph

    t0 = time.perf_counter()
    write_graph(out, g)
    summary["out"] = out
    summary["seconds_build"] = round(t_build, 4)
    summary["seconds_write"] = round(time.perf_counter() - t0, 4)
    emit(summary, as_json)


@click.command("convert")
@click.argument("source", metavar="SOURCE")
@out_option
@click.option(
    "--format",
    "fmt",
    default=None,
    metavar="FORMAT",
    help="planetoid, snap, mtx, npz or csv (default: inferred from SOURCE).",
)
@click.option("--symmetrize", is_flag=True, help="Replace A by the pattern of A + A^T.")
@click.option(
    "--self-loops",
    "self_loops",
    default="keep",
    show_default=True,
    type=click.Choice(["add", "drop", "keep"]),
    help="Diagonal entries.",
)
@click.option(
    "--no-relabel",
    "no_relabel",
    is_flag=True,
    help="Keep edge-list ids as they are (n = max id + 1) instead of compacting.",
)
@click.option(
    "--split",
    type=int,
    default=0,
    show_default=True,
    help="Split (row of 2-D mask arrays) to use for npz inputs.",
)
@click.option("--name", default=None, help="Data set name stored in the file.")
@click.option(
    "--features",
    "num_features",
    type=click.IntRange(min=1),
    default=None,
    metavar="F",
    help="For a graph without node data (a SNAP edge list): add F standard-normal features, "
    "uniform random labels of --classes classes and a random 60/20/20 split, drawn from "
    "--seed (for timing and communication studies; the accuracy means nothing).",
)
@click.option(
    "--classes",
    "num_classes",
    type=click.IntRange(min=2),
    default=None,
    metavar="C",
    help="Classes of the synthetic labels (with --features).",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed of the synthetic node data.",
)
@json_option
def convert(
    source: str,
    out: str,
    fmt: str | None,
    symmetrize: bool,
    self_loops: str,
    no_relabel: bool,
    split: int,
    name: str | None,
    num_features: int | None,
    num_classes: int | None,
    seed: int,
    as_json: bool,
) -> None:
    """Convert SOURCE (a file, or a Planetoid prefix like data/ind.cora) to an HDF5 graph.

    Formats: planetoid (ind.<name>.* pickles), snap (.txt/.txt.gz/.edges edge lists), mtx
    (Matrix Market), npz (edges + node_features/node_labels/*_masks), csv (src,dst[,weight]).
    """
    from gcntrain.data.atomic import check_output_file

    check_output_file(out, (source,), "--out")  # before the parse: nothing done in vain
    from gcntrain.data.convert import EDGE_FORMATS, convert_source, infer_format
    from gcntrain.errors import InputError

    if (num_features is None) != (num_classes is None):
        raise InputError("--features and --classes go together (synthetic node data)")
    t0 = time.perf_counter()
    fmt = (fmt or infer_format(source)).lower()
    if fmt in EDGE_FORMATS:  # parsed block by block, written slice by slice
        options = {"symmetrize": symmetrize, "self_loops": self_loops, "relabel": not no_relabel}
        synthetic = None if num_features is None else (num_features, num_classes, seed)
        _convert_edges_streamed(source, out, fmt, options, name, synthetic, as_json, t0)
        return
    g = convert_source(
        source,
        fmt,
        symmetrize=symmetrize,
        self_loops=self_loops,
        relabel=not no_relabel,
        split=split,
    )
    if name:
        g.name = name
    if num_features is not None:
        from gcntrain.data.generate import random_node_data

        g = random_node_data(g, num_features, num_classes, seed)
    summary = graph_summary(g)
    summary["format"] = g.extra.get("format")
    write_and_report(g, out, as_json, summary, time.perf_counter() - t0)


def _convert_edges_streamed(
    source: str,
    out: str,
    fmt: str,
    options: dict,
    name: str | None,
    synthetic: tuple[int, int, int] | None,
    as_json: bool,
    t0: float,
) -> None:
    """An edge list (snap, csv, mtx): built in bounded memory and written as it is hashed;
    the same file and summary as `write_and_report` of `convert_source`'s graph."""
    from gcntrain.data.convert import convert_edges
    from gcntrain.data.convert_write import write_converted

    g, counts = convert_edges(source, fmt, **options)
    if name:
        g.name = name
    t_build = time.perf_counter() - t0
    summary = write_converted(out, g, counts, synthetic=synthetic)
    seconds_write = summary.pop("seconds_write")
    summary.pop("content_hash")
    summary["format"] = fmt
    summary["out"] = out
    summary["seconds_build"] = round(t_build, 4)
    summary["seconds_write"] = round(seconds_write, 4)
    emit(summary, as_json)
