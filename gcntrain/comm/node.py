"""Node-level facts of a job: ranks sharing a node, and the Numba thread count per rank."""

from __future__ import annotations

import os

from gcntrain.comm.env import available_cores, is_bound


def ranks_on_node(comm) -> int:
    """Number of ranks of `comm` (a counted Comm) on this rank's shared-memory node."""
    if comm.size == 1:
        return 1
    local = comm.comm.Split_type(comm.MPI.COMM_TYPE_SHARED)
    try:
        return local.Get_size()
    finally:
        local.Free()


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
