"""`gcntrain` entry point: a click group whose commands load lazily (one module each)."""

from __future__ import annotations

import contextlib
import functools
import importlib
import sys
from typing import NamedTuple

import click

from gcntrain import __version__
from gcntrain.errors import AgreedError, InputError, Preempted


class Command(NamedTuple):
    """A command of the group: where it lives (``module:attribute``), its one-line help,
    and how it may be launched (`LAUNCH`)."""

    target: str
    help: str
    launch: str = "one"


#: how a command may be launched: ``mpi`` runs on every rank of MPI's world, which must be
#: what the launcher started; ``one`` runs as one process (it writes outputs: refused when
#: a launcher started several tasks); ``any`` only reads and prints (each task may run it)
LAUNCH = ("mpi", "one", "any")

COMMANDS: dict[str, Command] = {
    "info": Command(
        "gcntrain.cli.info_cmd:info", "Versions, MPI library, Numba threads, CPU.", "any"
    ),
    "generate": Command(
        "gcntrain.cli.generate_cmd:generate",
        "Synthetic graphs: R-MAT, SBM, grid, the default data set.",
    ),
    "convert": Command(
        "gcntrain.cli.convert_cmd:convert", "Convert Planetoid/SNAP/MTX/NPZ/CSV to HDF5."
    ),
    "inspect": Command(
        "gcntrain.cli.inspect_cmd:inspect", "Validate a graph or shard store; counts.", "any"
    ),
    "shard": Command(
        "gcntrain.cli.shard_cmd:shard", "Write a sharded store (1D row blocks or 2D)."
    ),
    "partition": Command(
        "gcntrain.cli.partition_cmd:partition", "Partition a graph; report quality."
    ),
    "train": Command(
        "gcntrain.cli.train_cmd:train", "Train GCN/GraphSAGE full-batch (serial or MPI).", "mpi"
    ),
    "simulate": Command(
        "gcntrain.cli.simulate_cmd:simulate",
        "Plan a run on P ranks: bytes, messages, flops, memory, predicted time.",
    ),
    "bench": Command(
        "gcntrain.cli.bench_cmd:bench", "Measure this machine into a simulator profile."
    ),
    "plot": Command(
        "gcntrain.cli.plot_cmd:plot",
        "Figures of runs and predictions: phase breakdown, curves, scaling (matplotlib).",
    ),
    "jobscript": Command(
        "gcntrain.cli.jobscript_cmd:jobscript",
        "Render a Slurm or Fugaku PJM batch script for a training run.",
    ),
    "config": Command(
        "gcntrain.cli.config_cmd:config",
        "Show the configuration a --config file resolves to.",
        "any",
    ),
}


def wrap_command(command: click.Command, name: str, launch: str) -> None:
    """Wrap `command`'s callback once (idempotent): once its arguments are parsed and before
    it reads anything, check that it was launched as its `launch` kind allows
    (`gcntrain.comm.launch.check_launch`; ``any``: no check), then run it as a status
    phase named after it (`gcntrain.status`: the line a quiet stretch shows where the
    command names no finer phase)."""
    if getattr(command, "_wrapped", False) or command.callback is None:
        return
    callback = command.callback

    def wrapped(*args, **kwargs):
        from gcntrain import status

        if launch != "any":
            from gcntrain.comm.launch import check_launch

            check_launch(name, uses_mpi=launch == "mpi")
        with status.phase(name):
            return callback(*args, **kwargs)

    functools.update_wrapper(wrapped, callback)
    command.callback = wrapped
    command._wrapped = True


CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return list(COMMANDS)

    def get_command(self, ctx, name):
        if name not in COMMANDS:
            return None
        entry = COMMANDS[name]
        mod, attr = entry.target.split(":")
        command = getattr(importlib.import_module(mod), attr)
        from gcntrain.cli.options import attach_config_option

        attach_config_option(command)  # --config FILE.toml on every command with options
        wrap_command(command, name, entry.launch)
        return command

    def format_commands(self, ctx, formatter):
        rows = [(name, entry.help) for name, entry in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "-V", "--version", prog_name="gcntrain")
def cli() -> None:
    """Distributed full-batch GCN training and simulation for HPC clusters.

    Run a command with -h for its options; `mpiexec -n P gcntrain train` trains on P ranks.
    """


def _error_line(msg: str) -> None:
    from gcntrain.cli.display import is_printer

    if is_printer():
        sys.stderr.write(f"gcntrain: error: {msg}\n")
        sys.stderr.flush()


def entry(argv: list[str] | None = None) -> None:
    """Console-script entry: maps errors to exit codes (2 bad input, 1 internal)."""
    sys.exit(run(argv))


