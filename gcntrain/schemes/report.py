"""Reduce a run's per-rank figures into the job summary (phase "report")."""

from __future__ import annotations

import numpy as np

from gcntrain.comm.counters import Tally
from gcntrain.simulate.summary import epoch_median, rank_vector, traffic_summary

#: collective kinds timed by the communicator, in report order
KINDS = ("bcast", "allreduce", "allgather", "reduce_scatter", "alltoall", "gather", "p2p", "wait")


def per_epoch(tallies: list[Tally]) -> tuple[np.ndarray, np.ndarray]:
    """Median over epochs of this rank's (bytes/messages, seconds per collective kind)."""
    if not tallies:
        return np.zeros(4), np.zeros(len(KINDS))
    vol = epoch_median(np.array([t.total() for t in tallies], dtype=np.float64))
    secs = np.median(np.array([[t.seconds.get(k, 0.0) for k in KINDS] for t in tallies]), axis=0)
    return vol, secs


def summarize_ranks(
    world,
    epoch_tallies: list[Tally],
    setup: Tally,
    epoch_seconds: float,
    setup_seconds: float,
) -> dict:
    """Max/mean over ranks of the traffic of a steady-state epoch and of the setup (the keys
    of `gcntrain.simulate.summary.traffic_summary`), and of the per-epoch time split."""
    traffic, comm_s = per_epoch(epoch_tallies)
    vec = rank_vector(traffic, setup.total())
    compute = max(epoch_seconds - float(comm_s.sum()), 0.0)
    local = np.concatenate([vec, comm_s, [epoch_seconds, setup_seconds, compute]])
    mx = world.allreduce(local, "report", op="max")
    sm = world.allreduce(local, "report", op="sum")
    nv, nk = vec.shape[0], len(KINDS)
    out = traffic_summary(mx[:nv], sm[:nv], world.size)
    out.update(
        {
            "comm_seconds_max": {
                k: float(mx[nv + i]) for i, k in enumerate(KINDS) if mx[nv + i] > 0
            },
            "epoch_seconds_max": float(mx[nv + nk]),
            "setup_seconds": float(mx[nv + nk + 1]),
            "compute_seconds_max": float(mx[nv + nk + 2]),
        }
    )
    return out


def gather_phases(world, tally: Tally) -> dict[str, np.ndarray] | None:
    """Every rank's per-phase tally (phase "report" left out) as {phase: int64 (P, 4)} on
    rank 0 (None elsewhere); one counted Gatherv of the encoded tallies."""
    import json

    mine = {k: v.tolist() for k, v in tally.phases.items() if k != "report" and v.any()}
    text = np.frombuffer(json.dumps(mine).encode(), dtype=np.uint8)
    counts = world.allgatherv(np.array([text.size], dtype=np.int64), [1] * world.size, "report")
    got = world.gatherv(text, counts, 0, "report")
    if world.rank != 0:
        return None
    out: dict[str, np.ndarray] = {}
    bounds = np.concatenate(([0], np.cumsum(counts)))
    for r in range(world.size):
        part = json.loads(bytes(got[bounds[r] : bounds[r + 1]]).decode())
        for k, v in part.items():
            out.setdefault(k, np.zeros((world.size, 4), dtype=np.int64))[r] = v
    return out
