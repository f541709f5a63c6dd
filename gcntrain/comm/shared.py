"""Rows shared through node memory: MPI-3 shared-memory windows over the members of one node.

Within a node a message is a copy (the receiver's, from the sender's memory) on top of the
sender's own copy into its operand.  A `SharedRows` lets the members of a communicator that
share one node publish their rows of a 2-D array in place instead: member r writes its rows
into its own segment, `publish` fences, and every member then reads the whole array, all
members' rows stacked in member order, straight from memory.  Two slots alternate, so one
fence per product suffices: a member writes slot k again only after the next product's fence,
which every member reaches only once done reading slot k.

The windows are allocated collectively (every member calls `next` in the same sequence, with
the same width and dtype, as SPMD products do); a slot is reallocated when a wider array is
asked for.  `SharedRows.open` returns None (and the caller keeps its messages) when the members
do not share a node, when a segment would be empty everywhere, when MPI cannot allocate the
windows or lays the segments out apart, or when ``GCNTRAIN_NODE_WINDOWS=0`` asks for messages.
"""

from __future__ import annotations

import os
import time

import numpy as np

#: environment variable: ``0`` keeps one-node exchanges on messages (for instance to smoke-test
#: the multi-node path on one node)
ENV = "GCNTRAIN_NODE_WINDOWS"


def windows_enabled(environ=os.environ) -> bool:
    """False when ``GCNTRAIN_NODE_WINDOWS`` is ``0`` / ``no`` / ``off`` / ``false``."""
    return environ.get(ENV, "1").strip().lower() not in ("0", "no", "off", "false")


class SharedRows:
    """Double-buffered arrays of ``sum(counts)`` rows whose rows ``offsets[r]:offsets[r+1]``
    live in member r's segment of a shared-memory window over `comm` (a counted `Comm` whose
    members share one node).  Use `open`."""

    SLOTS = 2

    def __init__(self, comm, counts: np.ndarray):
        self.comm = comm
        self.counts = np.asarray(counts, dtype=np.int64)
        self.offsets = np.concatenate(([0], np.cumsum(self.counts))).astype(np.int64)
        self._slots: list = [None] * self.SLOTS  # (win, row bytes, array)
        self._turn = 0

    @classmethod
    def open(cls, comm, counts) -> SharedRows | None:
        """A `SharedRows` over `comm`, or None where windows do not apply (module docstring).
        Collective over `comm`; every member gets the same answer."""
        counts = np.asarray(counts, dtype=np.int64)
        if comm.size < 2 or not windows_enabled() or counts.sum() == 0:
            return None
        MPI = comm.MPI
        node = comm.comm.Split_type(MPI.COMM_TYPE_SHARED)
        try:
            together = node.Get_size() == comm.size
        finally:
            node.Free()
        if comm.comm.allreduce(int(together), op=MPI.MIN) == 0:
            return None
        rows = cls(comm, counts)
        try:
            rows._allocate(0, 1, np.dtype(np.float32))  # a probe: can MPI lay them out?
            ok = True
        except (MPI.Exception, _NotContiguous):
            ok = False
        if comm.comm.allreduce(int(ok), op=MPI.MIN) == 0:
            rows.free()
            return None
        return rows

    # -- windows ----------------------------------------------------------------------------
    def _allocate(self, slot: int, width: int, dtype: np.dtype) -> None:
        """(Re)allocate `slot` for rows of `width` elements of `dtype` (collective)."""
        MPI = self.comm.MPI
        row = int(width) * dtype.itemsize
        old = self._slots[slot]
        if old is not None:
            old[0].Unlock_all()
            old[0].Free()
            self._slots[slot] = None
        mine = int(self.counts[self.comm.rank]) * row
        win = MPI.Win.Allocate_shared(mine, 1, comm=self.comm.comm)
        try:
            base = None
            for r in range(self.comm.size):  # the segments must follow each other
                if self.counts[r] == 0:
                    continue
                buf, _ = win.Shared_query(r)
                addr = buf.address - int(self.offsets[r]) * row
                if base is None:
                    base = addr
                elif addr != base:
                    raise _NotContiguous
            total = int(self.offsets[-1]) * row
            whole = MPI.buffer.fromaddress(base, total) if total else bytearray(0)
        except BaseException:
            win.Free()
            raise
        win.Lock_all(MPI.MODE_NOCHECK)
        self._slots[slot] = (win, row, whole)

    def next(self, width: int, dtype) -> np.ndarray:
        """The next slot as a ``(sum(counts), width)`` array of `dtype` (collective when it
        must grow); write this member's rows (`mine`), then `publish`."""
        dtype = np.dtype(dtype)
        self._turn = slot = (self._turn + 1) % self.SLOTS
        need = int(width) * dtype.itemsize
        cur = self._slots[slot]
        if cur is None or cur[1] < need:
            self._allocate(slot, width, dtype)
        whole = self._slots[slot][2]
        n = int(self.offsets[-1])
        return np.frombuffer(whole, dtype=dtype, count=n * int(width)).reshape(n, int(width))

    def mine(self, array: np.ndarray) -> np.ndarray:
        """This member's rows of an array from `next`."""
        r = self.comm.rank
        return array[self.offsets[r] : self.offsets[r + 1]]

    def publish(self, phase: str) -> None:
        """Make every member's writes to the current slot visible to all (a memory fence, a
        barrier over the members, a fence), timed as ``wait``."""
        t0 = time.perf_counter()
        win = self._slots[self._turn][0]
        win.Sync()
        self.comm.comm.Barrier()
        win.Sync()
        self.comm.tally.add(phase, np.zeros(4, dtype=np.int64), "wait", time.perf_counter() - t0)

    def free(self) -> None:
        """Release the windows (collective); safe to call twice."""
        for k, s in enumerate(self._slots):
            if s is not None:
                s[0].Unlock_all()
                s[0].Free()
                self._slots[k] = None


class _NotContiguous(Exception):
    """MPI placed the members' segments apart (a non-contiguous shared window)."""
