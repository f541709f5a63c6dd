"""What a synchronisation costs on a node that runs more ranks than cores, by the number of
ranks it must wake (`gcntrain.simulate.timing`).

With R ranks on C < R cores, MPICH's progress throttle (`gcntrain.comm.env`) lets a waiting
rank sleep; a synchronisation completes only once every member of its group has run again
after the last one arrived, and the node runs C of them at a time.  A step over g ranks of
one node therefore waits ``ceil(g / C)`` wake-up rounds (`wake_rounds`), each of them the
kernel's wake-up latency (its timer slack, its run queue).

The profile's ``oversubscribed_floor_us`` is the cost of a synchronisation of the run
`gcntrain bench` fits it on: p2p at twice as many ranks as cores on R-MAT 8, where every
exchange and every Allreduce involves all 2C ranks of the node, so two rounds
(`FIT_ROUNDS`).  A step whose group has g members on the rank's node pays
``floor x wake_rounds(g) / FIT_ROUNDS``: a two-rank broadcast of 2D on 4 ranks of 2 cores
half of it, an Allreduce over the 4 ranks all of it.  Profiles written before this term
have the same key fitted on the same run, so the same reading applies to them; nothing
changes on a node with at most as many ranks as cores (no floor there).

A step over only some of the node's ranks loses more (`subset_loss`): the member that
arrives first sleeps, its core goes to a rank outside the group, and that rank keeps it
until its scheduler slice ends or it reaches a synchronisation of its own, so the member
gets its core back half of ``min(compute between synchronisations, slice)`` later on
average.  The slice is Linux's default (`scheduler_slice`), or the profile's
``scheduler_slice_us``; nothing is fitted.  Over all the node's ranks the core goes to
another member, which is on its way to the same synchronisation: nothing is lost there,
which is why the bench's fit on p2p (every step over all ranks) sees none of it.

Intra-node bytes move at the rank's share of a core (`intra_link`): the ranks' own CPUs
copy them.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from gcntrain.partition.unique import unique_ints

#: wake-up rounds of the synchronisations `gcntrain bench` fits the floor on (p2p on 2C
#: ranks of a C-core node, every step over all of them: ceil(2C / C))
FIT_ROUNDS = 2.0


def wake_rounds(members, cores: int) -> np.ndarray:
    """Rounds of the scheduler a synchronisation of `members` ranks of one node waits for
    when they share `cores` cores: ``ceil(members / cores)``, at least one."""
    m = np.maximum(np.asarray(members, np.float64), 1.0)
    return np.ceil(m / max(int(cores), 1))


def members_on_node(gid: np.ndarray, node: np.ndarray) -> np.ndarray:
    """(P,) how many ranks share each rank's group and its node (`gid`, `node`: (P,))."""
    key = gid.astype(np.int64) * (int(node.max(initial=0)) + 1) + node.astype(np.int64)
    _, inverse, counts = unique_ints(key, return_inverse=True, return_counts=True)
    return counts[inverse.reshape(-1)]


def floor_of(place) -> float:
    """The profile's floor per synchronisation where `place` oversubscribes its nodes, else 0."""
    return place.machine.oversubscribed_floor if place.oversubscribed else 0.0


def scheduler_slice(place) -> float:
    """Seconds a runnable rank may keep a core once it has it: the profile's
    ``scheduler_slice_us``, else Linux's default base slice, 0.75 ms x (1 + log2 of the
    cores, counted up to 8) (`sysctl_sched_base_slice`, EEVDF; CFS's minimum granularity
    had the same default and scaling)."""
    m = place.machine
    if m.scheduler_slice > 0.0:
        return m.scheduler_slice
    return 0.75e-3 * (1.0 + np.floor(np.log2(min(max(m.cores, 1), 8))))


def subset_loss(since: np.ndarray, place) -> np.ndarray:
    """(P,) what a synchronisation over only some of an oversubscribed node's ranks loses,
    given the compute each rank did since its previous synchronisation: the rank that
    arrives first sleeps and its core goes to a rank outside the group, which keeps it
    until its slice ends or it reaches a synchronisation of its own; the rank gets its core
    back on average half of the shorter of the two later, ``min(since, slice) / 2``
    (`scheduler_slice`; ``since`` standing for the other rank's compute between its
    synchronisations).  Zero where the node runs at most as many ranks as cores."""
    since = np.asarray(since, np.float64)
    if not place.oversubscribed:
        return np.zeros(since.shape)
    return 0.5 * np.minimum(since, scheduler_slice(place))


def scaled_sync(sync: np.ndarray, members, place) -> np.ndarray:
    """(P,) the synchronisation cost of a step over `members` ranks of each rank's node
    (an array, or a function giving it: called only where needed): `sync` (each rank's
    cost, `Placement.sync_cost_for`) with its floor scaled to the step's wake-up rounds;
    `sync` may carry a second row, each rank's `subset_loss`, added where the step's group
    leaves some of the node's ranks out.  Unchanged where the node is not oversubscribed."""
    sync = np.asarray(sync, np.float64)
    lost = None
    if sync.ndim == 2:
        sync, lost = sync[0], sync[1]
    floor = floor_of(place)
    if floor <= 0.0 and (lost is None or not lost.any()):
        return sync
    if callable(members):
        members = members()
    if floor > 0.0:
        sync = sync + floor * (wake_rounds(members, place.machine.cores) / FIT_ROUNDS - 1.0)
    if lost is not None:
        node = place.node
        on_node = np.bincount(node)[node]  # the ranks of each rank's node
        sync = sync + np.where(np.asarray(members) < on_node, lost, 0.0)
    return sync


def intra_link(place):
    """The intra-node link of `place` (`Placement.intra`: the profile's link, no faster
    than the rank's share of the node's memory bandwidth) with its bytes at the rank's
    share of a core where the node runs more ranks than cores: a message within a node is
    copied by the ranks' own CPUs (MPICH's shared-memory cells, progressed inside MPI
    calls), and the profile's link was measured with a core per rank, while R ranks on C
    cores run C / R of the time each."""
    link = place.intra
    if not place.oversubscribed:
        return link
    share = place.machine.cores / place.local_ranks
    return replace(link, beta=max(link.beta, place.machine.intra.beta / share))
