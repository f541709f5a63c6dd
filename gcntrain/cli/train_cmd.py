"""`gcntrain train`: full-batch GCN / GraphSAGE training under any registered scheme, a thin
wrapper around `gcntrain.job.runner.run_job`."""

from __future__ import annotations

import click

from gcntrain import status
from gcntrain.cli.display import count, emit, grid_choice, info, optional, rows_table
from gcntrain.cli.options import apply
from gcntrain.errors import InputError
from gcntrain.job.options import job_spec, train_options
from gcntrain.job.progress import Progress

#: parameters written inactive (as comments) in config.toml: a rerun writes elsewhere
RERUN_NOTES = {
    "out_dir": "this run's output directory (a rerun takes its own -o)",
    "resume": "this run resumed from it",
}


#: train's parameters that hold paths, written absolute in config.toml (True: always; False:
#: when the value exists, since --partition and --machine also take names)
PATH_PARAMS = {
    "graph": False,
    "partition": False,
    "machine": False,
    "resume": True,
    "checkpoint": True,
    "per_rank": True,
}


def _config_toml(out_dir: str) -> str:
    """This invocation's resolved [train] table (config.toml of ``-o``)."""
    from gcntrain.cli.config_file import command_toml
    from gcntrain.comm.launch import launched_world_size

    n = launched_world_size()
    rerun = f"{f'mpiexec -n {n} ' if n > 1 else ''}gcntrain train --config {out_dir}/config.toml"
    header = [f"written by gcntrain train -o on {count(n, 'rank')}; the same run: {rerun}"]
    header.append("paths are absolute: the file reruns the same run from any folder")
    return command_toml(click.get_current_context(), RERUN_NOTES, header, PATH_PARAMS)


def byte_size(n: float) -> str:
    """`n` bytes in the unit that shows its value with three significant digits: bytes
    below 1 kB, then kB, MB, GB, TB (decimal, as the MB of the other lines).

    Parameters
    ----------
    n : a byte count (an epoch's median may be fractional)

    Returns
    -------
    str : e.g. ``"92 B"``, ``"1.25 kB"``, ``"416 kB"``, ``"3.40 MB"``
    """
    if abs(n) < 999.5:
        return f"{n:.0f} B"
    for unit, scale in (("kB", 1e3), ("MB", 1e6), ("GB", 1e9)):
        v = n / scale
        if abs(v) < 999.5:
            return f"{v:.3g} {unit}" if abs(v) >= 100 else f"{v:#.3g} {unit}"
    return f"{n / 1e12:#.3g} TB"


def exchange_rows(s: dict) -> list[tuple[str, str]]:
    """The summary's rows of the pre / post aggregation exchanges per layer and direction
    (the ``L<i>.<dir>.pre_bytes`` ... keys of a hierarchical scheme; none without them).

    Parameters
    ----------
    s : the training summary (`--json` keys)

    Returns
    -------
    list of (label, text) rows, sizes in the unit that shows them (`byte_size`)
    """
    rows = []
    for p in sorted({k.rsplit(".", 1)[0] for k in s if k.endswith(".pre_bytes")}):
        rows.append(
            (
                f"{p} pre / post",
                f"{byte_size(s[p + '.pre_bytes'])} + {byte_size(s[p + '.pre_param_bytes'])} "
                f"in {s[p + '.t_pre'] * 1e3:.2f} ms / {byte_size(s[p + '.post_bytes'])} + "
                f"{byte_size(s[p + '.post_param_bytes'])} in {s[p + '.t_post'] * 1e3:.2f} ms "
                "(values + parameters sent, time; training, max over ranks)",
            )
        )
    return rows


