"""Reduce a distributed run's per-rank figures into the job summary (phase "report")."""

from __future__ import annotations

import numpy as np

from gcntrain.comm.counters import Tally

#: collective kinds timed by the communicator, in report order
KINDS = ("bcast", "allreduce", "allgather", "alltoall", "gather", "p2p", "wait")


def per_epoch(tallies: list[Tally]) -> tuple[np.ndarray, np.ndarray]:
    """Median over epochs of this rank's (bytes/messages, seconds per collective kind).

    The first epoch also carries the one-off metric reductions (mask counts) and is kept;
    the median makes the figure that of a steady-state epoch.
    """
    if not tallies:
        return np.zeros(4), np.zeros(len(KINDS))
    vol = np.median(np.array([t.total() for t in tallies], dtype=np.float64), axis=0)
    secs = np.median(np.array([[t.seconds.get(k, 0.0) for k in KINDS] for t in tallies]), axis=0)
    return vol, secs


def summarize_ranks(
    world,
    epoch_tallies: list[Tally],
    setup: Tally,
    epoch_seconds: float,
    setup_seconds: float,
    local_nnz: int,
) -> dict:
    """Max/mean over ranks of traffic per epoch and of the per-epoch time split.

    `local_nnz`: this rank's stored adjacency entries, 0 on replicas (summed: the graph's).
    """
    traffic, comm_s = per_epoch(epoch_tallies)
    setup_vol = setup.total().astype(np.float64)
    compute = max(epoch_seconds - float(comm_s.sum()), 0.0)
    local = np.concatenate(
        [traffic, comm_s, [epoch_seconds, setup_seconds], setup_vol, [compute, local_nnz]]
    )
    mx = world.allreduce(local, "report", op="max")
    sm = world.allreduce(local, "report", op="sum")
    P = world.size
    nk = len(KINDS)
    return {
        "bytes_sent_max": int(round(mx[0])),
        "bytes_sent_mean": float(sm[0] / P),
        "bytes_recv_max": int(round(mx[1])),
        "bytes_recv_mean": float(sm[1] / P),
        "messages_max": int(round(mx[2])),
        "messages_mean": float(sm[2] / P),
        "comm_seconds_max": {k: float(mx[4 + i]) for i, k in enumerate(KINDS) if mx[4 + i] > 0},
        "epoch_seconds_max": float(mx[4 + nk]),
        "setup_seconds": float(mx[5 + nk]),
        "setup_bytes_sent_max": int(round(mx[6 + nk])),
        "compute_seconds_max": float(mx[10 + nk]),
        "num_edges": int(round(sm[11 + nk])),
    }
