"""The time half of the simulator: a predicted epoch time from a plan and a machine profile.

Every steady-state epoch of the recorded schedule is replayed call by call over a clock per
rank (vectorised over all ranks):

* compute: each call's SpMM flops at the profile's one-core rate for its width, dense flops
  at the GEMM rate for their k x n, quantized elements at the quantization rate, all times
  the rank's thread scaling S(t) (`Placement.speed`); per epoch the model's element-wise
  work (local rows x local columns' share x the sum of the layer widths, at
  ``other_gelems``) and a fixed cost per Ops call; all but the per-call cost shared with the
  node's other ranks computing at the same time (`Placement.shared`,
  `gcntrain.simulate.node`: memory bandwidth and caches);
* communication: each step of the call's exchange description (the same `Scheme.steps` the
  runtime executes and the plans count) priced by the α-β cost of its standard algorithm
  (`gcntrain.simulate.collectives`) on the intra-node link when its group lies on one node
  (a memory copy: no faster than the rank's share of the node's memory bandwidth,
  `Placement.intra`), else on the inter-node link with the node's injection bandwidth
  shared by its ranks; all-to-all-like steps across nodes (Alltoallv, sparse exchanges) no
  faster than the topology's bisection lets their bytes across
  (`gcntrain.simulate.topology`); a collective over one member copies its bytes
  (`collectives.local_copy`), as the runtime's counted layer does;
* synchronisation: a collective starts when the last member of its group arrives (the
  others wait: "wait" in the breakdown); a point-to-point exchange when the rank and every
  partner it exchanges with have arrived; Alltoallv over the world when every rank has;
  on a node with more ranks than cores every synchronising step (each broadcast stage, each
  collective, each exchange) adds the profile's ``oversubscribed_sync_us``, scaled by
  ``min(1, w / oversubscribed_slice_us)`` when the profile gives a slice (w: the compute
  the rank did since its previous synchronisation; `Placement.sync_cost_for`), its floor
  by the wake-up rounds of the step's group on the node
  (`gcntrain.simulate.oversubscribed`: ``ceil(members / cores)``, the profile's floor
  standing for two), plus half a scheduler slice at most where the group leaves some of
  the node's ranks out (`oversubscribed.subset_loss`); there intra-node bytes move at the
  rank's share of a core (`oversubscribed.intra_link`); reductions add their arithmetic
  at the rank's share of the memory bandwidth;
* node windows: where a step's `window` is set and its group lies on one node (1D and
  1.5D broadcasts, p2p's exchanges when every rank shares the node), the runtime writes its
  rows into a shared-memory window and fences once (`gcntrain.comm.shared`): the step costs
  that fence, ``ceil(log2 p)`` intra-node latencies plus the synchronisation cost, starting
  when its group's last member arrives (``wait`` in the breakdown), then the product's
  compute; nothing overlaps;
* overlap: a scheme that overlaps its exchanges with local compute (`Scheme.overlaps`: p2p's
  Waitany loop, the hier and vertex-cut non-blocking Alltoallv) finishes a call at the later
  of its compute (from its own clock) and its exchange (from the synchronisation point);
  within a call (p2p, hier) the part of the exchange the rank's own CPU does (intra-node
  copies through shared memory, which MPICH and Open MPI progress only inside MPI calls;
  oversubscribed waits) adds to its compute, and only what the network adapter moves
  (inter-node) hides; delayed cd-R training exchanges hide whole (they complete inside the
  later epochs' MPI calls, where a rank otherwise waits for the slowest).

The epoch time is the latest clock (the critical path; epochs end with collectives), the
breakdown is that of the critical rank, and `epoch_seconds` is the median over the planned
epochs, as `train --json` reports the median measured epoch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from gcntrain.comm.exchange import (
    POINT_TO_POINT,
    Allgatherv,
    Allreduce,
    BcastStages,
    Groups,
    Pairs,
    ReduceScatterv,
    Uniform,
)
from gcntrain.comm.shared import windows_enabled
from gcntrain.schemes.protocol import OVERLAP_CALL, OVERLAP_EPOCHS
from gcntrain.simulate import collectives as C
from gcntrain.simulate.compute import (  # noqa: F401 (callers import them from here)
    call_compute,
    compute_seconds,
    elementwise_elements,
    input_density,
    other_seconds,
    scheme_footprint,
)
from gcntrain.simulate.mpi_rules import one_way as one_way_rule
from gcntrain.simulate.oversubscribed import (
    intra_link,
    members_on_node,
    scaled_sync,
    subset_loss,
)
from gcntrain.simulate.placement import Placement, placement  # noqa: F401 (the API callers use)
from gcntrain.simulate.topology import bisection_seconds, crossing_bytes

#: communication kinds of the breakdown (the measured `comm_seconds_max` kinds)
COMM_KINDS = ("bcast", "allreduce", "allgather", "reduce_scatter", "alltoall", POINT_TO_POINT)
#: what `Scheme.overlaps` may return
OVERLAPS = ("", OVERLAP_CALL, OVERLAP_EPOCHS)
#: compute parts of the breakdown
COMPUTE_KINDS = ("spmm", "gemm", "quant", "other")


# -- synchronisation and link of each step ------------------------------------------------
def _group_max(values: np.ndarray, gid: np.ndarray, G: int) -> np.ndarray:
    out = np.full(G, -np.inf)
    np.maximum.at(out, gid, values)
    return out


def _one_node(groups: Groups, place: Placement) -> np.ndarray:
    """(P,) whether each rank's group lies on one node."""
    G = groups.sizes.shape[0]
    node = place.node.astype(np.float64)
    hi = _group_max(node, groups.gid, G)
    lo = -_group_max(-node, groups.gid, G)
    return (hi == lo)[groups.gid]


