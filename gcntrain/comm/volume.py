"""Logical communication volume of each collective, per rank (pure; no MPI).

One convention, used both by the runtime counters (`gcntrain.comm.communicator`) and by the
schemes' communication plans, so that "measured equals planned" is an exact integer test and
the simulator predicts with the same arithmetic.

A *message* is one logical transfer of at least one byte from one rank to another; bytes are
the payload each rank must send to / receive from other ranks under the collective's
definition realised point to point (no self-transfers, no library-internal forwarding):

=================  ===========================================  ===============================
collective         rank r sends                                  rank r receives
=================  ===========================================  ===============================
bcast(b, root)     root: b to each of P-1 ranks                  non-root: b from root
reduce(b, root)    non-root: b to root                           root: b from each of P-1 ranks
allreduce(m el.)   reduce-scatter + allgather over the element   the same amounts
                   chunks c_q = chunk(m, P, q): its other chunks
                   to their owners, then its reduced chunk to
                   all P-1 others
allgather(v)       its block b_r to each of P-1 ranks            every other block b_q
gather(v, root)    non-root: its block to root                   root: every other block
reduce_scatter     the blocks b_q (q != r) of its buffer         b_r from each of P-1 ranks
alltoall(v)        sendcounts[q], q != r                         recvcounts[q], q != r
send / isend       the message                                   (recv / irecv: the message)
=================  ===========================================  ===============================
"""

from __future__ import annotations

import numpy as np

#: fields of a tally, in order
FIELDS = ("bytes_sent", "bytes_recv", "msgs_sent", "msgs_recv")


def chunk_sizes(m: int, size: int) -> np.ndarray:
    """Balanced split of m items over `size` ranks (first m % size ranks get one more)."""
    base, extra = divmod(int(m), int(size))
    out = np.full(size, base, dtype=np.int64)
    out[:extra] += 1
    return out


def _t(bs: int, br: int, ms: int, mr: int) -> np.ndarray:
    return np.array([bs, br, ms, mr], dtype=np.int64)


def zero() -> np.ndarray:
    return np.zeros(4, dtype=np.int64)


def bcast(nbytes: int, rank: int, size: int, root: int) -> np.ndarray:
    if size <= 1 or nbytes <= 0:
        return zero()
    if rank == root:
        return _t((size - 1) * nbytes, 0, size - 1, 0)
    return _t(0, nbytes, 0, 1)


def reduce(nbytes: int, rank: int, size: int, root: int) -> np.ndarray:
    if size <= 1 or nbytes <= 0:
        return zero()
    if rank == root:
        return _t(0, (size - 1) * nbytes, 0, size - 1)
    return _t(nbytes, 0, 1, 0)


def allgatherv(block_bytes: np.ndarray, rank: int) -> np.ndarray:
    b = np.asarray(block_bytes, dtype=np.int64)
    size = b.shape[0]
    if size <= 1:
        return zero()
    others = np.delete(b, rank)
    mine = int(b[rank])
    return _t(
        (size - 1) * mine,
        int(others.sum()),
        (size - 1) if mine > 0 else 0,
        int(np.count_nonzero(others)),
    )


def gatherv(block_bytes: np.ndarray, rank: int, root: int) -> np.ndarray:
    b = np.asarray(block_bytes, dtype=np.int64)
    if b.shape[0] <= 1:
        return zero()
    if rank == root:
        others = np.delete(b, rank)
        return _t(0, int(others.sum()), 0, int(np.count_nonzero(others)))
    mine = int(b[rank])
    return _t(mine, 0, 1 if mine > 0 else 0, 0)


def reduce_scatterv(block_bytes: np.ndarray, rank: int) -> np.ndarray:
    """The dual of `allgatherv`: what allgather sends, reduce-scatter receives, and back."""
    return allgatherv(block_bytes, rank)[[1, 0, 3, 2]]


def allreduce(nelems: int, itemsize: int, rank: int, size: int) -> np.ndarray:
    if size <= 1 or nelems <= 0:
        return zero()
    blocks = chunk_sizes(nelems, size) * int(itemsize)
    return reduce_scatterv(blocks, rank) + allgatherv(blocks, rank)


def alltoallv(send_bytes: np.ndarray, recv_bytes: np.ndarray, rank: int) -> np.ndarray:
    s = np.delete(np.asarray(send_bytes, dtype=np.int64), rank)
    r = np.delete(np.asarray(recv_bytes, dtype=np.int64), rank)
    return _t(int(s.sum()), int(r.sum()), int(np.count_nonzero(s)), int(np.count_nonzero(r)))


def send(nbytes: int) -> np.ndarray:
    return _t(nbytes, 0, 1, 0) if nbytes > 0 else zero()


def recv(nbytes: int) -> np.ndarray:
    return _t(0, nbytes, 0, 1) if nbytes > 0 else zero()
