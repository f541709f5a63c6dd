"""One rank of the vertex cut on a device (issue 37, docs/gpu.md): `VertexCutDeviceOps`,
all three modes: exact (cd-0), delayed (cd-R) and local-only (0c).

The local support S and S^T are made resident once per dtype; a product is one device
SpMM, and the split vertices' tree synchronisation (`tree_sync`'s steps: the leaves' rows
gathered and sent to their roots, added there, the roots' rows sent back and written at the
leaves) runs on device arrays with its two Alltoallv through the backend's staged
communicator (`backend.staged`: the counters see a host run's messages, so measured bytes
equal the plan).  The tree's row indices, and cd-R's per bucket, are copied to the device
once.

cd-R runs `VertexCutOps._delayed` as it is (the in-flight queues, the drain before the
final evaluation, the drift pass's training view) with device rows: its gathers, adds and
writes are the `ArrayCompute` row functions, and its messages are the staged communicator's
non-blocking ``ialltoallv`` / ``wait``.  A posted message owns a pinned host copy of its
rows (`StagedComm.ialltoallv`: a fresh buffer per message, kept by its `Pending` until
completion, R epochs later), and what arrives is copied to the device when it is waited
for; a drained message (`_drain`) keeps its rows on the device.  0c exchanges nothing in
training passes.  Evaluation passes of every mode synchronise exactly (`_sync`).

On a GPU the scatter-add of the roots (``cupy.add.at``) adds a root's repeated rows by
atomics in no fixed order, so every mode there equals the CPU run to rounding only; on the
emulation (NumPy's ``add.at``, in order) it is bit for bit.
"""

from __future__ import annotations

from time import perf_counter

import numpy as np

from gcntrain.comm.communicator import Pending
from gcntrain.model.compute import compute_for
from gcntrain.model.phase import Phase, phase_key
from gcntrain.schemes.base import as_dtype
from gcntrain.schemes.device_rows import DeviceSums
from gcntrain.schemes.vertexcut.layout import CutLayout
from gcntrain.schemes.vertexcut.ops import VertexCutOps


class VertexCutDeviceOps(DeviceSums, VertexCutOps):
    """`VertexCutOps` (cd-0, cd-R and 0c) whose arrays stay on the device of `backend`
    (module docstring).  Parameters as `VertexCutOps`, plus the run's device `backend`."""

    def __init__(self, world, layout: CutLayout, k: int, S, trees, orig_ids, backend):
        super().__init__(backend.staged(world), layout, k, S, trees, orig_ids)
        self.backend = backend
        self.compute = compute_for(backend)
        leaf_idx, self._leaf_counts, root_idx, self._root_counts = trees.full()
        self._leaf = self._on_device(leaf_idx)
        self._root = self._on_device(root_idx)
        self._buckets = [  # cd-R: each bucket's rows on the device, its counts on the host
            (self._on_device(li), lc, self._on_device(ri), rc) for li, lc, ri, rc in trees.buckets
        ]
        self._resident: dict = {}

    def _on_device(self, idx):
        return self.backend.to_device(np.ascontiguousarray(idx, dtype=np.int64))

    # the delayed exchange's rows (`VertexCutOps._delayed`) on the device
    def _bucket(self, b: int):
        return self._buckets[b]

    def _gather_rows(self, X, idx):
        return self.compute.gather_rows(X, idx)

    def _add_rows(self, got, idx, X) -> None:
        self.compute.scatter_add_rows(got, idx, X)

    def _put_rows(self, got, idx, X) -> None:
        self.compute.scatter_rows(got, idx, X)

    def load_state(self, state, *, phase):
        """`VertexCutOps.load_state` (a resume), the rows of cd-R's exchanges in flight
        copied to the device (once each)."""
        super().load_state(state, phase=phase)
        for q in self._queues.values():
            for i, (e, stage, pending) in enumerate(q):
                rows = self.backend.to_device(pending.out)
                q[i] = (e, stage, Pending(None, rows, rows))

    def _matrix(self, which: str, dtype):
        """S ("f") or S^T ("t") in `dtype`, resident on the device (once)."""
        key = (which, np.dtype(dtype).str)
        if key not in self._resident:
            M = as_dtype([self._S if which == "f" else self._T], dtype)[0]
            self._resident[key] = self.backend.csr(M.indptr, M.indices, M.data, M.shape)
        return self._resident[key]

    def _sync(self, X, phase: Phase) -> None:
        """Exact tree synchronisation of the device rows of X in place (`tree_sync`'s steps,
        timed the same way; the clock does not wait for the device)."""
        c, key = self.compute, phase_key(phase)
        t = perf_counter()
        buf = c.gather_rows(X, self._leaf)
        self._timed("t_remote_pre", t, phase)
        t = perf_counter()
        got = self.world.alltoallv(buf, self._leaf_counts, self._root_counts, key)
        self._timed("t_remote_comm", t, phase)
        t = perf_counter()
        c.scatter_add_rows(got, self._root, X)
        buf = c.gather_rows(X, self._root)
        self._timed("t_remote_post", t, phase)
        t = perf_counter()
        got = self.world.alltoallv(buf, self._root_counts, self._leaf_counts, key)
        self._timed("t_remote_comm", t, phase)
        t = perf_counter()
        c.scatter_rows(got, self._leaf, X)
        self._timed("t_remote_post", t, phase)

    def aggregate(self, X, *, phase):
        X = self.compute.xp.ascontiguousarray(X)
        t = perf_counter()
        out = self.backend.spmm(self._matrix("f", X.dtype), X)
        self._timed("t_local_agg", t, phase)
        self._remote(out, phase, "fwd")
        return out

    def aggregate_t(self, X, *, phase):
        Y = X.copy(order="C")
        self._remote(Y, phase, "bwd")
        t = perf_counter()
        out = self.backend.spmm(self._matrix("t", Y.dtype), Y)
        self._timed("t_local_agg", t, phase)
        return out
