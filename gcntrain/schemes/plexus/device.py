"""One rank of Plexus on a device (issue 37, docs/gpu.md): `PlexusDeviceOps`.

Every array of the training loop stays on the device of the run's backend.  `PlexusOps`
is written over ``self.compute``, `_contiguous` and ``compute.xp``, so its own code runs
here on device arrays: the weight blocks Allgathered, the products formed by the
backend's GEMM and Allreduced, the self-term moves gathering and placing their rows on the
device, the logits' column chunks joined on the device for the softmax cross-entropy and
the argmax.  What differs is kept here: every communicator is the backend's staged one
(``backend.staged``: pinned host buffers around the counted communicator, so the counters
see the CPU run's messages and measured bytes equal the plan); the shards of S (and their
transposes) are made resident once per dtype, one resident matrix per block of
``--block-rows`` rows (the CPU path's windows of the row pointer), each multiplied by the
backend's SpMM; the index arrays of the moves are copied to the device once.

On the host emulation each product is the CPU path's kernel on the same operands, so a run
equals the CPU run bit for bit; on a GPU the SpMM (cuSPARSE), the GEMM (cuBLAS) and the
column sums of the bias gradient add in other orders, so a run equals the CPU run to
rounding only.  The backend is duck-typed: this module imports no device code.
"""

from __future__ import annotations

import numpy as np

from gcntrain.model.compute import compute_for
from gcntrain.schemes.plexus.layout import PlexusLayout
from gcntrain.schemes.plexus.ops import PlexusOps, row_blocks
from gcntrain.schemes.plexus.placement import Place


class PlexusDeviceOps(PlexusOps):
    """`PlexusOps` whose arrays stay on the device of `backend` (module docstring).

    Parameters
    ----------
    world : the counted world communicator.
    layout : the run's `PlexusLayout`.
    axis_comms : grid axis -> the counted communicator of the ranks differing only there.
    shards : key -> this rank's shard of S (float64 CSR, host), as `PlexusOps`.
    backend : the run's device backend (`gcntrain.device.backend`).
    """

    def __init__(self, world, layout: PlexusLayout, axis_comms: dict, shards: dict, backend):
        staged = {ax: backend.staged(comm) for ax, comm in axis_comms.items()}
        super().__init__(backend.staged(world), layout, staged, shards)
        self.backend = backend
        self.compute = compute_for(backend)
        #: (shard key, transposed, dtype) -> [(lo, hi, resident block of rows lo..hi)]
        self._resident: dict = {}
        #: placement -> (rows sent, where the received rows go, rows per member), the two
        #: index arrays on the device
        self._device_moves: dict = {}

    def _blocks(self, p: Place, transpose: bool, dtype) -> list:
        """The row blocks of the shard at p (or of its transpose) in `dtype`, each made
        resident once: the windows of the row pointer the CPU path multiplies."""
        key = self.layout.shard_key(p)
        k = (key, transpose, np.dtype(dtype).str)
        if k not in self._resident:
            M = self._matrix(key, transpose, dtype)
            self._typed.pop(k, None)  # the host copy in this dtype is not kept
            blocks = []
            for lo, hi in row_blocks(M.shape[0], self.layout.block_rows):
                a, b = int(M.indptr[lo]), int(M.indptr[hi])
                ip = np.ascontiguousarray(M.indptr[lo : hi + 1] - a)
                shape = (hi - lo, M.shape[1])
                blocks.append((lo, hi, self.backend.csr(ip, M.indices[a:b], M.data[a:b], shape)))
            self._resident[k] = blocks
        return self._resident[k]

    def _block_product(self, block, X):
        """A resident block times X: the backend's SpMM."""
        return self.backend.spmm(block, X)

    def _move_index(self, p: Place) -> tuple:
        """`_move_plan` with its two index arrays copied to the device the first time."""
        dev = self._device_moves.get(p)
        if dev is None:
            local, order, counts = self._move_plan(p)
            to = self.backend.to_device
            dev = (to(np.ascontiguousarray(local)), to(np.ascontiguousarray(order)), counts)
            self._device_moves[p] = dev
        return dev