def _by_link(fn, intra_mask, place: Placement, *args, **kw) -> np.ndarray:
    return np.where(intra_mask, fn(*args, intra_link(place), **kw), fn(*args, place.inter, **kw))


def _group_cost(step, place: Placement, sync: np.ndarray) -> np.ndarray:
    """(P,) seconds of a collective over groups, per member (`sync`: each rank's
    synchronisation cost; a group pays its members' largest)."""
    g: Groups = step.groups
    p = g.size_of_rank()
    one = _one_node(g, place)
    G = g.sizes.shape[0]
    sync = scaled_sync(sync, lambda: members_on_node(g.gid, place.node), place)
    group_sync = _group_max(sync, g.gid, G)
    sync = np.where(p > 1, group_sync[g.gid], 0.0)
    many = float(place.P > 1)  # a one-member group copies (a one-rank job's runtime: not)
    rules = place.machine.mpi_rules  # whose algorithms (`gcntrain.simulate.mpi_rules`)
    if isinstance(step, Allreduce):
        n = np.asarray(step.nelems, np.float64)[g.gid] * step.itemsize
        red = C.reduction(p, n, place.memory_rate) + many * C.local_copy(p, n, place.memory_rate)
        return _by_link(C.allreduce, one, place, p, n, rules=rules) + red + sync
    if isinstance(step, (Allgatherv, ReduceScatterv)):
        tot = np.zeros(G)
        np.add.at(tot, g.gid, np.asarray(step.nbytes, np.float64))
        copy = many * C.local_copy(p, tot[g.gid], place.memory_rate)
        if isinstance(step, Allgatherv):
            n = tot[g.gid] / np.maximum(p, 1)
            return _by_link(C.allgather, one, place, p, n, rules=rules) + copy + sync
        red = C.reduction(p, tot[g.gid], place.memory_rate) + copy
        cost = _by_link(C.reduce_scatter, one, place, p, tot[g.gid], rules=rules)
        return cost + red + sync
    if isinstance(step, Uniform):
        cost = _by_link(C.alltoall, one, place, p, float(step.nbytes), rules=rules)
        return np.maximum(cost, np.where(one, 0.0, _uniform_bisection(step, place))) + sync
    if isinstance(step, BcastStages):
        size = g.sizes[step.group]
        live = (step.nbytes > 0) & (size > 1)
        grp = step.group[live]
        # a group's stages run in turn: its cost is the sum of its stages' broadcasts
        first = np.zeros(G, dtype=np.int64)
        first[g.gid] = np.arange(g.P)
        intra_g = one[first[grp]]
        cost = (
            np.where(
                intra_g,
                C.bcast(size[live], step.nbytes[live], intra_link(place), rules),
                C.bcast(size[live], step.nbytes[live], place.inter, rules),
            )
            + group_sync[grp]
        )
        per_group = np.zeros(G)
        np.add.at(per_group, grp, cost)
        return per_group[g.gid]
    raise TypeError(f"no cost model for {type(step).__name__}")  # pragma: no cover


