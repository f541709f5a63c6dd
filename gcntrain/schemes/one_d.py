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

from dataclasses import dataclass

import numpy as np

from gcntrain.comm import volume as V
from gcntrain.comm.counters import Tally
from gcntrain.schemes.base import RowOps, TypedBlocks, broadcast_stages
from gcntrain.schemes.schedule import AGGREGATIONS, Call, plan_calls, reduction_volume


@dataclass
class Layout1D:
    """offsets: block row boundaries (P+1); symmetric: S == S^T (no transposed copy)."""

    offsets: np.ndarray
    symmetric: bool

    @property
    def size(self) -> int:
        return self.offsets.shape[0] - 1


def aggregate_volume(
    offsets: np.ndarray, rank: int, width: int, itemsize: int, stages=None
) -> np.ndarray:
    """Bytes/messages of one aggregation's broadcast stages for `rank` of the broadcasting
    communicator (one rank per block; all blocks unless `stages` is given), empty blocks
    skipped, as `gcntrain.schemes.base.broadcast_stages` runs them."""
    P = offsets.shape[0] - 1
    sizes = np.diff(offsets)
    vol = V.zero()
    for q in range(P) if stages is None else stages:
        if sizes[q]:
            vol += V.bcast(int(sizes[q]) * width * itemsize, rank, P, q)
    return vol


def call_volume(layout: Layout1D, rank: int, call: Call) -> np.ndarray:
    if call.op in AGGREGATIONS:
        return aggregate_volume(layout.offsets, rank, call.width, call.itemsize)
    return reduction_volume(call, rank, layout.size, rank, layout.size)


def plan(layout: Layout1D, rank: int, calls: list[Call]) -> Tally:
    """Exact per-phase tally of `calls` for `rank` (training only; setup: `setup_plan`)."""
    return plan_calls(calls, lambda c: call_volume(layout, rank, c))


class OneDOps(RowOps):
    """Runtime of the 1D scheme for one rank.

    Parameters
    ----------
    world : Comm
    offsets : int64 (P+1) block boundaries in the new numbering.
    fwd : (indptr, indices, data) local rows of S (global new-numbering column ids).
    bwd : same for S^T, or None when S is symmetric.
    rows : original ids of the local rows.
    """

    def __init__(self, world, offsets, fwd, bwd, rows):
        super().__init__(world, world, rows, int(offsets[-1]))
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.blocks = TypedBlocks(self.offsets, fwd, bwd)

    def _product(self, which: str, X: np.ndarray, phase: str) -> np.ndarray:
        X = np.ascontiguousarray(X)
        return broadcast_stages(
            self.world,
            self.blocks.get(which, X.dtype),
            np.diff(self.offsets),
            range(self.world.size),
            self.world.rank,
            X,
            phase,
        )
