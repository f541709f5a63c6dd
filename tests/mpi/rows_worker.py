"""MPI worker of tests/test_sim_spmm_rows.py: `mpiexec -n P python tests/mpi/rows_worker.py
GRAPH SCHEME GRID` trains one epoch through the real command line with every SpMM kernel
call of the graph products counted, and rank 0 prints one JSON line: the rows each rank's
kernels swept per call of each product method ([{method: rows per call}] by rank)."""

from __future__ import annotations

import contextlib
import io
import json
import sys

from mpi4py import MPI

import gcntrain.schemes.base as base
import gcntrain.schemes.two_d.ops as two_d_ops
from gcntrain.cli.main import run

swept: dict[str, int] = {}
calls: dict[str, int] = {}
current: list[str] = []


def counted(M, X, out=None, accumulate=False):
    if current:
        swept[current[-1]] = swept.get(current[-1], 0) + int(M.shape[0])
    return orig(M, X, out, accumulate)


orig = base.csr_apply
two_d_ops.csr_apply = counted


def wrap(cls, method):
    inner = getattr(cls, method)

    def f(self, *a, **k):
        calls[method] = calls.get(method, 0) + 1
        current.append(method)
        try:
            return inner(self, *a, **k)
        finally:
            current.pop()

    setattr(cls, method, f)


for m in ("aggregate", "aggregate_t"):
    wrap(two_d_ops.TwoDOps, m)

graph, scheme, grid = sys.argv[1:4]
with contextlib.redirect_stdout(io.StringIO()):
    rc = run(["train", graph, "--scheme", scheme, "--grid", grid, "--epochs", "1", "--quiet"])
got = MPI.COMM_WORLD.gather({m: swept.get(m, 0) / n for m, n in calls.items()}, root=0)
if MPI.COMM_WORLD.rank == 0:
    print(json.dumps({"rc": rc, "rows_per_call": got}))
