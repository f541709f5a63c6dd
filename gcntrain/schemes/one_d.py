"""CAGNET 1D block-row scheme (Algorithm 1 of the CAGNET paper).

S and H are distributed in block rows (ragged blocks allowed: any partition renumbered part by
part).  ``S @ X``: for every block q in turn, its owner broadcasts X_q (stage q) and every rank
adds ``S_pq @ X_q``; stages of empty blocks are skipped.  ``S^T @ X`` runs the same algorithm
on the rows of ``S^T`` (equal to S when S is symmetric; built once by an Alltoallv otherwise,
as CAGNET stores A and A^T).  Weight gradients and metrics: Allreduce over all ranks.

Words received per aggregation by rank p: ``(n - n_p) * f`` (the (P-1)/P * n * f of the paper
for equal blocks).
"""

from __future__ import annotations

import numpy as np

from gcntrain.comm.exchange import BcastStages, Groups
from gcntrain.model.compute import compute_for
from gcntrain.schemes.base import (
    BlockBroadcasts,
    BroadcastRowScheme,
    RowLayout,
    RowOps,
    TypedBlocks,
    broadcasts_ahead,
    row_setup,
)
from gcntrain.schemes.device_rows import DeviceBlockProducts, DeviceSums


def broadcast_stages(layout: RowLayout, unit_bytes: int) -> BcastStages:
    """The 1D aggregation: block q's owner broadcasts its ``sizes[q] * unit_bytes`` bytes to
    the world, q = 0..P-1 (run time: unit_bytes = 1, i.e. row counts)."""
    P = layout.size
    q = np.arange(P, dtype=np.int64)
    return BcastStages(
        Groups.world(P), np.zeros(P, np.int64), q, layout.sizes * unit_bytes, window=True
    )


class OneDOps(RowOps):
    """Runtime of the 1D scheme for one rank.

    Parameters
    ----------
    world : Comm
    layout : RowLayout (one rank per block).
    fwd : (indptr, indices, data) local rows of S (global new-numbering column ids).
    bwd : same for S^T, or None when S is symmetric.
    rows : original ids of the local rows.
    """

    def __init__(self, world, layout: RowLayout, fwd, bwd, rows):
        super().__init__(world, world, rows, int(layout.offsets[-1]))
        self.layout = layout
        self.broadcasts = BlockBroadcasts(
            world,
            broadcast_stages(layout, 1),
            0,
            world.rank,
            TypedBlocks(layout.offsets, fwd, bwd),
            layout.sizes,
            self.scratch,
            broadcasts_ahead(world),
        )

    def _product(self, which: str, X: np.ndarray, phase: str) -> np.ndarray:
        return self.broadcasts.product(which, X, phase)


class OneDDeviceOps(DeviceSums, RowOps):
    """The 1D scheme on a device (docs/gpu.md): every array of the loop stays on the device;
    the block broadcasts (`DeviceBlockProducts` over the world, one group) and the sums
    (`DeviceSums`) go through the backend's staged communicator (`backend.staged`: pinned
    host buffers around the counted one, so the counters see a host run's messages and
    measured bytes equal the plan).  No node windows on the device."""

    def __init__(self, world, layout: RowLayout, fwd, bwd, rows, backend):
        comm = backend.staged(world)
        super().__init__(comm, comm, rows, int(layout.offsets[-1]))
        self.compute = compute_for(backend)
        self.backend = backend
        self.layout = layout
        self.products = DeviceBlockProducts(
            comm,
            broadcast_stages(layout, 1),
            0,
            comm.rank,
            TypedBlocks(layout.offsets, fwd, bwd),
            layout.sizes,
            backend,
            self.compute.xp,
        )

    def _product(self, which: str, X, phase: str):
        return self.products.product(which, X, phase)


class OneD(BroadcastRowScheme):
    name = "1d"
    plan_cost = 0.4  # measured: 11 ms
    summary = "CAGNET 1D block rows: every block broadcast in turn (Algorithm 1)"

    ops_class = OneDOps

    def setup(self, world, layout: RowLayout, local, kind: str, backend=None):
        """The row setup, then `OneDOps` on the host (`backend` None or the host's) or
        `OneDDeviceOps` on the device of `backend` (`gcntrain.device.backend`)."""
        if backend is None or getattr(backend, "name", "cpu") == "cpu":
            return super().setup(world, layout, local, kind)
        fwd, bwd = row_setup(world, world, layout, local, kind)
        return OneDDeviceOps(world, layout, fwd, bwd, local.orig_ids, backend)

    def broadcast_stages(self, layout: RowLayout) -> BcastStages:
        return broadcast_stages(layout, 1)

    def steps_aggregate(self, ctx, call) -> list:
        return [broadcast_stages(ctx.layout, call.shape(0)[1] * call.itemsize(0))]

    steps_aggregate_t = steps_aggregate
