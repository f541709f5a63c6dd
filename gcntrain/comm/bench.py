"""MPI micro-benchmarks for `gcntrain bench` (run under ``mpiexec -n 2`` or more).

``python -m gcntrain.comm.bench [--reps R]`` measures, on the ranks it was started with, by
message size: ping-pong between ranks 0 and 1 (one-way time = half the round trip), and
Allreduce, Allgather, Bcast, Reduce-scatter and Alltoall over all ranks; each figure is the
median over `R` repetitions of the slowest rank, every repetition starting with cold caches
(a training step's buffers are cold too); the ping-pong's best repetition too (a median far
above it says the machine is busy).  Rank 0 prints one JSON object ``{"ranks", "pingpong":
[[bytes, seconds], ...], "pingpong_best": [...], "allreduce": [...], ...}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

#: message sizes in bytes
SIZES = (8, 1024, 16384, 131072, 1 << 20, 4 << 20)
#: bytes touched between timed repetitions so that every message starts cold in the caches
#: (as a training step's buffers do)
FLUSH_BYTES = 64 << 20


def _median(fn, reps: int, flush: np.ndarray, comm) -> tuple[float, float]:
    """(median, best) over `reps` of the slowest rank's time of `fn`, each repetition after
    a cache flush and a barrier (one warm-up call first)."""
    fn()
    times = []
    for _ in range(reps):
        flush += 1
        comm.Barrier()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    from mpi4py import MPI

    med = float(comm.allreduce(float(np.median(times)), MPI.MAX))
    return med, float(comm.allreduce(float(np.min(times)), MPI.MAX))


def measure(comm, reps: int = 9) -> dict:
    """The figures of the module docstring (every rank returns them)."""
    from mpi4py import MPI

    rank, size = comm.Get_rank(), comm.Get_size()
    kinds = ("pingpong", "allreduce", "allgather", "bcast", "reduce_scatter", "alltoall")
    out: dict = {"ranks": size, "pingpong_best": [], **{k: [] for k in kinds}}
    flush = np.zeros(FLUSH_BYTES // 8)
    for n in SIZES:
        buf = np.zeros(n, dtype=np.uint8)
        a = np.ones(max(1, n // 8), dtype=np.float64)
        r = np.empty_like(a)
        g = np.zeros(n, dtype=np.uint8)
        gr = np.empty(n * size, dtype=np.uint8)
        per = max(1, n // size)
        rs_out = np.empty(per // 8 or 1, dtype=np.float64)
        rs_in = np.ones(rs_out.size * size, dtype=np.float64)
        at_in = np.zeros(per * size, dtype=np.uint8)
        at_out = np.empty_like(at_in)

        def pingpong(buf=buf):
            if rank == 0:
                comm.Send(buf, 1, 0)
                comm.Recv(buf, 1, 0)
            elif rank == 1:
                comm.Recv(buf, 0, 0)
                comm.Send(buf, 0, 0)

        fns = {
            "pingpong": (pingpong, n),
            "allreduce": (lambda a=a, r=r: comm.Allreduce(a, r, MPI.SUM), a.nbytes),
            "allgather": (lambda g=g, gr=gr: comm.Allgather(g, gr), n),
            "bcast": (lambda g=g: comm.Bcast(g, 0), n),
            "reduce_scatter": (
                lambda i=rs_in, o=rs_out: comm.Reduce_scatter_block(i, o, MPI.SUM),
                rs_in.nbytes,
            ),
            "alltoall": (lambda i=at_in, o=at_out: comm.Alltoall(i, o), at_in.nbytes),
        }
        for kind, (fn, nbytes) in fns.items():
            t, best = _median(fn, reps, flush, comm)
            if kind == "pingpong":
                t, best = t / 2, best / 2
                out["pingpong_best"].append([int(nbytes), best])
            out[kind].append([int(nbytes), t])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=9)
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
