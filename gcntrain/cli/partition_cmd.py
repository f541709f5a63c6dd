"""`gcntrain partition GRAPH.h5 --method M --parts P -o PART.h5`: partition and report quality."""

from __future__ import annotations

import re
from pathlib import Path

import click

from gcntrain.cli.display import emit, format_table, info
from gcntrain.cli.options import json_option, out_option, seed_option, threads_option
from gcntrain.errors import InputError

METHOD_CHOICES = ("block", "random", "double-perm", "metis", "hypergraph", "libra", "mvc")


def parse_grid(text: str | None) -> tuple[int, int] | None:
    """``"RxC"`` -> (R, C) with R, C >= 1; None stays None."""
    if text is None:
        return None
    m = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text)
    if not m or min(int(m[1]), int(m[2])) < 1:
        raise click.BadParameter(
            f"'{text}' is not RxC with R, C >= 1 (e.g. 8x8)", param_hint="--grid"
        )
    return int(m[1]), int(m[2])


def _human(rep: dict) -> str:
    lines = [format_table({k: v for k, v in rep.items() if v is not None})]
    return "\n".join(lines)


@click.command("partition")
@click.argument("graph", metavar="GRAPH.h5", type=click.Path(dir_okay=False))
@click.option(
    "--method", "-m", required=True, type=click.Choice(METHOD_CHOICES), help="Partitioning method."
)
@click.option(
    "--parts",
    "-p",
    "parts",
    required=True,
    type=int,
    help="Number of parts P (1 <= P <= n; double-perm: grid blocks R*C).",
)
@out_option
@seed_option
@click.option(
    "--imbalance",
    type=float,
    default=None,
    help="Allowed imbalance eps (metis default 0.03, hypergraph 0.01).",
)
@threads_option
@click.option(
    "--vweights",
    type=click.Choice(["none", "degree", "rows+degree", "train"]),
    default="rows+degree",
    show_default=True,
    help="METIS vertex weights: rows+degree (two constraints: rows and the row's nonzeros, "
    "balancing the dense and the SpMM work, as train --partition metis does), degree (the "
    "nonzeros only), none (unit: balances rows), train (SuperGCN-style: nonzeros plus "
    "training vertices).",
)
@click.option(
    "--grid",
    default=None,
    metavar="RxC",
    help="double-perm grid (default: the most square R x C = P).",
)
@click.option(
    "--base-partition",
    "base",
    default="metis",
    show_default=True,
    metavar="PART.h5|METHOD",
    help="mvc: vertex partition to split (a partition file, or block, random, metis, hypergraph).",
)
@click.option(
    "--hg-init",
    type=click.Choice(["auto", "none", "metis"]),
    default=None,
    help="hypergraph: start refined by Mt-KaHyPar V-cycles: metis (METIS partition of the "
    "graph model, same weights and eps), none (Mt-KaHyPar's own) or auto (default: metis "
    "for a symmetric pattern, else none).",
)
@click.option(
    "--hg-vcycles",
    type=click.IntRange(min=0),
    default=None,
    help="hypergraph: Mt-KaHyPar V-cycles after the first partition (default 1).",
)
@click.option(
    "--hg-refine",
    type=click.Choice(["default", "quality", "highest_quality", "deterministic", "large_k"]),
    default=None,
    help="hypergraph: Mt-KaHyPar preset of the V-cycles (default: deterministic after "
    "metis, default after none).",
)
@click.option(
    "--hg-net-cap",
    type=click.IntRange(min=0),
    default=None,
    help="hypergraph: leave nets with more pins out of Mt-KaHyPar's input; volumes stay "
    "exact (0: keep all; default max(128, 2P) after metis, 0 after none).",
)
@click.option(
    "--hg-seeds",
    type=click.IntRange(min=1),
    default=None,
    help="hypergraph: attempts with consecutive seeds, the lowest volume wins (default 1).",
)
@click.option(
    "--report",
    "want_report",
    is_flag=True,
    help="Compute and print the quality report (stored in the file too).",
)
@json_option
def partition(
    graph,
    method,
    parts,
    out,
    seed,
    imbalance,
    vweights,
    grid,
    base,
    hg_init,
    hg_vcycles,
    hg_refine,
    hg_net_cap,
    hg_seeds,
    want_report,
    as_json,
):
    """Partition GRAPH.h5 and write PART.h5 (part ids, or an edge partition for libra).

    The stored adjacency is partitioned as is: convert with --self-loops add to include the
    GCN support's diagonal in the row weights and volumes.
    """
    import numba

    from gcntrain.data.atomic import check_output_file
    from gcntrain.data.partition_file import read_partition, write_partition
    from gcntrain.data.store import read_graph
    from gcntrain.partition.basic import check_parts
    from gcntrain.partition.methods import BASE_METHODS, run_method
    from gcntrain.partition.report import build_report

    grid_rc = parse_grid(grid)
    if grid_rc is not None and method != "double-perm":
        raise InputError("--grid applies to --method double-perm only")
    hg = {
        "init": hg_init,
        "vcycles": hg_vcycles,
        "refine": hg_refine,
        "net_cap": hg_net_cap,
        "seeds": hg_seeds,
    }
    hg = {k: v for k, v in hg.items() if v is not None}
    if hg and method not in ("hypergraph", "mvc"):
        given = ", ".join(f"--hg-{k.replace('_', '-')}" for k in hg)
        raise InputError(f"{given} applies to --method hypergraph (or mvc) only")
    check_output_file(out, (graph, base), "--out")
    g = read_graph(graph)
    check_parts(g.n, parts)
    ghash = g.content_hash()
    base_arg: str | object = base
    if method == "mvc" and not (base in BASE_METHODS and not Path(base).exists()):
        base_res = read_partition(base, graph_hash=ghash, n=g.n, nnz=g.nnz)
        if base_res.part is None:
            raise InputError(f"partition file {base} holds no vertex partition ('part')")
        if base_res.parts != parts:
            raise InputError(
                f"partition file {base} has {base_res.parts} parts but --parts is {parts}"
            )
        if base_res.part.size != g.n:
            raise InputError(
                f"partition file {base} has {base_res.part.size} entries, "
                f"the graph has {g.n} vertices"
            )
        base_arg = base_res.part
    info(f"partition: {method}, {parts} parts, {g.n} vertices, {g.nnz} nonzeros")
    res = run_method(
        method,
        g.indptr,
        g.indices,
        parts,
        seed=seed,
        imbalance=imbalance,
        threads=numba.get_num_threads(),
        vweights=vweights,
        train_mask=g.train_mask,
        grid=grid_rc,
        base=base_arg,
        graph_hash=ghash,
        hg_options=hg,
    )
    rep = build_report(g.indptr, g.indices, res) if (want_report or as_json) else None
    write_partition(out, res, report=rep)
    if rep is None:
        emit(
            {"method": method, "parts": parts, "out": out, "seconds": round(res.seconds, 3)},
            as_json,
        )
    else:
        rep["out"] = out
        emit(rep, as_json, _human)
