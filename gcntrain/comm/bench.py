"""MPI micro-benchmarks for `gcntrain bench` (run under ``mpiexec -n 2`` or more).

``python -m gcntrain.comm.bench [--reps R]`` measures, on the ranks it was started with,

* ping-pong between ranks 0 and 1 by message size (one-way time = half the round trip);
* Allreduce, Allgather and Bcast over all ranks by message size;

and prints one JSON object on rank 0: ``{"ranks", "pingpong": [[bytes, seconds], ...],
"allreduce": [...], "allgather": [...], "bcast": [...]}`` (the best of `R` repetitions each, after a warm-up).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

#: message sizes in bytes
SIZES = (8, 1024, 16384, 131072, 1 << 20, 4 << 20)


def _best(fn, reps: int) -> float:
    fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def measure(comm, reps: int = 20) -> dict:
    """The figures of the module docstring (every rank returns them)."""
    from mpi4py import MPI

    rank, size = comm.Get_rank(), comm.Get_size()
    out: dict = {"ranks": size, "pingpong": [], "allreduce": [], "allgather": [], "bcast": []}
    for n in SIZES:
        buf = np.zeros(n, dtype=np.uint8)
        inner = max(1, min(50, (1 << 22) // max(n, 1)))

        def pingpong():
            for _ in range(inner):
                if rank == 0:
                    comm.Send(buf, 1, 0)
                    comm.Recv(buf, 1, 0)
                elif rank == 1:
                    comm.Recv(buf, 0, 0)
                    comm.Send(buf, 0, 0)

        comm.Barrier()
        t = _best(pingpong, max(3, reps // 4)) / inner / 2
        out["pingpong"].append([n, comm.bcast(t, 0)])
        a = np.zeros(max(1, n // 8), dtype=np.float64)
        r = np.empty_like(a)

        def allreduce():
            comm.Allreduce(a, r, MPI.SUM)

        comm.Barrier()
        t = comm.allreduce(_best(allreduce, reps), MPI.MAX)
        out["allreduce"].append([a.nbytes, t])
        g = np.zeros(n, dtype=np.uint8)
        gr = np.empty(n * size, dtype=np.uint8)

        def allgather():
            comm.Allgather(g, gr)

        comm.Barrier()
        t = comm.allreduce(_best(allgather, reps), MPI.MAX)
        out["allgather"].append([n, t])

        def bcast():
            comm.Bcast(g, 0)

        comm.Barrier()
        t = comm.allreduce(_best(bcast, reps), MPI.MAX)
        out["bcast"].append([n, t])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args(argv)
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    if comm.Get_size() < 2:
        print("gcntrain.comm.bench needs at least 2 ranks", file=sys.stderr)
        return 2
    got = measure(comm, args.reps)
    if comm.Get_rank() == 0:
        print(json.dumps(got))
    return 0


if __name__ == "__main__":
    sys.exit(main())
