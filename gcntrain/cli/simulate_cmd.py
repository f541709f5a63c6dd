"""`gcntrain simulate`: the accounting half of the simulator (no MPI): the exact bytes and
messages of every rank and phase of a `gcntrain train` run on P ranks, its compute and an
estimate of its memory, from one process."""

from __future__ import annotations

import time

import click

from gcntrain.cli.display import (
    count,
    emit,
    grid_choice,
    grid_ranking,
    rows_table,
    sweep_text,
    time_rows,
)
from gcntrain.cli.options import (
    json_option,
    machine_options,
    model_options,
    per_rank_option,
    scheme_args,
    scheme_options,
    train_config,
    width_options,
)
from gcntrain.errors import InputError


def _mb(b: float) -> str:
    return f"{b / 1e6:.3f} MB"


def _human(s: dict) -> str:
    opts = ", ".join(f"{k} {v}" for k, v in (s.get("scheme_options") or {}).items())
    rows = [
        ("graph", f"{s['graph']} ({s['num_nodes']} nodes, {s['nnz']} stored adjacency entries)"),
        (
            "scheme",
            f"{s['scheme']} on {count(s['ranks'], 'rank')}"
            + (f" ({opts})" if opts else "")
            + f", partition {s['partition'] or 'block'}",
        ),
        ("model", f"{s['model']}, hidden {s['hidden']}, {s['dtype']}, {s['epochs']} epochs"),
        (
            "traffic / epoch",
            f"sent max {_mb(s['bytes_sent_max'])}, mean {_mb(s['bytes_sent_mean'])}; "
            f"received max {_mb(s['bytes_recv_max'])}; messages max {s['messages_max']}",
        ),
        (
            "setup",
            f"sent max {_mb(s['setup_bytes_sent_max'])}; messages max {s['setup_messages_max']}",
        ),
        (
            "compute / epoch",
            f"SpMM nonzeros max {s['spmm_nnz_max']}, flops max "
            f"{(s['spmm_flops_max'] + s['dense_flops_max']) / 1e9:.3f} G "
            f"(imbalance {s['flops_imbalance']:.3f})",
        ),
        ("memory (estimate)", f"max {_mb(s['memory_bytes_max'])} per rank"),
        *(
            [
                (
                    "graph data held",
                    f"max {_mb(s['held_bytes_max'])}, mean {_mb(s['held_bytes_mean'])} per rank",
                )
            ]
            if "held_bytes_max" in s
            else []
        ),
        *(
            [("replication factor", f"{s['replication_factor']:.3f} rows held per node")]
            if "replication_factor" in s
            else []
        ),
        (
            "simulated in",
            f"{s['simulate_seconds']:.2f} s, peak RSS {s['peak_rss_bytes'] / 2**20:.0f} MiB",
        ),
    ]
    if "epoch_seconds" in s:
        rows.extend(time_rows(s))
    if s.get("per_rank"):
        rows.append(("per-rank table", s["per_rank"]))
    if s.get("grid_search"):
        rows.append(grid_choice(s["grid_search"]))
        return rows_table(rows) + "\n" + grid_ranking(s["grid_search"])
    return rows_table(rows)


@click.command("simulate")
@click.argument("graph", required=False, type=click.Path())
@click.option(
    "--ranks",
    "-P",
    type=click.IntRange(min=1),
    required=True,
    help="Number of ranks to plan for.",
)
@model_options
@scheme_options
@width_options
@machine_options
@click.option(
    "--sweep",
    is_flag=True,
    help="Plan every scheme (or --scheme's) x its grids / replication / delay / aggregation / "
    "message bits x partitions (--partition a,b,...: those to try) and rank them by predicted "
    "epoch time on --machine, best first.",
)
@click.option(
    "--top",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="--sweep: configurations the table shows (--json lists all).",
)
@json_option
@per_rank_option
def simulate(
    graph,
    ranks,
    num_features,
    num_classes,
    machine,
    nodes,
    ranks_per_node,
    sweep,
    top,
    as_json,
    per_rank,
    **kw,
):
    """Plan a `gcntrain train` run of GRAPH on P ranks without MPI: per rank and phase bytes
    and messages (equal to what train measures), SpMM nonzeros and flops, memory estimate.

    The plan covers --epochs epochs (early stopping cannot be predicted); the figures of a
    steady-state epoch use the same keys as `train --json`.
    """
    from gcntrain.simulate.autogrid import rank_grids, wants_auto
    from gcntrain.simulate.run import plan_training, simulation_summary

    config = train_config(kw)
    scheme, options, partition, partition_seed = scheme_args(kw)
    place = None
    if machine is not None:
        from gcntrain.simulate.machine import load_machine
        from gcntrain.simulate.timing import placement

        place = placement(load_machine(machine), ranks, nodes, ranks_per_node)
    elif nodes is not None or ranks_per_node is not None:
        raise InputError("--nodes and --ranks-per-node need --machine PROFILE")
    widths = {"num_features": num_features, "num_classes": num_classes}
    if sweep:
        if place is None:
            raise InputError("--sweep ranks configurations by predicted time: give --machine")
        if per_rank is not None:
            raise InputError("--per-rank tables one run; it does not combine with --sweep")
        res = _sweep(
            graph, config, ranks, place, scheme, options, partition, partition_seed, widths, as_json
        )
        emit(res, as_json, lambda s: sweep_text(s, top))
        return
    t0 = time.perf_counter()
    args = (graph, config, scheme, ranks)
    search = None
    if wants_auto(options):
        search = rank_grids(*args, options, partition, partition_seed, **widths)
        options = {**options, "grid": search[0]["grid"]}
    sim = plan_training(*args, options, partition, partition_seed, **widths)
    if per_rank is not None:
        from gcntrain.simulate.table import write_table

        write_table(per_rank, sim.table.phases())
    summary = simulation_summary(sim, config, partition, time.perf_counter() - t0)
    if place is not None:
        from gcntrain.simulate.timing import time_summary

        summary.update(time_summary(sim, config, place))
    if per_rank is not None:
        summary["per_rank"] = str(per_rank)
    if search is not None:
        summary["grid_search"] = search
    emit(summary, as_json, _human)


def _sweep(graph, config, ranks, place, scheme, options, partition, seed, widths, quiet) -> dict:
    """The `simulate --sweep` summary (`gcntrain.simulate.sweep`)."""
    import sys

    from gcntrain.schemes import registry
    from gcntrain.simulate.sweep import recommend, sweep

    schemes = None if scheme == registry.AUTO_NAME else [registry.get(scheme, ranks).name]
    parts = None if partition is None else [p for p in str(partition).split(",") if p]
    res = sweep(
        graph,
        config,
        ranks,
        place,
        schemes=schemes,
        partitions=parts,
        options=options,
        partition_seed=seed,
        progress=not quiet and sys.stderr.isatty(),
        **widths,
    )
    try:
        best = recommend(res)
    except InputError:
        best = None
    m = place.machine
    return {
        "graph": res.meta.name,
        "num_nodes": res.meta.n,
        "nnz": res.meta.nnz,
        "ranks": ranks,
        "machine": m.name,
        "machine_file": m.path,
        "nodes": place.nodes,
        "ranks_per_node": place.ranks_per_node,
        "node_memory_bytes": int(m.memory),
        "configurations": len(res.ranking) + len(res.refused),
        "partition_seconds": res.partition_seconds,
        "plan_seconds": res.plan_seconds,
        "sweep_seconds": res.sweep_seconds,
        "recommended": best,
        "ranking": res.ranking,
        "refused": res.refused,
    }
