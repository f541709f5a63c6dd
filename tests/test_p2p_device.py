"""The p2p scheme's backward product on the host-emulated device (issue 37) where S is not
symmetric: per pair of ranks the fetch or the reverse exchange (`P2pDeviceOps`,
`gcntrain.schemes.p2p_device.backward_matrix`).  The registry's device test
(tests/test_device_schemes.py) trains on a symmetric graph, whose backward product is the
forward exchange; this one trains on a directed graph whose plan mixes both exchanges, in
float32 and float64, with the checks of `tests.test_device_schemes.check_case` (results bit
for bit the CPU run's, measured = planned = the CPU run's tally, no host round trips).

Run as a script under ``mpiexec -n P`` it is the worker of the MPI test below.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

#: ranks of the MPI test: the directed graph's backward plan is mixed there
RANKS = 3


def directed_graph():
    """A directed R-MAT graph cut to 127 nodes (S != S^T)."""
    sys.path.insert(0, str(ROOT / "tests" / "mpi"))
    import worker as W  # tests/mpi/worker.py

    return W.rmat_odd(
        7, 127, edge_factor=6, seed=22, num_features=7, num_classes=4, symmetrize=False
    )


def worker() -> None:
    sys.path.insert(0, str(ROOT / "tests" / "mpi"))
    sys.path.insert(0, str(ROOT / "tests"))
    sys.path.insert(0, str(ROOT))  # test_device_schemes imports tests.mpi.batch
    import worker as W  # tests/mpi/worker.py
    from test_device_schemes import check_case

    from gcntrain.comm.communicator import Comm
    from gcntrain.comm.mpi import load_mpi
    from gcntrain.model.trainer import TrainConfig

    world = Comm(load_mpi().COMM_WORLD)
    g = directed_graph()
    problems: list[str] = []
    staged = []
    for dtype in ("float32", "float64"):
        cfg = TrainConfig(epochs=3, seed=3, hidden=[16], early_stopping=0, dtype=dtype)
        got, n = check_case(world, W, g, cfg, "p2p", {}, None)
        problems += [f"{dtype}: {p}" for p in got]
        staged.append(n)
    bad = world.allreduce(np.array([len(problems)], np.int64), "test", op="max")
    least = world.allreduce(np.array(staged, np.int64), "test", op="max")
    if world.rank == 0:
        print(
            json.dumps({"ok": int(bad[0]) == 0, "problems": problems[:6], "staged": least.tolist()})
        )


@pytest.mark.mpi
def test_p2p_mixed_backward_on_the_emulated_device_equals_the_cpu_run():
    from gcntrain.api import simulate
    from tests.mpi.launch import run_mpi

    notes = simulate(directed_graph(), RANKS, scheme="p2p")["plan_notes"]
    assert notes["backward"] == "mixed", notes  # both exchanges are exercised
    res = run_mpi(RANKS, [sys.executable, str(Path(__file__).resolve())], timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    got = res.json()
    assert got["ok"], got
    assert len(got["staged"]) == 2 and min(got["staged"]) > 0, got


if __name__ == "__main__":  # pragma: no cover
    worker()
