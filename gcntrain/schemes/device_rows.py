"""Pieces of the row schemes' Ops on a device (issue 37, docs/gpu.md): the sums over nodes
and parameters kept on the device (`DeviceSums`) and the block-broadcast product of a group
of ranks (`DeviceBlockProducts`, 1.5D).

Communicators handed here are the backend's staged ones (``backend.staged(comm)``): device
arrays go through pinned host buffers around the counted communicator, so the counters see a
host run's messages and measured bytes equal the plan.  The backend is duck-typed: this
module imports no device code.
"""

from __future__ import annotations

import numpy as np

from gcntrain.comm.exchange import BcastStages
from gcntrain.model.phase import phase_key
from gcntrain.schemes.base import TypedBlocks


class DeviceSums:
    """Mixin of a `gcntrain.schemes.base.RowOps` on a device: the sums over nodes and of
    parameter gradients Allreduce a device array where they are given one (staged by
    ``reduce_comm``), a host array as the CPU path does.  Needs ``self.backend``,
    ``self.compute`` and ``self.reduce_comm``."""

    def _contiguous(self, a):
        """`a` C-ordered where it is (a device array stays on the device)."""
        if self.backend.is_device(a):
            return self.compute.xp.ascontiguousarray(a)
        return np.ascontiguousarray(a)

    def _sum_nodes(self, a, phase):
        return self.reduce_comm.allreduce(self._contiguous(a), phase_key(phase))

    def _sum_params(self, a, phase):
        return self.reduce_comm.allreduce(self._contiguous(a), phase_key(phase))


class DeviceBlockProducts:
    """One rank's sum over the stages of `group` of ``S_q @ X_q`` on a device, block q
    broadcast by member q of `comm` (the device form of
    `gcntrain.schemes.base.BlockBroadcasts`).

    Every live block of the group is received, in stage order, into one kept device
    operand per (width, dtype) by the in-turn broadcasts of `BcastStages.run` (this rank's
    own block copied into its slice on the device); then one device SpMM with the group's
    blocks joined in stage order (`TypedBlocks.joined`, made resident once per dtype): the
    sums of the CPU path's stages in their order.  The operand holds every live block at
    once (the CPU path keeps at most ``BCAST_DEPTH``); no node windows on the device.

    Parameters
    ----------
    comm : the group's staged communicator (rank = position in the group).
    stages : the scheme's `BcastStages` (row counts as sizes).
    group : this rank's group in `stages`.
    me : this rank's block (its X is X_me).
    blocks : `TypedBlocks` of the local rows of S and S^T.
    sizes : rows of every block.
    backend : the run's device backend.
    xp : its array module (``compute.xp``).
    """

    def __init__(
        self,
        comm,
        stages: BcastStages,
        group: int,
        me: int,
        blocks: TypedBlocks,
        sizes,
        backend,
        xp,
    ):
        self.comm = comm
        self.stages = stages
        self.group = int(group)
        self.me = int(me)
        self.blocks = blocks
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.backend = backend
        self.xp = xp
        self.live = [int(s) for s in stages.stages_of(self.group) if stages.nbytes[s] > 0]
        self.qs = tuple(int(stages.root[s]) for s in self.live)
        self.start = np.concatenate(([0], np.cumsum(self.sizes[list(self.qs)]))).astype(np.int64)
        self.index = {s: i for i, s in enumerate(self.live)}
        self._resident: dict = {}
        self._operands: dict = {}

    def _matrix(self, which: str, dtype):
        """The group's blocks joined in stage order, resident on the device (once)."""
        key = (which, np.dtype(dtype).str)
        if key not in self._resident:
            M = self.blocks.joined(which, dtype, self.qs)
            self._resident[key] = self.backend.csr(M.indptr, M.indices, M.data, M.shape)
        return self._resident[key]

    def product(self, which: str, X, phase: str):
        """Local rows of the group's part of ``S @ X`` ("f") or ``S^T @ X`` ("t"); zeros
        where the group has no live stage."""
        if not self.live:
            return self.xp.zeros((int(self.sizes[self.me]), X.shape[1]), X.dtype)
        start = self.start
        key = (int(X.shape[1]), X.dtype.str)
        operand = self._operands.get(key)
        if operand is None:
            operand = self.backend.empty((int(start[-1]), X.shape[1]), X.dtype)
            self._operands[key] = operand

        def provide(s: int):
            i = self.index[s]
            block = operand[start[i] : start[i + 1]]
            if self.qs[i] == self.me:
                block[...] = X
            return block

        self.stages.run(self.comm, self.group, provide, lambda s, buf: None, phase)
        return self.backend.spmm(self._matrix(which, X.dtype), operand)
