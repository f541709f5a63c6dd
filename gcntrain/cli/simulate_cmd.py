"""`gcntrain simulate`: the accounting half of the simulator (no MPI): the exact bytes and
messages of every rank and phase of a `gcntrain train` run on P ranks, its compute and an
estimate of its memory, from one process."""

from __future__ import annotations

import time

import click

from gcntrain.cli.display import emit, grid_choice, grid_ranking, rows_table, time_rows
from gcntrain.cli.options import (
    json_option,
    machine_options,
    model_options,
    per_rank_option,
    scheme_args,
    scheme_options,
    train_config,
)
from gcntrain.errors import InputError


def _mb(b: float) -> str:
    return f"{b / 1e6:.3f} MB"


def _human(s: dict) -> str:
    opts = ", ".join(f"{k} {v}" for k, v in (s.get("scheme_options") or {}).items())
    rows = [
        ("graph", f"{s['graph']} ({s['num_nodes']} nodes, {s['num_edges']} stored edges)"),
        (
            "scheme",
            f"{s['scheme']} on {s['ranks']} ranks"
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
@click.option(
    "--features",
    "num_features",
    type=click.IntRange(min=1),
    default=None,
    help="Feature width to assume [default: the graph's; needed without node features].",
)
@click.option(
    "--classes",
    "num_classes",
    type=click.IntRange(min=2),
    default=None,
    help="Classes to assume [default: the graph's; needed without labels].",
)
@machine_options
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
    t0 = time.perf_counter()
    args = (graph, config, scheme, ranks)
    widths = {"num_features": num_features, "num_classes": num_classes}
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
