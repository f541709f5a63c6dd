"""Counted wrappers over mpi4py buffer collectives: the only module that moves data over MPI.

Every call names a *phase* (e.g. ``"L0.fwd"``, ``"L1.wgrad"``, ``"setup"``); bytes and messages
are tallied per phase with the conventions of `gcntrain.comm.volume`, seconds per collective
kind.  Sub-communicators made with `split` share the tally of their parent, so a rank's tally
covers everything it sent on any communicator.

Device arrays (CUDA-aware MPI, `gcntrain.device.staging.StagedComm` with ``direct``) pass to
mpi4py unconverted, which reads buffers exposing ``__cuda_array_interface__`` or DLPack; the
caller hands them C-contiguous, with the receive buffers allocated on the device (``out``),
and counts are taken from their shapes and dtypes as for host arrays.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gcntrain.comm import volume as V
from gcntrain.comm.counters import Tally
from gcntrain.comm.mpi import load_mpi


def _contiguous(a):
    """`a` C-ordered: a host array through NumPy, a device array (one exposing
    ``__cuda_array_interface__``: CuPy) as it is (`StagedComm` made it contiguous)."""
    if isinstance(a, np.ndarray) or not hasattr(a, "__cuda_array_interface__"):
        return np.ascontiguousarray(a)
    return a  # pragma: no cover - NEVER RUN on a GPU (docs/gpu.md)


@dataclass
class Pending:
    """A posted non-blocking exchange: its request (None: nothing in flight), the receive
    buffer, and the send buffer, kept alive until completion."""

    request: object
    out: np.ndarray
    send: np.ndarray


class Comm:
    """A counted communicator.

    Parameters
    ----------
    mpicomm : mpi4py communicator, optional
        Defaults to ``MPI.COMM_WORLD``.
    tally : Tally, optional
        Shared tally (sub-communicators pass their parent's).
    """

    def __init__(self, mpicomm=None, tally: Tally | None = None):
        self.MPI = load_mpi()
        self.comm = self.MPI.COMM_WORLD if mpicomm is None else mpicomm
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self.tally = Tally() if tally is None else tally

    # -- bookkeeping -------------------------------------------------------------------
    def _count(self, phase: str, kind: str, vol: np.ndarray, t0: float) -> None:
        self.tally.add(phase, vol, kind, time.perf_counter() - t0)

    @staticmethod
    def _nbytes(a: np.ndarray) -> int:
        return int(a.nbytes)

    # -- communicators -----------------------------------------------------------------
    def split(self, color: int, key: int | None = None) -> Comm:
        sub = self.comm.Split(int(color), self.rank if key is None else int(key))
        return Comm(sub, self.tally)

    def barrier(self) -> None:
        self.comm.Barrier()

    # -- collectives ---------------------------------------------------------------------
    def bcast(self, buf: np.ndarray, root: int, phase: str) -> np.ndarray:
        """In-place broadcast of a contiguous array from `root`."""
        t0 = time.perf_counter()
        if self.size > 1 and buf.size:
            self.comm.Bcast(buf, root=root)
        self._count(phase, "bcast", V.bcast(self._nbytes(buf), self.rank, self.size, root), t0)
        return buf

    def allreduce(
        self, sendbuf: np.ndarray, phase: str, out: np.ndarray | None = None, op: str = "sum"
    ) -> np.ndarray:
        t0 = time.perf_counter()
        sendbuf = _contiguous(sendbuf)
        if out is None:
            out = np.empty_like(sendbuf)
        if self.size > 1:
            mop = {"sum": self.MPI.SUM, "max": self.MPI.MAX, "min": self.MPI.MIN}[op]
            self.comm.Allreduce(sendbuf, out, op=mop)
        else:
            out[...] = sendbuf
        vol = V.allreduce(sendbuf.size, sendbuf.itemsize, self.rank, self.size)
        self._count(phase, "allreduce", vol, t0)
        return out

    def allgatherv(
        self, sendbuf: np.ndarray, counts: Sequence[int], phase: str, out: np.ndarray | None = None
    ) -> np.ndarray:
        """Gather variable-size blocks along axis 0 (`counts` = rows per rank)."""
        t0 = time.perf_counter()
        sendbuf = _contiguous(sendbuf)
        counts = np.asarray(counts, dtype=np.int64)
        row = int(np.prod(sendbuf.shape[1:], dtype=np.int64))
        if out is None:
            out = np.empty((int(counts.sum()),) + sendbuf.shape[1:], dtype=sendbuf.dtype)
        elems = counts * row
        if self.size > 1:
            displ = np.concatenate(([0], np.cumsum(elems)[:-1]))
            self.comm.Allgatherv(sendbuf, [out, (elems, displ)])
        else:
            out[...] = sendbuf
        vol = V.allgatherv(elems * sendbuf.itemsize, self.rank)
        self._count(phase, "allgather", vol, t0)
        return out

    def gatherv(self, sendbuf: np.ndarray, counts: Sequence[int], root: int, phase: str, out=None):
        """Gather variable-size blocks (rows) at `root` (into `out` where given); other
        ranks get None."""
        t0 = time.perf_counter()
        sendbuf = _contiguous(sendbuf)
        counts = np.asarray(counts, dtype=np.int64)
        row = int(np.prod(sendbuf.shape[1:], dtype=np.int64))
        elems = counts * row
        if self.rank != root:
            out = None
        elif out is None:
            out = np.empty((int(counts.sum()),) + sendbuf.shape[1:], dtype=sendbuf.dtype)
        if self.size > 1:
            displ = np.concatenate(([0], np.cumsum(elems)[:-1]))
            self.comm.Gatherv(
                sendbuf, [out, (elems, displ)] if out is not None else None, root=root
            )
        else:
            out[...] = sendbuf
        self._count(phase, "gather", V.gatherv(elems * sendbuf.itemsize, self.rank, root), t0)
        return out

    def alltoallv(
        self,
        sendbuf: np.ndarray,
        sendcounts: Sequence[int],
        recvcounts: Sequence[int],
        phase: str,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """Personalised exchange along axis 0 (counts in rows per destination/source)."""
        t0 = time.perf_counter()
        sendbuf = _contiguous(sendbuf)
        row = int(np.prod(sendbuf.shape[1:], dtype=np.int64))
        sc = np.asarray(sendcounts, dtype=np.int64) * row
        rc = np.asarray(recvcounts, dtype=np.int64) * row
        if out is None:
            out = np.empty((int(rc.sum()) // max(row, 1),) + sendbuf.shape[1:], dtype=sendbuf.dtype)
        if self.size > 1:
            sd = np.concatenate(([0], np.cumsum(sc)[:-1]))
            rd = np.concatenate(([0], np.cumsum(rc)[:-1]))
            self.comm.Alltoallv([sendbuf, (sc, sd)], [out, (rc, rd)])
        else:
            out[...] = sendbuf
        vol = V.alltoallv(sc * sendbuf.itemsize, rc * sendbuf.itemsize, self.rank)
        self._count(phase, "alltoall", vol, t0)
        return out

    def ialltoallv(
        self,
        sendbuf: np.ndarray,
        sendcounts: Sequence[int],
        recvcounts: Sequence[int],
        phase: str,
        out: np.ndarray | None = None,
    ) -> Pending:
        """Non-blocking `alltoallv` (MPI_Ialltoallv), counted when posted, received into
        `out` where given; `wait` on the returned `Pending` before reading its ``out``."""
        t0 = time.perf_counter()
        sendbuf = _contiguous(sendbuf)
        row = int(np.prod(sendbuf.shape[1:], dtype=np.int64))
        sc = np.asarray(sendcounts, dtype=np.int64) * row
        rc = np.asarray(recvcounts, dtype=np.int64) * row
        if out is None:
            shape = (int(rc.sum()) // max(row, 1),) + sendbuf.shape[1:]
            out = np.empty(shape, dtype=sendbuf.dtype)
        req = None
        if self.size > 1:
            sd = np.concatenate(([0], np.cumsum(sc)[:-1]))
            rd = np.concatenate(([0], np.cumsum(rc)[:-1]))
            req = self.comm.Ialltoallv([sendbuf, (sc, sd)], [out, (rc, rd)])
        else:
            out[...] = sendbuf
        vol = V.alltoallv(sc * sendbuf.itemsize, rc * sendbuf.itemsize, self.rank)
        self._count(phase, "alltoall", vol, t0)
        return Pending(req, out, sendbuf)

    def wait(self, pending: Pending, phase: str) -> np.ndarray:
        """Complete a non-blocking exchange; returns its received buffer."""
        t0 = time.perf_counter()
        if pending.request is not None:
            pending.request.Wait()
            pending.request = None
        self.tally.add(phase, V.zero(), "wait", time.perf_counter() - t0)
        return pending.out

    def reduce_scatterv(
        self, sendbuf: np.ndarray, counts: Sequence[int], phase: str, op: str = "sum", out=None
    ) -> np.ndarray:
        """Sum `sendbuf` (1-D, the concatenation of one block per rank, block q of
        ``counts[q]`` elements) over ranks; return this rank's summed block (in `out`
        where given)."""
        t0 = time.perf_counter()
        sendbuf = _contiguous(sendbuf).reshape(-1)
        counts = np.asarray(counts, dtype=np.int64)
        if out is None:
            out = np.empty(int(counts[self.rank]), dtype=sendbuf.dtype)
        if self.size > 1:
            mop = {"sum": self.MPI.SUM, "max": self.MPI.MAX, "min": self.MPI.MIN}[op]
            self.comm.Reduce_scatter(sendbuf, out, recvcounts=counts, op=mop)
        else:
            out[...] = sendbuf
        vol = V.reduce_scatterv(counts * sendbuf.itemsize, self.rank)
        self._count(phase, "reduce_scatter", vol, t0)
        return out

    def alltoall_counts(self, counts: np.ndarray, phase: str) -> np.ndarray:
        """Exchange one int64 per rank pair (how much each will send to each)."""
        counts = np.ascontiguousarray(counts, dtype=np.int64)
        return self.alltoallv(
            counts, np.ones(self.size, np.int64), np.ones(self.size, np.int64), phase
        )

    def route(self, dst: np.ndarray, payloads: Sequence[np.ndarray], phase: str):
        """Send row k of every payload to rank ``dst[k]`` (rows in a stable order by
        destination): one Alltoall of counts, then one Alltoallv per payload.  Returns
        (the received payloads, in source order; the order applied; the send and receive
        row counts), so a caller can send further payloads with the same counts."""
        dst = np.asarray(dst, dtype=np.int64)
        order = np.argsort(dst, kind="stable")
        send = np.bincount(dst, minlength=self.size).astype(np.int64)
        recv = self.alltoall_counts(send, phase)
        got = [
            self.alltoallv(np.ascontiguousarray(np.asarray(p)[order]), send, recv, phase)
            for p in payloads
        ]
        return got, order, send, recv

    # -- point to point ------------------------------------------------------------------
    def isend(self, buf: np.ndarray, dest: int, tag: int, phase: str):
        t0 = time.perf_counter()
        req = self.comm.Isend(buf, dest=dest, tag=tag)
        self._count(phase, "p2p", V.send(self._nbytes(buf)), t0)
        return req

    def irecv(self, buf: np.ndarray, source: int, tag: int, phase: str):
        t0 = time.perf_counter()
        req = self.comm.Irecv(buf, source=source, tag=tag)
        self._count(phase, "p2p", V.recv(self._nbytes(buf)), t0)
        return req

    def ibcast_flat(self, buf: np.ndarray, root: int, tag: int, phase: str) -> list:
        """A broadcast of a contiguous array as point-to-point messages, non-blocking: `root`
        sends `buf` to every other member, the others receive into theirs; returns the
        requests (`waitall` them before reading, or at the root changing, `buf`).  Counted
        as a broadcast when posted (the flat convention of `gcntrain.comm.volume` is this
        pattern).  Unlike MPI_Ibcast, whose schedule waits for the root's next MPI call, a
        receiver gets the data while the root computes (a single copy within a node)."""
        t0 = time.perf_counter()
        reqs = []
        if self.size > 1 and buf.size:
            if self.rank == root:
                reqs = [self.comm.Isend(buf, d, tag) for d in range(self.size) if d != root]
            else:
                reqs = [self.comm.Irecv(buf, root, tag)]
        self._count(phase, "bcast", V.bcast(self._nbytes(buf), self.rank, self.size, root), t0)
        return reqs

    def count_shared(self, vol: np.ndarray, kind: str, phase: str) -> None:
        """Tally the logical volume `vol` of an exchange whose data went through a node-shared
        window (`gcntrain.comm.shared`) instead of messages: the bytes and messages those
        messages would count (the conventions of `gcntrain.comm.volume` are logical), no
        time (the window's fence is timed as ``wait``)."""
        self.tally.add(phase, vol, kind, 0.0)

    def waitany(self, reqs: list, phase: str) -> int:
        t0 = time.perf_counter()
        idx = self.MPI.Request.Waitany(reqs)
        self.tally.add(phase, V.zero(), "wait", time.perf_counter() - t0)
        return idx

    def waitall(self, reqs: list, phase: str) -> None:
        t0 = time.perf_counter()
        if reqs:
            self.MPI.Request.Waitall(reqs)
        self.tally.add(phase, V.zero(), "wait", time.perf_counter() - t0)

    # -- small helpers -------------------------------------------------------------------
    def bcast_bytes(self, data: bytes | None, root: int = 0, phase: str = "control") -> bytes:
        """`root`'s byte string on every rank (its length, then its bytes; `data` is read on
        the root only)."""
        length = np.array([len(data) if self.rank == root else 0], dtype=np.int64)
        self.bcast(length, root, phase)
        buf = np.zeros(int(length[0]), dtype=np.uint8)
        if self.rank == root:
            buf[:] = np.frombuffer(data, dtype=np.uint8)
        self.bcast(buf, root, phase)
        return bytes(buf)

    def bcast_flag(self, flag: bool, root: int = 0, phase: str = "control") -> bool:
        """`root`'s boolean on every rank (one byte)."""
        buf = np.array([1 if flag else 0], dtype=np.int8)
        self.bcast(buf, root, phase)
        return bool(buf[0])


class SelfComm(Comm):
    """A counted communicator of one process that never loads MPI (the serial scheme).

    Every collective is a local copy and counts nothing, so one runner serves serial and
    distributed schemes alike.
    """

    def __init__(self, tally: Tally | None = None):
        self.MPI = None
        self.comm = None
        self.rank = 0
        self.size = 1
        self.tally = Tally() if tally is None else tally

    def split(self, color: int, key: int | None = None) -> Comm:
        return self

    def barrier(self) -> None:
        return None

    def waitany(self, reqs: list, phase: str) -> int:  # pragma: no cover - no peers
        raise RuntimeError("a one-process communicator has no requests to wait for")

    def waitall(self, reqs: list, phase: str) -> None:
        if reqs:  # pragma: no cover - no peers
            raise RuntimeError("a one-process communicator has no requests to wait for")
