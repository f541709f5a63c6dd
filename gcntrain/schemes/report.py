"""Reduce a distributed run's per-rank figures into the job summary (phase "report")."""

from __future__ import annotations

import numpy as np

from gcntrain.comm.counters import Tally

#: collective kinds timed by the communicator, in report order
KINDS = ("bcast", "allreduce", "allgather", "alltoall", "gather", "p2p", "wait")


def per_epoch_traffic(tally: Tally, epochs: int) -> np.ndarray:
    """This rank's mean bytes/messages per training epoch (setup excluded)."""
    return tally.total(exclude=("setup", "report")).astype(np.float64) / max(epochs, 1)


def summarize_ranks(
    world, tally: Tally, epochs: int, epoch_seconds: float, setup_seconds: float
) -> dict:
    """Max/mean over ranks of traffic per epoch and of the per-epoch time split."""
    traffic = per_epoch_traffic(tally, epochs)
    comm_s = np.array([tally.seconds.get(k, 0.0) for k in KINDS]) / max(epochs, 1)
    setup = tally.phases.get("setup", np.zeros(4, np.int64)).astype(np.float64)
    compute = max(epoch_seconds - float(comm_s.sum()), 0.0)
    local = np.concatenate([traffic, comm_s, [epoch_seconds, setup_seconds], setup, [compute]])
    mx = world.allreduce(local, "report", op="max")
    sm = world.allreduce(local, "report", op="sum")
    P = world.size
    nk = len(KINDS)
    out = {
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
    }
    out["compute_seconds_max"] = float(mx[10 + nk])
    return out
