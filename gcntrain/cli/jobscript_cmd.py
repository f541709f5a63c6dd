"""`gcntrain jobscript`: a Slurm or Fugaku PJM batch script for a `gcntrain train` run, a
thin wrapper around `gcntrain.job.jobscript` (the train arguments are parsed by the real `train`
command, so the script runs only what `train` accepts)."""

from __future__ import annotations

import os

import click

from gcntrain.cli.display import count, emit
from gcntrain.cli.options import json_option
from gcntrain.errors import InputError

#: mode of a script written with -o
SCRIPT_MODE = 0o755


def parse_train_args(args: tuple[str, ...]):
    """A `gcntrain.job.jobscript.TrainRun` from ``train ARGS...`` (the words after ``--``),
    parsed by the `train` command itself; a bad argument is an `InputError`."""
    from gcntrain.cli.main import cli
    from gcntrain.cli.options import scheme_args, train_config
    from gcntrain.job.jobscript import TrainRun
    from gcntrain.job.options import CONFIG_FILE_META

    train = cli.get_command(None, "train")  # as `gcntrain train` has it (--config too)

    if not args or args[0] != "train":
        raise InputError("give the training run last: ... -- train [GRAPH] [OPTIONS]")
    rest = list(args[1:])
    if "-h" in rest or "--help" in rest:
        raise InputError("the train arguments ask for help: see `gcntrain train -h`")
    try:
        # under the group's context, as `gcntrain train` runs (a --config file's tables are
        # checked against the group's commands)
        ctx = train.make_context("train", rest, parent=click.Context(cli, info_name="gcntrain"))
        params = dict(ctx.params)
        config = train_config(params)
    except click.ClickException as e:
        raise InputError(f"train arguments: {e.format_message()}") from None
    scheme, options, partition, partition_seed = scheme_args(params)
    if params["max_memory"] is not None:
        from gcntrain.data.memory import parse_size

        parse_size(params["max_memory"])
    return TrainRun(
        graph=params["graph"],
        config=config,
        scheme=scheme,
        options=options,
        partition=partition,
        partition_seed=partition_seed,
        threads=params["threads"],
        checkpoint=params["checkpoint"],
        checkpoint_every=params["checkpoint_every"],
        resume=params["resume"],
        config_file=ctx.meta.get(CONFIG_FILE_META),
    )


def input_files(run) -> list[str]:
    """The files the train arguments (parsed into `run`) name: GRAPH, a --partition file,
    --resume and --config (rendering -o over one would destroy it)."""
    named = (run.graph, run.partition, run.resume, run.config_file)
    return [p for p in named if p is not None]


def template_files(req) -> list[str]:
    """The user's template that would render `req` (--template-dir DIR/SCHEDULER.sh)."""
    if req.template_dir is None:
        return []
    return [os.path.join(req.template_dir, f"{req.scheduler}.sh")]


