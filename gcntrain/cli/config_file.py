"""TOML configuration files: load one, pick a command's table, check its keys and values
against the command's click parameters, and render a resolved configuration as TOML.

One mechanism serves every command: the keys a table may hold are the command's own click
parameters (an option's long flag without the dashes, e.g. ``weight-decay``, or its
parameter name, ``weight_decay``; dashes and underscores are interchangeable), and each
value is converted by the parameter's own click type.  A file holds one table per command
(``[train]``, ``[simulate]``; a subcommand of a group: ``[generate.rmat]``); the tables of
other commands are ignored.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from gcntrain.errors import InputError
from gcntrain.job.options import CONFIG_FILE_META

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib

#: name of the parameter the generic ``--config`` option stores under
PARAM_NAME = "config_file"

#: how each click parameter source is named in comments and JSON
SOURCE_NAMES = {
    ParameterSource.COMMANDLINE: "command line",
    ParameterSource.ENVIRONMENT: "environment",
    ParameterSource.DEFAULT_MAP: "file",
    ParameterSource.DEFAULT: "default",
    ParameterSource.PROMPT: "prompt",
}


@dataclass(frozen=True)
class Entry:
    """One resolved parameter: its key in a table, its value and where the value came from.

    Attributes
    ----------
    key : the key in the command's table (long flag without dashes, else parameter name).
    value : the value click resolved (None: not set).
    source : "file", "command line", "default", ...
    note : a comment that replaces the source comment, and renders the line inactive (a
        TOML comment), e.g. for an output directory that a rerun should not reuse.
    """

    key: str
    value: Any
    source: str
    note: str | None = None


# ------------------------------------------------------------------------------- loading
def _position(text: str, message: str) -> tuple[int, int]:
    """(line, column) of a TOML error from tomllib's message (or the end of the text)."""
    m = re.search(r"line (\d+), column (\d+)", message)
    if m:
        return int(m.group(1)), int(m.group(2))
    lines = text.split("\n")
    return len(lines), len(lines[-1]) + 1


