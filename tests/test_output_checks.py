"""Outputs checked before any work (serial paths; the MPI ones in test_mpi_cli): an output
that is one of the command's inputs (also through a link) is refused and the input kept, an
unknown ``--machine`` is refused on every path, an unwritable location is one line.  Also the
serial side of issue 35's damaged inputs: graph and partition files with damaged HDF5
metadata or sizes declared far beyond the graph's, bad widths, the memory guard's hint."""

from __future__ import annotations

import errno
import os

import pytest

from gcntrain.cli.main import run
from gcntrain.data.generate import rmat
from gcntrain.data.store import write_graph
from tests.tamper import CASES as TAMPER_CASES
from tests.tamper import damaged_metadata, tampered


@pytest.fixture
def graph(tmp_path):
    path = tmp_path / "g.h5"
    write_graph(path, rmat(7, edge_factor=6, seed=2, num_features=8, num_classes=3))
    return path


def one_line(capsys, needle: str) -> None:
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("gcntrain: error:") and needle in err[0], err


@pytest.mark.parametrize("through_link", [False, True])
@pytest.mark.parametrize(
    "argv, flag",
    [
        (["partition", "{g}", "--method", "random", "--parts", "2", "--out", "{o}"], "--out"),
        (["train", "{g}", "--epochs", "1", "--quiet", "--per-rank", "{o}"], "--per-rank"),
        (["simulate", "{g}", "-P", "2", "--scheme", "1d", "--per-rank", "{o}"], "--per-rank"),
    ],
)
def test_an_input_is_never_an_output(graph, tmp_path, capsys, argv, flag, through_link):
    out = graph
    if through_link:
        out = tmp_path / "link.h5"
        os.symlink(graph, out)
    before = graph.read_bytes()
    assert run([a.format(g=graph, o=out) for a in argv]) == 2
    one_line(capsys, f"{flag} is an input of this command")
    assert graph.read_bytes() == before


def test_unknown_profile_refused_serially(graph, capsys):
    assert run(["train", str(graph), "--epochs", "1", "--quiet", "--machine", "nosuch"]) == 2
    one_line(capsys, "unknown machine profile 'nosuch'")


def test_per_rank_where_nothing_can_be_written(graph, tmp_path, capsys):
    argv = ["train", str(graph), "--epochs", "1", "--quiet", "--per-rank"]
    assert run([*argv, str(tmp_path / "missing" / "t.csv")]) == 2
    one_line(capsys, "--per-rank: no such directory")
    assert run([*argv, str(tmp_path)]) == 2
    one_line(capsys, "is a directory")


def test_outputs_checked_before_the_work(graph, tmp_path, capsys):
    """convert, generate, partition and jobscript refuse an -o they could not write before
    parsing, generating, partitioning or planning anything; convert refuses its own input."""
    missing = str(tmp_path / "missing" / "x")
    for argv in (
        ["generate", "rmat", "--scale", "6", "-o", missing],
        ["convert", str(graph), "-o", missing],
        ["partition", str(graph), "--method", "random", "--parts", "2", "--out", missing],
        ["jobscript", "--scheduler", "slurm", "--nodes", "1", "--ranks-per-node", "2"]
        + ["-o", missing, "--", "train"],
    ):
        assert run(argv) == 2, argv
        one_line(capsys, "--out: no such directory")
    before = graph.read_bytes()
    assert run(["convert", str(graph), "-o", str(graph)]) == 2
    one_line(capsys, "--out is an input of this command")
    assert graph.read_bytes() == before