def write_script(path: str, text: str) -> None:
    """`text` as the executable file `path` (mode 0755), whole or not at all."""
    from gcntrain.data.atomic import write_named

    def write(name: str) -> None:
        with open(name, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(name, SCRIPT_MODE)

    write_named(path, write)


def _human(s: dict) -> str:
    if s["out"] is None:
        return s["script"].rstrip("\n")
    return (
        f"wrote {s['out']}: {s['scheduler']} script, {count(s['nodes'], 'node')} x "
        f"{count(s['ranks_per_node'], 'rank')} ({s['ranks']} in all), "
        f"{count(s['threads'], 'thread')} per rank"
    )


@click.command("jobscript", context_settings={"allow_interspersed_args": False})
@click.option(
    "--scheduler",
    required=True,
    metavar="slurm|pjm",
    help="Batch system: slurm, pjm (Fugaku), or NAME with --template-dir DIR/NAME.sh.",
)
@click.option("--nodes", type=int, required=True, help="Nodes of the job.")
@click.option("--ranks-per-node", type=int, required=True, help="MPI ranks on each node.")
@click.option(
    "--threads",
    type=int,
    default=None,
    help="Threads per rank [default: --cores-per-node // --ranks-per-node, else 1].",
)
@click.option(
    "--cores-per-node",
    type=int,
    default=None,
    metavar="C",
    help="Cores of a node: threads x ranks per node may not exceed it.",
)
@click.option("--time", "walltime", default=None, metavar="HH:MM:SS", help="Time limit [01:00:00].")
@click.option("--account", default=None, help="Account to charge (Slurm --account, PJM -g).")
@click.option("--partition", default=None, help="Slurm partition.")
@click.option("--rscgrp", default=None, help="PJM resource group [small up to 384 nodes, large].")
@click.option("--job-name", default=None, help="Job name [gcntrain].")
@click.option(
    "--requeue",
    is_flag=True,
    help="Slurm: requeue a preempted job; with --checkpoint it resumes from the checkpoint.",
)
@click.option(
    "--mpi",
    default=None,
    metavar="TYPE",
    help="Slurm: the srun --mpi plugin (pmi2, pmix) [the one the MPI library here needs: "
    "pmi2 for MPICH, pmix for Open MPI].",
)
@click.option(
    "--template-dir",
    default=None,
    metavar="DIR",
    help="Directory whose SCHEDULER.sh replaces the shipped template (string.Template).",
)
@click.option(
    "--module",
    "modules",
    multiple=True,
    metavar="NAME",
    help="Environment: `module load NAME` in the script (repeatable; first).",
)
@click.option(
    "--setup",
    multiple=True,
    metavar="CMD",
    help="Environment: a shell command line run before the launch (repeatable, in order).",
)
@click.option(
    "--venv",
    default=None,
    metavar="DIR",
    help="Environment: `source DIR/bin/activate` (last); DIR as on the cluster, ~/ kept.",
)
@click.option(
    "-o",
    "--out",
    default=None,
    type=click.Path(dir_okay=False),
    help="Write the script to this file (mode 0755) instead of printing it.",
)
@json_option
@click.argument("train_args", nargs=-1, type=click.UNPROCESSED, metavar="-- train [ARGS]...")
def jobscript(
    scheduler,
    nodes,
    ranks_per_node,
    threads,
    cores_per_node,
    walltime,
    account,
    partition,
    rscgrp,
    job_name,
    requeue,
    mpi,
    template_dir,
    modules,
    setup,
    venv,
    out,
    as_json,
    train_args,
):
    """Render a batch script that runs `gcntrain train ARGS...` on NODES x RANKS-PER-NODE
    ranks, after checking that the ranks suit the scheme, the threads the cores, and the
    limits the scheduler.

    --module, --setup and --venv set up the job's environment (PJM jobs do not inherit the
    submitting shell's); without them a line on stderr says so.  With GRAPH on this machine
    the script notes the planner's memory estimate.  With
    --checkpoint in the train arguments the Slurm script asks for SIGUSR1 before the time
    limit (gcntrain checkpoints and exits) and says how to resume.
    """
    from gcntrain.cli.display import info
    from gcntrain.data.atomic import check_output_file
    from gcntrain.job.jobscript import Request, render

    req = Request(
        scheduler=scheduler,
        nodes=nodes,
        ranks_per_node=ranks_per_node,
        train_args=tuple(train_args[1:]) if train_args[:1] == ("train",) else (),
        threads=threads,
        cores_per_node=cores_per_node,
        time=walltime,
        account=account,
        partition=partition,
        rscgrp=rscgrp,
        job_name=job_name,
        requeue=requeue,
        template_dir=template_dir,
        modules=tuple(modules),
        setup=tuple(setup),
        venv=venv,
        mpi=mpi,
    )
    run = parse_train_args(tuple(train_args))
    if out is not None:  # before the planning: an unwritable -o is one line, no work done
        inputs = (*input_files(run), *template_files(req))
        check_output_file(out, inputs, "--out")
    installed = (None, "not looked up")
    if mpi is None and scheduler != "pjm":
        from gcntrain.comm.launch import installed_srun_mpi

        installed = installed_srun_mpi()
    res = render(req, run, installed)
    if out is not None:
        write_script(out, res.script)
    for note in res.notes:
        info(note, rank=0)
    summary = {
        "scheduler": scheduler,
        "nodes": nodes,
        "ranks_per_node": ranks_per_node,
        "ranks": req.ranks,
        "threads": res.threads,
        "memory_bytes_per_rank": res.memory_bytes_per_rank,
        "template": res.template,
        "script": res.script,
        "notes": list(res.notes),
        "out": out,
    }
    emit(summary, as_json, _human)