_KIND = {
    Allreduce: "allreduce",
    Allgatherv: "allgather",
    ReduceScatterv: "reduce_scatter",
    Uniform: "alltoall",
    BcastStages: "bcast",
}


def _peers(src: np.ndarray, dst: np.ndarray, P: int) -> np.ndarray:
    """(P,) distinct partners of every rank (a pair both ways is one pairwise step): the row
    lengths of the symmetrised pattern, built by a counting sort (no O(m log m) unique)."""
    if not src.size:
        return np.zeros(P, dtype=np.int64)
    one = np.ones(src.shape[0], dtype=np.int32)
    A = sp.coo_matrix((one, (src, dst)), shape=(P, P)).tocsr()
    A = (A + A.T).tocsr()
    return np.diff(A.indptr).astype(np.int64)


def _uniform_bisection(step, place: Placement) -> float:
    """Seconds a world-spanning Alltoall's bytes need across the topology's cut: for every
    group, each pair of members on opposite halves of the node range sends `nbytes` each
    way (`gcntrain.simulate.topology`; one way at a time where the algorithm the profile's
    `mpi_rules` select for the Alltoall shifts every rank the same way round)."""
    topo = place.machine.topology
    if topo.kind == "none" or place.nodes < 2:
        return 0.0
    g: Groups = step.groups
    G = g.sizes.shape[0]
    low = (place.node < topo.half(place.nodes)).astype(np.float64)
    lo = np.bincount(g.gid, weights=low, minlength=G)
    hi = g.sizes - lo
    crossing = float(2.0 * (lo * hi).sum() * float(step.nbytes))
    one_way = one_way_rule(place.machine.mpi_rules, "alltoall", g.sizes.max(), step.nbytes)
    return bisection_seconds(topo, place.nodes, place.machine.injection, crossing, one_way)


def _pairs_bisection(step: Pairs, place: Placement, nonblocking: bool = False) -> float:
    """Seconds a sparse exchange's bytes need across the topology's cut (all at once for
    point-to-point messages; an Alltoallv, or `nonblocking` an Ialltoallv, one way at a
    time where the algorithm the profile's `mpi_rules` select shifts every rank the same
    way round: always with ``"min"``)."""
    topo = place.machine.topology
    if topo.kind == "none" or place.nodes < 2:
        return 0.0
    node = place.node
    half = topo.half(place.nodes)
    crossing = crossing_bytes(node[step.src], node[step.dst], step.nbytes, place.nodes, half)
    coll = "ialltoallv" if nonblocking else "alltoallv"
    one_way = step.kind != POINT_TO_POINT and one_way_rule(place.machine.mpi_rules, coll, place.P)
    return bisection_seconds(topo, place.nodes, place.machine.injection, crossing, one_way)


def _pairs_parts(
    step: Pairs, place: Placement, sync: np.ndarray, nonblocking: bool = False
) -> tuple[np.ndarray, ...]:
    """(intra, inter, sync) (P,) seconds of a rank's part of a sparse exchange: per peer one
    latency, its bytes in its larger direction, separately on the intra- and inter-node
    links; the synchronisation cost where the rank exchanges anything.  An Alltoallv (an
    Ialltoallv where `nonblocking`) is priced by the algorithm the profile's `mpi_rules`
    select over the world (a pairwise one's empty steps on the inter-node link when the
    job spans nodes); point-to-point messages as they are."""
    P = place.P
    live = (step.src != step.dst) & (step.nbytes > 0)
    s, d, b = step.src[live], step.dst[live], step.nbytes[live].astype(np.float64)
    node = place.node
    same = node[s] == node[d]
    rules = "min" if step.kind == POINT_TO_POINT else place.machine.mpi_rules
    split = [(same, intra_link(place)), (~same, place.inter)]
    peers = [_peers(s[m], d[m], P) for m, _ in split]
    idle = np.maximum(P - 1 - peers[0] - peers[1], 0)  # a pairwise loop's empty steps
    out, near = [], peers[0]
    for (mask, link), n, last in zip(split, peers, (place.nodes == 1, place.nodes > 1)):
        ss, dd, bb = s[mask], d[mask], b[mask]
        sent = np.bincount(ss, weights=bb, minlength=P)
        recv = np.bincount(dd, weights=bb, minlength=P)
        kw = {"p": P, "nonblocking": nonblocking, "idle": idle * last}
        out.append(C.alltoallv(n, sent, recv, link, rules, **kw))
    intra, inter = out
    cut = _pairs_bisection(step, place, nonblocking)
    inter = np.where(inter > 0, np.maximum(inter, cut), 0.0)
    # who must run before the rank's part completes: its partners on its node (an
    # Alltoallv: every rank of the node, as it starts when everybody has arrived)
    members = near + 1 if step.kind == POINT_TO_POINT else place.local_ranks
    sync = scaled_sync(sync, members, place)
    return intra, inter, np.where(intra + inter > 0, sync, 0.0)


