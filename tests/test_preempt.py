"""Preemption and crashes under mpiexec: SIGTERM / SIGUSR1 end a checkpointing run after the
current epoch with a checkpoint and a line saying how to resume; kill -9 of one rank ends the
job on every rank within 30 s; either way the newest checkpoint resumes to weights
bit-identical to an uninterrupted run's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import numpy as np
import pytest

from gcntrain.data import checkpoint as ckio
from gcntrain.data.generate import rmat
from gcntrain.data.store import write_graph
from tests.mpi.batch import CliBatches
from tests.mpi.launch import gcntrain_exe, mpiexec
from tests.shared_runs import h5_arrays

pytestmark = pytest.mark.mpi

BASE = ["--scheme", "1d", "--seed", "2", "--early-stopping", "0", "--dtype", "float64"]


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    g = rmat(9, edge_factor=8, seed=4, num_features=16, num_classes=3)
    path = tmp_path_factory.mktemp("g") / "g.h5"
    write_graph(path, g)
    return path


def _start(argv: list[str]) -> subprocess.Popen:
    env = {**os.environ, "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(
        [mpiexec(), "-n", "2", *gcntrain_exe(), "train", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )


def _wait_for_epochs(proc: subprocess.Popen, ck, timeout: float = 120) -> None:
    """Until the run has published a checkpoint (training is under way)."""
    t0 = time.monotonic()
    while not (ck / ckio.LATEST).exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - t0 < timeout, "no checkpoint appeared"
        time.sleep(0.05)


def _descendants(pid: int) -> list[tuple[int, str]]:
    """(pid, full command line) of every process below `pid`, read from /proc (not `ps`,
    whose output is cut at 80 columns when piped: a long checkout path hid the arguments)."""
    table = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{d}/cmdline", "rb") as f:
                args = f.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        table.append((int(d), ppid, args))
    out, frontier = [], {pid}
    while frontier:
        kids = [(p, a) for p, pp, a in table if pp in frontier]
        out += kids
        frontier = {p for p, _ in kids}
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def _finish(proc: subprocess.Popen, timeout: float = 60):
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    return proc.returncode, out, err


def _weights(out) -> dict:
    return h5_arrays(out / "weights.h5")


def _resumed_equals_uninterrupted(graph, ck, tmp_path) -> None:
    """Resume from the newest checkpoint, then train uninterrupted: one mpiexec launch at
    np = 2 runs both commands (tests/mpi/batch.py), the resumed one first, in fresh
    processes as after a preemption; the weights are bit-identical."""
    done = ckio.latest(ck)[1]["epoch"]
    n = done + 3
    batch = CliBatches(timeout=300)
    for name, extra in (("res", ["--resume", str(ck)]), ("ref", [])):
        argv = [str(graph), *BASE, "--epochs", str(n), "-o", str(tmp_path / name), "--quiet"]
        batch.add(name, 2, ["train", *argv, *extra])
    for name in ("res", "ref"):
        got = batch.result(name)
        assert got.rcs == [0, 0], got.stderr[-2000:]
    ref, res = _weights(tmp_path / "ref"), _weights(tmp_path / "res")
    assert ref.keys() == res.keys() and all(np.array_equal(ref[k], res[k]) for k in ref)
    lines = (tmp_path / "res" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["epoch"] for x in lines] == list(range(1, n + 1))


def test_preempt_flag_records_sigterm_and_sigusr1_and_restores_handlers():
    from gcntrain.job.checkpoint import PreemptFlag

    for sig in (signal.SIGUSR1, signal.SIGTERM):
        before = signal.getsignal(sig)
        flag = PreemptFlag()
        flag.install()
        os.kill(os.getpid(), sig)
        time.sleep(0.01)
        assert flag.signum == int(sig)
        flag.restore()
        assert signal.getsignal(sig) == before


@pytest.mark.parametrize("sig", [signal.SIGTERM])
def test_preemption_signal_checkpoints_and_resumes(graph, tmp_path, sig):
    ck = tmp_path / "ck"
    argv = [str(graph), *BASE, "--epochs", "100000", "--checkpoint", str(ck)]
    proc = _start([*argv, "--checkpoint-every", "5", "--quiet"])
    _wait_for_epochs(proc, ck)
    os.kill(proc.pid, sig)  # mpiexec forwards it to every rank
    rc, _, err = _finish(proc)
    assert rc == 128 + int(sig), err[-2000:]
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and f"stopped by {sig.name}" in lines[0], err
    assert f"--resume {ck}" in lines[0] and "Traceback" not in err
    _resumed_equals_uninterrupted(graph, ck, tmp_path)


def test_kill_9_of_one_rank_ends_the_job_and_the_checkpoint_resumes(graph, tmp_path):
    ck = tmp_path / "ck"
    argv = [str(graph), *BASE, "--epochs", "100000", "--checkpoint", str(ck)]
    proc = _start([*argv, "--checkpoint-every", "3", "--quiet"])
    _wait_for_epochs(proc, ck)
    ranks = [p for p, args in _descendants(proc.pid) if "gcntrain" in args and "train" in args]
    assert ranks, "no rank processes found"
    t0 = time.monotonic()
    os.kill(max(ranks), signal.SIGKILL)
    rc, _, _ = _finish(proc, timeout=30)
    assert rc != 0 and time.monotonic() - t0 < 30
    time.sleep(0.5)
    alive = [p for p in ranks if _alive(p)]
    assert alive == []  # no rank outlives the job
    ckio.remove_stale(ck)  # what the next run does before writing
    _resumed_equals_uninterrupted(graph, ck, tmp_path)


def test_kill_9_during_a_checkpoint_write_keeps_the_previous_one(graph, tmp_path):
    """Rank 1 is killed after staging its file of epoch 6's checkpoint (test hook): the job
    ends, epoch 4's checkpoint is still the latest and intact, and it resumes bit for bit."""
    ck = tmp_path / "ck"
    argv = [str(graph), *BASE, "--epochs", "12", "--checkpoint", str(ck)]
    os.environ["GCNTRAIN_KILL_IN_CHECKPOINT"] = "1:6"
    try:
        proc = _start([*argv, "--checkpoint-every", "2", "--quiet"])
    finally:
        del os.environ["GCNTRAIN_KILL_IN_CHECKPOINT"]
    rc, _, _ = _finish(proc, timeout=60)
    assert rc != 0
    ckpt, meta = ckio.latest(ck)
    assert meta["epoch"] == 4 and ckpt.name == "epoch-000004"
    assert sorted(p.name for p in ckpt.iterdir()) == [
        "meta.json",
        "rank-00000.npz",
        "rank-00001.npz",
    ]
    _resumed_equals_uninterrupted(graph, ck, tmp_path)


