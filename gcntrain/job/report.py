"""Reduce a run's per-rank figures into the job summary (phase "report")."""

from __future__ import annotations

import numpy as np

from gcntrain.comm.counters import Tally
from gcntrain.comm.exchange import POINT_TO_POINT
from gcntrain.data.setup_phases import PHASES
from gcntrain.simulate.summary import epoch_median, rank_vector, traffic_summary

#: collective kinds timed by the communicator, in report order
KINDS = (
    "bcast",
    "allreduce",
    "allgather",
    "reduce_scatter",
    "alltoall",
    "gather",
    POINT_TO_POINT,
    "wait",
)


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
    setup_phases: dict | None = None,
) -> dict:
    """Max/mean over ranks of the traffic of a steady-state epoch and of the setup (the keys
    of `gcntrain.simulate.summary.traffic_summary`), and of the per-epoch time split; the
    setup's breakdown (`setup_breakdown`)."""
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
            **setup_breakdown(world, setup_seconds, setup_phases or {}),
        }
    )
    return out


def setup_breakdown(world, setup_seconds: float, phases: dict) -> dict:
    """The setup of the rank whose setup took longest (``setup_critical_rank``: its
    seconds are ``setup_seconds``) by phase (``setup_phases``: {phase: seconds}, the phases
    of `gcntrain.data.setup_phases` its path has; they sum to no more than its setup, the
    rest being agreements and checks between phases).  One counted Allgatherv of every
    rank's (setup seconds, seconds per phase; -1 for a phase it does not have), phase
    "report"."""
    mine = np.array([setup_seconds, *(phases.get(k, -1.0) for k in PHASES)], np.float64)
    table = world.allgatherv(mine, [mine.size] * world.size, "report").reshape(world.size, -1)
    crit = int(np.argmax(table[:, 0]))  # the first of equal ones
    return {
        "setup_critical_rank": crit,
        "setup_phases": {k: float(v) for k, v in zip(PHASES, table[crit, 1:]) if v >= 0},
    }


def exchange_json(world, obj, root: int | None = None) -> list | None:
    """Every rank's JSON-encodable `obj`, in rank order: on every rank (`root` None: a
    counted Allgatherv), or on `root` only (a counted Gatherv; None elsewhere).  The
    encoded lengths go first (one Allgatherv); all in phase "report"."""
    import json

    text = np.frombuffer(json.dumps(obj).encode(), dtype=np.uint8)
    counts = world.allgatherv(np.array([text.size], dtype=np.int64), [1] * world.size, "report")
    if root is None:
        got = world.allgatherv(text, counts, "report")
    else:
        got = world.gatherv(text, counts, root, "report")
        if world.rank != root:
            return None
    bounds = np.concatenate(([0], np.cumsum(counts)))
    return [json.loads(bytes(got[bounds[r] : bounds[r + 1]]).decode()) for r in range(world.size)]


def gather_phases(world, tally: Tally) -> dict[str, np.ndarray] | None:
    """Every rank's per-phase tally (phase "report" left out) as {phase: int64 (P, 4)} on
    rank 0 (None elsewhere); one counted Gatherv of the encoded tallies."""
    mine = {k: v.tolist() for k, v in tally.phases.items() if k != "report" and v.any()}
    parts = exchange_json(world, mine, root=0)
    if parts is None:
        return None
    out: dict[str, np.ndarray] = {}
    for r, part in enumerate(parts):
        for k, v in part.items():
            out.setdefault(k, np.zeros((world.size, 4), dtype=np.int64))[r] = v
    return out


def _phase_names(world, tallies: list[Tally]) -> list[str]:
    """The communication phases any rank used in any epoch, sorted (one counted
    Allgatherv of the encoded names, phase "report")."""
    mine = sorted(
        {k for t in tallies for k, v in t.phases.items() if v.any()}
        | {k for t in tallies for k, v in t.phase_seconds.items() if v > 0}
    )
    names = {name for part in exchange_json(world, mine) for name in part}
    return sorted(names - {"report"})


