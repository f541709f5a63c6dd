"""The bad-input corpus of the reliability issue (cases not covered by test_full_disk,
test_checkpoint, test_preempt and test_mpi_cli): each was exit 1, a traceback, a kernel
out-of-memory kill or a leftover before, and is now one line and exit 2 (or a clean stop)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from gcntrain.data.generate import rmat
from gcntrain.data.shards.outdir import remove_stale_staging, staging_prefix
from gcntrain.data.store import write_graph
from tests.mpi.launch import gcntrain_exe, mpiexec


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    g = rmat(9, edge_factor=8, seed=6, num_features=32, num_classes=3)
    path = tmp_path_factory.mktemp("g") / "g.h5"
    write_graph(path, g)
    return path


def _run(*argv, env=None):
    return subprocess.run(
        [*gcntrain_exe(), *argv],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, **(env or {})},
    )


def _one_line(res, needle: str) -> None:
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2, res.stderr[-2000:]
    assert len(lines) == 1 and needle in lines[0], lines
    assert lines[0].startswith("gcntrain: error:")


@pytest.mark.parametrize("hidden", ["50000000", "100000000000"])
def test_a_model_that_cannot_fit_is_refused_before_allocating(graph, hidden):
    """--hidden 2000000 on Cora filled the memory until the kernel killed the process (this
    graph has fewer features: a wider layer does what that one did); --hidden 100000000000
    (1e11 written out) was exit 1 with a MemoryError."""
    res = _run("train", str(graph), "--hidden", hidden, "--epochs", "1")
    _one_line(res, "needs about")
    assert "more than the" in res.stderr and "available memory" in res.stderr


def test_max_memory_limits_a_rank(graph):
    _one_line(_run("train", str(graph), "--epochs", "1", "--max-memory", "64K"), "--max-memory")
    _one_line(_run("train", str(graph), "--epochs", "1", "--max-memory", "lots"), "--max-memory")
    assert _run("train", str(graph), "--epochs", "1", "--max-memory", "4G").returncode == 0


def test_no_relabel_with_a_huge_node_id_is_refused(tmp_path):
    """A node id of 10**12 with --no-relabel was a MemoryError (7 TiB), exit 1."""
    src = tmp_path / "edges.txt"
    src.write_text("0 1\n1 1000000000000\n")
    res = _run("convert", str(src), "-o", str(tmp_path / "g.h5"), "--no-relabel")
    _one_line(res, "--no-relabel")
    assert not (tmp_path / "g.h5").exists()


@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_bad_numba_num_threads_is_one_line(graph, value):
    res = _run("train", str(graph), "--epochs", "1", env={"NUMBA_NUM_THREADS": value})
    _one_line(res, "NUMBA_NUM_THREADS")


@pytest.mark.parametrize("opt,value", [("--lr", "inf"), ("--lr", "nan"), ("--weight-decay", "inf")])
def test_non_finite_hyperparameters_are_refused_before_training(graph, opt, value):
    """--lr inf trained, printed RuntimeWarnings, then failed."""
    res = _run("train", str(graph), "--epochs", "3", opt, value)
    _one_line(res, "finite")
    assert "Warning" not in res.stderr


def test_staging_left_by_a_killed_shard_is_removed(graph, tmp_path):
    """SIGKILL during `shard` left a `.store.*.tmp` directory no later run removed."""
    out = tmp_path / "store"
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / (staging_prefix(out).rsplit("-", 1)[0] + f"-{dead.pid}.abc123.tmp")
    stale.mkdir()
    (stale / "shard-00000.h5").write_bytes(b"partial")
    live = tmp_path / (staging_prefix(out) + "def456.tmp")  # a writer still running
    other = tmp_path / f".store.7.{dead.pid}.x.tmp"  # the staging of an output "store.7"
    other.mkdir()
    live.mkdir()
    remove_stale_staging(out)
    assert not stale.exists() and live.exists() and other.exists()
    live.rmdir()
    other.rmdir()
    # the staging directory a writer really makes is one the cleanup recognises
    from gcntrain.data.shards.outdir import atomic_dir

    with atomic_dir(tmp_path / "probe-store", overwrite=False) as staging:
        assert staging.name.startswith(staging_prefix(tmp_path / "probe-store"))
    (tmp_path / "probe-store").rmdir()
    res = _run("shard", str(graph), "-o", str(out), "--parts", "2")
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]


@pytest.mark.mpi
def test_ctrl_c_stops_every_rank_without_traceback_or_hang(graph):
    """SIGINT to the job's process group (a terminal's Ctrl-C) while it trains: every rank
    ends within 30 s, none hangs, no Python traceback (Numba's SystemError included).  A plain
    run (no checkpoint option): rank 0's first progress line says training is under way."""
    import threading

    proc = subprocess.Popen(
        [mpiexec(), "-n", "3", *gcntrain_exe(), "train", str(graph), "--scheme", "p2p"]
        + ["--epochs", "100000", "--early-stopping", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    training = threading.Event()

    def read_stderr():
        for line in proc.stderr:
            lines.append(line)
            if line.startswith("epoch"):
                training.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        assert training.wait(120), "".join(lines)[-3000:]
        time.sleep(0.5)  # well inside the epochs
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        raise AssertionError("the job did not stop within 30 s of Ctrl-C") from None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    reader.join(10)
    err = "".join(lines)
    assert proc.returncode != 0
    assert "Traceback" not in err and "SystemError" not in err, err[-3000:]


def test_missing_train_mask_is_named_plainly(tmp_path):
    """The message read "graph has no a train mask"."""
    import dataclasses

    g = rmat(7, edge_factor=4, seed=1, num_features=4, num_classes=2)
    path = tmp_path / "nomask.h5"
    write_graph(path, dataclasses.replace(g, train_mask=None))
    res = _run("train", str(path), "--epochs", "1")
    _one_line(res, "graph has no train mask;")


def test_streamed_content_hash_equals_the_whole_read_and_catches_tampering(graph, tmp_path):
    """Under MPI rank 0 checks a file's hash by streaming slices (memory of a slice, not of
    the graph); it must agree with `read_graph`'s whole-array hash, slice size aside."""
    import shutil

    import h5py

    import gcntrain.data.store as store
    from gcntrain.errors import FormatError

    store.verify_content_hash(graph)
    small = store.HASH_CHUNK
    try:
        store.HASH_CHUNK = 1000  # many slices
        store.verify_content_hash(graph)
    finally:
        store.HASH_CHUNK = small
    bad = tmp_path / "bad.h5"
    shutil.copy(graph, bad)
    with h5py.File(bad, "r+") as f:
        f["features"][3, 1] = f["features"][3, 1] + 0.5
    with pytest.raises(FormatError) as streamed:
        store.verify_content_hash(bad)
    with pytest.raises(FormatError) as whole:
        store.read_graph(bad)
    assert str(streamed.value) == str(whole.value) and "content hash mismatch" in str(whole.value)


def test_a_width_that_is_not_an_integer_is_a_usage_error(graph):
    """--hidden 1e11 was exit 1."""
    _one_line(_run("train", str(graph), "--hidden", "1e11", "--epochs", "1"), "--hidden")