def _pairs_cost(step: Pairs, place: Placement, sync: np.ndarray) -> np.ndarray:
    """(P,) seconds of a rank's part of a sparse exchange (`_pairs_parts` summed)."""
    return sum(_pairs_parts(step, place, sync))


def _windowed(step, place: Placement) -> np.ndarray | None:
    """(P,) the ranks whose part of `step` runs through a node window (the step's `window`,
    its group on one node: every rank for `Pairs`), or None where no rank's does (also with
    ``GCNTRAIN_NODE_WINDOWS=0``, as at run time)."""
    if not getattr(step, "window", False) or not windows_enabled():
        return None
    if isinstance(step, Pairs):
        return np.ones(place.P, dtype=bool) if place.nodes == 1 and place.P > 1 else None
    g: Groups = step.groups
    staged = np.bincount(step.group[step.nbytes > 0], minlength=g.sizes.shape[0]) > 0
    one = _one_node(g, place) & (g.size_of_rank() > 1) & staged[g.gid]
    return one if one.any() else None


def _window_timing(step, place: Placement, clock: np.ndarray, sync: np.ndarray, mask):
    """(start, cost, kind) of `step` where `mask` ranks publish through a node window: a
    fence over the group (every rank for `Pairs`), a barrier of ``ceil(log2 p)`` intra-node
    latencies plus the group's synchronisation cost, no bytes (the rows are read in place by
    the product), counted as ``wait`` as the runtime counts it; the other ranks' part as
    usual (`step_timing`; mixed groups keep the step's kind)."""
    if isinstance(step, Pairs):
        p = np.full(place.P, float(place.P))
        fence_start = np.full(place.P, clock.max(initial=0.0))
        fence_sync = scaled_sync(sync, place.local_ranks, place)
        fence_sync = np.full(place.P, fence_sync.max(initial=0.0))
    else:
        g: Groups = step.groups
        G = g.sizes.shape[0]
        p = g.size_of_rank().astype(np.float64)
        fence_start = _group_max(clock, g.gid, G)[g.gid]
        fence_sync = scaled_sync(sync, lambda: members_on_node(g.gid, place.node), place)
        fence_sync = _group_max(fence_sync, g.gid, G)[g.gid]
    fence = np.ceil(np.log2(np.maximum(p, 1.0))) * place.intra.alpha + fence_sync
    if mask.all():
        return fence_start, fence, "wait"
    start, cost, kind = step_timing(step, place, clock, sync)
    return np.where(mask, fence_start, start), np.where(mask, fence, cost), kind


def _pairs_start_kind(step: Pairs, clock: np.ndarray) -> tuple[np.ndarray, str]:
    """(start, kind) of a sparse exchange: a point-to-point exchange starts when the rank's
    partners have arrived, an Alltoallv over the world when every rank has."""
    if step.kind == POINT_TO_POINT:
        return _pairs_start(step, clock), POINT_TO_POINT
    return np.full(clock.shape[0], clock.max(initial=0.0)), "alltoall"


def _pairs_start(step: Pairs, clock: np.ndarray) -> np.ndarray:
    """(P,) when a rank's point-to-point exchange can complete its synchronisation: the
    latest arrival among itself and its partners."""
    live = (step.src != step.dst) & (step.nbytes > 0)
    s, d = step.src[live], step.dst[live]
    start = clock.copy()
    np.maximum.at(start, d, clock[s])
    np.maximum.at(start, s, clock[d])
    return start


def _sync_points(step) -> int:
    """How many synchronisations a step makes (a broadcast step: one per live stage of its
    busiest group)."""
    if not isinstance(step, BcastStages):
        return 1
    live = step.nbytes > 0
    return int(np.bincount(step.group[live]).max(initial=0)) if live.any() else 0


