"""The distributed schemes ported to the device (issue 37: every registered scheme today)
on the host-emulated device, at np 2, 3 and 4 (np 1: the serial CLI test): the results
equal the CPU run's bit for bit, measured bytes equal the plan (and the CPU run's tally),
and between epochs nothing moves between host and device but the staged messages (copies made inside
`gcntrain.device.staging.StagedComm`) and the scalars the loop reports.

The cases are generated from the registry (`device_cases`).  The MPI test's case, `device`
(`device_case`), runs in the one `tests/mpi/worker_fast.py` launch of its rank count
(tests/mpi/batch.py).  Run as a script under ``mpiexec -n P`` with a JSON list of cases
``[[scheme, options, partition], ...]`` this module checks those (a porting engineer's check
of one case).
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.mpi.batch import worker_case

ROOT = Path(__file__).resolve().parents[1]

#: the StagedComm calls a copy is made inside of (staged messages)
STAGED_CALLS = (
    "bcast",
    "allreduce",
    "allgatherv",
    "gatherv",
    "alltoallv",
    "reduce_scatterv",
    "route",
    "ialltoallv",
    "wait",
    "isend",
    "irecv",
    "ibcast_flat",
    "waitall",
    "waitany",
)

#: the rank counts of the MPI test (np 1: the serial CLI test)
RANKS = (2, 3, 4)

#: cases beyond the registry's: 1.5D with all three ranks in one replication group; the
#: vertex cut's cd-2 (in the 6 epochs the worker trains cd-R, cd-5 never writes the roots'
#: totals back at the leaves in training: they are due from epoch 10)
EXTRA = {3: [("1.5d", {"replication": 3}, None), ("vertexcut", {"delay": "2"}, None)]}


def device_cases(size: int) -> list:
    """(scheme, options, partition) of every scheme whose setup takes a device backend, each
    of its `Scheme.test_configurations` on `size` ranks that its ``device_unsupported``
    does not refuse: a scheme ported to the device is tested here by being ported."""
    from gcntrain.job.device_run import runs_on_device
    from gcntrain.schemes.registry import SCHEMES

    cases = []
    for name, scheme in SCHEMES.items():
        if not runs_on_device(scheme):
            continue
        limits = getattr(scheme, "device_unsupported", None)
        for opts, part in scheme.test_configurations(size):
            if limits is None or not limits(scheme.configure(size, dict(opts))):
                cases.append((name, opts, part))
    return cases + EXTRA.get(size, [])


def tag_staging(backend) -> list:
    """Mark every copy `backend` makes: each transfer becomes (direction, shape, staged),
    staged when made inside a `StagedComm` call; returns the list the marks go to."""
    from gcntrain.device import staging

    depth = [0]
    marks: list = []
    for name in STAGED_CALLS:
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


def check_case(world, W, g, cfg, scheme: str, opts: dict, part) -> tuple[list[str], int]:
    """(problems, staged copies) of one scheme: the CPU run, then the emulated device run."""
    from gcntrain.device.emulated import EmulatedBackend
    from gcntrain.job.runner import train_with
    from gcntrain.job.spec import JobSpec

    problems: list[str] = []
    cpu = W.run_scheme(world, g, scheme, opts, part, cfg)
    backend = EmulatedBackend(strict=True)
    marks = tag_staging(backend)
    ends: list[int] = []
    world.tally = W.Tally()
    dev = train_with(
        world,
        JobSpec(W.source_of(g), cfg, scheme, opts, part),
        callback=lambda rec: ends.append(len(marks)),
        backend=backend,
    )
    if not type(dev.ops).__name__.endswith("DeviceOps"):
        problems.append(f"{type(dev.ops).__name__} is not a device Ops")
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
    problems += W.plan_diffs(dev, g, cfg, scheme, opts, part, world.rank)
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
    return [f"{scheme} {opts}: {p}" for p in problems], staged


def check_cases(world, W, cases: list) -> tuple[list[str], list[int]]:
    """(problems, staged copies per case) of `cases` on this rank; `W`: tests/mpi/worker.py.
    `StagedComm`'s methods are as before afterwards (`tag_staging` wraps them)."""
    from gcntrain.device import staging
    from gcntrain.model.trainer import TrainConfig

    plain = {name: getattr(staging.StagedComm, name) for name in STAGED_CALLS}
    g = W.rmat_odd(8, keep=251, edge_factor=6, seed=5, num_features=20, num_classes=4)
    cfg = TrainConfig(epochs=4, seed=3, hidden=[16], early_stopping=0)
    longer = replace(cfg, epochs=6)  # the vertex cut's cd-R needs more than R epochs (cd-5)
    problems: list[str] = []
    staged = []
    try:
        for scheme, opts, part in cases:
            delayed = str(opts.get("delay", "0")) not in ("0", "none")
            got, n = check_case(world, W, g, longer if delayed else cfg, scheme, opts, part)
            problems += got
            staged.append(n)
    finally:
        for name, method in plain.items():
            setattr(staging.StagedComm, name, method)
    return problems, staged