def test_graphs_without_usable_widths_refused_serially(graph, tmp_path, capsys):
    import h5py

    zero = tmp_path / "c0.h5"
    zero.write_bytes(graph.read_bytes())
    with h5py.File(zero, "r+") as h:
        h.attrs["num_classes"] = 0
    assert run(["train", str(zero), "--epochs", "1", "--quiet"]) == 2
    one_line(capsys, "need at least 2 classes, found 0")
    edges = tmp_path / "edges.txt"
    edges.write_text("".join(f"{i} {(i * 7 + 3) % 40}\n" for i in range(40)))
    bare = tmp_path / "bare.h5"
    assert run(["convert", str(edges), "-o", str(bare), "--json"]) == 0
    capsys.readouterr()
    assert run(["train", str(bare), "--epochs", "1", "--quiet"]) == 2
    one_line(capsys, "no node features")


def test_a_graph_given_as_partition_is_named_as_such(graph, capsys):
    argv = ["train", str(graph), "--scheme", "p2p", "--partition", str(graph), "--quiet"]
    assert run([*argv, "--epochs", "1"]) == 2
    one_line(capsys, "is a gcntrain graph, not a partition file")


def test_simulate_refuses_a_model_too_large_to_plan(graph, capsys, monkeypatch):
    """The planner records one whole model: beyond this process's memory it is one line
    (the machine's memory stands at 1 GiB here, whatever this machine has)."""
    from gcntrain.job import memory_guard

    monkeypatch.setattr(memory_guard, "available_bytes", lambda: 2.0**30)
    for extra in ([], ["--sweep", "--machine", "abci"]):
        assert run(["simulate", str(graph), "-P", "4", "--hidden", "10000000", *extra]) == 2
        one_line(capsys, "needs about")


@pytest.mark.parametrize("how", ["huge", "scalar"])
def test_declared_sizes_checked_before_anything_is_read(graph, tmp_path, capsys, how):
    """A few KB declaring 1e11 indices, or a scalar where an array belongs: one line from
    inspect, simulate and train, before any array is read or hashed."""
    import h5py
    import numpy as np

    bad = tmp_path / f"{how}.h5"
    bad.write_bytes(graph.read_bytes())
    with h5py.File(bad, "r+") as h:
        del h["indices"]
        if how == "huge":
            h.create_dataset("indices", shape=(10**11,), dtype=np.int32, chunks=(1 << 16,))
        else:
            h["indices"] = np.int32(5)
    needle = "declares 100,000,000,000 elements" if how == "huge" else "must be a 1-D array"
    for argv in (
        ["inspect", str(bad)],
        ["simulate", str(bad), "-P", "2", "--scheme", "1d"],
        ["train", str(bad), "--epochs", "1", "--quiet"],
    ):
        assert run(argv) == 2, argv
        one_line(capsys, needle)


def test_damaged_hdf5_metadata_is_a_format_error_naming_the_file(graph, tmp_path, capsys):
    bad = damaged_metadata(graph, tmp_path)
    for argv in (
        ["inspect", str(bad)],
        ["train", str(bad), "--epochs", "1", "--quiet"],
        ["simulate", str(bad), "-P", "2", "--scheme", "1d"],
    ):
        assert run(argv) == 2, argv
        one_line(capsys, f"{bad}: damaged HDF5 file")


def test_fuzzed_metadata_never_escapes_the_contract(graph, tmp_path, capsys):
    """200 seeded one-byte flips of a small graph file's HDF5 metadata (its first and last
    4 KB, where the superblock, object headers and B-trees lie): `inspect` and serial
    `train` each end with exit 0 or exit 2, never 1, never a traceback."""
    import random

    src = graph.read_bytes()
    rng = random.Random(2026)
    bad = tmp_path / "fuzz.h5"
    escaped, seen = [], set()
    for k in range(200):
        d = bytearray(src)
        lo, hi = (0, min(4096, len(d))) if k % 2 == 0 else (max(0, len(d) - 4096), len(d))
        pos = rng.randrange(lo, hi)
        d[pos] ^= 1 << rng.randrange(8)
        bad.write_bytes(bytes(d))
        for argv in (["inspect", str(bad)], ["train", str(bad), "--epochs", "1", "--quiet"]):
            rc = run([*argv, "--json"])
            err = capsys.readouterr().err
            seen.add(rc)
            if rc not in (0, 2) or "Traceback" in err:
                escaped.append((pos, argv[0], rc, err.strip().splitlines()[-1:]))
    assert not escaped, escaped[:5]
    assert seen == {0, 2}  # the flips reach both harmless and refused bytes


