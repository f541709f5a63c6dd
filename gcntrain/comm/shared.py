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
asked for.  Every decision is agreed by all members (an Allreduce), so none waits in a
collective the others skip:

* `SharedRows.open` returns None (the caller keeps its messages) when the members do not all
  share a node, have no rows, or ``GCNTRAIN_NODE_WINDOWS=0`` is set on any of them;
* `SharedRows.next` returns None, on every member, when a slot cannot be made: the node's
  shared-memory file system (``/dev/shm``, where MPI places the segments) has too little
  room for both slots (tmpfs reserves nothing at allocation, so a full one would fault at
  the first write), MPI fails to allocate the window on any member, or lays the segments
  apart.  The caller then drops the windows and keeps its messages.

`free` releases the windows (collective; `Ops.close` calls it at the end of a run: MPICH
holds a communicator per window and fails after a few thousand).
"""

from __future__ import annotations

import os
import time

import numpy as np

from gcntrain.comm import volume as V
from gcntrain.comm.node import ranks_on_node
from gcntrain.environ import environ_set
from gcntrain.errors import InputError

#: environment variable: ``0`` keeps one-node exchanges on messages (for instance to rehearse
#: a multi-node job on one node)
ENV = "GCNTRAIN_NODE_WINDOWS"
#: where MPI libraries place node shared memory on Linux
SHM_DIR = "/dev/shm"

_ON = ("1", "yes", "on", "true")
_OFF = ("0", "no", "off", "false")


def windows_enabled(environ=os.environ) -> bool:
    """``GCNTRAIN_NODE_WINDOWS``: on unless ``0`` / ``no`` / ``off`` / ``false``; any other
    value than those and ``1`` / ``yes`` / ``on`` / ``true`` is an `InputError`."""
    value = environ.get(ENV, "1").strip().lower()
    if value not in _ON + _OFF:
        raise InputError(f"{ENV} must be 1 or 0 (on or off), got {environ.get(ENV)!r}")
    return value in _ON


def windows_set(on: bool, environ=os.environ):
    """``GCNTRAIN_NODE_WINDOWS`` set to 1 or 0 while inside (in this process and the runs it
    starts), restored after."""
    return environ_set({ENV: "1" if on else "0"}, environ)


def shm_free_bytes(path: str = SHM_DIR) -> float:
    """Free bytes of the node's shared-memory file system (infinite where it has none)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return float("inf")
    return float(st.f_bavail) * float(st.f_frsize)


def allocate_window(comm, nbytes: int):
    """This member's `nbytes`-byte segment of a new shared-memory window over `comm`
    (collective; a module function so that tests can make it fail)."""
    return comm.MPI.Win.Allocate_shared(int(nbytes), 1, comm=comm.comm)


class SharedRows:
    """Double-buffered arrays of ``sum(counts)`` rows whose rows ``offsets[r]:offsets[r+1]``
    live in member r's segment of a shared-memory window over `comm` (a counted `Comm` whose
    members share one node).  Use `open`."""

    SLOTS = 2

    def __init__(self, comm, counts: np.ndarray):
        self.comm = comm
        self.counts = np.asarray(counts, dtype=np.int64)
        self.offsets = np.concatenate(([0], np.cumsum(self.counts))).astype(np.int64)
        self._slots: list = [None] * self.SLOTS  # (win, row bytes, buffer)
        self._turn = 0

    @classmethod
    def open(cls, comm, counts) -> SharedRows | None:
        """A `SharedRows` over `comm`, or None where windows do not apply (module docstring).
        Collective over `comm`; every member gets the same answer."""
        counts = np.asarray(counts, dtype=np.int64)
        if comm.size < 2 or counts.sum() == 0:
            return None
        ok = ranks_on_node(comm) == comm.size and windows_enabled()
        return cls(comm, counts) if cls._all(comm, ok) else None

    @staticmethod
    def _all(comm, flag: bool) -> bool:
        """Whether `flag` holds on every member (collective)."""
        return comm.comm.allreduce(int(bool(flag)), op=comm.MPI.MIN) == 1

    # -- windows ----------------------------------------------------------------------------
    def _allocate(self, slot: int, width: int, dtype: np.dtype) -> bool:
        """(Re)allocate `slot` for rows of `width` elements of `dtype`; False, on every
        member, where it cannot be (module docstring).  Collective."""
        MPI = self.comm.MPI
        row = int(width) * dtype.itemsize
        total = int(self.offsets[-1]) * row
        self._release(slot)
        if not self._all(self.comm, shm_free_bytes() >= self.SLOTS * total):
            return False
        try:
            win = allocate_window(self.comm, int(self.counts[self.comm.rank]) * row)
        except MPI.Exception:
            win = None
        if not self._all(self.comm, win is not None):
            return False  # a member holds no window to free with the others: keep them
        base, apart = None, False
        for r in range(self.comm.size):  # the segments must follow each other
            if self.counts[r] == 0:
                continue
            buf, _ = win.Shared_query(r)
            addr = buf.address - int(self.offsets[r]) * row
            base = addr if base is None else base
            apart |= addr != base
        if not self._all(self.comm, not apart):
            win.Free()
            return False
        win.Lock_all(MPI.MODE_NOCHECK)
        whole = MPI.buffer.fromaddress(base, total) if total else bytearray(0)
        self._slots[slot] = (win, row, whole)
        return True

    def _release(self, slot: int) -> None:
        old = self._slots[slot]
        if old is not None:
            self._slots[slot] = None
            old[0].Unlock_all()
            old[0].Free()

    def next(self, width: int, dtype) -> np.ndarray | None:
        """The next slot as a ``(sum(counts), width)`` array of `dtype` (collective when it
        must grow), or None on every member when it cannot be made; write this member's
        rows (`mine`), then `publish`."""
        dtype = np.dtype(dtype)
        self._turn = slot = (self._turn + 1) % self.SLOTS
        need = int(width) * dtype.itemsize
        cur = self._slots[slot]
        if (cur is None or cur[1] < need) and not self._allocate(slot, width, dtype):
            return None
        whole = self._slots[slot][2]
        n = int(self.offsets[-1])
        return np.frombuffer(whole, dtype=dtype, count=n * int(width)).reshape(n, int(width))

    def share(self, X: np.ndarray, phase: str, mine: bool = True) -> np.ndarray | None:
        """`next` at X's width and dtype, X written into this member's segment when `mine`
        (False: the member has no rows here), then `publish`: the whole array, every
        member's rows; None on every member (and the windows freed) where the slot cannot
        be made."""
        array = self.next(X.shape[1], X.dtype)
        if array is None:
            self.free()
            return None
        if mine:
            np.copyto(self.mine(array), X)
        self.publish(phase)
        return array

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
        self.comm.tally.add(phase, V.zero(), "wait", time.perf_counter() - t0)

    def free(self) -> None:
        """Release the windows (collective); safe to call twice."""
        for k in range(self.SLOTS):
            self._release(k)
