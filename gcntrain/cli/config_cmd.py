"""`gcntrain config show`: the configuration a command resolves to (a ``--config`` file, the
command line, the defaults), printed as TOML or JSON without running the command."""

from __future__ import annotations

import copy
import difflib

import click

from gcntrain.cli import config_file as cf
from gcntrain.cli.display import emit
from gcntrain.cli.options import json_option
from gcntrain.errors import InputError


@click.group("config")
def config() -> None:
    """Configuration files (TOML, one table per command; docs/config.md)."""


def _subcommand(group: click.Group, ctx: click.Context, name: str, path: list[str]):
    cmd = group.get_command(ctx, name)
    if cmd is None:
        names = list(group.list_commands(ctx))
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
        where = " ".join(["gcntrain", *path])
        hint = f"closest: {', '.join(close)}" if close else f"commands: {', '.join(names)}"
        raise InputError(f"{where} has no command {name!r} ({hint})")
    return cmd


def _exposed(command: click.Command) -> click.Command:
    """A copy of `command` whose parameters all record their values, with the callbacks of
    side-effect-only parameters (``expose_value=False``, e.g. one that sets the thread
    count) removed: showing a configuration changes nothing."""
    shown = copy.copy(command)
    params = []
    for p in command.params:
        if not p.expose_value and p.name != cf.PARAM_NAME:
            p = copy.copy(p)
            p.expose_value = True
            p.callback = None
        params.append(p)
    shown.params = params
    return shown


def resolve(
    root: click.Context, words: list[str], config_path: str | None
) -> tuple[list[str], list[cf.Entry], str | None]:
    """Parse `words` (``COMMAND [SUBCOMMAND] [ARGS...]``) as gcntrain would, with
    ``--config config_path`` first, and return (command path, resolved entries, the file)."""
    group = root.command
    parent = root
    path: list[str] = []
    rest = list(words)
    cmd: click.Command = group
    while isinstance(cmd, click.Group):
        if not rest or rest[0].startswith("-"):
            if not path:
                raise InputError("config show needs a COMMAND (e.g. train)")
            subs = ", ".join(cmd.list_commands(parent))
            raise InputError(f"{' '.join(path)} needs a subcommand ({subs})")
        name = rest.pop(0)
        if path:  # a group below the root: its context, so subcommands see their path
            parent = click.Context(cmd, info_name=path[-1], parent=parent)
        cmd = _subcommand(cmd, parent, name, path)
        path.append(name)
    argv = (["--config", config_path] if config_path is not None else []) + rest
    with _exposed(cmd).make_context(path[-1], argv, parent=parent) as ctx:
        return cf.command_path(ctx), cf.resolved_entries(ctx), ctx.meta.get(cf.META_KEY)


def _text(path: list[str], entries: list[cf.Entry], file: str | None) -> str:
    cmd = " ".join(["gcntrain", *path])
    sources = (f"{file}, " if file else "") + "the command line and the defaults"
    header = [
        f"`{cmd}` resolved from {sources}",
        f"(each value's source in its comment; `{cmd} --config THIS_FILE` runs it)",
    ]
    return cf.render_toml(path, entries, header).rstrip("\n")


@config.command(
    "show",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    metavar="FILE.toml",
    help="The configuration file the command would be given.",
)
@json_option
@click.argument(
    "words", nargs=-1, required=True, type=click.UNPROCESSED, metavar="COMMAND [ARGS]..."
)
def show(config_path: str | None, as_json: bool, words: tuple[str, ...]) -> None:
    """Print the resolved configuration of COMMAND with ARGS (the --config file, then the
    command line, over the defaults) as a TOML table, each value commented with its source
    (file, command line or default), without running it.

    Options of `config show` itself come before COMMAND; everything after it belongs to
    COMMAND (e.g. `gcntrain config show --config run.toml train --epochs 50`).
    """
    root = click.get_current_context().find_root()
    path, entries, file = resolve(root, list(words), config_path)
    emit(
        cf.entries_json(path, entries, file),
        as_json,
        lambda _: _text(path, entries, file),
    )
