"""`gcntrain generate {rmat,sbm,grid,default}`: synthetic graphs -> HDF5 graph store.

The graph's structure is built in memory; its node data are drawn and written block by
block, and the file is hashed as it is written (`gcntrain.data.generators.write`), so memory
stays at the structure plus a fixed buffer.
"""

from __future__ import annotations

import time

import click

from gcntrain.cli.display import emit
from gcntrain.cli.options import json_option, out_option, seed_option


@click.group("generate")
def generate() -> None:
    """Generate a synthetic graph and write it as an HDF5 graph file.

    Kinds: rmat (Graph500 R-MAT/Kronecker), sbm (planted partition with a learnable
    classification task), grid (road-like 2-D lattice), default (the embedded data set).
    """


def _finish(make, out: str, as_json: bool, **params) -> None:
    """Build the structure (``make()``: a `GeneratedGraph`), stream it to `out` and print
    `convert`'s summary (the same keys, in the same order), then `params` and the times."""
    from gcntrain.data.atomic import check_output_file
    from gcntrain.data.generators.write import structure_counts, write_generated

    check_output_file(out, (), "--out")  # before the generation: nothing done in vain
    t0 = time.perf_counter()
    g = make()
    counts = structure_counts(g)
    t_build = time.perf_counter() - t0
    written = write_generated(out, g, counts=counts)
    summary = {
        "name": g.name,
        "nodes": written["nodes"],
        "nnz": written["nnz"],
        "undirected_edges": written["undirected_edges"],
        "self_loops": written["self_loops"],
        "directed": bool(g.directed),
        "weighted": False,
        "features": g.num_features,
        "classes": g.num_classes,
        "train": written["train"],
        "val": written["val"],
        "test": written["test"],
        **params,
        "out": out,
        "seconds_build": round(t_build, 4),
        "seconds_write": round(written["seconds_write"], 4),
    }
    emit(summary, as_json)


@generate.command("rmat")
@out_option
@click.option("--scale", type=int, required=True, help="log2 of the number of vertices.")
@click.option(
    "--edge-factor",
    type=int,
    default=16,
    show_default=True,
    help="Generated edges per vertex (before de-duplication).",
)
@click.option(
    "-a", "a", type=float, default=0.57, show_default=True, help="R-MAT quadrant probability a."
)
@click.option("-b", "b", type=float, default=0.19, show_default=True, help="Quadrant b.")
@click.option(
    "-c", "c", type=float, default=0.19, show_default=True, help="Quadrant c (d = 1 - a - b - c)."
)
@click.option("--directed", is_flag=True, help="Do not symmetrize.")
@click.option(
    "--features",
    type=int,
    default=32,
    show_default=True,
    help="Feature width (standard-normal features).",
)
@click.option(
    "--classes",
    type=int,
    default=4,
    show_default=True,
    help="Classes (uniform random labels; random 60/20/20 split).",
)
@seed_option
@json_option
def rmat_cmd(out, scale, edge_factor, a, b, c, directed, features, classes, seed, as_json) -> None:
    """R-MAT graph with 2^SCALE vertices, random features/labels, 60/20/20 split."""
    from gcntrain.data.generate import rmat_generated

    _finish(
        lambda: rmat_generated(
            scale,
            edge_factor,
            a,
            b,
            c,
            seed,
            symmetrize=not directed,
            num_features=features,
            num_classes=classes,
        ),
        out,
        as_json,
        seed=seed,
    )


@generate.command("sbm")
@out_option
@click.option("--n", "n", type=int, default=4000, show_default=True, help="Nodes.")
@click.option("--classes", type=int, default=8, show_default=True, help="Blocks = classes.")
@click.option(
    "--features", type=int, default=100, show_default=True, help="Bag-of-words vocabulary size."
)
@click.option(
    "--p-in",
    type=float,
    default=None,
    help="Edge probability inside a block (default: from --degree/--homophily).",
)
@click.option(
    "--p-out",
    type=float,
    default=None,
    help="Edge probability between blocks (default: from --degree/--homophily).",
)
@click.option(
    "--degree",
    type=float,
    default=16.0,
    show_default=True,
    help="Expected average degree (when --p-in/--p-out are not given).",
)
@click.option(
    "--homophily",
    type=float,
    default=0.5,
    show_default=True,
    help="Expected share of intra-class edges (when --p-in/--p-out are not given).",
)
@click.option(
    "--signal",
    type=float,
    default=0.2,
    show_default=True,
    help="Share of class-specific words in the features (0: features are noise).",
)
@seed_option
@json_option
def sbm_cmd(
    out, n, classes, features, p_in, p_out, degree, homophily, signal, seed, as_json
) -> None:
    """Planted-partition graph whose labels are learnable (20 train nodes per class)."""
    from gcntrain.data.generate import sbm_generated

    _finish(
        lambda: sbm_generated(
            n,
            classes,
            p_in,
            p_out,
            features,
            seed,
            avg_degree=degree,
            homophily=homophily,
            feature_signal=signal,
        ),
        out,
        as_json,
        seed=seed,
    )


@generate.command("grid")
@out_option
@click.option("--rows", type=int, required=True, help="Grid rows.")
@click.option("--cols", type=int, required=True, help="Grid columns.")
@click.option(
    "--p-delete",
    type=float,
    default=0.05,
    show_default=True,
    help="Probability of deleting each lattice edge.",
)
@click.option(
    "--p-diagonal",
    type=float,
    default=0.02,
    show_default=True,
    help="Probability of adding each diagonal edge.",
)
@seed_option
@json_option
def grid_cmd(out, rows, cols, p_delete, p_diagonal, seed, as_json) -> None:
    """Road-like 2-D grid (ROWS x COLS nodes)."""
    from gcntrain.data.generate import road_grid_generated

    _finish(
        lambda: road_grid_generated(rows, cols, seed, p_delete=p_delete, p_diagonal=p_diagonal),
        out,
        as_json,
        seed=seed,
    )


@generate.command("default")
@out_option
@json_option
def default_cmd(out, as_json) -> None:
    """The embedded default data set (sbm-default) that `train` uses without a GRAPH."""
    from gcntrain.data.generate import default_generated

    _finish(default_generated, out, as_json)
