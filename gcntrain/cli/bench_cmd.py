"""`gcntrain bench`: measure this machine and write its profile for `simulate --machine`."""

from __future__ import annotations

import click

from gcntrain.cli.display import info


@click.command("bench")
@click.option(
    "-o",
    "--out",
    "out",
    type=click.Path(dir_okay=False),
    required=True,
    help="Profile file to write (TOML; written to a temporary name, then renamed).",
)
@click.option("--name", default="local", show_default=True, help="The profile's name.")
@click.option(
    "--mpiexec",
    default=None,
    metavar="PATH",
    help="MPI launcher for the communication figures [default: the one beside this Python, "
    "else on PATH].",
)
def bench(out, name, mpiexec):
    """Calibrate a machine profile on this machine (kernel rates with the project's own
    kernels, MPI latency and bandwidth, element-wise and per-call costs of serial training)
    in about a minute; use it with `gcntrain simulate --machine OUT`."""
    from pathlib import Path

    from gcntrain.data.atomic import write_text
    from gcntrain.simulate.calibrate import calibrate

    text, _ = calibrate(name, mpiexec, log=info)
    write_text(Path(out), text)
    info(f"wrote {out}")
