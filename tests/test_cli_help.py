"""Every command, subcommand and option of the CLI has a help text, and `gcntrain --help`
lists every command with its one-line summary."""

from __future__ import annotations

import click

from gcntrain.cli.main import COMMANDS, cli, run


def _walk(cmd, ctx, path):
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            assert sub is not None, f"{' '.join(path + [name])} does not load"
            yield from _walk(sub, ctx, path + [name])
    else:
        yield path, cmd


def test_every_command_and_option_has_help():
    ctx = click.Context(cli)
    missing = []
    for path, cmd in _walk(cli, ctx, []):
        if not (cmd.help or cmd.short_help):
            missing.append(" ".join(path))
        missing += [
            f"{' '.join(path)} {p.opts[0]}"
            for p in cmd.params
            if isinstance(p, click.Option) and not p.hidden and not p.help
        ]
    assert missing == []


def test_top_level_help_lists_every_command(capsys):
    assert run(["--help"]) == 0
    out = capsys.readouterr().out
    for name, (_, summary, _launch) in COMMANDS.items():
        assert any(ln.split()[:1] == [name] and summary[:30] in ln for ln in out.splitlines())


def test_a_group_without_a_subcommand_prints_its_help(capsys):
    for group in ("plot", "generate", "config"):
        assert run([group]) == 0
        cap = capsys.readouterr()
        assert cap.out.startswith(f"Usage: gcntrain {group}") and cap.err == ""