def load_file(path: str | Path) -> dict:
    """Parse a TOML file.

    Parameters
    ----------
    path : the file.

    Returns
    -------
    The parsed document (nested dicts).

    Raises
    ------
    InputError : a missing or unreadable file, a file that is not UTF-8 text, or invalid
        TOML (the message names the line and column).
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise InputError("config file not found", str(p)) from None
    except IsADirectoryError:
        raise InputError("config file is a directory", str(p)) from None
    except OSError as e:
        raise InputError(f"cannot read the config file ({e.strerror or e})", str(p)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"config file is not UTF-8 text (byte {e.start})", str(p)) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        msg = str(e)
        line, col = _position(text, msg)
        reason = re.sub(r"\s*\((at )?(line \d+, column \d+|end of document)\)\s*$", "", msg)
        raise InputError(
            f"not valid TOML at line {line}, column {col}: {reason[:1].lower() + reason[1:]}",
            str(p),
        ) from None


def table_name(path: Iterable[str]) -> str:
    """``["generate", "rmat"]`` -> ``generate.rmat`` (the TOML table header)."""
    return ".".join(path)


def check_tables(doc: Mapping, file: str, ctx: click.Context) -> None:
    """Raise `InputError` for what no command would read: a key outside any table, a table
    that names no command of the root group of `ctx`, or a subtable of a group that names
    none of its subcommands (each with the closest names), so that a misspelt ``[trian]``
    is never ignored."""
    root = ctx.find_root()
    cli = root.command
    commands = cli.list_commands(root) if isinstance(cli, click.Group) else []
    for name, value in doc.items():
        if not isinstance(value, dict):
            raise InputError(
                f"{name!r} stands outside any table: a command's options go in its table, "
                f"e.g. [train] {name} = ...",
                file,
            )
        if name not in commands:
            close = difflib.get_close_matches(name, commands, 3, 0.5)
            hint = f"closest: {', '.join(close)}" if close else f"commands: {', '.join(commands)}"
            raise InputError(f"[{name}] is not a gcntrain command ({hint})", file)
        group = cli.get_command(root, name)
        if not isinstance(group, click.Group):
            continue
        for sub, v in value.items():
            if isinstance(v, dict) and sub not in group.commands:
                close = difflib.get_close_matches(sub, list(group.commands), 3, 0.5)
                names = close or sorted(group.commands)
                raise InputError(
                    f"[{name}.{sub}] is not a {name} subcommand ({', '.join(names)})", file
                )


def select_table(doc: Mapping, path: list[str], file: str) -> dict:
    """The table of the command at `path` (``["train"]``, ``["generate", "rmat"]``), or {}.

    Raises
    ------
    InputError : a table name that holds a value instead of a table, or a plain key in a
        group's table (a group such as ``generate`` takes only subcommand tables).
    """
    node: Any = doc
    for depth, name in enumerate(path):
        if depth > 0:
            loose = sorted(k for k, v in node.items() if not isinstance(v, dict))
            if loose:
                group = table_name(path[:depth])
                raise InputError(
                    f"[{group}] holds the key {loose[0]!r}, but {group} takes only "
                    f"subcommand tables such as [{table_name(path)}]",
                    file,
                )
        if name not in node:
            return {}
        node = node[name]
        if not isinstance(node, dict):
            raise InputError(
                f"{table_name(path[: depth + 1])!r} must be a table ([{table_name(path)}])",
                file,
            )
    return dict(node)


# ------------------------------------------------------------------------ key matching
def _norm(key: str) -> str:
    return key.replace("_", "-")


def canonical_key(param: click.Parameter) -> str:
    """The key a parameter is written under: its first long flag without the dashes (an
    option), else its parameter name (an argument, or an option with short flags only)."""
    if isinstance(param, click.Option):
        for flag in param.opts:
            if flag.startswith("--"):
                return flag[2:]
    return str(param.name)


def table_params(command: click.Command) -> list[click.Parameter]:
    """The parameters a table may set: every parameter of `command` but the help option
    and the ``--config`` option itself."""
    return [p for p in command.params if p.name and p.name != PARAM_NAME]


def key_index(command: click.Command) -> dict[str, click.Parameter]:
    """Every accepted spelling of every parameter (dashes normalised): long flags first, so a
    flag name wins over another parameter's variable name."""
    index: dict[str, click.Parameter] = {}
    params = table_params(command)
    for p in params:
        if isinstance(p, click.Option):
            for flag in p.opts:
                if flag.startswith("--"):
                    index.setdefault(_norm(flag[2:]), p)
    for p in params:
        index.setdefault(_norm(str(p.name)), p)
    return index


def _unknown_key(key: str, command_path: list[str], index: Mapping, file: str) -> InputError:
    names = sorted({canonical_key(p) for p in index.values()})
    close = difflib.get_close_matches(_norm(key), names, n=3, cutoff=0.6)
    cmd = " ".join(command_path)
    hint = (
        f"closest: {', '.join(close)}"
        if close
        else f"see `gcntrain {cmd} -h`; keys: {', '.join(names)}"
    )
    return InputError(
        f"[{table_name(command_path)}] {key!r} is not an option of {cmd} ({hint})", file
    )


# ------------------------------------------------------------------------ value checks
def _kind(ptype: click.ParamType) -> str:
    """ "bool", "int", "float" or "text" (every other type takes a string, like argv)."""
    if isinstance(ptype, click.types.BoolParamType):
        return "bool"
    if isinstance(ptype, click.types.IntParamType):
        return "int"
    if isinstance(ptype, click.types.FloatParamType):
        return "float"
    return "text"


_TOML_TYPE = {bool: "a boolean", int: "an integer", float: "a float", str: "a string"}


def _scalar(value: Any, kind: str) -> Any:
    """Check one TOML scalar against a parameter kind; return it in the form click expects.
    Raises ValueError with the reason."""
    if isinstance(value, (dict, list)):
        raise ValueError(
            "a " + ("table" if isinstance(value, dict) else "list") + " is not a single value"
        )
    what = _TOML_TYPE.get(type(value), type(value).__name__)
    if kind == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"expected true or false, got {what}")
        return value
    if isinstance(value, bool):
        raise ValueError(f"expected {'a number' if kind != 'text' else 'a string'}, got a boolean")
    if kind == "int" and not isinstance(value, int):
        raise ValueError(f"expected an integer, got {what}")
    if kind == "float" and not isinstance(value, (int, float)):
        raise ValueError(f"expected a number, got {what}")
    if kind == "text":
        if isinstance(value, (int, float)):
            return str(value)
        if not isinstance(value, str):
            raise ValueError(f"expected a string, got {what}")
    return value


