"""Plexus with GraphSAGE on the host-emulated device at np 4: the self-term moves (rows
gathered and placed on the device through index arrays copied once) and both orders of
the self term (moved before or after its product), which the GCN cases of
``tests/test_device_schemes.py`` never reach.  Its checks, reused: the results equal the
CPU run's bit for bit, measured bytes equal the plan and the CPU run's tally, nothing goes
to the device between epochs outside staging.  What comes back to the host outside staging
may only be the scalars the loop reports (that check counts GCN's: a GraphSAGE layer
reports more weight-decay sums).

Run as a script under ``mpiexec -n 4`` this file is the worker of the test below.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Plexus options of the cases: a 2D grid with the double permutation, a 3D one with
#: blocked aggregation (blocks of 7 rows)
CASES = (
    {"grid": "2x2x1", "permute": "double"},
    {"grid": "1x2x2", "permute": "none", "block_rows": 7},
)


def scalar_copies_only(problem: str) -> bool:
    """Whether `problem` is the host-copy note of `check_case` listing copies to the host of
    at most 4 elements each (reported scalars, not arrays of the training loop)."""
    _, sep, tail = problem.partition(": host copies ")
    if not sep:
        return False
    copies = ast.literal_eval(tail)
    return all(d == "to_host" and int(np.prod(s)) <= 4 for d, s, _ in copies)


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
    g = W.rmat_odd(8, keep=251, edge_factor=6, seed=5, num_features=20, num_classes=4)
    cfg = TrainConfig(epochs=3, seed=3, hidden=[16], early_stopping=0, model="sage")
    problems: list[str] = []
    staged = []
    for opts in CASES:
        got, n = check_case(world, W, g, cfg, "plexus", opts, None)
        problems += [p for p in got if not scalar_copies_only(p)]
        staged.append(n)
    # the most problems of any rank, and each case's staged copies on its busiest rank
    most = world.allreduce(np.array([len(problems), *staged], np.int64), "test", op="max")
    if world.rank == 0:
        print(json.dumps({"bad": int(most[0]), "first": problems[:6], "staged": most[1:].tolist()}))


def test_scalar_copies_only_tells_a_scalar_note_from_an_array_or_another_problem():
    note = "plexus {}: epoch 2: host copies "
    assert scalar_copies_only(note + "[('to_host', (2,), False), ('to_host', (), False)]")
    assert not scalar_copies_only(note + "[('to_host', (251, 16), False)]")
    assert not scalar_copies_only(note + "[('to_device', (), False)]")
    assert not scalar_copies_only("plexus {}: weights layer0/W differ")


@pytest.mark.mpi
def test_plexus_graphsage_on_the_emulated_device_equals_the_cpu_run_and_its_plan():
    from tests.mpi.launch import run_mpi

    argv = [sys.executable, str(Path(__file__).resolve())]
    res = run_mpi(4, argv, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads([ln for ln in res.stdout.splitlines() if ln.startswith("{")][-1])
    assert got["bad"] == 0, got
    # every case's messages went through the staging (on some rank)
    assert len(got["staged"]) == len(CASES) and min(got["staged"]) > 0, got


if __name__ == "__main__":  # pragma: no cover
    worker()
