"""Device buffers through MPI: `StagedComm` wraps a counted communicator
(`gcntrain.comm.communicator.Comm`, duck-typed: this module imports no MPI).

Where the MPI library is not CUDA-aware (`gcntrain.device.mpi`), every device array a
call is given is copied into a pinned host buffer first, the inner communicator moves and
counts the host buffer, and what arrives is copied back to the device: the counters see the
same arrays (shapes, dtypes, counts) as a host run, so measured bytes still equal the plan.
Host arrays pass through untouched.

With ``direct=True`` (every rank's MPI library is CUDA-aware, `gcntrain.job.device_run`)
nothing is staged: device arrays go to the counted communicator as they are (made
C-contiguous on the device where they are not), results it would allocate are allocated on
the device first and handed in as ``out``, and the device is synchronised before each call
(mpi4py does not wait for the stream: a kernel still writing a send buffer would race the
library).  The counters see the same shapes, dtypes and counts either way.  `route` (setup
only, never given device arrays by the schemes) stages device arrays in both modes.

Blocking calls reuse one send and one receive buffer per communicator family (grown as
needed); non-blocking calls get buffers of their own, kept alive by the request.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


class HostPool:
    """Pinned host buffers of a `Backend`, by slot, grown to the next power of two."""

    def __init__(self, backend):
        self.backend = backend
        self.buffers: dict[str, np.ndarray] = {}

    def get(self, slot: str, shape, dtype) -> np.ndarray:
        """A host array of `shape` and `dtype` in slot `slot`'s buffer (overwritten by the
        next call for the same slot)."""
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        buf = self.buffers.get(slot)
        if buf is None or buf.nbytes < nbytes:
            buf = self.backend.pinned(1 << max(nbytes - 1, 0).bit_length())
            self.buffers[slot] = buf
        return buf[:nbytes].view(dtype).reshape(shape)

    def fresh(self, shape, dtype) -> np.ndarray:
        """A host array in a pinned buffer of its own (non-blocking calls)."""
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        return self.backend.pinned(nbytes)[:nbytes].view(dtype).reshape(shape)


class StagedPending:
    """A non-blocking exchange posted from a device buffer: the inner `Pending`."""

    def __init__(self, inner):
        self.inner = inner


class StagedRequest:
    """An inner request and what to do once it completes (copy a receive to the device);
    `keep` holds the host buffer alive while the message is in flight."""

    def __init__(self, request, after: Callable[[], object] | None = None, keep=None):
        self.request = request
        self.after = after
        self.keep = keep

    def complete(self) -> None:
        """Run `after` once."""
        if self.after is not None:
            after, self.after = self.after, None
            after()


def _raw(r):
    return r.request if isinstance(r, StagedRequest) else r


class StagedComm:
    """A counted communicator that accepts device arrays (module docstring).

    Parameters
    ----------
    inner : the counted communicator (`Comm`, `SelfComm`).
    backend : the run's `gcntrain.device.backend.Backend`.
    direct : hand device arrays to `inner` as they are (CUDA-aware MPI).
    pool : the `HostPool` to stage through (default: a new one; `split` shares it).
    """

    def __init__(self, inner, backend, direct: bool = False, pool: HostPool | None = None):
        self.inner = inner
        self.backend = backend
        self.direct = bool(direct)
        self.pool = HostPool(backend) if pool is None else pool

    def __getattr__(self, name):  # rank, size, tally, MPI, comm, barrier, count_shared, ...
        return getattr(self.inner, name)

    # -- helpers ---------------------------------------------------------------------------
    def _staged(self, *arrays) -> bool:
        return not self.direct and any(a is not None and self.backend.is_device(a) for a in arrays)

    def _host(self, a, slot: str) -> np.ndarray:
        """`a` as host memory: a device array copied into slot `slot`, a host array as is."""
        if not self.backend.is_device(a):
            return a
        h = self.pool.get(slot, a.shape, a.dtype)
        self.backend.to_host(a, h)
        return h

    def _fresh_host(self, a) -> np.ndarray:
        h = self.pool.fresh(a.shape, a.dtype)
        self.backend.to_host(a, h)
        return h

    def _sync(self) -> None:
        self.backend.synchronize()

    def _direct(self, *arrays) -> bool:
        """Whether a direct call is handed a device array (then synchronised first)."""
        if not self.direct or not any(a is not None and self.backend.is_device(a) for a in arrays):
            return False
        self._sync()
        return True

    def _contig(self, a):
        """The device array `a`, C-contiguous (a device copy where it is not)."""
        return a if a.flags.c_contiguous else self.backend.xp.ascontiguousarray(a)

    def _into(self, out, shape, dtype):
        """A C-contiguous device receive buffer: `out` itself where it is one, else a new
        device array (copied into `out` afterwards by `_back`)."""
        if out is not None and out.flags.c_contiguous:
            return out
        return self.backend.empty(shape, dtype)

    @staticmethod
    def _back(got, out):
        """`got` copied into `out` on the device where they differ; the result."""
        if out is None or got is out:
            return got
        out[...] = got
        return out

    # -- blocking collectives --------------------------------------------------------------
    def split(self, color: int, key: int | None = None) -> StagedComm:
        return StagedComm(self.inner.split(color, key), self.backend, self.direct, self.pool)

    def bcast(self, buf, root: int, phase: str):
        if self._direct(buf):
            b = self._contig(buf)
            self.inner.bcast(b, root, phase)
            return self._back(b, buf)
        if not self._staged(buf):
            return self.inner.bcast(buf, root, phase)
        h = self.pool.get("send", buf.shape, buf.dtype)
        if self.inner.rank == root:
            self.backend.to_host(buf, h)
            self._sync()
        self.inner.bcast(h, root, phase)
        if self.inner.rank != root:
            self.backend.to_device(h, out=buf)
        return buf

    def allreduce(self, sendbuf, phase: str, out=None, op: str = "sum"):
        if self._direct(sendbuf, out):
            s = self._contig(sendbuf) if self.backend.is_device(sendbuf) else sendbuf
            o = self._into(out, s.shape, s.dtype)
            return self._back(self.inner.allreduce(s, phase, out=o, op=op), out)
        if not self._staged(sendbuf, out):
            return self.inner.allreduce(sendbuf, phase, out=out, op=op)
        hs = self._host(sendbuf, "send")
        self._sync()
        ho = self.pool.get("recv", hs.shape, hs.dtype)
        self.inner.allreduce(hs, phase, out=ho, op=op)
        return self.backend.to_device(ho, out=out)

    def allgatherv(self, sendbuf, counts: Sequence[int], phase: str, out=None):
        if self._direct(sendbuf, out):
            s = self._contig(sendbuf) if self.backend.is_device(sendbuf) else sendbuf
            rows = int(np.sum(np.asarray(counts, dtype=np.int64)))
            o = self._into(out, (rows,) + s.shape[1:], s.dtype)
            return self._back(self.inner.allgatherv(s, counts, phase, out=o), out)
        if not self._staged(sendbuf, out):
            return self.inner.allgatherv(sendbuf, counts, phase, out=out)
        hs = self._host(sendbuf, "send")
        self._sync()
        rows = int(np.sum(np.asarray(counts, dtype=np.int64)))
        ho = self.pool.get("recv", (rows,) + hs.shape[1:], hs.dtype)
        self.inner.allgatherv(hs, counts, phase, out=ho)
        return self.backend.to_device(ho, out=out)

    def gatherv(self, sendbuf, counts: Sequence[int], root: int, phase: str):
        if self._direct(sendbuf):
            s = self._contig(sendbuf)
            o = None
            if self.inner.rank == root:
                rows = int(np.sum(np.asarray(counts, dtype=np.int64)))
                o = self.backend.empty((rows,) + s.shape[1:], s.dtype)
            return self.inner.gatherv(s, counts, root, phase, out=o)
        if not self._staged(sendbuf):
            return self.inner.gatherv(sendbuf, counts, root, phase)
        hs = self._host(sendbuf, "send")
        self._sync()
        got = self.inner.gatherv(hs, counts, root, phase)
        return None if got is None else self.backend.to_device(got)

    def alltoallv(self, sendbuf, sendcounts, recvcounts, phase: str, out=None):
        if self._direct(sendbuf, out):
            s = self._contig(sendbuf) if self.backend.is_device(sendbuf) else sendbuf
            rows = int(np.sum(np.asarray(recvcounts, dtype=np.int64)))
            o = self._into(out, (rows,) + s.shape[1:], s.dtype)
            got = self.inner.alltoallv(s, sendcounts, recvcounts, phase, out=o)
            return self._back(got, out)
        if not self._staged(sendbuf, out):
            return self.inner.alltoallv(sendbuf, sendcounts, recvcounts, phase, out=out)
        hs = self._host(sendbuf, "send")
        self._sync()
        rows = int(np.sum(np.asarray(recvcounts, dtype=np.int64)))
        ho = self.pool.get("recv", (rows,) + hs.shape[1:], hs.dtype)
        self.inner.alltoallv(hs, sendcounts, recvcounts, phase, out=ho)
        return self.backend.to_device(ho, out=out)

    def reduce_scatterv(self, sendbuf, counts: Sequence[int], phase: str, op: str = "sum"):
        if self._direct(sendbuf):
            s = self._contig(sendbuf)
            o = self.backend.empty(int(counts[self.inner.rank]), s.dtype)
            return self.inner.reduce_scatterv(s, counts, phase, op=op, out=o)
        if not self._staged(sendbuf):
            return self.inner.reduce_scatterv(sendbuf, counts, phase, op=op)
        hs = self._host(sendbuf, "send")
        self._sync()
        return self.backend.to_device(self.inner.reduce_scatterv(hs, counts, phase, op=op))

    def route(self, dst, payloads: Sequence, phase: str):
        if not self._staged(dst, *payloads):
            return self.inner.route(dst, payloads, phase)
        hd = self._host(dst, "route.dst")
        hosts = [self._host(p, f"route.{i}") for i, p in enumerate(payloads)]
        self._sync()
        got, order, send, recv = self.inner.route(hd, hosts, phase)
        back = [
            self.backend.to_device(g) if self.backend.is_device(p) else g
            for g, p in zip(got, payloads)
        ]
        return back, order, send, recv

    # -- non-blocking ----------------------------------------------------------------------
    def ialltoallv(self, sendbuf, sendcounts, recvcounts, phase: str):
        if self._direct(sendbuf):  # the inner `Pending` keeps `s` and `o` alive
            s = self._contig(sendbuf)
            rows = int(np.sum(np.asarray(recvcounts, dtype=np.int64)))
            o = self.backend.empty((rows,) + s.shape[1:], s.dtype)
            return self.inner.ialltoallv(s, sendcounts, recvcounts, phase, out=o)
        if not self._staged(sendbuf):
            return self.inner.ialltoallv(sendbuf, sendcounts, recvcounts, phase)
        hs = self._fresh_host(sendbuf)
        self._sync()
        return StagedPending(self.inner.ialltoallv(hs, sendcounts, recvcounts, phase))

    def wait(self, pending, phase: str):
        if not isinstance(pending, StagedPending):
            return self.inner.wait(pending, phase)
        return self.backend.to_device(self.inner.wait(pending.inner, phase))

    def isend(self, buf, dest: int, tag: int, phase: str):
        if self._direct(buf):
            b = self._contig(buf)
            return StagedRequest(self.inner.isend(b, dest, tag, phase), keep=b)
        if not self._staged(buf):
            return self.inner.isend(buf, dest, tag, phase)
        h = self._fresh_host(buf)
        self._sync()
        return StagedRequest(self.inner.isend(h, dest, tag, phase), keep=h)

    def irecv(self, buf, source: int, tag: int, phase: str):
        if self._direct(buf):
            b = self._into(buf, buf.shape, buf.dtype)
            req = self.inner.irecv(b, source, tag, phase)
            return StagedRequest(req, None if b is buf else (lambda: self._back(b, buf)), b)
        if not self._staged(buf):
            return self.inner.irecv(buf, source, tag, phase)
        h = self.pool.fresh(buf.shape, buf.dtype)
        req = self.inner.irecv(h, source, tag, phase)
        return StagedRequest(req, lambda: self.backend.to_device(h, out=buf), keep=h)

    def ibcast_flat(self, buf, root: int, tag: int, phase: str) -> list:
        if self._direct(buf):
            if self.inner.rank == root:
                b = self._contig(buf)
                return [
                    StagedRequest(r, keep=b) for r in self.inner.ibcast_flat(b, root, tag, phase)
                ]
            b = self._into(buf, buf.shape, buf.dtype)
            after = None if b is buf else (lambda: self._back(b, buf))
            return [StagedRequest(r, after, b) for r in self.inner.ibcast_flat(b, root, tag, phase)]
        if not self._staged(buf):
            return self.inner.ibcast_flat(buf, root, tag, phase)
        if self.inner.rank == root:
            h = self._fresh_host(buf)
            self._sync()
            return [StagedRequest(r, keep=h) for r in self.inner.ibcast_flat(h, root, tag, phase)]
        h = self.pool.fresh(buf.shape, buf.dtype)
        reqs = self.inner.ibcast_flat(h, root, tag, phase)
        return [StagedRequest(r, lambda: self.backend.to_device(h, out=buf), h) for r in reqs]

    def waitall(self, reqs: list, phase: str) -> None:
        self.inner.waitall([_raw(r) for r in reqs], phase)
        for r in reqs:
            if isinstance(r, StagedRequest):
                r.complete()

    def waitany(self, reqs: list, phase: str) -> int:
        idx = self.inner.waitany([_raw(r) for r in reqs], phase)
        if 0 <= idx < len(reqs) and isinstance(reqs[idx], StagedRequest):
            reqs[idx].complete()
        return idx