def _quiet_other_ranks() -> None:
    """Only rank 0 prints: other ranks' stdout (help, version) and warnings are dropped."""
    import os
    import warnings

    from gcntrain.comm.env import launcher_rank

    if launcher_rank() != 0:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
        warnings.simplefilter("ignore")


#: seconds a rank waits after an interrupt before it leaves the job
INTERRUPT_GRACE_SECONDS = 0.5


def _interrupted() -> int:
    """Ctrl-C (SIGINT; mpiexec forwards it to every rank): one line from rank 0, status 130
    on every rank.  Under MPI the process leaves at once (no MPI_Finalize, which could wait
    for partners that are gone), with its output flushed; outputs are complete or absent
    (`gcntrain.data.atomic`), so nothing half-written stays behind."""
    import os

    from gcntrain.comm.errors import mpi_initialized_world

    _error_line("interrupted")
    world = mpi_initialized_world()
    if world is not None and world.Get_size() > 1:
        import time

        sys.stdout.flush()
        sys.stderr.flush()
        # let the launcher finish forwarding the interrupt to every rank before this one
        # leaves (an early exit tripped MPICH's proxy into printing its internal errors)
        time.sleep(INTERRUPT_GRACE_SECONDS)
        os._exit(130)
    return 130


def _quiet_unraisable_interrupts() -> None:
    """Ctrl-C while Numba compiles lands in an LLVM callback, where Python can only report
    it as "Exception ignored" with a traceback and then drops it: raise it again where it
    can be handled (the signal sent anew) without the traceback; anything else is reported
    as before."""
    import os
    import signal

    default = sys.unraisablehook

    def hook(info):
        if isinstance(info.exc_value, KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
        else:
            default(info)

    sys.unraisablehook = hook


@contextlib.contextmanager
def _signals_end_at_once():
    """SIGTERM and SIGUSR1 end a command at once with one line from rank 0 and status
    128 + N, from the moment it starts (`gcntrain.job.signals`; a command may install its
    own handling inside: `train` does), instead of the signals' default death, which MPICH's
    mpiexec reports with a "BAD TERMINATION" banner on its stdout.  The Python handler
    alone (no watcher thread), so that a checkpointing run's own handler takes over."""
    from gcntrain.comm.env import launch_counts, launcher_rank
    from gcntrain.job.signals import StopOnSignal

    several = any(n > 1 for _, n in launch_counts())
    with StopOnSignal(launcher_rank(), 2 if several else 1, watch=False):
        yield


def _notes_as_lines() -> None:
    """A `gcntrain.errors.Note` warning prints as one line ``gcntrain: note: ...`` (rank 0
    only, as every line); other warnings as Python prints them."""
    import warnings

    from gcntrain.errors import Note

    default = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, Note):
            from gcntrain.cli.display import is_printer

            if is_printer():
                sys.stderr.write(f"gcntrain: note: {message}\n")
                sys.stderr.flush()
            return
        default(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def run(argv: list[str] | None = None) -> int:
    _quiet_other_ranks()
    _quiet_unraisable_interrupts()
    _notes_as_lines()
    try:
        from gcntrain import status
        from gcntrain.comm.env import launcher_rank

        # the command's first phase, until it names its own: loading its libraries (rank 0
        # prints: `is_printer`'s test, without the numpy its module imports)
        printer = launcher_rank() == 0
        with _signals_end_at_once(), status.watching(printer), status.phase("starting"):
            cli.main(args=argv, prog_name="gcntrain", standalone_mode=False)
        return 0
    except click.exceptions.Exit as e:
        return int(e.exit_code)
    except click.exceptions.Abort:
        return _interrupted()
    except click.exceptions.NoArgsIsHelpError as e:  # `gcntrain plot`: the group's help
        click.echo(e.ctx.get_help())
        return 0
    except click.ClickException as e:
        _error_line(e.format_message().replace("\n", " "))
        return 2
    except InputError as e:
        _error_line(str(e).replace("\n", " "))
        return 2
    except AgreedError as e:  # every rank raised it; rank 0 prints it
        _error_line(str(e))
        return e.status
    except Preempted as e:  # every rank stopped at the same epoch after a checkpoint
        from gcntrain.cli.display import is_printer

        if is_printer():
            sys.stderr.write(f"gcntrain: {e}\n")
            sys.stderr.flush()
        return e.status
    except KeyboardInterrupt:
        return _interrupted()
    except BrokenPipeError:
        return 0
    except Exception as e:  # internal error: full traceback helps a bug report
        from gcntrain.comm.agree import from_interrupt
        from gcntrain.comm.errors import handle_internal_error

        if from_interrupt(e):  # Ctrl-C inside a compiled kernel surfaces as SystemError
            return _interrupted()
        return handle_internal_error(e)


if __name__ == "__main__":  # ``python -m gcntrain.cli.main`` (no console script installed)
    entry()