@pytest.mark.parametrize("name", sorted(TAMPER_CASES))
def test_damaged_files_refused_serially_with_the_mpi_line(graph, tmp_path, capsys, name):
    bad = tampered(graph, tmp_path, name)
    assert run(["train", str(bad), "--epochs", "1", "--quiet"]) == 2
    one_line(capsys, TAMPER_CASES[name][1])


@pytest.fixture
def partition(graph, tmp_path):
    """A random 2-part vertex partition file of `graph`."""
    path = tmp_path / "p.h5"
    assert run(["partition", str(graph), "-m", "random", "--parts", "2", "--out", str(path)]) == 0
    return path


def test_fuzzed_partition_file_never_escapes_the_contract(graph, partition, tmp_path, capsys):
    """40 seeded one-byte flips anywhere in a small partition file (its metadata is most of
    it), given to `simulate --partition` and serial `train --partition` in turn: each ends
    with exit 0 or exit 2, never 1, never a traceback, and a refusal names the file."""
    import random

    src = partition.read_bytes()
    rng = random.Random(35)
    bad = tmp_path / "fuzz-p.h5"
    escaped, seen = [], set()
    for k in range(40):
        d = bytearray(src)
        pos = rng.randrange(len(d))
        d[pos] ^= 1 << rng.randrange(8)
        bad.write_bytes(bytes(d))
        argv = ["--scheme", "p2p", "--partition", str(bad), "--json"]
        if k % 2:
            argv = ["train", str(graph), *argv, "--epochs", "1", "--quiet"]
        else:
            argv = ["simulate", str(graph), "-P", "2", *argv]
        rc = run(argv)
        err = capsys.readouterr().err
        seen.add(rc)
        if rc not in (0, 2) or "Traceback" in err or (rc == 2 and str(bad) not in err):
            escaped.append((pos, argv[0], rc, err.strip().splitlines()[-1:]))
    assert not escaped, escaped[:5]
    assert seen == {0, 2}  # the flips reach both harmless and refused bytes


def test_damaged_partition_metadata_names_the_file(graph, partition, tmp_path, capsys):
    bad = damaged_metadata(partition, tmp_path, "damaged-p.h5")
    for argv in (
        ["simulate", str(graph), "-P", "2", "--scheme", "p2p", "--partition", str(bad)],
        ["train", str(graph), "--scheme", "p2p", "--partition", str(bad), "--epochs", "1"],
        ["shard", str(graph), "-o", str(tmp_path / "s"), "--partition", str(bad)],
    ):
        assert run(argv) == 2, argv
        one_line(capsys, f"{bad}: damaged HDF5 file")
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("name", ["part", "replica_parts"])
def test_huge_partition_datasets_refused_before_reading(graph, partition, tmp_path, capsys, name):
    """A partition file declaring 1e11 entries (a few KB on disk): one line naming the file
    and the dataset, before any of it is read (a vertex partition's `part`, a vertex cut's
    `replica_parts`)."""
    import h5py
    import numpy as np

    if name == "replica_parts":
        partition = tmp_path / "cut.h5"
        argv = ["partition", str(graph), "-m", "libra", "--parts", "2", "--out", str(partition)]
        assert run(argv) == 0
    with h5py.File(partition, "r+") as h:
        del h[name]
        h.create_dataset(name, shape=(10**11,), dtype=np.int64, chunks=(1 << 16,))
    capsys.readouterr()
    scheme = "p2p" if name == "part" else "vertexcut"
    for argv in (
        ["simulate", str(graph), "-P", "2", "--scheme", scheme, "--partition", str(partition)],
        ["train", str(graph), "--scheme", scheme, "--partition", str(partition), "--epochs", "1"],
        ["shard", str(graph), "-o", str(tmp_path / "s"), "--partition", str(partition)]
        + (["-m", "libra"] if scheme == "vertexcut" else []),
    ):
        assert run([*argv, "--quiet"] if argv[0] == "train" else argv) == 2, argv
        one_line(capsys, f"{partition}: dataset '{name}'")
    assert not (tmp_path / "s").exists()


