"""α-β costs of the standard algorithms of each collective (Thakur, Rabenseifner and Gropp,
"Optimization of collective communication operations in MPICH", IJHPCA 2005), vectorised
over groups: `p` members, per-member byte counts, a `Link` (α seconds per message, β seconds
per byte).  Each function returns the time of the cheapest algorithm MPICH may choose (the
minimum over the algorithms listed), so a prediction is a lower bound of a well-tuned library.

A message of more than the link's ``eager`` bytes costs ``rendezvous`` more than α (the
handshake MPI makes before a large message; `Link.latency`).

Conventions: `n` is the bytes each member contributes (Allreduce: its whole vector;
Allgather: its own block, the result is p * n; Reduce-scatter: its whole input vector;
Broadcast: the root's message).  A group of one member sends nothing; the runtime's
Allreduce, Allgather and Reduce-scatter over one member copy its buffer into the result
(`local_copy`), a broadcast leaves it in place.  The arithmetic of a reduction is
`reduction` (memory-bound: a member combines (p - 1) / p of the vector).
"""

from __future__ import annotations

import numpy as np

from gcntrain.simulate.machine import Link


def _arrays(p, n):
    p = np.asarray(p, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    return p, n, np.ceil(np.log2(np.maximum(p, 1.0)))


def _solo(p, t):
    return np.where(p <= 1, 0.0, t)


def _msgs(count, size, link: Link) -> np.ndarray:
    """Latency of `count` messages of `size` bytes each (`Link.latency`)."""
    return np.asarray(count, np.float64) * link.latency(size)


def allreduce(p, n, link: Link) -> np.ndarray:
    """min(recursive doubling ``log p (α + n β)``, Rabenseifner / ring reduce-scatter +
    allgather ``2 log p α + 2 (p - 1) / p n β``, its messages n / 2 to n / p)."""
    p, n, lg = _arrays(p, n)
    rd = _msgs(lg, n, link) + lg * n * link.beta
    part = n / np.maximum(p, 1)
    rab = _msgs(2 * lg, part, link) + 2 * (p - 1) / np.maximum(p, 1) * n * link.beta
    return _solo(p, np.minimum(rd, rab))


def allgather(p, n, link: Link) -> np.ndarray:
    """Each member's `n` bytes to all: min(recursive doubling / Bruck ``log p α + (p - 1) n
    β``, ring ``(p - 1)(α + n β)``): the same bytes, fewer messages, so the first."""
    p, n, lg = _arrays(p, n)
    bruck = _msgs(lg, n, link) + (p - 1) * n * link.beta
    ring = _msgs(p - 1, n, link) + (p - 1) * n * link.beta
    return _solo(p, np.minimum(bruck, ring))


def reduce_scatter(p, n, link: Link) -> np.ndarray:
    """A vector of `n` bytes per member, each keeps its 1/p of the sum: min(recursive halving
    ``log p α + (p - 1) / p n β``, pairwise ``(p - 1) α + (p - 1) / p n β``)."""
    p, n, lg = _arrays(p, n)
    frac = (p - 1) / np.maximum(p, 1) * n * link.beta
    part = n / np.maximum(p, 1)
    return _solo(p, np.minimum(_msgs(lg, part, link), _msgs(p - 1, part, link)) + frac)


def bcast(p, n, link: Link) -> np.ndarray:
    """min(binomial tree ``log p (α + n β)``, scatter + ring allgather (van de Geijn)
    ``(log p + p - 1) α + 2 (p - 1) / p n β``)."""
    p, n, lg = _arrays(p, n)
    tree = _msgs(lg, n, link) + lg * n * link.beta
    part = n / np.maximum(p, 1)
    vdg = _msgs(lg + p - 1, part, link) + 2 * (p - 1) / np.maximum(p, 1) * n * link.beta
    return _solo(p, np.minimum(tree, vdg))


def alltoallv(peers, sent, received, link: Link) -> np.ndarray:
    """Pairwise exchange of one member: a step per peer it exchanges with, its bytes
    serialised in its larger direction: ``peers α + max(sent, received) β``."""
    peers = np.asarray(peers, dtype=np.float64)
    vol = np.maximum(np.asarray(sent, dtype=np.float64), np.asarray(received, dtype=np.float64))
    size = vol / np.maximum(peers, 1.0)
    return np.where(peers <= 0, 0.0, _msgs(peers, size, link) + vol * link.beta)


def point_to_point(messages, nbytes, link: Link) -> np.ndarray:
    """`messages` messages of `nbytes` bytes in all from one member: ``messages α + nbytes β``."""
    m = np.asarray(messages, dtype=np.float64)
    b = np.asarray(nbytes, dtype=np.float64)
    return _msgs(m, b / np.maximum(m, 1.0), link) + b * link.beta


def reduction(p, n, bandwidth: float) -> np.ndarray:
    """Local arithmetic of an Allreduce or Reduce-scatter of `n` bytes per member: each
    member combines (p - 1) / p of the vector, reading two operands and writing one, at
    `bandwidth` bytes per second: ``3 (p - 1) / p n / bandwidth``."""
    p, n, _ = _arrays(p, n)
    return _solo(p, 3.0 * (p - 1) / np.maximum(p, 1) * n / bandwidth)


def local_copy(p, n, bandwidth: float) -> np.ndarray:
    """The copy a collective over one member makes of its `n` bytes into the result
    (reading and writing each byte at `bandwidth` bytes per second): ``2 n / bandwidth``
    where ``p == 1``, else nothing (the algorithms above move the bytes)."""
    p, n, _ = _arrays(p, n)
    return np.where(p == 1, 2.0 * n / bandwidth, 0.0)
