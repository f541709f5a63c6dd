"""`gcntrain simulate`: the accounting half of the simulator (no MPI): the exact bytes and
messages of every rank and phase of a `gcntrain train` run on P ranks, its compute and an
estimate of its memory, from one process."""

from __future__ import annotations

import click

from gcntrain.cli.display import (
    count,
    emit,
    grid_choice,
    grid_ranking,
    info,
    rows_table,
    sweep_text,
    time_rows,
)
from gcntrain.cli.options import apply
from gcntrain.job.options import job_spec, simulate_options


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
            f"(imbalance {s['flops_imbalance']:.3f}: sparse {s['spmm_imbalance']:.3f}, "
            f"dense {s['dense_imbalance']:.3f})",
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
@apply(simulate_options())
def simulate(
    graph,
    ranks,
    num_features,
    num_classes,
    machine,
    nodes,
    ranks_per_node,
    node_shape,
    sweep,
    top,
    as_json,
    per_rank,
    max_memory,
    **kw,
):
    """Plan a `gcntrain train` run of GRAPH on P ranks without MPI: per rank and phase bytes
    and messages (equal to what train measures), SpMM nonzeros and flops, memory estimate.

    The plan covers --epochs epochs (early stopping cannot be predicted); the figures of a
    steady-state epoch use the same keys as `train --json`.
    """
    from dataclasses import replace

    from gcntrain.data.memory import parse_size
    from gcntrain.job.plan import plan_job

    spec = job_spec(
        graph,
        kw,
        machine=machine,
        ranks=ranks,
        nodes=nodes,
        ranks_per_node=ranks_per_node,
        node_shape=node_shape,
        num_features=num_features,
        num_classes=num_classes,
    )
    if max_memory is not None:
        spec = replace(spec, max_memory=parse_size(max_memory))
    summary = plan_job(
        spec,
        sweep=sweep,
        per_rank=per_rank,
        quiet=as_json,
        notice=info,
    )
    if sweep:
        emit(summary, as_json, lambda s: sweep_text(s, top))
    else:
        emit(summary, as_json, _human)