def _synchronised(step, P: int) -> np.ndarray:
    """(P,) whether a step synchronises each rank (a member of a group of two or more, or a
    rank that sends or receives in an exchange)."""
    if isinstance(step, Pairs):
        live = (step.src != step.dst) & (step.nbytes > 0)
        out = np.zeros(P, dtype=bool)
        out[step.src[live]] = True
        out[step.dst[live]] = True
        return out
    return step.groups.size_of_rank() > 1


def step_timing(
    step, place: Placement, clock: np.ndarray, sync: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, str]:
    """(start, cost, kind) of one step given the ranks' clocks (and each rank's
    synchronisation cost, default `Placement.sync_cost`): when each rank's part starts, how
    long it takes, and its breakdown kind."""
    if sync is None:
        sync = np.full(place.P, place.sync_cost)
    if isinstance(step, Pairs):
        start, kind = _pairs_start_kind(step, clock)
        return start, _pairs_cost(step, place, sync), kind
    g: Groups = step.groups
    start = _group_max(clock, g.gid, g.sizes.shape[0])[g.gid]
    return start, _group_cost(step, place, sync), _KIND[type(step)]


def epoch_calls(sim) -> list[list]:
    """The calls of every planned epoch, in order."""
    out, cur = [], None
    for call in sim.calls:
        if call.method == "begin_epoch":
            cur = []
        elif call.method == "end_epoch":
            out.append(cur)
            cur = None
        elif cur is not None:
            cur.append(call)
    return out