def _human(s: dict) -> str:
    rows = [
        ("graph", f"{s['graph']} ({s['num_nodes']} nodes, {s['nnz']} stored adjacency entries)"),
        (
            "model",
            s["model"]
            + (f" ({s['aggregator']} aggregator)" if s["aggregator"] else "")
            + f", hidden {s['hidden']}, {s['dtype']}, seed {s['seed']}",
        ),
        ("epochs", f"{s['epochs']}" + (" (stopped early)" if s["stopped_early"] else "")),
        ("final loss", f"{s['final_loss']:.4f}"),
        ("train acc", f"{s['train_acc']:.4f}"),
        ("val loss / acc", f"{optional(s['val_loss'])} / {optional(s['val_acc'])}"),
        ("test acc", optional(s["test_acc"])),
        *_best_rows(s),
        (
            "epoch time (median)",
            f"{s['epoch_seconds'] * 1e3:.2f} ms (aggregation "
            f"{s['t_aggregation'] * 1e3:.2f}, dense {s['t_dense'] * 1e3:.2f}, other "
            f"{s['t_other'] * 1e3:.2f} ms)",
        ),
        ("total", f"{s['total_seconds']:.2f} s"),
    ]
    if s.get("ranks", 1) > 1 or s.get("bytes_sent_max"):
        opts = ", ".join(f"{k} {v}" for k, v in (s.get("scheme_options") or {}).items())
        rows.append(
            (
                "scheme",
                f"{s['scheme']} on {count(s['ranks'], 'rank')}"
                + (f" ({opts})" if opts else "")
                + f", partition {s.get('partition')}",
            )
        )
        rows.append(
            (
                "traffic / epoch",
                f"sent max {s['bytes_sent_max'] / 1e6:.3f} MB, mean "
                f"{s['bytes_sent_mean'] / 1e6:.3f} MB; messages max {s['messages_max']}",
            )
        )
        cs = ", ".join(f"{k} {v * 1e3:.2f}" for k, v in s["comm_seconds_max"].items())
        rows.append(("comm time / epoch", f"{cs or 'none'} ms (max over ranks)"))
    b = s.get("epoch_breakdown")
    if b:
        parts = ", ".join(
            f"{k} {v * 1e3:.2f}" for k, v in b.items() if k not in ("epoch", "critical_rank")
        )
        rows.append(
            (
                "epoch breakdown",
                f"{parts} ms (epoch {b['epoch']}, slowest rank {b['critical_rank']}; "
                "per phase: --json comm_phases, metrics.jsonl)",
            )
        )
    if "held_bytes_max" in s:
        rows.append(
            (
                "graph data held",
                f"max {s['held_bytes_max'] / 1e6:.3f} MB, mean "
                f"{s['held_bytes_mean'] / 1e6:.3f} MB per rank",
            )
        )
    if "replication_factor" in s:
        rows.append(("replication factor", f"{s['replication_factor']:.3f} rows held per node"))
    if "drift" in s:
        from gcntrain.job.drift import drift_text

        rows.append(("drift", drift_text(s["drift"])))
    if "t_local_agg" in s:
        rows.append(
            (
                "aggregation / epoch",
                f"local {s['t_local_agg'] * 1e3:.2f} ms; remote: pre-processing "
                f"{s['t_remote_pre'] * 1e3:.2f}, communication {s['t_remote_comm'] * 1e3:.2f}, "
                f"post-processing {s['t_remote_post'] * 1e3:.2f} ms (training, max over ranks)",
            )
        )
    rows.extend(exchange_rows(s))
    if s.get("grid_search"):
        rows.append(grid_choice(s["grid_search"]))
    if s.get("recommendation"):
        r = s["recommendation"]
        rows.append(
            (
                "scheme auto",
                f"{r['label']}: predicted {r['predicted_epoch_seconds'] * 1e3:.3f} ms per epoch "
                f"on profile {r['machine']}{_profile_source(r)}, best exact of "
                f"{r['configurations']} "
                f"configurations ({r['sweep_seconds']:.1f} s"
                + (", the choice cached for this graph and job shape)" if r.get("cached") else ")"),
            )
        )
    if s.get("resumed_from_epoch") is not None:
        rows.append(("resumed", f"from epoch {s['resumed_from_epoch']} of {s['resume']}"))
    if s.get("checkpoint"):
        rows.append(("checkpoint", f"{s['checkpoint']} (every {s['checkpoint_every']} epochs)"))
    if s.get("out"):
        rows.append(("outputs", s["out"]))
    return rows_table(rows)


def _best_rows(s: dict) -> list[tuple[str, str]]:
    """The best epoch (lowest validation loss) beside the final figures, and whose weights
    the outputs hold."""
    if s.get("best_epoch") is None:
        return []
    kept = s.get("weights_epoch") == s["best_epoch"] and s["best_epoch"] != s["epochs"]
    return [
        (
            "best epoch",
            f"{s['best_epoch']}: val loss / acc {optional(s['best_val_loss'])} / "
            f"{optional(s['best_val_acc'])}, test acc {optional(s['test_acc_at_best'])}"
            + (" (its weights kept: --keep-best)" if kept else ""),
        )
    ]


def _profile_source(r: dict) -> str:
    """Where the recommendation's profile came from: this host's cached profile and its
    date (``--machine local``), a file, or nothing for a shipped profile."""
    from gcntrain.simulate.local import cache_words

    path = r.get("machine_file")
    if not path or r.get("machine") != "local":
        return ""
    return f" ({cache_words(path, r.get('machine_measured'))})"


@click.command("train")
@click.argument("graph", required=False, type=click.Path())
@apply(train_options())
def train(
    graph,
    out_dir,
    as_json,
    per_rank,
    threads,
    machine,
    checkpoint,
    checkpoint_every,
    resume,
    max_memory,
    quiet,
    **kw,
):
    """Train on GRAPH (an HDF5 graph or shard store; default: the embedded SBM dataset),
    full-batch, serially or on every rank of an MPI job.

    The defaults are the reference GCN hyperparameters (2 layers, 16 hidden units,
    dropout 0.5, Adam lr 0.01, weight decay 5e-4 on the first layer, at most 200 epochs,
    early-stopping window 10).
    """
    from dataclasses import replace

    from gcntrain.data.memory import parse_size
    from gcntrain.job.runner import run_job
    from gcntrain.job.spec import JobOutputs

    spec = job_spec(graph, kw, machine=machine, threads=threads)
    if max_memory is not None:  # after the training values, as before
        spec = replace(spec, max_memory=parse_size(max_memory))
    config = spec.config
    outputs = JobOutputs(
        out_dir=out_dir,
        per_rank=per_rank,
        checkpoint=checkpoint,
        checkpoint_every=checkpoint_every,
        resume=resume,
        config_toml=None if out_dir is None else _config_toml(out_dir),
    )
    if quiet:
        status.hush()
    progress = None if quiet else Progress(config.epochs)
    try:
        _, summary = run_job(
            spec,
            outputs,
            callback=progress,
            on_start=None if progress is None else progress.start,
            notice=None if quiet else info,
        )
    except FloatingPointError as e:
        raise InputError(f"training diverged ({e}); try a lower --lr") from None
    finally:
        if progress is not None:
            progress.close()
    emit(summary, as_json, _human)
