"""`--config FILE.toml` on every command, `gcntrain config show`, and `train -o`'s config.toml.

Runs are serial on the embedded default dataset (or a tiny R-MAT graph) for 2-3 epochs.
"""

from __future__ import annotations

import json

import click
import pytest

from gcntrain.cli.main import COMMANDS, cli, run

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib

#: a short serial run (early stopping off, so every run lasts its --epochs)
SHORT = ["--scheme", "serial", "--early-stopping", "0", "--quiet"]


def write(path, text: str):
    path.write_text(text)
    return str(path)


def json_out(capsys, argv: list[str]) -> dict:
    assert run(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def one_error_line(capsys, argv: list[str]) -> str:
    """Run `argv`, expect exit status 2 and exactly one error line (nothing on stdout)."""
    assert run(argv) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 1, err
    assert lines[0].startswith("gcntrain: error: ")
    return lines[0]


def shown(capsys, argv: list[str]) -> dict:
    """`config show --json ...`: {key: (value, source)}."""
    d = json_out(capsys, ["config", "show", "--json", *argv])
    return {k: (v["value"], v["source"]) for k, v in d["parameters"].items()}


def test_command_line_overrides_the_file_and_the_rest_applies(tmp_path, capsys):
    cfg = write(
        tmp_path / "run.toml",
        "[train]\nepochs = 40\nhidden = [8]\nlr = 0.02\nweight_decay = 1e-3\nseed = 4\n"
        "[simulate]\nepochs = 7\n",  # another command's table: ignored by train
    )
    out = tmp_path / "out"
    d = json_out(
        capsys, ["train", "--config", cfg, "--epochs", "3", "--json", "-o", str(out), *SHORT]
    )
    assert d["epochs"] == 3  # the command line wins over the file's 40
    assert d["hidden"] == [8] and d["seed"] == 4  # the file's values were applied
    saved = json.loads((out / "config.json").read_text())
    assert saved["lr"] == 0.02 and saved["weight_decay"] == 1e-3 and saved["epochs"] == 3


def test_config_show_marks_where_each_value_came_from(tmp_path, capsys):
    cfg = write(tmp_path / "run.toml", "[train]\nepochs = 40\nlr = 0.02\nweight-decay = 0.002\n")
    argv = ["--config", cfg, "train", "--epochs", "3", "--dropout", "0.25"]
    got = shown(capsys, argv)
    assert got["epochs"] == (3, "command line") and got["dropout"] == (0.25, "command line")
    assert got["lr"] == (0.02, "file") and got["weight-decay"] == (0.002, "file")
    opt = {p.name: p for p in cli.get_command(None, "train").params}
    assert got["optimizer"] == (opt["optimizer"].default, "default")
    assert got["dtype"] == (opt["dtype"].default, "default")
    # the TOML text: the same values, each line commented with its source
    assert run(["config", "show", *argv]) == 0
    text = capsys.readouterr().out
    table = tomllib.loads(text)["train"]
    assert table["epochs"] == 3 and table["lr"] == 0.02 and table["dropout"] == 0.25
    lines = {ln.split("=")[0].strip(): ln for ln in text.splitlines() if "=" in ln}
    assert lines["epochs"].endswith("# command line")
    assert lines["lr"].endswith("# file")
    assert lines["optimizer"].endswith("# default")
    assert "graph" not in table and lines["# graph"].endswith("# default")  # not set


def test_group_subcommand_tables_and_positional_arguments(tmp_path, capsys):
    graph = tmp_path / "g.h5"
    cfg = write(
        tmp_path / "gen.toml",
        f"[generate.rmat]\nscale = 5\nedge-factor = 4\nout = {json.dumps(str(graph))}\n"
        f"[inspect]\nfile = {json.dumps(str(graph))}\n",
    )
    d = json_out(capsys, ["generate", "rmat", "--config", cfg, "--json"])
    assert d["nodes"] == 2**5 and graph.exists()
    assert json_out(capsys, ["inspect", "--config", cfg, "--json"])["num_nodes"] == 2**5
    bad = write(tmp_path / "loose.toml", "[generate]\nscale = 5\n")
    line = one_error_line(capsys, ["generate", "rmat", "--config", bad, "-o", str(graph)])
    assert "'scale'" in line and "[generate.rmat]" in line


def test_every_command_with_options_takes_config(capsys):
    def leaves(cmd, path):
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                yield from leaves(sub, [*path, name])
        else:
            yield path, cmd

    seen = 0
    for name in COMMANDS:
        for path, cmd in leaves(cli.get_command(None, name), [name]):
            flags = [f for p in cmd.params for f in getattr(p, "opts", ())]
            assert "--config" in flags, path
            seen += 1
    assert seen >= len(COMMANDS)


def test_unknown_key_names_the_command_and_the_closest_keys(tmp_path, capsys):
    cfg = write(tmp_path / "a.toml", "[train]\nepoch = 3\n")
    line = one_error_line(capsys, ["train", "--config", cfg])
    assert "'epoch'" in line and "train" in line and "epochs" in line and cfg in line


def test_wrong_type_names_the_key(tmp_path, capsys):
    for text, key in (
        ('[train]\nepochs = "ten"\n', "epochs"),
        ("[train]\nlr = true\n", "lr"),
        ('[train]\nscheme = "5d"\n', "scheme"),
        ("[train]\nquiet = 1\n", "quiet"),
    ):
        cfg = write(tmp_path / "b.toml", text)
        assert f"'{key}'" in one_error_line(capsys, ["train", "--config", cfg])


@pytest.mark.parametrize("command", ["train", "simulate"])
def test_a_bad_value_names_its_option_and_its_file(tmp_path, capsys, command):
    """A value every type check passes but the run refuses (lr = nan): the line names the
    option and, from a file, its key and the file; from the command line, the option."""
    cfg = write(tmp_path / "nan.toml", f"[{command}]\nlr = nan\nweight-decay = -1.0\n")
    argv = [command, "--epochs", "1", *(["--quiet"] if command == "train" else ["-P", "2"])]
    line = one_error_line(capsys, [*argv, "--config", cfg])
    assert f"--lr (lr in {cfg}) must be a finite number > 0, got nan" in line, line
    line = one_error_line(capsys, [*argv, "--config", cfg, "--lr", "0.01"])
    assert f"--weight-decay (weight-decay in {cfg}) must be a finite number >= 0" in line
    line = one_error_line(capsys, [*argv, "--lr", "nan"])
    assert line == "gcntrain: error: --lr must be a finite number > 0, got nan"


def test_bad_toml_names_file_line_and_column(tmp_path, capsys):
    cfg = write(tmp_path / "c.toml", "[train]\nepochs = 3\nlr = \n")
    line = one_error_line(capsys, ["train", "--config", cfg])
    assert cfg in line and "line 3" in line and "column 6" in line
    missing = str(tmp_path / "missing.toml")
    line = one_error_line(capsys, ["simulate", "--config", missing])
    assert missing in line and "not found" in line


def test_train_out_writes_a_config_that_reruns_the_same_run(tmp_path, capsys):
    first = tmp_path / "first"
    argv = ["--epochs", "3", "--hidden", "8", "--lr", "0.03", "--dropout", "0.2", "--seed", "6"]
    argv += [*SHORT, "--json"]
    d1 = json_out(capsys, ["train", *argv, "-o", str(first)])
    written = first / "config.toml"
    tomllib.loads(written.read_text())  # valid TOML
    # the file resolves to the parameters of the original command line ...
    original = shown(capsys, ["train", *argv])
    again = shown(capsys, ["--config", str(written), "train"])
    assert {k: v for k, (v, _) in again.items()} == {k: v for k, (v, _) in original.items()}
    assert again["lr"] == (0.03, "file") and original["lr"] == (0.03, "command line")
    # ... and gives the same run
    d2 = json_out(capsys, ["train", "--config", str(written), "-o", str(tmp_path / "second")])
    assert d2["epochs"] == d1["epochs"] == 3
    assert d2["final_loss"] == d1["final_loss"]
    assert (tmp_path / "second" / "config.toml").exists()


def test_simulate_honours_its_own_table(tmp_path, capsys):
    cfg = write(
        tmp_path / "run.toml",
        '[train]\nepochs = 50\n[simulate]\nranks = 4\nscheme = "1d"\nepochs = 2\nhidden = [8]\n',
    )
    d = json_out(capsys, ["simulate", "--config", cfg, "--json"])
    assert d["ranks"] == 4 and d["scheme"] == "1d" and d["epochs"] == 2 and d["hidden"] == [8]
    d = json_out(capsys, ["simulate", "--config", cfg, "--json", "--ranks", "2"])
    assert d["ranks"] == 2


@pytest.mark.parametrize("words", [["nosuch"], ["generate"]])
def test_config_show_refuses_unknown_or_incomplete_commands(capsys, words):
    one_error_line(capsys, ["config", "show", *words])


def test_config_show_writes_the_hidden_widths_the_run_uses(tmp_path, capsys):
    """--hidden given nowhere is the reference [16] (not the empty click default), and the
    shown file reruns with it."""
    assert run(["config", "show", "train"]) == 0
    shown = capsys.readouterr().out
    assert [ln.split("#")[0].strip() for ln in shown.splitlines() if ln.startswith("hidden")] == [
        "hidden = [16]"
    ]
    path = tmp_path / "shown.toml"
    path.write_text(shown)
    assert run(["train", "--config", str(path), "--epochs", "2", "--json", "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out)["hidden"] == [16]


@pytest.mark.parametrize(
    "text, needle",
    [
        ("[trian]\nepochs = 2\n", "[trian] is not a gcntrain command (closest: train)"),
        ("epochs = 2\n[train]\nlr = 0.1\n", "'epochs' stands outside any table"),
        ("[generate.rmt]\nscale = 4\n", "[generate.rmt] is not a generate subcommand (rmat)"),
    ],
)
def test_tables_no_command_reads_are_errors(tmp_path, capsys, text, needle):
    """A misspelt table or a key outside every table is never ignored (issue 51, item 6):
    one line naming it and the closest names, for any command the file is given to."""
    path = write(tmp_path / "c.toml", text)
    for argv in (["train", "--config", path], ["simulate", "--ranks", "2", "--config", path]):
        assert needle in one_error_line(capsys, argv)


def test_train_config_reruns_from_another_folder(tmp_path, capsys, monkeypatch):
    """train -o writes its paths absolute: `--config A/run/config.toml` from folder B runs
    the same graph (issue 51, item 17); a method name stays a name."""
    import shutil

    from gcntrain.data.generate import rmat
    from gcntrain.data.store import write_graph

    a, b = tmp_path / "A", tmp_path / "B"
    a.mkdir()
    b.mkdir()
    write_graph(a / "g.h5", rmat(6, edge_factor=4, seed=2, num_features=4, num_classes=2))
    monkeypatch.chdir(a)
    first = json_out(
        capsys, ["train", "g.h5", "--epochs", "2", "--partition", "random", "-o", "run", "--json"]
    )
    text = (a / "run" / "config.toml").read_text()
    assert f'graph = "{a / "g.h5"}"' in text and 'partition = "random"' in text
    shutil.copytree(a / "run", b / "copy")
    monkeypatch.chdir(b)
    again = json_out(capsys, ["train", "--config", "copy/config.toml", "--json"])
    assert again["final_loss"] == first["final_loss"] and again["graph"] == first["graph"]