def epoch_counts(sim, widths: list[int]) -> tuple[int, float]:
    """(Ops calls, element-wise elements of the busiest rank) of the middle planned epoch:
    the two quantities `other_seconds` prices."""
    eps = epoch_calls(sim)
    elems = elementwise_elements(scheme_footprint(sim), widths, input_density(sim))
    calls = len(eps[len(eps) // 2]) if eps else 0
    return calls, float(elems.max(initial=0.0))


@dataclass
class EpochTime:
    """One predicted epoch: per rank clocks and the per-kind seconds of every rank."""

    clock: np.ndarray
    parts: dict

    @property
    def seconds(self) -> float:
        return float(self.clock.max(initial=0.0))

    def breakdown(self) -> dict:
        """The critical rank's seconds per kind ("compute" parts, "comm" kinds, "wait")."""
        r = int(np.argmax(self.clock)) if self.clock.size else 0
        comp = {k: float(self.parts[k][r]) for k in COMPUTE_KINDS}
        comm = {k: float(self.parts[k][r]) for k in COMM_KINDS if self.parts[k][r] > 0}
        return {
            "critical_rank": r,
            "compute": sum(comp.values()),
            "compute_parts": comp,
            "comm": sum(comm.values()),
            "comm_parts": comm,
            "wait": float(self.parts["wait"][r]),
        }


class TimeModel:
    """Predicted epoch times of a planned run (`gcntrain.simulate.run.Simulation`)."""

    def __init__(self, sim, place: Placement, widths: list[int]):
        if place.P != sim.table.P:
            raise ValueError("placement and plan disagree on P")
        self.sim, self.place, self.widths = sim, place, widths
        self._steps: dict = {}
        self._footprint = scheme_footprint(sim)
        self._density = input_density(sim)

    def _call(self, call):
        sch, ctx = self.sim.scheme, self.sim.ctx
        pk = sch.price_key(ctx, call)
        if pk not in self._steps:
            steps = sch.steps(ctx, call)
            comp = call_compute(sch, ctx, call, self.place)
            windows = [_windowed(st, self.place) for st in steps]
            self._steps[pk] = (steps, comp, windows)
        return self._steps[pk]

    def epoch(self, calls) -> EpochTime:
        """Replay one epoch's calls (see the module docstring)."""
        P = self.place.P
        parts = {k: np.zeros(P) for k in (*COMPUTE_KINDS, *COMM_KINDS, "wait")}
        other = other_seconds(self._footprint, self.widths, len(calls), self.place, self._density)
        parts["other"] += other
        clock = other.copy()
        since = other.copy()  # compute since each rank's previous synchronisation
        for call in calls:
            overlaps = self.sim.scheme.overlaps(self.sim.ctx, call)
            if overlaps not in OVERLAPS:
                raise TypeError(f"Scheme.overlaps returned {overlaps!r}, not one of {OVERLAPS}")
            steps, comp, windows = self._call(call)
            c = sum(comp.values())
            for k, v in comp.items():
                parts[k] += v
            # a windowed exchange has no messages to overlap: fence, then the product
            pairs = bool(overlaps) and any(
                isinstance(s, Pairs) and w is None for s, w in zip(steps, windows)
            )
            fence_first = bool(steps) and all(w is not None and w.all() for w in windows)
            if pairs:
                done = clock + c
            elif not fence_first:
                clock = clock + c
            # the call's compute is spread evenly over its synchronisations (broadcast
            # stages interleave with the partial products): each synchronising step comes
            # after its share; a rank the step does not synchronise carries its compute on
            # a window fences once per product (where only some groups have one, the
            # others' stages still count)
            points = [
                1 if w is not None and w.all() else _sync_points(x) for x, w in zip(steps, windows)
            ]
            for st, win, n in zip(steps, windows, points):
                if not fence_first:
                    since = since + c * (n / max(1, sum(points)))
                per = since / max(1, n)
                sync = self.place.sync_cost_for(per)
                if self.place.oversubscribed:  # with what a subset of the node's ranks loses
                    sync = np.stack([sync, subset_loss(per, self.place)])
                synced = _synchronised(st, P)
                # each MPI operation's software (wrappers, counters) on the ranks it involves
                op = self.place.machine.mpi_op * n * synced
                if win is not None:
                    start, cost, kind = _window_timing(st, self.place, clock, sync, win)
                elif pairs and overlaps == OVERLAP_CALL and isinstance(st, Pairs):
                    # what the rank's CPU does for the exchange (intra-node copies, the
                    # oversubscribed wait) comes after its compute; the NIC's part overlaps
                    intra, inter, syn = _pairs_parts(st, self.place, sync, nonblocking=True)
                    start, kind = _pairs_start_kind(st, clock)
                    cost = intra + inter + syn
                    done = done + intra + syn + op
                else:
                    start, cost, kind = step_timing(st, self.place, clock, sync)
                cost = cost + op
                since = np.where(synced, 0.0, since)
                parts["wait"] += start - clock
                parts[kind] += cost
                clock = start + cost
            if pairs:
                # the exchange and the local compute overlap: the later one ends the call
                clock = np.maximum(done, clock)
            elif fence_first:
                # the rows published, the product reads them: its compute comes after
                clock = clock + c
                since = since + c
        return EpochTime(clock, parts)

    def epochs(self) -> list[EpochTime]:
        """Every planned epoch (identical call sequences replayed once)."""
        out, seen = [], {}
        sch, ctx = self.sim.scheme, self.sim.ctx
        for cur in epoch_calls(self.sim):
            sig = tuple(sch.price_key(ctx, c) for c in cur)
            if sig not in seen:
                seen[sig] = self.epoch(cur)
            out.append(seen[sig])
        return out


def predict(sim, place: Placement, widths: list[int]) -> dict:
    """`epoch_seconds` (median over the planned epochs of the critical path) and the
    breakdown of the median epoch, with the per-rank predicted epoch times."""
    eps = TimeModel(sim, place, widths).epochs()
    if not eps:
        return {"epoch_seconds": 0.0, "breakdown": {}, "rank_seconds": np.zeros(place.P)}
    secs = np.array([e.seconds for e in eps])
    mid = eps[int(np.argsort(secs, kind="stable")[len(secs) // 2])]
    return {
        "epoch_seconds": float(np.median(secs)),
        "breakdown": mid.breakdown(),
        "rank_seconds": mid.clock,
    }


def time_summary(sim, config, place: Placement) -> dict:
    """The time keys of `gcntrain simulate --json` (``epoch_seconds``: the predicted
    critical-path epoch, the measured key's meaning)."""
    widths = [sim.num_features, *[int(h) for h in config.hidden], sim.num_classes]
    got = predict(sim, place, widths)
    rs = got["rank_seconds"]
    m = place.machine
    return {
        "machine": m.name,
        "machine_file": m.path,
        "nodes": place.nodes,
        "ranks_per_node": place.ranks_per_node,
        "network": m.topology.describe(place.nodes),
        "epoch_seconds": got["epoch_seconds"],
        "breakdown": got["breakdown"],
        "rank_epoch_seconds": {
            "min": float(rs.min()) if rs.size else 0.0,
            "median": float(np.median(rs)) if rs.size else 0.0,
            "max": float(rs.max(initial=0.0)),
        },
    }