def median_steady_index(times) -> int:
    """Index of the median steady epoch by time: the first epoch (compiling, warming up)
    left out when there are more, the lower middle one of an even count, ties in epoch
    order.  The summary's ``epoch_breakdown`` and `gcntrain plot` pick their epoch by it."""
    t = np.asarray(times, dtype=np.float64)
    steady = np.arange(1 if t.size > 1 else 0, t.size)
    order = steady[np.argsort(t[steady], kind="stable")]
    return int(order[(len(order) - 1) // 2])


def breakdown_parts(
    epoch_seconds: np.ndarray,
    t_aggregation: np.ndarray,
    t_dense: np.ndarray,
    inside: np.ndarray,
    kind_seconds: np.ndarray,
) -> np.ndarray:
    """Per-epoch split of one rank's epoch time into (aggregation, dense, each of `KINDS`,
    other), shape (E, 3 + len(KINDS)).

    Aggregation and dense are the trainer's graph and dense product times with the
    communication inside them (`inside`, (E, 2)) removed; each collective kind is its
    communication seconds in the epoch; other is the rest (the loss, the optimizer,
    evaluation outside products), never negative, so the parts sum to the epoch time up to
    clock granularity.
    """
    agg = np.maximum(t_aggregation - inside[:, 0], 0.0)
    dense = np.maximum(t_dense - inside[:, 1], 0.0)
    other = np.maximum(epoch_seconds - agg - dense - kind_seconds.sum(axis=1), 0.0)
    return np.column_stack([agg, dense, kind_seconds, other])


def epoch_comm(world, tallies: list[Tally], inside: list[dict], history: list) -> dict:
    """Per-epoch and per-phase communication figures of the whole job.

    Adds to each of the last ``len(tallies)`` records of `history` (the epochs this run
    trained) ``epoch_breakdown`` (the epoch of the rank with the longest epoch split into
    aggregation, dense, each collective kind that took time, and other: `breakdown_parts`),
    ``comm`` (per phase: bytes and messages sent and seconds, max and mean over ranks) and
    ``collectives`` (per kind: seconds max / mean, calls max).  Returns the summary keys
    ``epoch_breakdown`` (of the median epoch by its longest rank, the first epoch excluded
    when there are more), ``comm_phases`` and ``comm_collectives`` (each rank's median over
    epochs, then max / mean over ranks).  Collective: every rank calls it (phase "report").
    """
    names = _phase_names(world, tallies)
    E, F, K, P = len(tallies), len(names), len(KINDS), world.size
    hist = history[len(history) - E :] if E else []
    secs = np.array([r.seconds for r in hist], dtype=np.float64)
    kind_s = np.array([[t.seconds.get(k, 0.0) for k in KINDS] for t in tallies]).reshape(E, K)
    calls = np.array([[t.calls.get(k, 0) for k in KINDS] for t in tallies], np.float64)
    calls = calls.reshape(E, K)
    ins = np.array([[d["graph"], d["dense"]] for d in inside], dtype=np.float64).reshape(E, 2)
    parts = breakdown_parts(
        secs,
        np.array([r.t_aggregation for r in hist], dtype=np.float64),
        np.array([r.t_dense for r in hist], dtype=np.float64),
        ins,
        kind_s,
    )
    ph = np.zeros((E, F, 3), dtype=np.float64)  # bytes sent, messages sent, seconds
    for e, t in enumerate(tallies):
        for f, name in enumerate(names):
            v = t.phases.get(name)
            if v is not None:
                ph[e, f, 0], ph[e, f, 1] = v[0], v[2]
            ph[e, f, 2] = t.phase_seconds.get(name, 0.0)
    med_ph = np.median(ph, axis=0) if E else np.zeros((F, 3))
    med_kind = np.median(np.stack([kind_s, calls], axis=2), axis=0) if E else np.zeros((K, 2))
    flat = np.concatenate(
        [secs, ph.ravel(), kind_s.ravel(), calls.ravel(), med_ph.ravel(), med_kind.ravel()]
    )
    mx = world.allreduce(flat, "report", op="max")
    sm = world.allreduce(flat, "report", op="sum")
    # the rank with the longest epoch (the lowest such rank), and its parts
    longest = mx[:E]
    mine = np.where(secs >= longest, float(world.rank), float(P))
    crit = world.allreduce(mine, "report", op="min").astype(np.int64)
    crit_parts = world.allreduce(parts * (crit == world.rank)[:, None], "report", op="sum")

    def cut(a, start, shape):
        n = int(np.prod(shape))
        return a[start : start + n].reshape(shape), start + n

    o = E
    ph_mx, o2 = cut(mx, o, (E, F, 3))
    ph_sm, _ = cut(sm, o, (E, F, 3))
    ks_mx, o3 = cut(mx, o2, (E, K))
    ks_sm, _ = cut(sm, o2, (E, K))
    ca_mx, o4 = cut(mx, o3, (E, K))
    mp_mx, o5 = cut(mx, o4, (F, 3))
    mp_sm, _ = cut(sm, o4, (F, 3))
    mk_mx, _ = cut(mx, o5, (K, 2))
    mk_sm, _ = cut(sm, o5, (K, 2))
    used = [k for i, k in enumerate(KINDS) if ks_mx[:, i].any() or ca_mx[:, i].any()]
    labels = ["aggregation", "dense", *KINDS, "other"]
    keep = [i for i, k in enumerate(labels) if k not in KINDS or k in used]

    def breakdown(e: int) -> dict:
        out: dict = {"critical_rank": int(crit[e])}
        out.update({labels[i]: float(crit_parts[e, i]) for i in keep})
        return out

    def phase_entry(vmax, vsum) -> dict:
        return {
            "bytes_max": int(round(vmax[0])),
            "bytes_mean": float(vsum[0] / P),
            "messages_max": int(round(vmax[1])),
            "messages_mean": float(vsum[1] / P),
            "seconds_max": float(vmax[2]),
            "seconds_mean": float(vsum[2] / P),
        }

    for e, rec in enumerate(hist):
        rec.extra["epoch_breakdown"] = breakdown(e)
        rec.extra["comm"] = {
            name: phase_entry(ph_mx[e, f], ph_sm[e, f])
            for f, name in enumerate(names)
            if ph_mx[e, f].any()
        }
        rec.extra["collectives"] = {
            k: {
                "seconds_max": float(ks_mx[e, i]),
                "seconds_mean": float(ks_sm[e, i] / P),
                "calls_max": int(ca_mx[e, i]),
            }
            for i, k in enumerate(KINDS)
            if k in used and (ks_mx[e, i] > 0 or ca_mx[e, i] > 0)
        }
    summary: dict = {
        "comm_phases": {
            name: phase_entry(mp_mx[f], mp_sm[f]) for f, name in enumerate(names) if mp_mx[f].any()
        },
        "comm_collectives": {
            k: {
                "seconds_max": float(mk_mx[i, 0]),
                "seconds_mean": float(mk_sm[i, 0] / P),
                "calls_max": int(round(mk_mx[i, 1])),
            }
            for i, k in enumerate(KINDS)
            if k in used
        },
    }
    if E:
        e = median_steady_index(longest)
        summary["epoch_breakdown"] = {"epoch": int(hist[e].epoch), **breakdown(e)}
    return summary
