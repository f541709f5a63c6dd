"""Staging device buffers through pinned host buffers for MPI (`gcntrain.device.staging`),
on the host-emulated device (`gcntrain.device.backend.EmulatedBackend`): every buffer MPI
(and the counted communicator) is handed is host memory, the results equal a host run's,
and the counters hold the same bytes and messages as the host run's.

Run as a script under ``mpiexec -n 2`` it is the worker of the MPI test below.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from gcntrain.comm.counters import Tally, same_volume
from gcntrain.device.backend import DeviceArray, EmulatedBackend
from gcntrain.device.staging import StagedComm

ROOT = Path(__file__).resolve().parents[1]


def arrays_in(obj):
    """Every ndarray inside `obj` (nested lists, tuples, dicts)."""
    if isinstance(obj, np.ndarray):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from arrays_in(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from arrays_in(o)


class Spy:
    """Wraps a communicator (a counted `Comm` or an mpi4py one): every call's array
    arguments are checked by `check(name, array)`, which returns a complaint or None."""

    def __init__(self, inner, check):
        self._inner = inner
        self._check = check
        self.complaints: list[str] = []
        self.calls = 0

    def __getattr__(self, name):
        attr = getattr(self._inner, name)
        if not callable(attr) or name.startswith("_"):
            return attr

        def call(*args, **kwargs):
            self.calls += 1
            for a in arrays_in((args, kwargs)):
                why = self._check(name, a)
                if why:
                    self.complaints.append(why)
            return attr(*args, **kwargs)

        return call


def exercise(comm, put):
    """Every staged call of a communicator on arrays made by `put` (host -> 'device');
    returns the results as host arrays."""
    r, P = comm.rank, comm.size
    out = []
    rng = np.random.default_rng(7 + r)
    b = put(np.arange(12, dtype=np.float64).reshape(3, 4) * (r + 1))
    out.append(comm.bcast(b, 0, "t.bcast"))
    x = put(rng.random((5, 3), dtype=np.float32))
    out.append(comm.allreduce(x, "t.allreduce"))
    target = put(np.zeros((5, 3), np.float32))
    comm.allreduce(x, "t.allreduce", out=target, op="max")
    out.append(target)
    counts = [2 + q for q in range(P)]
    mine = put(np.full((counts[r], 4), r + 1.5))
    out.append(comm.allgatherv(mine, counts, "t.allgather"))
    got = comm.gatherv(mine, counts, 0, "t.gather")
    out.append(np.zeros(1) if got is None else got)
    send = [1 + ((r + q) % 2) for q in range(P)]
    recv = [1 + ((q + r) % 2) for q in range(P)]
    rows = put(rng.random((sum(send), 2)))
    out.append(comm.alltoallv(rows, send, recv, "t.alltoall"))
    pend = comm.ialltoallv(rows, send, recv, "t.ialltoall")
    out.append(comm.wait(pend, "t.ialltoall"))
    blocks = [3] * P
    out.append(comm.reduce_scatterv(put(rng.random(3 * P)), blocks, "t.rs"))
    dst = np.arange(4) % P
    got, order, _, _ = comm.route(dst, [put(rng.random((4, 2))), np.arange(4.0)], "t.route")
    out.extend(got)
    if P > 1:
        msg = put(np.full(6, 10.0 * r))
        inbox = put(np.zeros(6))
        reqs = [
            comm.isend(msg, (r + 1) % P, 5, "t.p2p"),
            comm.irecv(inbox, (r - 1) % P, 5, "t.p2p"),
        ]
        comm.waitall(reqs, "t.p2p")
        out.append(inbox)
        flat = put(np.arange(5.0) if r == 0 else np.zeros(5))
        comm.waitall(comm.ibcast_flat(flat, 0, 9, "t.ibcast"), "t.ibcast")
        out.append(flat)
        any_in = put(np.zeros(3))
        reqs = [comm.irecv(any_in, (r - 1) % P, 6, "t.any")]
        sreq = comm.isend(put(np.full(3, r + 0.25)), (r + 1) % P, 6, "t.any")
        assert comm.waitany(reqs, "t.any") == 0
        comm.waitall([sreq], "t.any")
        out.append(any_in)
    return [np.asarray(o).view(np.ndarray).copy() for o in out]


def run_both(make_comm, direct=False):
    """(host results, staged results, host tally, staged tally, device arrays made, the
    backend, the spy's complaints): the same calls on host arrays and, staged, on
    emulated device arrays."""
    host_comm = make_comm(Tally())
    host = exercise(host_comm, lambda a: a)
    backend = EmulatedBackend()
    made: list[np.ndarray] = []

    def put(a):
        d = backend.to_device(a)
        made.append(d)
        return d

    def check(name, a):
        if isinstance(a, DeviceArray):
            return f"{name}: a device array"
        if any(np.shares_memory(a, d) for d in made):
            return f"{name}: memory of a device array"
        return None

    staged_inner = make_comm(Tally(), check)
    staged = StagedComm(staged_inner, backend, direct=direct)
    got = exercise(staged, put)
    return host, got, host_comm.tally, staged.tally, backend, staged_inner


def check_results(host, got, host_tally, staged_tally, spy, counted=True) -> list[str]:
    problems = [
        f"result {i} differs"
        for i, (a, b) in enumerate(zip(host, got))
        if a.shape != b.shape or not np.array_equal(a, b)
    ]
    if len(host) != len(got):
        problems.append("result counts differ")
    problems += same_volume(host_tally, staged_tally)
    if dict(host_tally.calls) != dict(staged_tally.calls):
        problems.append(f"calls differ: {dict(host_tally.calls)} != {dict(staged_tally.calls)}")
    if counted and not host_tally.total().any():
        problems.append("nothing counted")
    problems += spy.complaints
    return problems


def self_comm(tally, check=None):
    from gcntrain.comm.communicator import SelfComm

    comm = SelfComm(tally)
    return comm if check is None else Spy(comm, check)


def test_staged_calls_hand_host_memory_and_count_the_host_bytes():
    host, got, th, ts, backend, spy = run_both(self_comm)
    assert check_results(host, got, th, ts, spy, counted=False) == []  # one rank moves 0 B
    assert sum(th.calls.values()) >= 10
    assert spy.calls >= 10
    assert backend.copies["to_host"] > 0 and backend.copies["to_device"] > 0
    assert all(isinstance(b, np.ndarray) for b in backend.pinned_buffers)


def test_direct_mode_hands_device_arrays_through_and_the_spy_sees_it():
    """The check above can fail: without staging the spy sees device arrays."""
    host, got, th, ts, _, spy = run_both(self_comm, direct=True)
    assert any("device array" in c for c in spy.complaints)
    assert same_volume(th, ts) == []


def test_host_arrays_pass_through_untouched():
    backend = EmulatedBackend()
    comm = StagedComm(self_comm(Tally()), backend)
    x = np.ones((2, 2))
    assert comm.bcast(x, 0, "p") is x
    assert backend.copies == {"to_device": 0, "to_host": 0}


def test_pool_reuses_and_grows_its_buffers():
    from gcntrain.device.staging import HostPool

    backend = EmulatedBackend()
    pool = HostPool(backend)
    a = pool.get("send", (3, 5), np.float64)
    b = pool.get("send", (2, 2), np.float32)
    assert np.shares_memory(a, b) and len(backend.pinned_buffers) == 1
    c = pool.get("send", (100,), np.float64)
    assert len(backend.pinned_buffers) == 2 and c.shape == (100,) and backend.is_pinned(c)
    assert not np.shares_memory(pool.get("recv", (3,), np.int64), c)


def mpi_worker() -> None:
    """Under mpiexec: the same checks on `Comm` over MPI_COMM_WORLD, the spy on the mpi4py
    communicator itself (what MPI is handed); one JSON line per rank."""
    from gcntrain.comm.communicator import Comm
    from gcntrain.comm.mpi import load_mpi

    MPI = load_mpi()

    def make(tally, check=None):
        world = MPI.COMM_WORLD
        return Comm(world if check is None else Spy(world, check), tally)

    host, got, th, ts, _, comm = run_both(make)
    problems = check_results(host, got, th, ts, comm.comm)
    _, _, _, _, _, direct = run_both(make, direct=True)
    mine = {
        "rank": comm.rank,
        "problems": problems,
        "mpi_calls": comm.comm.calls,
        "direct_complaints": len(direct.comm.complaints),
    }
    everyone = MPI.COMM_WORLD.gather(mine, root=0)
    if comm.rank == 0:
        print(json.dumps(everyone), flush=True)


@pytest.mark.mpi
def test_staging_over_mpi_on_two_ranks():
    from tests.mpi.launch import run_mpi

    res = run_mpi(2, [sys.executable, str(Path(__file__).resolve())], timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    (line,) = [ln for ln in res.stdout.splitlines() if ln.startswith("[")]
    lines = json.loads(line)
    assert sorted(d["rank"] for d in lines) == [0, 1]
    for d in lines:
        assert d["problems"] == [], d
        assert d["mpi_calls"] >= 10
        assert d["direct_complaints"] > 0  # unstaged device memory does reach MPI


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    mpi_worker()
