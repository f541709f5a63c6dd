"""No output replaces what is not a regular file (a device node, a FIFO) or one of the
command's inputs (also through a link): for every command that writes, one line, exit 2, the
target untouched (issue 51, items 1 and 2).  The cases are generated from
`gcntrain.cli.main.COMMANDS`: each writing command has its command lines here, and a command
added without them fails `test_every_writing_command_is_covered`."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from gcntrain.cli.main import COMMANDS, run
from gcntrain.data.generate import rmat
from gcntrain.data.store import write_graph

#: each writing command: its command lines with ``{out}`` the output under test and
#: ``{graph}`` an input graph file (``train`` writes with --per-rank; its -o is a directory)
WRITERS = {
    "generate": [["generate", "rmat", "-o", "{out}", "--scale", "4"]],
    "convert": [["convert", "{npz}", "-o", "{out}"]],
    "shard": [["shard", "{graph}", "-o", "{out}", "--parts", "2"]],
    "partition": [["partition", "{graph}", "-m", "random", "--parts", "2", "-o", "{out}"]],
    "simulate": [["simulate", "{graph}", "--ranks", "2", "--per-rank", "{out}"]],
    "bench": [["bench", "--quick", "-o", "{out}"]],
    "plot": [["plot", "scaling", "{graph}", "--ranks", "2", "--machine", "fugaku", "-o", "{out}"]],
    "jobscript": [
        ["jobscript", "--scheduler", "slurm", "--nodes", "1", "--ranks-per-node", "2"]
        + ["--mpi", "pmi2", "-o", "{out}", "--", "train", "{graph}", "--scheme", "1d"]
    ],
    "train": [
        ["train", "{graph}", "--epochs", "1", "--per-rank", "{out}"],
        ["train", "{graph}", "--epochs", "1", "-o", "{out}"],
    ],
}
#: the command lines whose output may be an input: {out} is the input graph (or a link to it)
OVER_INPUTS = {
    "convert": [["convert", "{npz}", "-o", "{npz_out}"]],
    "partition": WRITERS["partition"],
    "simulate": WRITERS["simulate"],
    "jobscript": WRITERS["jobscript"],
    "train": WRITERS["train"][:1],
}


def test_every_writing_command_is_covered():
    writing = {name for name, c in COMMANDS.items() if c.launch in ("one", "mpi")}
    assert writing == set(WRITERS)


@pytest.fixture()
def inputs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    g = rmat(5, edge_factor=4, seed=1, num_features=4, num_classes=2)
    write_graph(tmp_path / "g.h5", g)
    a = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=np.float32)
    import scipy.sparse as sp

    sp.save_npz(tmp_path / "a.npz", sp.csr_matrix(a))
    return tmp_path


def special(where, kind: str):
    path = where / f"special-{kind}"
    if kind == "fifo":
        os.mkfifo(path)
    else:  # a character device like /dev/null (1, 3), made here: never the real one
        if os.geteuid() != 0:
            pytest.skip("making a character device node needs root (CI runs as root)")
        os.mknod(path, 0o644 | stat.S_IFCHR, os.makedev(1, 3))
    return path


def fill(argv, **values):
    return [a.format(**values) for a in argv]


def one_error_line(capsys) -> str:
    out, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.startswith("gcntrain: error: ")]
    assert len(lines) == 1, err
    return lines[0]


CASES = [(name, i) for name, lines in WRITERS.items() for i in range(len(lines))]


@pytest.mark.parametrize("kind", ["fifo", "chr"])
@pytest.mark.parametrize("name, i", CASES, ids=[f"{n}{i}" for n, i in CASES])
def test_special_files_are_never_replaced(inputs, capsys, name, i, kind):
    target = special(inputs, kind)
    before = os.stat(target)
    argv = fill(WRITERS[name][i], out=target.name, graph="g.h5", npz="a.npz")
    assert run(argv) == 2
    line = one_error_line(capsys)
    assert target.name in line
    after = os.stat(target)
    assert stat.S_IFMT(after.st_mode) == stat.S_IFMT(before.st_mode)
    assert (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)
    assert sorted(p.name for p in inputs.iterdir()) == ["a.npz", "g.h5", target.name]


IN_CASES = [(name, i) for name, lines in OVER_INPUTS.items() for i in range(len(lines))]


@pytest.mark.parametrize("link", [False, True], ids=["same", "link"])
@pytest.mark.parametrize("name, i", IN_CASES, ids=[f"{n}{i}" for n, i in IN_CASES])
def test_inputs_are_never_overwritten(inputs, capsys, name, i, link):
    graph, npz = "g.h5", "a.npz"
    out, npz_out = graph, npz
    if link:
        os.symlink(graph, "link.h5")
        os.symlink(npz, "link.npz")
        out, npz_out = "link.h5", "link.npz"
    before = {p: (inputs / p).read_bytes() for p in (graph, npz)}
    argv = fill(OVER_INPUTS[name][i], out=out, graph=graph, npz=npz, npz_out=npz_out)
    assert run(argv) == 2
    assert "is an input of this command" in one_error_line(capsys)
    assert {p: (inputs / p).read_bytes() for p in (graph, npz)} == before


def _write_run(out_dir, marker: float, started=None) -> None:
    """`write_outputs` of a run whose every file carries `marker`; with `started` (an
    Event), slowed down between its renames and setting `started` once its first file is
    in place."""
    import time

    from gcntrain.data import atomic
    from gcntrain.model.output import write_outputs

    if started is not None:
        install = atomic._install
        done = []

        def slow(tmp, path):
            install(tmp, path)
            done.append(path)
            if len(done) == 1:
                started.set()
            time.sleep(0.3)

        atomic._install = slow
    weights = [{"W": np.full((2, 2), marker, dtype=np.float32)}]
    history = [{"epoch": 1, "loss": marker}]
    write_outputs(
        out_dir, {"marker": marker}, history, weights, np.zeros(3), np.arange(3), None, None
    )


def test_runs_writing_one_folder_at_once_never_mix(tmp_path):
    """Two runs write the same -o at once (the first slowed between its renames): the
    folder ends with one run's files, all of them, never some of each (issue 51, item 3)."""
    import json
    import multiprocessing as mp

    import h5py

    ctx = mp.get_context("fork")
    out = tmp_path / "run"
    out.mkdir()
    started = ctx.Event()
    a = ctx.Process(target=_write_run, args=(out, 1.0, started))
    a.start()
    assert started.wait(30)
    b = ctx.Process(target=_write_run, args=(out, 2.0))
    b.start()
    a.join(60)
    b.join(60)
    assert a.exitcode == 0 and b.exitcode == 0
    config = json.loads((out / "config.json").read_text())["marker"]
    loss = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])["loss"]
    with h5py.File(out / "weights.h5", "r") as f:
        w = float(f["layer0/W"][0, 0])
    assert config == loss == w