def check_value(param: click.Parameter, value: Any, ctx: click.Context) -> Any:
    """Check a table value for `param` and return it in the form click's conversion takes
    (a list for a repeatable or multi-value parameter; a single value may stand for a list
    of one).

    Raises
    ------
    ValueError : the reason, in one line.
    """
    kind = _kind(param.type)
    multiple = bool(getattr(param, "multiple", False))
    if multiple and param.nargs > 1:  # repeatable groups of values: a list of lists
        items = value if isinstance(value, list) else [value]
        out: Any = [[_scalar(v, kind) for v in _group(g, param.nargs)] for g in items]
    elif multiple or param.nargs == -1:
        out = [_scalar(v, kind) for v in (value if isinstance(value, list) else [value])]
    elif param.nargs > 1:
        out = [_scalar(v, kind) for v in _group(value, param.nargs)]
    else:
        out = _scalar(value, kind)
    try:
        param.type_cast_value(ctx, out)
    except click.BadParameter as e:
        raise ValueError(str(e.message).replace("\n", " ")) from None
    return out


def _group(value: Any, n: int) -> list:
    if not isinstance(value, list) or len(value) != n:
        raise ValueError(f"expected a list of {n} values")
    return value


def table_defaults(
    command: click.Command,
    table: Mapping,
    command_path: list[str],
    file: str,
    ctx: click.Context,
) -> dict[str, Any]:
    """The ``default_map`` a command's table gives: {parameter name: value}.

    Parameters
    ----------
    command : the click command the table configures.
    table : the command's table from the file.
    command_path : the command's names below ``gcntrain`` (``["generate", "rmat"]``).
    file : the file (for messages).
    ctx : the command's context (click's conversions need one).

    Raises
    ------
    InputError : a key that is not a parameter of the command (with the closest names), a
        parameter given twice (two spellings), or a value of the wrong type (naming the key).
    """
    index = key_index(command)
    out: dict[str, Any] = {}
    seen: dict[str, str] = {}
    where = f"[{table_name(command_path)}]"
    for key, value in table.items():
        param = index.get(_norm(key))
        if param is None:
            raise _unknown_key(key, command_path, index, file)
        name = str(param.name)
        if name in seen:
            raise InputError(
                f"{where} sets {canonical_key(param)!r} twice ({seen[name]!r} and {key!r})", file
            )
        seen[name] = key
        try:
            out[name] = check_value(param, value, ctx)
        except ValueError as e:
            raise InputError(f"{where} key {key!r}: {e}", file) from None
    return out


# ----------------------------------------------------------------------- resolved values
def resolved_entries(ctx: click.Context, notes: Mapping[str, str] | None = None) -> list[Entry]:
    """The resolved value and source of every parameter of the command of `ctx` (after its
    parameters were processed), in the command's declaration order.

    Parameters
    ----------
    ctx : the command's context.
    notes : {parameter name: note} for parameters to render inactive (as comments).
    """
    from gcntrain.job.options import SHOWN

    notes = notes or {}
    out = []
    for p in table_params(ctx.command):
        if p.name not in ctx.params:  # not exposed: its value is not recorded
            continue
        src = ctx.get_parameter_source(p.name)
        source = SOURCE_NAMES.get(src, "default") if src is not None else "default"
        value = ctx.params[p.name]
        if p.name in SHOWN and value is not None:  # the value the run uses
            value = SHOWN[p.name](value)
        out.append(Entry(canonical_key(p), value, source, notes.get(p.name)))
    return out