def _wchan(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/wchan") as f:
            return f.read()
    except OSError:
        return ""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGUSR1])
def test_a_signal_while_starting_is_one_line_and_no_launcher_banner(tmp_path, sig):
    """Issue 51 item 13: a signal before `train` installs its handling (here every rank waits
    to open its --config, a FIFO nobody writes) ends every rank with status 128 + N and one
    line, not the signal's default death, for which MPICH's mpiexec prints its "BAD
    TERMINATION" banner on stdout, where --json promises one JSON object."""
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    env = {**os.environ, "NUMBA_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [mpiexec(), "-n", "3", *gcntrain_exe(), "train", "--config", str(fifo), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    t0 = time.monotonic()
    try:
        while True:  # until the 3 ranks wait in open() for a FIFO writer
            ranks = [p for p, a in _descendants(proc.pid) if f"--config {fifo}" in a]
            waiting = [p for p in ranks if _wchan(p) == "wait_for_partner"]
            if len(waiting) == 3:
                break
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() - t0 < 60, f"ranks not waiting: {ranks}"
            time.sleep(0.05)
    except BaseException:  # no job left blocked on the FIFO
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    os.kill(proc.pid, sig)
    rc, out, err = _finish(proc)
    assert rc == 128 + sig, (rc, out, err)
    assert out == "", out
    assert err.splitlines() == [f"gcntrain: stopped by {signal.Signals(sig).name}"], err