def device_case(world, W) -> tuple[bool, list]:
    """The `device` case of tests/mpi/worker_fast.py: every case of `device_cases` at this
    rank count; (ok on this rank, details: its problems and staged copies per case)."""
    problems, staged = check_cases(world, W, device_cases(world.size))
    return not problems, [{"rank": world.rank, "problems": problems[:6], "staged": staged}]


def worker(cases: list) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "mpi"))
    import worker as W  # tests/mpi/worker.py

    from gcntrain.comm.communicator import Comm
    from gcntrain.comm.mpi import load_mpi

    MPI = load_mpi()
    world = Comm(MPI.COMM_WORLD)
    problems, staged = check_cases(world, W, cases)
    bad = world.allreduce(np.array([len(problems)], np.int64), "test", op="max")
    least = world.allreduce(np.array(staged, np.int64), "test", op="max")
    if world.rank == 0:
        out = {"ok": int(bad[0]) == 0, "problems": problems[:6], "staged": least.tolist()}
        print(json.dumps(out))


def test_through_the_cli_the_ported_schemes_run_and_the_rest_is_refused(
    tmp_path, capsys, monkeypatch
):
    """Serially, under the test hook: 1.5d and the vertex cut in its three modes (cd-0, cd-2,
    0c) train on the emulated device through the CLI with the CPU run's results, the drift
    of the delayed and local-only modes included, and so does cd-2 checkpointed and resumed
    on the device (its exchanges in flight restored); a scheme whose setup takes no backend is
    one line, exit 2, before anything is written.  Every registered scheme is being ported,
    so the refused one is a throwaway: the vertex cut with a setup that takes no backend."""
    from gcntrain.cli.main import run
    from gcntrain.data.generate import rmat
    from gcntrain.data.store import write_graph
    from gcntrain.job.device_run import runs_on_device
    from gcntrain.schemes import registry
    from gcntrain.schemes.vertexcut.scheme import VertexCut

    graph = str(tmp_path / "g.h5")
    write_graph(graph, rmat(7, edge_factor=4, seed=2, num_features=8, num_classes=3))
    args = ["train", graph, "--epochs", "4", "--seed", "3", "--json"]
    monkeypatch.setenv("GCNTRAIN_DEVICE", "emulated")
    keys = ("final_loss", "train_acc", "val_loss", "val_acc", "test_acc", "scheme", "drift")
    vc = ["--scheme", "vertexcut", "--delay"]
    for scheme in (["--scheme", "1.5d"], [*vc, "0"], [*vc, "2"], [*vc, "none"]):
        got = []
        for device in ("cpu", "gpu"):
            assert run([*args, *scheme, "--device", device]) == 0, (scheme, device)
            summary = json.loads(capsys.readouterr().out)
            got.append([summary.get(k) for k in keys])
        assert got[0] == got[1], scheme
        assert (got[0][-1] is not None) == (scheme[-1] in ("2", "none")), got[0]
    # cd-2 checkpointed after 3 epochs on the device, resumed there: the 4-epoch CPU run
    ck = str(tmp_path / "ck")
    assert run([*args, *vc, "2", "--epochs", "3", "--checkpoint", ck, "--device", "gpu"]) == 0
    capsys.readouterr()
    assert run([*args, *vc, "2", "--resume", ck, "--device", "gpu"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert [summary.get(k) for k in keys] == got[0]

    class Unported(VertexCut):
        def setup(self, world, layout, local, kind):
            return super().setup(world, layout, local, kind)

    monkeypatch.setitem(registry.SCHEMES, "vertexcut", Unported())
    assert not runs_on_device(registry.SCHEMES["vertexcut"])
    out = tmp_path / "run-unported"
    assert run([*args, *vc, "0", "-o", str(out), "--device", "gpu"]) == 2
    cap = capsys.readouterr()
    errs = [ln for ln in cap.err.splitlines() if ln.strip()]
    assert cap.out == "" and len(errs) == 1, errs
    assert errs[0].startswith("gcntrain: error: --device gpu: not on the device yet"), errs
    assert "--scheme vertexcut" in errs[0] and not out.exists()


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", RANKS)
@worker_case("device")
def test_schemes_on_the_emulated_device_equal_the_cpu_run_and_their_plan(worker_batches, nprocs):
    cases = device_cases(nprocs)
    assert {c[0] for c in cases} >= {"1d", "1.5d", "vertexcut"}, cases
    verdict = worker_batches.verdict(nprocs, "device")
    assert verdict["ranks"] == nprocs
    assert verdict["ok"], verdict["details"]
    ranks = verdict["details"]
    assert sorted(d["rank"] for d in ranks) == list(range(nprocs)), ranks
    # every case's messages went through the staging (on some rank)
    staged = np.max([d["staged"] for d in ranks], axis=0)
    assert len(staged) == len(cases) and min(staged) > 0, ranks


if __name__ == "__main__":  # pragma: no cover
    worker(json.loads(sys.argv[1]))
