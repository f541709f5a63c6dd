"""Option decorators of the commands: generated from the job's option declarations
(`gcntrain.job.options`), plus the few options of the data commands."""

from __future__ import annotations

import click

from gcntrain.job import options as O
from gcntrain.job.options import parse_hidden, scheme_args, train_config  # noqa: F401 (shared)

per_rank_option = click.option(*O.PER_RANK.decls, **O.PER_RANK.kw)
json_option = click.option(*O.JSON.decls, **O.JSON.kw)
seed_option = click.option(*O.SEED.decls, **O.SEED.kw)
out_option = click.option(
    "-o",
    "--out",
    "out",
    type=click.Path(dir_okay=False),
    required=True,
    help="Output HDF5 file (written to a temporary name, then renamed).",
)


def apply(options: list[O.Opt]):
    """A decorator adding `options` to a command, in their order (the ``--help`` order)."""

    def deco(f):
        for o in reversed(options):
            f = click.option(*o.decls, **o.kw)(f)
        return f

    return deco


def model_options(f):
    """The model and training options shared by `train`, `simulate` and `plot`."""
    return apply(O.MODEL)(f)


def width_options(f):
    """--features F, --classes C."""
    return apply(O.WIDTHS)(f)


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


def _config_callback(ctx, param, value):
    from gcntrain.cli.config_file import apply_config

    return apply_config(ctx, param, value)


def attach_config_option(command: click.Command) -> None:
    """Give `command` (every subcommand of a group) the ``--config FILE.toml`` option: its
    table of the file sets the defaults of the command's parameters (docs/config.md).
    Idempotent; a command with no parameters, or one declaring its own ``--config``, is
    left alone."""
    from gcntrain.cli.config_file import PARAM_NAME

    if any("--config" in getattr(p, "opts", ()) for p in command.params):
        return
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            attach_config_option(sub)
        return
    if not command.params:
        return
    command.params.append(
        click.Option(
            ["--config", PARAM_NAME],
            type=click.Path(dir_okay=False),
            default=None,
            metavar="FILE.toml",
            is_eager=True,
            expose_value=False,
            callback=_config_callback,
            help="Take option defaults from this TOML file's table for this command "
            "(e.g. [train]); options on the command line override it.",
        )
    )
