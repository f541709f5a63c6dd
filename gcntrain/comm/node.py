"""Node-level facts of a job: ranks sharing a node, and the Numba thread count per rank."""

from __future__ import annotations

import os

import numpy as np

from gcntrain.comm.env import available_cores, is_bound, node_cores


def ranks_on_node(comm) -> int:
    """Number of ranks of `comm` (a counted Comm) on this rank's shared-memory node."""
    if comm.size == 1:
        return 1
    local = comm.comm.Split_type(comm.MPI.COMM_TYPE_SHARED)
    try:
        return local.Get_size()
    finally:
        local.Free()


def working_ranks(comm, cores: int | None = None) -> list[int]:
    """The ranks of `comm` (a counted Comm) that each have a core to work on: on every node,
    its first c ranks in rank order, c being the cores the node's ranks may run on together
    (the union of their affinity masks: a rank bound to one core adds that core, an unbound
    one the node's cores).  Where the launcher placed more ranks on a node than it has
    cores, work dealt to all of them shares the same cores and multiplies each rank's fixed
    costs (reading the graph, loading the kernels) for no gain.  `cores` replaces c on every
    node (tests).  Collective; the same list on every rank."""
    if comm.size == 1:
        return [0]
    local = comm.comm.Split_type(comm.MPI.COMM_TYPE_SHARED)
    try:
        if cores is None:
            width = node_cores()
            mask = np.zeros(width, dtype=np.uint8)
            mine = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(width)
            mask[[c for c in mine if c < width]] = 1
            local.Allreduce(comm.MPI.IN_PLACE, mask, op=comm.MPI.MAX)
            cores = int(mask.sum())
        works = local.Get_rank() < max(1, int(cores))
    finally:
        local.Free()
    flags = np.zeros(comm.size, dtype=np.int64)
    flags[comm.rank] = works
    return np.flatnonzero(comm.allreduce(flags, "control")).tolist()


def auto_threads(comm, requested: int | None = None, per_node: int | None = None) -> int:
    """Set and return Numba's thread count for this rank.

    `requested` (``--threads``) wins, then ``NUMBA_NUM_THREADS``; then, for a rank the launcher
    bound to some cores, those cores; otherwise cores / ranks on the node (at least 1), so
    unbound ranks do not each spin up threads on every core.
    """
    from gcntrain.kernels.threads import set_threads

    if requested is not None or os.environ.get("NUMBA_NUM_THREADS"):
        return set_threads(requested)
    if is_bound():  # the launcher gave this rank its own cores: use them all
        return set_threads(available_cores())
    if per_node is None:
        per_node = ranks_on_node(comm)
    return set_threads(max(1, available_cores() // max(1, per_node)))
