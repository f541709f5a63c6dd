"""The 1d scheme on the host-emulated device (issue 37), at np 2 and 3: the results equal
the CPU run's bit for bit, measured bytes equal the plan (and the CPU run's tally), and
between epochs nothing moves between host and device but the staged messages (copies made
inside `gcntrain.device.staging.StagedComm`) and the scalars the loop reports.

Run as a script under ``mpiexec -n P`` it is the worker of the MPI test below.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def tag_staging(backend) -> list:
    """Mark every copy `backend` makes inside a `StagedComm` call: each transfer becomes
    (direction, shape, staged); returns the list the marks go to."""
    from gcntrain.device import staging

    depth = [0]
    marks: list = []
    for name in ("bcast", "allreduce"):
        plain = getattr(staging.StagedComm, name)

        def wrapped(self, *a, _plain=plain, **k):
            depth[0] += 1
            try:
                return _plain(self, *a, **k)
            finally:
                depth[0] -= 1

        setattr(staging.StagedComm, name, wrapped)
    for name in ("to_host", "to_device"):
        plain = getattr(backend, name)

        def copy(*a, _plain=plain, _name=name, **k):
            marks.append((_name, tuple(np.shape(a[0])), depth[0] > 0))
            return _plain(*a, **k)

        setattr(backend, name, copy)
    return marks


def worker() -> None:
    sys.path.insert(0, str(ROOT / "tests" / "mpi"))
    import worker as W  # tests/mpi/worker.py

    from gcntrain.comm.communicator import Comm
    from gcntrain.comm.mpi import load_mpi
    from gcntrain.device.emulated import EmulatedBackend
    from gcntrain.job.runner import train_with
    from gcntrain.model.trainer import TrainConfig
    from gcntrain.schemes.registry import SCHEMES

    MPI = load_mpi()
    world = Comm(MPI.COMM_WORLD)
    g = W.rmat_odd(8, keep=251, edge_factor=6, seed=5, num_features=20, num_classes=4)
    cfg = TrainConfig(epochs=4, seed=3, hidden=[16], early_stopping=0)
    problems: list[str] = []
    cpu = W.run_scheme(world, g, "1d", {}, None, cfg)
    backend = EmulatedBackend(strict=True)
    marks = tag_staging(backend)
    ends: list[int] = []
    world.tally = W.Tally()
    dev = train_with(
        world,
        SCHEMES["1d"],
        W.source_of(g),
        cfg,
        {},
        None,
        callback=lambda rec: ends.append(len(marks)),
        backend=backend,
    )
    # (1) bit for bit
    for a, b in zip(cpu.result.weights, dev.result.weights):
        for k in a:
            if type(b[k]) is not np.ndarray or not np.array_equal(a[k], b[k]):
                problems.append(f"weights {k} differ")
    for key in ("loss", "train_acc", "val_loss", "val_acc", "test_acc"):
        if [getattr(r, key) for r in cpu.result.history] != [
            getattr(r, key) for r in dev.result.history
        ]:
            problems.append(f"{key} differs")
    if not np.array_equal(cpu.result.predictions, dev.result.predictions):
        problems.append("predictions differ")
    # (2) measured = planned, and = the CPU run's tally
    problems += W.plan_diffs(dev, g, cfg, "1d", {}, None, world.rank)
    m_dev, m_cpu = dev.phases().phases, cpu.phases().phases
    if sorted(m_dev) != sorted(m_cpu) or any(not np.array_equal(m_dev[k], m_cpu[k]) for k in m_dev):
        problems.append("device tally differs from the CPU tally")
    # (3) between epochs: outside staging, only the reported scalars leave the device
    want = 2 + 2  # xent sums (train; val and test) and one weight-decay sum each
    staged = 0
    for e, (a, b) in enumerate(zip(ends[:-1], ends[1:]), start=2):
        outside = [m for m in marks[a:b] if not m[2]]
        staged += len(marks[a:b]) - len(outside)
        if any(m[0] == "to_device" for m in outside):
            problems.append(f"epoch {e}: copies to the device outside staging")
        big = [m for m in outside if int(np.prod(m[1])) > 4]
        if big or len(outside) != want:
            problems.append(f"epoch {e}: host copies {outside}")
    if staged == 0:
        problems.append("no staged message")
    bad = world.allreduce(np.array([len(problems)], np.int64), "test", op="max")
    if world.rank == 0:
        print(json.dumps({"ok": int(bad[0]) == 0, "problems": problems[:5], "staged": staged}))


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", [2, 3])
def test_one_d_on_the_emulated_device_equals_the_cpu_run_and_its_plan(ranks):
    from tests.mpi.launch import run_mpi

    res = run_mpi(ranks, [sys.executable, str(Path(__file__).resolve())], timeout=240)
    assert res.returncode == 0, res.stderr[-3000:]
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("{")][-1]
    got = json.loads(line)
    assert got["ok"], got
    assert got["staged"] > 0


if __name__ == "__main__":  # pragma: no cover
    worker()