def test_read_only_locations_refused_before_the_work(graph, tmp_path, capsys, monkeypatch):
    """Every output location is probed before the work: a read-only mount (the probe's
    EROFS, whatever this machine's permissions; also under root) is one line naming the
    option and the path, exit 2, and nothing is left behind."""
    from gcntrain.data import atomic

    def read_only(path, keep):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(atomic, "probe_dir", read_only)
    ro = tmp_path / "ro"
    ro.mkdir()
    x = str(ro / "x")
    for flag, argv in (
        ("--out", ["convert", str(graph), "-o", x]),
        ("--out", ["generate", "rmat", "--scale", "6", "-o", x]),
        ("--out", ["partition", str(graph), "-m", "random", "--parts", "2", "--out", x]),
        (
            "--out",
            ["jobscript", "--scheduler", "slurm", "--nodes", "1", "--ranks-per-node", "2"]
            + ["-o", x, "--", "train"],
        ),
        ("--per-rank", ["train", str(graph), "--epochs", "1", "--quiet", "--per-rank", x]),
        ("--per-rank", ["simulate", str(graph), "-P", "2", "--scheme", "1d", "--per-rank", x]),
        ("-o", ["bench", "--quick", "-o", x]),
    ):
        assert run(argv) == 2, argv
        one_line(capsys, f"{x}: {flag} cannot be written here (Read-only file system)")
        assert list(ro.iterdir()) == [], argv


def test_memory_guard_suggests_float32_only_for_float64(graph, capsys, monkeypatch):
    """The refusal's ways out: `--dtype float32` for a float64 run, never for a float32 one
    (training's per-rank guard and the planner's)."""
    from gcntrain.job import memory_guard

    monkeypatch.setattr(memory_guard, "available_bytes", lambda: 2.0**30)
    for dtype in ("float32", "float64"):
        for argv in (
            ["train", str(graph), "--hidden", "1000000", "--max-memory", "10M", "--quiet"],
            ["simulate", str(graph), "-P", "4", "--hidden", "10000000"],
        ):
            assert run([*argv, "--dtype", dtype, "--epochs", "1"]) == 2, argv
            err = capsys.readouterr().err
            assert len(err.strip().splitlines()) == 1 and "smaller --hidden" in err, err
            assert ("--dtype float32" in err) == (dtype == "float64"), err


def test_widths_refused_with_the_file_named(graph, tmp_path, capsys):
    """A graph whose features have no columns: `simulate` names the file (not the graph's
    name); an attribute num_features that the features contradict is the serial read's line
    (the MPI line in test_mpi_cli)."""
    import dataclasses

    import h5py
    import numpy as np

    from gcntrain.data.store import read_graph

    g = read_graph(graph)
    zero = tmp_path / "zero-width.h5"
    write_graph(zero, dataclasses.replace(g, features=np.zeros((g.n, 0), np.float32)))
    assert run(["simulate", str(zero), "-P", "2", "--scheme", "1d"]) == 2
    one_line(capsys, f"{zero}: has no node features or labels to plan with")
    with h5py.File(zero, "r+") as h:
        h.attrs["num_features"] = 32
    for argv in (["train", str(zero), "--quiet"], ["simulate", str(zero), "-P", "2"]):
        assert run([*argv, "--epochs", "1"]) == 2, argv
        one_line(capsys, f"{zero}: attribute num_features is 32 but features has 0 columns")
