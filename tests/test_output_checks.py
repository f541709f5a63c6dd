"""Outputs checked before any work (serial paths; the MPI ones in test_mpi_cli): an output
that is one of the command's inputs (also through a link) is refused and the input kept, an
unknown ``--machine`` is refused on every path, an unwritable location is one line."""

from __future__ import annotations

import os

import pytest

from gcntrain.cli.main import run
from gcntrain.data.generate import rmat
from gcntrain.data.store import write_graph
from tests.tamper import CASES as TAMPER_CASES
from tests.tamper import tampered


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


def _damaged_metadata(graph, tmp_path):
    """A copy of `graph` with one flipped byte that h5py itself fails on (the first such
    byte of the file's metadata), as a random bit flip of a real file does."""
    import h5py

    src = graph.read_bytes()
    for pos in range(64, 4096):
        d = bytearray(src)
        d[pos] ^= 0x20
        bad = tmp_path / "damaged.h5"
        bad.write_bytes(bytes(d))
        try:
            with h5py.File(bad, "r") as f:
                for name in f:
                    f[name].shape  # noqa: B018 - opening each object is the probe
        except (RuntimeError, KeyError):
            return bad
        except OSError:
            continue  # not openable at all: the old path already reports it
    raise AssertionError("no flipped metadata byte broke h5py: the probe needs a new range")


def test_damaged_hdf5_metadata_is_a_format_error_naming_the_file(graph, tmp_path, capsys):
    bad = _damaged_metadata(graph, tmp_path)
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
