"""CUDA-aware MPI, direct (issue 37), and the timers that wait for the device.

Direct: with ``backend.direct`` set (every rank's MPI library CUDA-aware; the emulated
backend emulates one), `gcntrain.device.staging.StagedComm` hands device arrays to the
counted `Comm` and on to mpi4py as they are.  At np 2, through the machinery of
tests/test_device_schemes.py (`check_case`), each case runs staged and direct on the strict
emulation: both equal the CPU run bit for bit and their tallies equal the CPU run's and the
plan (so the two equal each other), the staged run copies through pinned buffers, the
direct one allocates no pinned buffer and makes no copy inside `StagedComm` at all.  The
verdict is every rank's (`every_rank`); serially through the CLI, the summary's
``mpi_buffers`` says which path ran.

Timers: on a device `TimedOps` synchronises before and after each product it times and the
trainer before each reading of the epoch clock (the emulated backend counts
synchronisations); the CPU path calls nothing.

Run as a script under ``mpiexec -n 2`` with a JSON list of cases it is the MPI worker.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

#: (scheme, options) run staged and direct at np 2: the in-turn broadcasts and Allreduce
#: of 1d, hier's non-blocking Alltoallv of quantized bytes, p2p's Isend/Irecv into row
#: slices, the vertex cut's delayed messages (in flight across epochs)
CASES = [
    ("1d", {}),
    ("hier", {"aggr": "hybrid", "quant_bits": 4}),
    ("p2p", {}),
    ("vertexcut", {"delay": "5"}),
]


def worker(cases: list) -> None:
    """Each case staged, then direct (module docstring); rank 0 prints one JSON line."""
    from dataclasses import replace

    sys.path[:0] = [str(ROOT / "tests" / "mpi"), str(ROOT)]
    import worker as W  # tests/mpi/worker.py

    from gcntrain.comm.communicator import Comm
    from gcntrain.comm.mpi import load_mpi
    from gcntrain.device import emulated
    from gcntrain.job.device_run import every_rank
    from gcntrain.model.trainer import TrainConfig
    from tests.test_device_schemes import check_case

    MPI = load_mpi()
    world = Comm(MPI.COMM_WORLD)
    g = W.rmat_odd(8, keep=251, edge_factor=6, seed=5, num_features=20, num_classes=4)
    cfg = TrainConfig(epochs=4, seed=3, hidden=[16], early_stopping=0)
    problems: list[str] = []
    # the verdict: direct only where every rank says yes
    if every_rank(world, world.rank == 0) or not every_rank(world, True):
        problems.append("every_rank is not the verdict of every rank")
    plain = emulated.EmulatedBackend
    made: list = []

    class Recorded(plain):
        """The strict emulation `check_case` makes, direct or not, kept for inspection."""

        direct_default = False

        def __init__(self, strict=False):
            super().__init__(strict=strict, direct=self.direct_default)
            made.append(self)

    emulated.EmulatedBackend = Recorded
    counts = []
    try:
        for scheme, opts in cases:
            run_cfg = replace(cfg, epochs=6) if opts.get("delay") == "5" else cfg
            for direct in (False, True):
                Recorded.direct_default = direct
                made.clear()
                got, staged = check_case(world, W, g, run_cfg, scheme, dict(opts), None)
                problems += [f"direct={direct}: {p}" for p in got]
                (backend,) = made
                pinned = len(backend.pinned_buffers)
                counts.append([staged, pinned, backend.syncs])
                if direct and (staged or pinned):
                    problems.append(f"{scheme}: direct staged {staged} copies, {pinned} buffers")
    finally:
        emulated.EmulatedBackend = plain
    bad = world.allreduce(np.array([len(problems)], np.int64), "test", op="max")
    most = world.allreduce(np.array(counts, np.int64), "test", op="max")
    if world.rank == 0:
        out = {"ok": int(bad[0]) == 0, "problems": problems[:6], "counts": most.tolist()}
        print(json.dumps(out))


@pytest.mark.mpi
def test_direct_runs_equal_staged_runs_and_stage_nothing():
    from tests.mpi.launch import run_mpi

    argv = [sys.executable, str(Path(__file__).resolve()), json.dumps(CASES)]
    res = run_mpi(2, argv, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads([ln for ln in res.stdout.splitlines() if ln.startswith("{")][-1])
    assert got["ok"], got
    counts = got["counts"]
    assert len(counts) == 2 * len(CASES), got
    for staged_run, direct_run in zip(counts[::2], counts[1::2]):
        assert staged_run[0] > 0 and staged_run[1] > 0, got  # the staged run did stage
        assert direct_run[:2] == [0, 0], got  # the direct one did not
        assert direct_run[2] > 0, got  # and synchronised before its MPI calls


def test_the_summary_says_which_path_ran(tmp_path, capsys, monkeypatch):
    """Serially under the test hook: ``GCNTRAIN_CUDA_AWARE_MPI=1`` makes the run direct,
    ``0`` staged, ``--device cpu`` host; the three give the same results."""
    from gcntrain.cli.main import run
    from gcntrain.data.generate import rmat
    from gcntrain.data.store import write_graph

    graph = str(tmp_path / "g.h5")
    write_graph(graph, rmat(7, edge_factor=4, seed=2, num_features=8, num_classes=3))
    args = ["train", graph, "--epochs", "3", "--seed", "3", "--json"]
    monkeypatch.setenv("GCNTRAIN_DEVICE", "emulated")
    keys = ("final_loss", "train_acc", "val_loss", "val_acc", "test_acc")
    got = {}
    for aware, device in (("1", "gpu"), ("0", "gpu"), ("1", "cpu")):
        monkeypatch.setenv("GCNTRAIN_CUDA_AWARE_MPI", aware)
        assert run([*args, "--device", device]) == 0
        summary = json.loads(capsys.readouterr().out)
        got[summary["mpi_buffers"]] = [summary[k] for k in keys]
    assert sorted(got) == ["direct", "host", "staged"], got
    assert got["direct"] == got["staged"] == got["host"], got


def _fit(ops, epochs: int = 3, callback=None):
    from gcntrain.model.trainer import TrainConfig, fit
    from tests.test_device_loop import C, problem

    _, X, labels, masks = problem()
    config = TrainConfig(epochs=epochs, seed=1, hidden=[8], early_stopping=0)
    return fit(ops, X, labels, masks, C, config, callback=callback)


def test_the_timers_wait_for_the_device_and_the_cpu_path_does_not(monkeypatch):
    """Emulated: two synchronisations per timed product (before and after) and two per
    epoch (the epoch clock), nothing else; a timed product starts after a synchronisation
    and its clock stops after another.  The CPU path: no call."""
    from gcntrain.device.emulated import EmulatedBackend
    from gcntrain.model.compute import HOST
    from gcntrain.model.ops import PROTOCOL, SerialOps
    from gcntrain.model.wrappers import RecordingOps, TimedOps
    from tests.test_device_loop import problem

    S = problem()[0]
    backend = EmulatedBackend(strict=True)
    ops = RecordingOps(SerialOps(S, backend))
    epochs, ends = 3, []
    result = _fit(ops, epochs, lambda rec: ends.append((len(ops.calls), backend.syncs)))
    calls, syncs = ends[-1]  # the epochs' (the final predictions after them are untimed)
    timed = sum(PROTOCOL[c.method] in ("graph", "dense") for c in ops.calls[:calls])
    assert timed > 0 and len(result.history) == epochs
    assert syncs == 2 * timed + 2 * epochs, (syncs, timed)

    seen = []
    inner = SerialOps(S, backend)
    plain = inner.aggregate

    def aggregate(X, *, phase):
        seen.append(backend.syncs)
        return plain(X, phase=phase)

    inner.aggregate = aggregate
    tops = TimedOps(inner)
    before = backend.syncs
    tops.aggregate(backend.xp.ones((S.shape[1], 2)), phase=ops.calls[0].phase)
    assert seen == [before + 1] and backend.syncs == before + 2

    calls = []
    monkeypatch.setattr(HOST, "synchronize", lambda: calls.append(1), raising=False)
    cpu = _fit(SerialOps(S), epochs)
    assert calls == [] and TimedOps(SerialOps(S))._sync is None
    assert [r.loss for r in cpu.history] == [r.loss for r in result.history]


if __name__ == "__main__":  # pragma: no cover
    worker(json.loads(sys.argv[1]))
