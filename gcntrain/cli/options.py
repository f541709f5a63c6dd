"""Option decorators shared by several commands."""

from __future__ import annotations

import click

json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
seed_option = click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Random seed (all randomness derives from it).",
)
out_option = click.option(
    "-o",
    "--out",
    "out",
    type=click.Path(dir_okay=False),
    required=True,
    help="Output HDF5 file (written to a temporary name, then renamed).",
)


def threads_option(f):
    """--threads N: Numba threads for this process (default NUMBA_NUM_THREADS or all cores)."""

    def apply(ctx, param, value):
        if value is not None:
            from gcntrain.kernels.threads import set_threads

            set_threads(value)
        return value

    return click.option(
        "--threads",
        type=int,
        default=None,
        callback=apply,
        expose_value=False,
        help="Numba threads per process (default: NUMBA_NUM_THREADS, else all cores).",
    )(f)