def plain_value(value: Any) -> Any:
    """A resolved value as JSON/TOML data (tuples as lists)."""
    if isinstance(value, (list, tuple)):
        return [plain_value(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


# ------------------------------------------------------------------------------ rendering
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key)


def toml_value(value: Any) -> str:
    """A value as a TOML literal (strings that are canonical integers are written as
    integers: click reads them back as the same text)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    text = str(value)
    if re.fullmatch(r"-?(0|[1-9][0-9]*)", text) and len(text) < 19:
        return text
    return json.dumps(text, ensure_ascii=False)


def render_toml(path: list[str], entries: list[Entry], header: Iterable[str] = ()) -> str:
    """A command's resolved configuration as a TOML table, each line commented with the
    value's source; values that are not set (None) and inactive entries are comments.

    Parameters
    ----------
    path : the command's names below ``gcntrain`` (the table is ``[a.b]``).
    entries : from `resolved_entries`.
    header : comment lines above the table (without the ``#``).
    """
    lines = [f"# {h}" if h else "#" for h in header]
    body = []
    for e in entries:
        if e.value is None:
            code = f"# {toml_key(e.key)} = (not set)"
        else:
            code = f"{toml_key(e.key)} = {toml_value(plain_value(e.value))}"
            if e.note is not None:
                code = "# " + code
        note = e.note if e.note is not None and e.value is not None else None
        body.append((code, note or e.source))
    width = max((len(c) for c, _ in body), default=0)
    lines.append(f"[{table_name(path)}]")
    lines += [f"{c.ljust(width)}  # {why}" for c, why in body]
    return "\n".join(lines) + "\n"


def entries_json(path: list[str], entries: list[Entry], file: str | None) -> dict:
    """The resolved configuration as one JSON object: the command, the file, and every
    parameter's value and source."""
    return {
        "command": " ".join(path),
        "table": table_name(path),
        "config": file,
        "parameters": {
            e.key: {
                "value": plain_value(e.value),
                "source": e.source,
                **({"note": e.note} if e.note is not None else {}),
            }
            for e in entries
        },
    }


# ---------------------------------------------------------------------- click integration
#: `ctx.meta` key under which the ``--config`` callback records the file it read (named by
#: the lines of bad values, `gcntrain.job.options.named_value_error`)
META_KEY = CONFIG_FILE_META


def command_path(ctx: click.Context) -> list[str]:
    """The names of the command of `ctx` below ``gcntrain`` (``["generate", "rmat"]``): the
    names it was invoked by, without the root group (a command run on its own: its name)."""
    names: list[str] = []
    c: click.Context | None = ctx
    while c is not None:
        if c.parent is None:
            if not isinstance(c.command, click.Group):
                names.append(str(c.command.name))
            break
        names.append(str(c.info_name or c.command.name))
        c = c.parent
    return names[::-1]


def apply_config(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """The eager ``--config`` callback: the command's table of the file becomes the
    defaults of its parameters (``ctx.default_map``), so the command line still wins."""
    if value is None or ctx.resilient_parsing:
        return value
    path = command_path(ctx)
    doc = load_file(value)
    check_tables(doc, str(value), ctx)
    table = select_table(doc, path, str(value))
    defaults = table_defaults(ctx.command, table, path, str(value), ctx)
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    ctx.meta[META_KEY] = str(value)
    return value


def command_toml(
    ctx: click.Context,
    notes: Mapping[str, str] | None = None,
    header: Iterable[str] = (),
    paths: Mapping[str, bool] | None = None,
) -> str:
    """The resolved configuration of the command of `ctx` as TOML (`render_toml`).

    `paths`: {parameter name: always} of the parameters that hold a path, written absolute
    so that the file reruns the same command from any folder: always, or (False) only when
    the value names something that exists (``--partition metis`` is a method, not a file)."""
    entries = resolved_entries(ctx, notes)
    names = {canonical_key(p): p.name for p in table_params(ctx.command)}
    for i, e in enumerate(entries):
        always = (paths or {}).get(names.get(e.key, ""))
        if always is None or not isinstance(e.value, str) or e.note is not None:
            continue
        if always or os.path.exists(e.value):
            entries[i] = replace(e, value=os.path.abspath(e.value))
    return render_toml(command_path(ctx), entries, header)
